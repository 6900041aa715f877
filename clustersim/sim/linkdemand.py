"""The servers' demand on their busiest link (``ActorStats.link_demand``), after a run.

Why: a server's capacity per exchange is bounded by its link as well as by its thread and
processor; what bounds it is the link's *demand* - every message it sent or received,
drained at the link's full rate, summed per link direction (the bottleneck law, Lazowska et
al., *Quantitative System Performance*, 1984, ch. 5) - not the time its answers spent on the
wire, which counts overlapping answers in full and charges the server for a slow receiver
(:func:`clustersim.sim.metrics.master_service_time`).

Why numpy and the plans' ids: a 4,253-worker parameter server exchanges with 8,500 distinct
(device, device, size) routes per run.  The engine numbers each message plan when it makes it
(once per platform and parameters, kept in its ``memo``) and logs one integer per message;
the routes' links and drain times sit in flat arrays beside the plans, so the demand is a
few ``bincount``s - a Python loop over the messages cost 15% of such a point.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["RouteTable", "link_demands"]


class RouteTable:
    """The engine's message plans' routes as flat arrays, by plan id: for plan ``k`` (source
    device ``src[k]``, destination ``dst[k]``), links ``links[start[k]:start[k] + size[k]]``
    and their drain times ``dts[...]`` (seconds at the link's full rate)."""

    def __init__(self) -> None:
        self._links: list[int] = []
        self._dts: list[float] = []
        self._start: list[int] = []
        self._size: list[int] = []
        self._src: list[int] = []
        self._dst: list[int] = []
        self._arrays: tuple[np.ndarray, ...] | None = None

    def add(self, src: int, dst: int, route: Sequence[int], dts: Sequence[float]) -> int:
        """The new plan's id."""
        k = len(self._start)
        self._start.append(len(self._links))
        self._size.append(len(route))
        self._src.append(src)
        self._dst.append(dst)
        self._links.extend(route)
        self._dts.extend(dts)
        self._arrays = None
        return k

    def arrays(self) -> tuple[np.ndarray, ...]:
        if self._arrays is None:
            i64 = np.int64
            self._arrays = (np.array(self._links, dtype=i64), np.array(self._dts, dtype=float),
                            np.array(self._start, dtype=i64), np.array(self._size, dtype=i64),
                            np.array(self._src, dtype=i64), np.array(self._dst, dtype=i64))
        return self._arrays


def link_demands(log: Sequence[int], table: RouteTable, devices: Iterable[int]
                 ) -> dict[int, float]:
    """For each of ``devices`` (the servers'), the busiest link direction's demand of the
    messages it sent or received: ``log`` holds the plan id of every message of the run.

    A message is the server's when it leaves or reaches the server's device: on a platform
    so full that a server shares a worker's device, that worker's messages count too."""
    links, dts, start, size, src, dst = table.arrays()
    counts = np.bincount(np.asarray(log, dtype=np.int64), minlength=len(start))
    out: dict[int, float] = {}
    for d in sorted(set(devices)):
        k = np.flatnonzero(((src == d) | (dst == d)) & (counts > 0))
        n = size[k]
        total = int(n.sum())
        if total == 0:
            out[d] = 0.0
            continue
        # every (message, link) pair, flat: plan k's start plus 0..n-1, weighted by its count
        at = np.repeat(start[k], n) + np.arange(total) - np.repeat(np.cumsum(n) - n, n)
        weight = dts[at] * np.repeat(counts[k].astype(float), n)
        out[d] = float(np.bincount(links[at], weights=weight).max())
    return out
