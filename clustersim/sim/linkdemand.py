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

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["RouteTable", "link_demands"]


class RouteTable:
    """The engine's message plans' routes as flat arrays, by plan id: for plan ``k`` (source
    device ``src[k]``, destination ``dst[k]``), links ``links[start[k]:start[k] + size[k]]``
    and their drain times ``dts[...]`` (seconds at the link's full rate), of messages of
    ``nbytes[k]`` bytes."""

    def __init__(self) -> None:
        self._links: list[int] = []
        self._dts: list[float] = []
        self._start: list[int] = []
        self._size: list[int] = []
        self._src: list[int] = []
        self._dst: list[int] = []
        self._nbytes: list[float] = []
        self._arrays: tuple[np.ndarray, ...] | None = None

    def add(self, src: int, dst: int, route: Sequence[int], dts: Sequence[float],
            nbytes: float = 0.0) -> int:
        """The new plan's id."""
        k = len(self._start)
        self._start.append(len(self._links))
        self._size.append(len(route))
        self._src.append(src)
        self._dst.append(dst)
        self._nbytes.append(float(nbytes))
        self._links.extend(route)
        self._dts.extend(dts)
        self._arrays = None
        return k

    def arrays(self) -> tuple[np.ndarray, ...]:
        if self._arrays is None:
            i64 = np.int64
            self._arrays = (np.array(self._links, dtype=i64), np.array(self._dts, dtype=float),
                            np.array(self._start, dtype=i64), np.array(self._size, dtype=i64),
                            np.array(self._src, dtype=i64), np.array(self._dst, dtype=i64),
                            np.array(self._nbytes, dtype=float))
        return self._arrays


def link_demands(log: Sequence[int], table: RouteTable, devices: Iterable[int],
                 rates: Mapping[int, float] | None = None) -> dict[int, float]:
    """For each of ``devices`` (the servers'), the busiest link direction's demand of the
    messages it sent or received: ``log`` holds the plan id of every message of the run.

    A message is the server's when it leaves or reaches the server's device: on a platform
    so full that a server shares a worker's device, that worker's messages count too.

    ``rates``: the measured step rate of the workers on each device (their sum, where
    several share one).  With them, each peer's messages are weighted so that the demand
    per message is taken in the mix of the measured steps - each peer's share of the
    server's exchanges is its share of the rates - instead of in the mix of the whole run,
    where every worker makes the same number of steps.  The total keeps the run's number
    of messages (:func:`_peer_weights`).

    Why: a worker beside the server (NVLink, no NIC) steps 2.7x as often as one across the
    network, so the exchanges a server sees in steady state cross its NIC less often than
    one in every count would: a 63-worker server on 8-GPU nodes read 9.7 ms per update on
    its NIC where it applied one every 7.7 ms (utilisation clipped at 100 %, the link 96 %
    busy in fact); taken in the measured mix, 8.1 ms."""
    links, dts, start, size, src, dst, nbytes = table.arrays()
    counts = np.bincount(np.asarray(log, dtype=np.int64), minlength=len(start))
    out: dict[int, float] = {}
    for d in sorted(set(devices)):
        k = np.flatnonzero(((src == d) | (dst == d)) & (counts > 0))
        # summed in the order of the plans' (source, destination, size), not of their ids:
        # the ids number plans in the order this process first made them, over every run
        # it made, so that a point's float sums - its service time - had depended in the
        # last bit on which points the process had run before it (a what-if page run in
        # waves differed from one run in one pool)
        k = k[np.lexsort((nbytes[k], dst[k], src[k]))]
        n = size[k]
        total = int(n.sum())
        if total == 0:
            out[d] = 0.0
            continue
        per = counts[k].astype(float)
        if rates:
            per = per * _peer_weights(np.where(src[k] == d, dst[k], src[k]), counts[k], rates)
        # every (message, link) pair, flat: plan k's start plus 0..n-1, weighted by its count
        at = np.repeat(start[k], n) + np.arange(total) - np.repeat(np.cumsum(n) - n, n)
        weight = dts[at] * np.repeat(per, n)
        out[d] = float(np.bincount(links[at], weights=weight).max())
    return out


def _peer_weights(peer: np.ndarray, counts: np.ndarray, rates: Mapping[int, float]
                  ) -> np.ndarray:
    """Per plan, the weight of its messages: ``(r_o / R) / (m_o / M)`` for its peer device
    ``o`` - the peer's share of the step rates over its share of the server's messages -
    so that the weighted messages still number ``M`` and each peer's part of them is its
    rate's.  Peers without a rate (no worker on their device: a hybrid's leader shares its
    group's device, which has one) count at the mean rate; all 1 (the run's own mix, to
    the bit) where the weights are within 1e-9 of it, as with workers of one pace."""
    devs, inv = np.unique(peer, return_inverse=True)
    m = np.bincount(inv, weights=counts.astype(float))
    known = [rates[int(o)] for o in devs.tolist() if rates.get(int(o), 0.0) > 0.0]
    if not known:
        return np.ones(len(peer))
    mean = sum(known) / len(known)
    r = np.array([rates.get(int(o), 0.0) or mean for o in devs.tolist()])
    w = (r / r.sum()) / (m / m.sum())
    if np.all(np.abs(w - 1.0) <= 1e-9):
        return np.ones(len(peer))
    return w[inv]
