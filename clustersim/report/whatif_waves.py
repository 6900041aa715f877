"""The what-if page's points in waves, so that a master-based case stops being simulated
at the first worker count where its master is saturated and its larger counts are extended
from that point (:mod:`clustersim.sim.saturated`).

Why waves: whether a count is saturated is known only once it is simulated, and the counts
of one case are simulated in order, smallest first, while every other point (synchronous
methods, the other cells) runs in the first wave beside them - one process pool a wave,
heaviest point first, as :func:`clustersim.sim.sweep.run_tasks` does.  knl_4253's page
needs two waves: every point but the master-based ones above 68 workers, then those at
272 workers, where all seven masters are saturated; their 1,088 and 4,253 points (85 % of
the page's CPU time when simulated) are extended.  A count with no saturated base it may be
extended from is simulated, in a wave of its own if need be (:class:`ExtensionWaves`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["ExtensionWaves"]

Task = tuple[int, int, int, int]  # (case index, workers, repeat, seed)


class ExtensionWaves:
    """Which points each wave simulates, and the points extended between waves.

    ``first``: the first wave's tasks; :meth:`next` extends what it can from the results so
    far and returns the next wave (empty: done); ``extended``: ``{(case, workers): workers
    of the point it was extended from}``.

    A count is extended from the largest simulated count below it whose master was
    saturated (for every seed) and from which it is extendable (same batch, devices and
    exchange times: :func:`~clustersim.sim.saturated.extendable`); a count with no such base
    is simulated, and the case's larger counts wait for it (it may be their base).  So on
    8-GPU machines, where the workers beside the master change with the count, 12 and 20
    workers are simulated and 16 and 24 extended from 8."""

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

    def next(self, results: dict[tuple[int, int, int], Any],
             advance: Callable[[int], Any]) -> list[Task]:
        """Extend every waiting count that has a base; the first count of each case that
        has none is the next wave."""
        from clustersim.sim.saturated import extend_point, extendable, saturated

        wave: list[Task] = []
        for ci in list(self.waiting):
            _title, s, alg = self.cases[ci]
            bases = [(w, {r: results[(ci, w, r)] for r in seeds})
                     for w, seeds in self.simulated[ci]]
            bases = [(w, b) for w, b in bases if all(saturated(m) for m in b.values())]
            rest = self.waiting[ci]
            while rest:
                w, tasks = rest[0]
                base = next(((w1, b) for w1, b in reversed(bases)
                             if extendable(s, alg, w1, w)), None)
                if base is None:  # simulated: the larger counts wait for it
                    wave += tasks
                    self.simulated[ci].append((w, [t[2] for t in tasks]))
                    rest.pop(0)
                    break
                w1, b = base
                for _c, _w, r, _seed in tasks:
                    results[(ci, w, r)] = extend_point(s, alg, b[r], w)
                    advance(1)
                self.extended[(ci, w)] = w1
                rest.pop(0)
            if not rest:
                del self.waiting[ci]
        return wave
