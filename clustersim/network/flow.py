"""Flow-level network engine on SimPy: max-min fair sharing, recomputed incrementally.

A transfer is a *flow* along a route of link resources.  It first pays
``params.overhead + sum of hop latencies`` without using bandwidth (the first byte travelling),
then its bytes drain at the max-min fair rate (progressive filling over
``capacity * params.efficiency``), a rate that changes whenever another flow sharing a link,
directly or through a chain of flows, starts or finishes.  This is the model SimGrid validated
for decades (Velho & Legrand, "Accuracy study and improvement of network simulation in the
SimGrid framework", SIMUTools 2009); packet effects (slow start, incast collapse) are out of
scope and belong in calibrated ``params``.

Why it is built this way (the simulator runs compute and collectives of hundreds of workers on
one network, so the engine is the hot loop):

* **Only the affected component is recomputed.**  A flow's max-min rate depends only on flows
  connected to it through shared links (transitively); on an arrival or departure the engine
  walks that connected component from the touched links and refills just those flows.  Flows
  elsewhere keep their rates and their pending finish times.
* **One recomputation per timestamp.**  Arrivals and departures only mark links dirty; the
  refill runs from one SimPy event scheduled at the same time with a priority *below*
  ``NORMAL``, so every ordinary event at that instant - including processes woken by flows
  that just finished and starting their next transfers - is processed first and lands in
  the same batch.
* **One pending completion event.**  Finish times live in a heap with a version per flow; a
  single SimPy wake-up is armed for the earliest one.  A rate change pushes a new heap entry
  and bumps the version, so old entries and superseded wake-ups are ignored when they surface
  (cancel-by-ignoring: SimPy has no event cancellation).
* **Lazy byte accounting.**  ``remaining`` is only brought up to date (``rate * elapsed``) when
  a flow's rate changes; a flow completes when its scheduled finish time is reached or what is
  left is below a relative epsilon of its size, so floating-point dust never spawns an extra
  event.

Re-entrancy: :meth:`FlowNetwork.transfer` only records the flow and schedules events; it never
runs other processes' code, so any number of SimPy processes (and callbacks) may call it at any
point of any event.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import simpy

from clustersim.network.maxmin import progressive_fill
from clustersim.network.params import NetworkParams

__all__ = ["FlowNetwork", "FlowState", "LAZY"]

#: SimPy priority of the rate recomputation: after URGENT (0) and NORMAL (1) events of the same
#: timestamp, so that all arrivals/departures of one instant are batched.
LAZY = 2

#: a flow whose undrained bytes are below this fraction of its size counts as arrived
_REL_EPS = 1e-9
#: components up to this many flows are filled in plain Python (see ``_fill_small``)
_SMALL_COMPONENT = 24
#: fair shares this close (relative) saturate in the same round, as in ``maxmin``
_REL_TOL = 1e-12
#: finish times this close (relative to the clock) are the same instant
_TIME_EPS = 1e-12


@dataclass(frozen=True)
class FlowState:
    """A snapshot of one flow in its bandwidth phase (see :meth:`FlowNetwork.snapshot`)."""

    flow_id: int
    route: tuple[int, ...]
    nbytes: float
    remaining: float
    rate: float


class _Group:
    """Flows whose common completion event fires when the last of them has arrived."""

    __slots__ = ("event", "pending")

    def __init__(self, event: simpy.Event, pending: int) -> None:
        self.event = event
        self.pending = pending


class _Flow:
    __slots__ = ("fid", "route", "links", "size", "remaining", "rate", "t_last", "version",
                 "group", "done")

    def __init__(self, fid: int, route: tuple[int, ...], links: np.ndarray, size: float,
                 group: _Group) -> None:
        self.fid = fid
        self.route = route
        self.links = links
        self.size = size
        self.remaining = size
        self.rate = 0.0
        self.t_last = 0.0
        self.version = 0
        self.group = group
        self.done = False


def _call_at(env: simpy.Environment, delay: float, priority: int, callback) -> None:
    """Schedule ``callback(event)`` after ``delay`` at ``priority`` (a bare, already-succeeded
    event: what :class:`simpy.Timeout` does, but with a chosen priority)."""
    ev = simpy.Event(env)
    ev._ok = True
    ev._value = None
    ev.callbacks.append(callback)
    env.schedule(ev, priority, delay)


class FlowNetwork:
    """Max-min fair flows over link resources, driven by a SimPy environment.

    ``capacity`` and ``latency`` are per link resource (bytes/s, s), indexed by the ids routes
    use (e.g. :attr:`Platform.capacity`, :attr:`Platform.latency`).

    Counters (ints): ``flows_started`` and ``flows_finished`` (every transfer, local copies
    included) and ``recomputations`` (rate refills that had at least one flow to rate).
    """

    def __init__(self, env: simpy.Environment, capacity: np.ndarray, latency: np.ndarray,
                 params: NetworkParams = NetworkParams()) -> None:
        cap = np.asarray(capacity, dtype=float)
        lat = np.asarray(latency, dtype=float)
        if cap.ndim != 1 or cap.shape != lat.shape:
            raise ValueError(f"capacity {cap.shape} and latency {lat.shape} must be equal 1-D")
        if cap.size and not (cap > 0).all():
            raise ValueError("every link capacity must be > 0")
        if lat.size and not (lat >= 0).all():
            raise ValueError("every link latency must be >= 0")
        self.env = env
        self.params = params
        self._cap = cap * params.efficiency
        self._lat = lat
        self._cap_list: list[float] = self._cap.tolist()
        self._lat_list: list[float] = lat.tolist()
        self._on_link: list[dict[int, _Flow] | None] = [None] * cap.size
        self._dirty: dict[int, None] = {}
        self._heap: list[tuple[float, int, int, _Flow]] = []  # (finish, fid, version, flow)
        self._arrivals: list[tuple[float, int, list[_Flow]]] = []  # (time, seq, flows)
        self._seq = 0
        self._route_info: dict[tuple[int, ...], tuple[float, np.ndarray, float]] = {}
        self._next_fid = 0
        self._recompute_armed = False
        self._wake_time = math.inf
        self._wake_version = 0
        self._live: dict[int, _Flow] = {}
        self.flows_started = 0
        self.flows_finished = 0
        self.recomputations = 0

    @classmethod
    def for_platform(cls, env: simpy.Environment, platform, params: NetworkParams = NetworkParams()
                     ) -> FlowNetwork:
        """A network over a :class:`~clustersim.platform.model.Platform`'s link resources."""
        return cls(env, platform.capacity, platform.latency, params)

    # -- public API ----------------------------------------------------------------------
    def transfer(self, route: tuple[int, ...], nbytes: float) -> simpy.Event:
        """Send ``nbytes`` along ``route``; the event succeeds when the last byte arrives."""
        ev = simpy.Event(self.env)
        self._start((tuple(route),), (nbytes,), _Group(ev, 1))
        return ev

    def transfer_all(self, routes: Sequence[tuple[int, ...]],
                     nbytes: Sequence[float] | float) -> simpy.Event:
        """Start several flows at once; the event succeeds when *all* have arrived.

        Equivalent to ``AllOf`` over :meth:`transfer` events, with one event instead of one
        per flow (a collective step of 4,000 transfers is one wait).
        """
        routes = [r if type(r) is tuple else tuple(r) for r in routes]
        sizes = [float(nbytes)] * len(routes) if np.isscalar(nbytes) else list(nbytes)
        if len(sizes) != len(routes):
            raise ValueError(f"{len(routes)} routes but {len(sizes)} sizes")
        ev = simpy.Event(self.env)
        if not routes:
            return ev.succeed()
        self._start(routes, sizes, _Group(ev, len(routes)))
        return ev

    @property
    def active_flows(self) -> int:
        """Flows started and not yet arrived (latency phase included)."""
        return self.flows_started - self.flows_finished

    def snapshot(self) -> list[FlowState]:
        """Flows now in their bandwidth phase, in start order, with bytes left as of now."""
        now = self.env.now
        out = []
        for f in self._live.values():
            rem = max(f.remaining - f.rate * (now - f.t_last), 0.0)
            out.append(FlowState(f.fid, f.route, f.size, rem, f.rate))
        return out

    # -- starting flows ------------------------------------------------------------------
    def _info(self, route: tuple[int, ...]) -> tuple[float, np.ndarray, float]:
        """(overhead + path latency, links as an array, lone-flow rate) of a route, cached."""
        info = self._route_info.get(route)
        if info is None:
            if not route:
                info = (0.0, np.zeros(0, dtype=np.int64), math.inf)
            else:
                nlinks = len(self._cap_list)
                for lk in route:
                    if not 0 <= lk < nlinks:
                        raise ValueError(f"route {route} names a link outside 0..{nlinks - 1}")
                cap = self._cap_list
                lone = min(cap[lk] / route.count(lk) for lk in route)
                lat = self.params.overhead + math.fsum(self._lat_list[lk] for lk in route)
                info = (lat, np.array(route, dtype=np.int64), lone)
            self._route_info[route] = info
        return info

    def _start(self, routes: Sequence[tuple[int, ...]], sizes: Sequence[float],
               group: _Group) -> None:
        for size in sizes:
            if not 0.0 <= size < math.inf:
                raise ValueError(f"transfer size must be finite and >= 0, got {size!r}")
        by_delay: dict[float, list[_Flow]] = {}
        now_arrivals: list[_Flow] = []
        info_get = self._route_info.get
        fid = self._next_fid
        local = 0
        for route, size in zip(routes, sizes):
            info = info_get(route)
            if info is None:
                info = self._info(route)
            if not route:  # local copy: no network time at all
                local += 1
                continue
            f = _Flow(fid, route, info[1], size, group)
            fid += 1
            lat = info[0]
            if lat > 0.0:
                lst = by_delay.get(lat)
                if lst is None:
                    by_delay[lat] = [f]
                else:
                    lst.append(f)
            else:
                now_arrivals.append(f)
        self._next_fid = fid
        self.flows_started += len(sizes)
        if local:
            self.flows_finished += local
            group.pending -= local
            if group.pending == 0:
                group.event.succeed()
        if now_arrivals:
            self._arrive(now_arrivals)
        if by_delay:
            now = self.env.now
            for lat, flows in by_delay.items():
                self._seq += 1
                heapq.heappush(self._arrivals, (now + lat, self._seq, flows))
            self._arm_wake()

    def _arrive(self, flows: list[_Flow]) -> None:
        """First byte is at the destination: the flows start competing for bandwidth.

        A flow alone on all its links is rated at once (its narrowest link) without a
        recomputation; if another flow joins one of those links at the same instant, that
        link is dirty and the batch recomputation rates both.
        """
        now = self.env.now
        on_link = self._on_link
        dirty = self._dirty
        live = self._live
        for f in flows:
            if f.size <= 0.0:
                self._finish(f)
                continue
            f.t_last = now
            fid = f.fid
            live[fid] = f
            alone = True
            for lk in f.route:
                d = on_link[lk]
                if d is None:
                    on_link[lk] = {fid: f}
                elif d:
                    d[fid] = f
                    alone = False
                else:
                    d[fid] = f
            if alone:
                rate = self._route_info[f.route][2]
                f.rate = rate
                f.version += 1
                heapq.heappush(self._heap, (now + f.size / rate, fid, f.version, f))
            else:
                for lk in f.route:
                    dirty[lk] = None
        if dirty:
            self._arm_recompute()
        else:
            self._arm_wake()

    # -- finishing flows -----------------------------------------------------------------
    def _group_done(self, group: _Group) -> None:
        group.pending -= 1
        if group.pending == 0:
            group.event.succeed()

    def _finish(self, f: _Flow) -> None:
        f.done = True
        f.remaining = 0.0
        self.flows_finished += 1
        if self._live.pop(f.fid, None) is not None:
            on_link = self._on_link
            dirty = self._dirty
            fid = f.fid
            for lk in f.route:
                d = on_link[lk]
                d.pop(fid, None)
                if d:
                    dirty[lk] = None
            if dirty:
                self._arm_recompute()
        self._group_done(f.group)

    def _wake(self, version: int) -> None:
        """The earliest timer is (probably) due: let arrivals in, finish flows that are done."""
        if version != self._wake_version:
            return  # superseded wake-up
        self._wake_time = math.inf
        now = self.env.now
        horizon = now + _TIME_EPS * max(abs(now), 1e-300)
        arrivals = self._arrivals
        heappop = heapq.heappop
        while arrivals and arrivals[0][0] <= horizon:
            self._arrive(heappop(arrivals)[2])
        heap = self._heap
        live = self._live
        on_link = self._on_link
        dirty = self._dirty
        finished = 0
        while heap:
            t, fid, ver, f = heap[0]
            if f.done or ver != f.version:
                heappop(heap)
                continue
            if t > horizon:
                left = f.remaining - f.rate * (now - f.t_last)
                if left > _REL_EPS * f.size:
                    break
            heappop(heap)
            # the flow has arrived: leave its links, tell its group
            f.done = True
            f.remaining = 0.0
            finished += 1
            del live[fid]
            for lk in f.route:
                d = on_link[lk]
                d.pop(fid, None)
                if d:  # flows left on this link may speed up
                    dirty[lk] = None
            g = f.group
            g.pending -= 1
            if g.pending == 0:
                g.event.succeed()
        self.flows_finished += finished
        if dirty:
            self._arm_recompute()
        self._arm_wake()

    def _arm_wake(self) -> None:
        """Make sure one wake-up is pending for the earliest timer (arrival or finish)."""
        heap = self._heap
        while heap and (heap[0][3].done or heap[0][2] != heap[0][3].version):
            heapq.heappop(heap)
        if len(heap) > 64 and len(heap) > 4 * len(self._live):
            # drop stale entries so the heap stays proportional to the live flows
            self._heap = heap = [e for e in heap if not e[3].done and e[2] == e[3].version]
            heapq.heapify(heap)
        t = heap[0][0] if heap else math.inf
        if self._arrivals and self._arrivals[0][0] < t:
            t = self._arrivals[0][0]
        if t < self._wake_time:
            self._wake_time = t
            self._wake_version += 1
            version = self._wake_version
            delay = max(t - self.env.now, 0.0)
            _call_at(self.env, delay, simpy.events.NORMAL,
                     lambda _ev, v=version: self._wake(v))

    # -- rate recomputation --------------------------------------------------------------
    def _arm_recompute(self) -> None:
        if not self._recompute_armed:
            self._recompute_armed = True
            _call_at(self.env, 0.0, LAZY, self._recompute)

    def _component(self, seeds: dict[int, None]) -> list[_Flow]:
        """Flows connected to the ``seeds`` links through shared links (breadth-first, one
        frontier of links at a time so that the inner loops run in C)."""
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

    def _recompute(self, _ev: simpy.Event) -> None:
        self._recompute_armed = False
        dirty, self._dirty = self._dirty, {}
        flows = self._component(dirty)
        if flows:
            self.recomputations += 1
            if len(flows) == 1:
                rates = [self._route_info[flows[0].route][2]]
            else:
                rates = self._fill(flows)
            now = self.env.now
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

    def _fill(self, flows: list[_Flow]) -> list[float]:
        """Max-min rates of one component (numpy for big ones, plain Python for small)."""
        if len(flows) <= _SMALL_COMPONENT:
            return self._fill_small(flows)
        inc = np.concatenate([f.links for f in flows])
        lengths = np.fromiter((len(f.route) for f in flows), dtype=np.int64, count=len(flows))
        owner = np.repeat(np.arange(len(flows), dtype=np.int64), lengths)
        used, local = np.unique(inc, return_inverse=True)
        return progressive_fill(local, owner, self._cap[used], len(flows)).tolist()

    def _fill_small(self, flows: list[_Flow]) -> list[float]:
        """Progressive filling in plain Python: numpy's per-call cost dominates below a few
        dozen flows.  Same rounds and tolerance as :func:`progressive_fill`."""
        cap = self._cap_list
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
