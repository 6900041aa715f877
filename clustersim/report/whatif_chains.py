"""The what-if page's points as chains, so that a master-based case stops being simulated
at the first worker count where its master is saturated and its larger counts are extended
from that point (:mod:`clustersim.sim.saturated`).

Why chains: whether a count is saturated is known only once it is simulated, so the counts
of one such case are decided in order, smallest first: each count is extended from a
saturated count below it, or simulated, and then the case's next counts wait for it.  Every
other point (synchronous methods, the other cells) needs no decision.  All of them share
one process pool (:func:`clustersim.sim.pool_run.run_tasks`): a chain's next count is queued
the moment the count before it is done (``follow``), so nothing waits for a wave to end.
knl_4253's page simulates every point but the master-based ones above 68 workers, then
those at 272 workers, where all seven masters are saturated; their 1,088 and 4,253 points
(85 % of the page's CPU time when simulated) are extended.  A count with no saturated base
it may be extended from is simulated (:class:`ExtensionChains`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["ExtensionChains"]

Task = tuple[int, int, int, int]  # (case index, workers, repeat, seed)


class ExtensionChains:
    """Which points are simulated, and the points extended from them.

    ``first``: the points to start with (every point of a case without a chain, the
    smallest count of each chain's case); :meth:`step` decides a chain's next counts
    once its last simulated count is done (:meth:`ready`); ``extended``: ``{(case,
    workers): workers of the point it was extended from}``.

    A count is extended from the largest simulated count below it whose master was
    saturated (for every seed) and from which it is extendable (same batch, devices and
    exchange times: :func:`~clustersim.sim.saturated.extendable`); a count with no such base
    is simulated, and the case's larger counts wait for it (it may be their base).  So on
    8-GPU machines, where the workers beside the master change with the count, 12 and 20
    workers are simulated and 16 and 24 extended from 8.  A chain's decisions read its own
    case's results alone, so they do not depend on the order points finish in."""

    def __init__(self, cases: Sequence[tuple[str, Any, Any]], tasks: Sequence[Task]) -> None:
        from clustersim.sim.saturated import lone_master

        self.cases = cases
        self.extended: dict[tuple[int, int], int] = {}
        by_case: dict[int, list[Task]] = {}
        for t in tasks:
            by_case.setdefault(t[0], []).append(t)
        #: the counts of a case still to decide, smallest first, with their tasks
        self.waiting: dict[int, list[tuple[int, list[Task]]]] = {}
        #: the simulated counts of a waiting case, and their seeds (repeats)
        self.simulated: dict[int, list[tuple[int, list[int]]]] = {}
        self.first: list[Task] = []
        for ci, mine in by_case.items():
            _title, s, alg = cases[ci]
            counts = sorted({t[1] for t in mine})
            if len(counts) < 2 or not lone_master(s, alg):
                self.first += mine
                continue
            per = [(w, [t for t in mine if t[1] == w]) for w in counts]
            self.first += per[0][1]
            self.waiting[ci] = per[1:]
            self.simulated[ci] = [(per[0][0], [t[2] for t in per[0][1]])]

    def chain_head(self, task: Task) -> bool:
        """Whether ``task`` is a point some chain waits for (it should run early)."""
        return task[0] in self.waiting

    def ready(self, ci: int, results: dict[tuple[int, int, int], Any]) -> bool:
        """Whether case ``ci`` has a count to decide and its last simulated count is done."""
        if ci not in self.waiting:
            return False
        w, seeds = self.simulated[ci][-1]
        return all((ci, w, r) in results for r in seeds)

    def step(self, ci: int, results: dict[tuple[int, int, int], Any],
             advance: Callable[[int], Any]) -> list[Task]:
        """Extend case ``ci``'s waiting counts that have a base (into ``results``); the
        first that has none is returned, to be simulated ([]: the case is done).  Call it
        when :meth:`ready`."""
        from clustersim.sim.saturated import extend_point, extendable, saturated

        _title, s, alg = self.cases[ci]
        bases = [(w, {r: results[(ci, w, r)] for r in seeds})
                 for w, seeds in self.simulated[ci]]
        bases = [(w, b) for w, b in bases if all(saturated(m) for m in b.values())]
        rest = self.waiting[ci]
        simulate: list[Task] = []
        while rest:
            w, tasks = rest.pop(0)
            base = next(((w1, b) for w1, b in reversed(bases) if extendable(s, alg, w1, w)),
                        None)
            if base is None:  # simulated: the larger counts wait for it
                simulate = tasks
                self.simulated[ci].append((w, [t[2] for t in tasks]))
                break
            w1, b = base
            for _c, _w, r, _seed in tasks:
                results[(ci, w, r)] = extend_point(s, alg, b[r], w)
                advance(1)
            self.extended[(ci, w)] = w1
        if not rest:
            del self.waiting[ci]
        return simulate
