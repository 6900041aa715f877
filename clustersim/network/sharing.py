"""Max-min fair rates of the flow model, recomputed for the flows a change touches.

The part of :class:`clustersim.network.flow.FlowNetwork` that decides *rates*: connected
components from the touched links, levels below ``theta`` kept, one recomputation per
timestamp.  Kept apart from the part that moves
flows through time (arrivals, finishes, wake-ups) so that each stays readable; the network
class inherits these methods and owns the state they use (``_on_link``, ``_cap``,
``_cap_list``, ``_dirty``, ``_theta``, ``_heap``, ...).

Why it is built this way:

* **Only the affected flows are recomputed.**  A flow's max-min rate depends only on flows
  connected to it through shared links (transitively); on an arrival or departure the engine
  walks that connected component from the touched links and refills just those flows.  Flows
  elsewhere keep their rates and their pending finish times.
* **Rates below the lowest changed level stay.**  Progressive filling raises all rates
  together and freezes flows level by level.  Let ``theta`` be the lowest level any changed
  flow sits at (the old rate of a departing flow, the new rate of an arriving one).  Below
  ``theta`` the filling with and without the change is the same process: no link crossed by a
  changed flow saturates there, and every other link sees the same load.  So every flow whose
  rate is below ``theta`` keeps it, and only flows at or above ``theta`` - connected through
  flows at or above ``theta`` - are refilled, over the capacity the others leave.  A departing
  flow is usually the fastest of its step (it finishes first), so this often shrinks a refill
  of thousands of flows to a handful.  For arrivals a lower bound on the new rate suffices:
  a flow never gets less than ``min over its links of capacity / flows on the link``.
* **One recomputation per timestamp.**  Arrivals and departures only mark links dirty; the
  refill runs from one SimPy event scheduled at the same time with a priority *below*
  ``NORMAL``, so every ordinary event at that instant - including processes woken by flows
  that just finished and starting their next transfers - is processed first and lands in
  the same batch.  A flow alone on all its links needs no refill at all (it gets its
  narrowest link).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from clustersim.network.maxmin import progressive_fill

if TYPE_CHECKING:
    from clustersim.network.flowrecords import _Flow

__all__ = ["MaxMinSharing", "LAZY", "call_at"]

#: SimPy priority of the rate recomputation: after URGENT (0) and NORMAL (1) events of the same
#: timestamp, so that all arrivals/departures of one instant are batched.
LAZY = 2

#: components up to this many flows are filled in plain Python (see ``_fill_small``)
_SMALL_COMPONENT = 24
#: fair shares this close (relative) saturate in the same round, as in ``maxmin``
_REL_TOL = 1e-12
#: rates within this factor below the threshold still count as "at the threshold" (refilled)
_THETA_SLACK = 1 - 1e-9


def call_at(env: simpy.Environment, delay: float, priority: int,
            callback: Callable[[simpy.Event], Any]) -> None:
    """Schedule ``callback(event)`` after ``delay`` at ``priority`` (a bare, already-succeeded
    event: what :class:`simpy.Timeout` does, but with a chosen priority)."""
    ev = simpy.Event(env)
    ev._ok = True
    ev._value = None
    ev.callbacks.append(callback)
    env.schedule(ev, priority, delay)


class MaxMinSharing:
    """Rate recomputation of the flow network (a mixin: the state is the network's)."""

    # -- rate recomputation --------------------------------------------------------------
    def _arm_recompute(self) -> None:
        if not self._recompute_armed:
            self._recompute_armed = True
            call_at(self.env, 0.0, LAZY, self._recompute)

    def _component(self, seeds: dict[int, None]) -> list[_Flow]:
        """All flows connected to the ``seeds`` links through shared links (breadth-first,
        one frontier of links at a time so that the inner loops run in C)."""
        on_link = self._on_link
        comp: dict[int, _Flow] = {}
        seen = set(seeds)
        frontier = seen
        while frontier:
            found: dict[int, _Flow] = {}
            for lk in frontier:
                d = on_link[lk]
                if d:
                    found.update(d)
            new = found.keys() - comp.keys()
            if not new:
                break
            fresh = [found[fid] for fid in new]
            comp.update(zip(new, fresh))
            frontier = set(chain.from_iterable(f.route for f in fresh))
            frontier -= seen
            seen |= frontier
        return list(comp.values())

    def _upper_component(self, seeds: dict[int, None], theta: float
                         ) -> tuple[list[_Flow], dict[int, float]]:
        """Flows at or above ``theta`` (or not rated yet) connected to ``seeds`` through such
        flows, and every visited link's capacity minus what the flows below ``theta`` use."""
        on_link = self._on_link
        cap = self._cap_list
        lim = theta * _THETA_SLACK
        comp: dict[int, _Flow] = {}
        residual: dict[int, float] = {}
        frontier = list(seeds)
        while frontier:
            fresh = []
            for lk in frontier:
                low = 0.0
                d = on_link[lk]
                if d:
                    for fid, f in d.items():
                        r = f.rate
                        if r >= lim or r == 0.0:
                            if fid not in comp:
                                comp[fid] = f
                                fresh.append(f)
                        else:
                            low += r * f.route.count(lk) if f.info.repeats else r
                residual[lk] = cap[lk] - low
            frontier = [lk for lk in set(chain.from_iterable(f.route for f in fresh))
                        if lk not in residual]
        return list(comp.values()), residual

    def _recompute(self, _ev: simpy.Event) -> None:
        self._recompute_armed = False
        dirty, self._dirty = self._dirty, {}
        now = self.env.now
        theta = self._theta if self._theta_time == now else 0.0
        if theta > 0.0:
            flows, residual = self._upper_component(dirty, theta)
        else:
            flows, residual = self._component(dirty), None
        if flows:
            self.recomputations += 1
            if len(flows) == 1 and residual is None:
                rates = [flows[0].info.lone]
            else:
                rates = self._fill(flows, residual)
                if residual is not None and min(rates) <= 0.0:
                    # rounding left no capacity to share: refill the whole component instead
                    flows = self._component(dirty)
                    rates = self._fill(flows, None)
            heap = self._heap
            for f, r in zip(flows, rates):
                if r == f.rate:
                    continue  # unchanged rate: finish time and heap entry still valid
                rem = f.remaining - f.rate * (now - f.t_last)
                f.remaining = rem if rem > 0.0 else 0.0
                f.t_last = now
                f.rate = r
                f.version += 1
                heapq.heappush(heap, (now + f.remaining / r, f.fid, f.version, f))
        self._arm_wake()

    def _fill(self, flows: list[_Flow], residual: dict[int, float] | None) -> list[float]:
        """Max-min rates of ``flows`` over ``residual`` capacities (default: full capacity);
        numpy for big components, plain Python for small ones."""
        if len(flows) <= _SMALL_COMPONENT:
            return self._fill_small(flows, residual)
        inc = np.concatenate([f.info.links(f.route) for f in flows])
        lengths = np.fromiter((len(f.route) for f in flows), dtype=np.int64, count=len(flows))
        owner = np.repeat(np.arange(len(flows), dtype=np.int64), lengths)
        used, local = np.unique(inc, return_inverse=True)
        if residual is None:
            cap = self._cap[used]
        else:
            cap = np.fromiter((residual[lk] for lk in used.tolist()), dtype=float,
                              count=len(used))
        return progressive_fill(local, owner, cap, len(flows)).tolist()

    def _fill_small(self, flows: list[_Flow], residual: dict[int, float] | None
                    ) -> list[float]:
        """Progressive filling in plain Python: numpy's per-call cost dominates below a few
        dozen flows.  Same rounds and tolerance as :func:`progressive_fill`."""
        cap = self._cap_list if residual is None else residual
        rem: dict[int, float] = {}
        cnt: dict[int, int] = {}
        for f in flows:
            for lk in f.route:
                c = cnt.get(lk)
                if c is None:
                    cnt[lk] = 1
                    rem[lk] = cap[lk]
                else:
                    cnt[lk] = c + 1
        rates = [0.0] * len(flows)
        active = list(range(len(flows)))
        while active:
            share = {lk: (r if (r := rem[lk]) > 0.0 else 0.0) / c for lk, c in cnt.items()}
            s = min(share.values())
            lim = s * (1 + _REL_TOL) + 1e-300
            bottleneck = {lk for lk, x in share.items() if x <= lim}
            still = []
            for i in active:
                route = flows[i].route
                if bottleneck.isdisjoint(route):
                    still.append(i)
                    continue
                rates[i] = s
                for lk in route:
                    rem[lk] -= s
                    c = cnt[lk] - 1
                    if c:
                        cnt[lk] = c
                    else:
                        del cnt[lk]
            active = still
        return rates
