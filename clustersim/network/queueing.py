"""Analytic point-to-point messages: every link direction a FIFO server of its bandwidth.

Why: at thousands of actors, a parameter server receives a message from every worker every
few milliseconds.  At flow level each arrival and departure re-solves max-min sharing for all
flows crossing the server's link - O(n) work per event, O(n^2) per round.  The queueing model
costs O(hops) per message and one SimPy event: each link keeps the time it becomes free; a
message reserves ``nbytes / capacity`` of every link on its route, starting on each when both
the message and the link are ready (cut-through: a link downstream may start before an
upstream one has finished, but never finishes before it), and arrives after the last byte plus
the route's latency and the per-message overhead.

What it preserves and what it does not, compared with max-min sharing (flow level):

* each link's throughput is the same (a saturated link is busy all the time in both), so
  incast saturation, server bandwidth limits and makespans of bulk phases agree;
* the order in which concurrent messages finish differs: FIFO finishes the first arrival
  first, processor sharing finishes them together.  Per-message latencies therefore differ,
  their sum over a saturated period does not.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["LinkQueues"]


class LinkQueues:
    """Per-link "free at" times; :meth:`reserve` books a message and returns its arrival.

    ``rate[l]`` is what a message may use of link ``l`` (capacity x efficiency); the per-
    message latency (overhead, protocol segment, hops) is computed by the caller - the flow
    network's :meth:`~clustersim.network.flow.FlowNetwork.message_plan` - so that both models
    charge the same protocol costs.
    """

    def __init__(self, capacity: np.ndarray, efficiency: float = 1.0) -> None:
        self.rate = [float(c) * efficiency for c in capacity]
        self.free_at = [0.0] * len(self.rate)
        self.messages = 0

    def reserve(self, route: Sequence[int], nbytes: float, now: float,
                latency: float = 0.0) -> float:
        """Book ``nbytes`` along ``route`` from ``now``; the time its last byte arrives, i.e.
        the queued serialisation plus ``latency`` (overhead and hop latencies)."""
        rate = self.rate
        return self.reserve_times(route, [nbytes / rate[lk] for lk in route], now, latency)

    def reserve_times(self, route: Sequence[int], times: Sequence[float], now: float,
                      latency: float = 0.0) -> float:
        """:meth:`reserve` with the per-link serialisation times ``times[k] = nbytes /
        rate[route[k]]`` precomputed by the caller (the engine plans each route and size
        once and sends it thousands of times): the same bookings and the same result, to
        the last bit, without a division per link and message."""
        self.messages += 1
        finish = now
        t = now
        free = self.free_at
        for lk, dt in zip(route, times):
            start = free[lk] if free[lk] > t else t
            end = start + dt
            if end < finish:  # cut-through: cannot finish before the link upstream did
                end = finish
            free[lk] = end
            t = start
            finish = end
        return finish + latency
