"""The servers' demand on their busiest link (``ActorStats.link_demand``), after a run.

Why: a server's capacity per exchange is bounded by its link as well as by its thread and
processor; what bounds it is the link's *demand* - every message it sent or received,
drained at the link's full rate, summed per link direction (the bottleneck law, Lazowska et
al., *Quantitative System Performance*, 1984, ch. 5) - not the time its answers spent on the
wire, which counts overlapping answers in full and charges the server for a slow receiver
(:func:`clustersim.sim.metrics.master_service_time`).

Why numpy and a table kept with the platform: a 4,253-worker parameter server exchanges with
8,500 distinct (device, device, size) routes per run; their links and drain times are the
same in every run on the platform (kept in its ``memo``, as the engine keeps its message
plans), and summing ``count x drain`` per link over ~40,000 (route, link) pairs is one
``bincount`` instead of a Python loop that cost 15% of such a point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

__all__ = ["RouteTable", "link_demands"]


class RouteTable:
    """Routes as flat arrays: for route ``k``, links ``links[start[k]:start[k] + size[k]]``
    and their drain times ``dts[...]`` (seconds at the link's full rate)."""

    def __init__(self) -> None:
        self.ids: dict[tuple[int, int, float], int] = {}
        self._links: list[int] = []
        self._dts: list[float] = []
        self._start: list[int] = []
        self._size: list[int] = []
        self._arrays: tuple[np.ndarray, ...] | None = None

    def add(self, key: tuple[int, int, float], route: Sequence[int],
            dts: Sequence[float]) -> int:
        k = self.ids[key] = len(self._start)
        self._start.append(len(self._links))
        self._size.append(len(route))
        self._links.extend(route)
        self._dts.extend(dts)
        self._arrays = None
        return k

    def arrays(self) -> tuple[np.ndarray, ...]:
        if self._arrays is None:
            self._arrays = (np.array(self._links, dtype=np.int64), np.array(self._dts),
                            np.array(self._start, dtype=np.int64),
                            np.array(self._size, dtype=np.int64))
        return self._arrays


def link_demands(tally: Mapping[tuple[int, int, float], int], servers: frozenset[int],
                 placement: Sequence[int], table: RouteTable,
                 plan: Callable[[int, int, float], tuple[Sequence[int], Sequence[float]]]
                 ) -> dict[int, float]:
    """Each server's busiest link direction's demand: ``tally[(sender, receiver, bytes)]``
    messages, ``plan(src device, dst device, bytes)`` -> (route, drain time per link) for a
    route not in ``table`` yet."""
    mine: dict[int, tuple[list[int], list[int]]] = {a: ([], []) for a in servers}
    ids = table.ids
    for (i, j, nbytes), count in tally.items():
        key = (placement[i], placement[j], nbytes)
        k = ids.get(key)
        if k is None:
            k = table.add(key, *plan(*key))
        for a in (i, j):
            got = mine.get(a)
            if got is not None:
                got[0].append(k)
                got[1].append(count)
    links, dts, start, size = table.arrays()
    out: dict[int, float] = {}
    for a, (ks, counts) in mine.items():
        if not ks:
            out[a] = 0.0
            continue
        k = np.array(ks, dtype=np.int64)
        n = size[k]
        total = int(n.sum())
        if total == 0:
            out[a] = 0.0
            continue
        # every (route, link) pair of this server's messages, flat: route k's start plus 0..n-1
        first = np.repeat(start[k], n)
        offset = np.arange(total) - np.repeat(np.cumsum(n) - n, n)
        at = first + offset
        weight = dts[at] * np.repeat(np.array(counts, dtype=float), n)
        out[a] = float(np.bincount(links[at], weights=weight).max())
    return out
