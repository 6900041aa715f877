"""The what-if page's points in waves, so that a master-based case stops being simulated
at the first worker count where its master is saturated and its larger counts are extended
from that point (:mod:`clustersim.sim.saturated`).

Why waves: whether a count is saturated is known only once it is simulated, and the counts
of one case are simulated in order, smallest first, while every other point (synchronous
methods, the other cells) runs in the first wave beside them - one process pool a wave,
heaviest point first, as :func:`clustersim.sim.sweep.run_tasks` does.  knl_4253's page
needs two waves: every point but the master-based ones above 68 workers, then those at
272 workers, where all seven masters are saturated; their 1,088 and 4,253 points (85 % of
the page's CPU time when simulated) are extended.
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
    of the point it was extended from}``."""

    def __init__(self, cases: Sequence[tuple[str, Any, Any]], tasks: Sequence[Task]) -> None:
        from clustersim.sim.saturated import extendable

        self.cases = cases
        self.extended: dict[tuple[int, int], int] = {}
        by_case: dict[int, list[Task]] = {}
        for t in tasks:
            by_case.setdefault(t[0], []).append(t)
        #: the counts of a case still to decide, smallest first, with their tasks
        self.waiting: dict[int, list[tuple[int, list[Task]]]] = {}
        self.first: list[Task] = []
        for ci, mine in by_case.items():
            _title, s, alg = cases[ci]
            counts = sorted({t[1] for t in mine})
            if len(counts) < 2 or not extendable(s, alg, counts[0], counts[-1]):
                self.first += mine
                continue
            per = [(w, [t for t in mine if t[1] == w]) for w in counts]
            self.first += per[0][1]
            self.waiting[ci] = per[1:]
        self.last = {ci: min(t[1] for t in by_case[ci]) for ci in self.waiting}

    def next(self, results: dict[tuple[int, int, int], Any],
             advance: Callable[[int], Any]) -> list[Task]:
        """Extend every waiting case whose last simulated count is saturated (for every
        seed); the next count of each other waiting case is the next wave."""
        from clustersim.sim.saturated import extend_point, extendable, saturated

        wave: list[Task] = []
        for ci in list(self.waiting):
            _title, s, alg = self.cases[ci]
            w1 = self.last[ci]
            rest = self.waiting[ci]
            bases = {r: results[(ci, w1, r)] for _c, w, r, _s in rest[0][1]}
            if all(saturated(b) for b in bases.values()):
                for w, tasks in rest:
                    if not extendable(s, alg, w1, w):  # (extendable to the largest: rare)
                        wave += tasks
                        continue
                    for _c, _w, r, _seed in tasks:
                        results[(ci, w, r)] = extend_point(s, alg, bases[r], w)
                        advance(1)
                    self.extended[(ci, w)] = w1
                del self.waiting[ci]
                continue
            w, tasks = rest.pop(0)
            wave += tasks
            self.last[ci] = w
            if not rest:
                del self.waiting[ci]
        return wave
