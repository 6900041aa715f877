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

from clustersim.network.params import NetworkParams

__all__ = ["LinkQueues"]


class LinkQueues:
    """Per-link "free at" times; :meth:`reserve` books a message and returns its arrival."""

    def __init__(self, capacity: np.ndarray, latency: np.ndarray,
                 params: NetworkParams = NetworkParams()) -> None:
        self.rate = [float(c) * params.efficiency for c in capacity]
        self.latency = [float(x) for x in latency]
        self.overhead = params.overhead
        self.free_at = [0.0] * len(self.rate)
        self.messages = 0

    def reserve(self, route: Sequence[int], nbytes: float, now: float) -> float:
        """Book ``nbytes`` along ``route`` starting at ``now``; the time the last byte arrives."""
        self.messages += 1
        lat = self.overhead
        if not route:
            return now
        t = now + self.overhead
        finish = t
        free = self.free_at
        rate = self.rate
        for lk in route:
            lat += self.latency[lk]
            start = free[lk] if free[lk] > t else t
            end = start + nbytes / rate[lk]
            if end < finish:  # cut-through: cannot finish before the link upstream did
                end = finish
            free[lk] = end
            t = start
            finish = end
        return finish + (lat - self.overhead)
