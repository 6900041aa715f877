"""Flow-level network engine on SimPy: max-min fair sharing, recomputed incrementally.

A transfer is a *flow* along a route of link resources.  It first pays
``params.overhead + sum of hop latencies`` without using bandwidth (the first byte travelling),
then its bytes drain at the max-min fair rate (progressive filling over
``capacity * params.efficiency``), a rate that changes whenever another flow sharing a link,
directly or through a chain of flows, starts or finishes.  This is the model SimGrid validated
for decades (Velho & Legrand, "Accuracy study and improvement of network simulation in the
SimGrid framework", SIMUTools 2009); packet effects (slow start, incast collapse) are out of
scope and belong in calibrated ``params``.  With a piecewise protocol table
(``params.protocols``, fitted per link class by calibration) a message's overhead and the
bytes it is charged depend on its size: see :mod:`clustersim.network.params`.

Why it is built this way (the simulator runs compute and collectives of hundreds of workers on
one network, so the engine is the hot loop):

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
* **One pending SimPy wake-up.**  First-byte arrivals and finish times live in heaps; finish
  entries carry a version per flow.  A single SimPy wake-up is armed for the earliest timer.
  A rate change pushes a new heap entry and bumps the version, so old entries and superseded
  wake-ups are ignored when they surface (cancel-by-ignoring: SimPy has no event
  cancellation).
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
#: rates within this factor below the threshold still count as "at the threshold" (refilled)
_THETA_SLACK = 1 - 1e-9
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
    __slots__ = ("fid", "route", "info", "size", "remaining", "rate", "t_last", "version",
                 "group", "done")

    def __init__(self, fid: int, route: tuple[int, ...], info: _RouteInfo, size: float,
                 group: _Group) -> None:
        self.fid = fid
        self.route = route
        self.info = info
        self.size = size
        self.remaining = size
        self.rate = 0.0  # 0 until rated: "new in this batch"
        self.t_last = 0.0
        self.version = 0
        self.group = group
        self.done = False


class _RouteInfo:
    """What the engine needs of a route, computed once per distinct route.

    ``latency`` includes ``params.overhead``; ``hops`` is the bare sum of hop latencies and
    ``link_class`` the class of its narrowest link (which picks a protocol table, if any).
    """

    __slots__ = ("latency", "lone", "repeats", "_links", "hops", "link_class")

    def __init__(self, route: tuple[int, ...], latency: float, lone: float,
                 hops: float = 0.0, link_class: str | None = None) -> None:
        self.latency = latency
        self.lone = lone
        self.repeats = len(set(route)) != len(route)
        self._links: np.ndarray | None = None
        self.hops = hops
        self.link_class = link_class

    def links(self, route: tuple[int, ...]) -> np.ndarray:
        if self._links is None:
            self._links = np.array(route, dtype=np.int64)
        return self._links


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
    included) and ``recomputations`` (max-min refills that had at least one flow to rate; a
    flow alone on its links is rated without one).
    """

    def __init__(self, env: simpy.Environment, capacity: np.ndarray, latency: np.ndarray,
                 params: NetworkParams = NetworkParams(),
                 link_kinds: Sequence[str] | None = None,
                 link_transports: Sequence[str | None] | None = None) -> None:
        cap = np.asarray(capacity, dtype=float)
        lat = np.asarray(latency, dtype=float)
        if cap.ndim != 1 or cap.shape != lat.shape:
            raise ValueError(f"capacity {cap.shape} and latency {lat.shape} must be equal 1-D")
        if cap.size and not (cap > 0).all():
            raise ValueError("every link capacity must be > 0")
        if lat.size and not (lat >= 0).all():
            raise ValueError("every link latency must be >= 0")
        if link_kinds is not None and len(link_kinds) != cap.size:
            raise ValueError(f"{len(link_kinds)} link kinds for {cap.size} links")
        self.env = env
        self.params = params
        # piecewise protocols (NetworkParams.protocols) need each link's class, transports
        # each link's transport: together, each link's protocol table key
        self._kinds: tuple[str, ...] | None = params.link_keys(link_kinds, link_transports)
        self._weights = params.weights
        self._protocols = params.tabled
        self._coll_charge = params.collective_efficiency != 1.0
        self._cap = cap * params.efficiency
        self._cap_list: list[float] = self._cap.tolist()
        self._lat_list: list[float] = lat.tolist()
        self._on_link: list[dict[int, _Flow] | None] = [None] * cap.size
        self._live: dict[int, _Flow] = {}
        self._route_info: dict[tuple[int, ...], _RouteInfo] = {}
        self._repeats_live = 0  # live flows that cross some link twice
        self._next_fid = 0
        # the batch being collected at the current instant
        self._dirty: dict[int, None] = {}
        self._theta = math.inf
        self._theta_time = -math.inf
        self._recompute_armed = False
        # timers: (finish, fid, version, flow) and (first byte, seq, flows); one SimPy wake-up
        self._heap: list[tuple[float, int, int, _Flow]] = []
        self._arrivals: list[tuple[float, int, list[_Flow]]] = []
        self._seq = 0
        self._wake_time = math.inf
        self._wake_version = 0
        self.flows_started = 0
        self.flows_finished = 0
        self.recomputations = 0

    @classmethod
    def for_platform(cls, env: simpy.Environment, platform,
                     params: NetworkParams = NetworkParams()) -> FlowNetwork:
        """A network over a :class:`~clustersim.platform.model.Platform`'s link resources
        (their classes included, for ``params.protocols``); under an adaptive routing policy,
        an :class:`~clustersim.network.adaptive.AdaptiveFlowNetwork` that routes flows as
        they start."""
        if getattr(platform, "adaptive", False) and cls is FlowNetwork:
            from clustersim.network.adaptive import AdaptiveFlowNetwork

            return AdaptiveFlowNetwork(env, platform, params)
        return cls(env, platform.capacity, platform.latency, params,
                   getattr(platform, "link_kind", None),
                   getattr(platform, "link_transport", None))

    # -- public API ----------------------------------------------------------------------
    def transfer(self, route: Sequence[int], nbytes: float) -> simpy.Event:
        """Send ``nbytes`` along ``route``; the event succeeds when the last byte arrives."""
        ev = simpy.Event(self.env)
        self._start((tuple(route),), (nbytes,), _Group(ev, 1))
        return ev

    def transfer_all(self, routes: Sequence[Sequence[int]],
                     nbytes: Sequence[float] | float, *, collective: bool = False
                     ) -> simpy.Event:
        """Start several flows at once; the event succeeds when *all* have arrived.

        Equivalent to ``AllOf`` over :meth:`transfer` events, with one event instead of one
        per flow (a collective step of 4,000 transfers is one wait).  ``collective``: the
        flows are a collective schedule's transfers, charged its collective efficiency
        (:meth:`NetworkParams.message_cost`).
        """
        routes = [r if type(r) is tuple else tuple(r) for r in routes]
        sizes = [float(nbytes)] * len(routes) if np.isscalar(nbytes) else list(nbytes)
        if len(sizes) != len(routes):
            raise ValueError(f"{len(routes)} routes but {len(sizes)} sizes")
        ev = simpy.Event(self.env)
        if not routes:
            return ev.succeed()
        self._start(routes, sizes, _Group(ev, len(routes)), collective)
        return ev

    def message_latency(self, route: Sequence[int], nbytes: float = 0.0) -> float:
        """Time before the first byte of an ``nbytes`` message on ``route`` arrives: the
        per-message overhead (the protocol segment's, if any) plus the hop latencies.
        An empty route (local copy) costs nothing."""
        route = route if type(route) is tuple else tuple(route)
        if not route:
            return 0.0
        info = self._info(route)
        if self._protocols:
            return self._message(info, float(nbytes))[0]
        return info.latency

    def message_plan(self, route: Sequence[int], nbytes: float) -> tuple[float, float]:
        """(time before the first byte arrives, bytes to drain at ``capacity * efficiency``)
        of one point-to-point message: the same protocol costs the analytic point-to-point
        model (:mod:`clustersim.network.queueing`) must charge."""
        route = route if type(route) is tuple else tuple(route)
        if not route:
            return 0.0, 0.0
        return self._message(self._info(route), float(nbytes))

    def _message(self, info: _RouteInfo, size: float, collective: bool = False
                 ) -> tuple[float, float]:
        """(latency incl. overhead, bytes to drain) of one message under the protocol table
        and the collective efficiency."""
        ovh, charge = self.params.message_cost(size, info.link_class, collective)
        return info.hops + ovh, size * charge

    @property
    def active_flows(self) -> int:
        """Flows started and not yet arrived (latency phase included)."""
        return self.flows_started - self.flows_finished

    def snapshot(self) -> list[FlowState]:
        """Flows now in their bandwidth phase (in order of first-byte arrival), with the bytes
        each has left as of now."""
        now = self.env.now
        out = []
        for f in self._live.values():
            rem = max(f.remaining - f.rate * (now - f.t_last), 0.0)
            out.append(FlowState(f.fid, f.route, f.size, rem, f.rate))
        return out

    # -- starting flows ------------------------------------------------------------------
    def _info(self, route: tuple[int, ...]) -> _RouteInfo:
        """Latency (overhead included) and lone-flow rate of a route, cached.

        Plain loops rather than generator expressions: a 4,000-worker parameter server meets
        8,000 distinct routes per run, so this is on the set-up path of every large point."""
        info = self._route_info.get(route)
        if info is None:
            if not route:
                info = _RouteInfo(route, 0.0, math.inf)
            else:
                nlinks = len(self._cap_list)
                cap = self._cap_list
                lat = self._lat_list
                lone = math.inf
                narrowest = -1  # first link of the lowest capacity (the bottleneck's class)
                hop_lat = []
                for lk in route:
                    if not 0 <= lk < nlinks:
                        raise ValueError(f"route {route} names a link outside 0..{nlinks - 1}")
                    c = cap[lk]
                    share = c / route.count(lk)
                    if share < lone:
                        lone = share
                    if narrowest < 0 or c < cap[narrowest]:
                        narrowest = lk
                    hop_lat.append(lat[lk])
                hops = math.fsum(hop_lat)
                kinds = self._kinds
                if self._weights and kinds is not None:  # narrowest achievable bandwidth
                    w = self._weights
                    narrowest = min(route, key=lambda lk: (cap[lk] * w.get(kinds[lk], 1.0),
                                                           route.index(lk)))
                kind = kinds[narrowest] if kinds is not None else None
                info = _RouteInfo(route, self.params.overhead + hops, lone, hops, kind)
            self._route_info[route] = info
        return info

    def _start(self, routes: Sequence[tuple[int, ...]], sizes: Sequence[float],
               group: _Group, collective: bool = False) -> None:
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
            if self._protocols or (collective and self._coll_charge):
                lat, drain = self._message(info, size, collective)
                f = _Flow(fid, route, info, drain, group)
            else:
                lat = info.latency
                f = _Flow(fid, route, info, size, group)
            fid += 1
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

    def _lower_theta(self, level: float) -> None:
        """Record that a flow changed at ``level`` in the batch of the current instant."""
        now = self.env.now
        if self._theta_time != now:
            self._theta_time = now
            self._theta = level
        elif level < self._theta:
            self._theta = level

    def _arrive(self, flows: list[_Flow]) -> None:
        """First byte is at the destination: the flows start competing for bandwidth.

        A flow alone on all its links is rated at once (its narrowest link) without a
        refill; if another flow joins one of those links at the same instant, that link is
        dirty and the batch refill rates both.
        """
        now = self.env.now
        on_link = self._on_link
        dirty = self._dirty
        live = self._live
        cap = self._cap_list
        for f in flows:
            if f.size <= 0.0:
                self._finish(f)
                continue
            f.t_last = now
            fid = f.fid
            live[fid] = f
            alone = True
            bound = math.inf  # the new rate is at least min over links of cap / flows there
            for lk in f.route:
                d = on_link[lk]
                if d is None:
                    on_link[lk] = d = {fid: f}
                else:
                    if d:
                        alone = False
                    d[fid] = f
                share = cap[lk] / len(d)
                if share < bound:
                    bound = share
            info = f.info
            if info.repeats:
                self._repeats_live += 1
            if self._repeats_live:
                bound = 0.0  # flows crossing a link twice: the count above is no bound
            if alone:
                f.rate = info.lone
                f.version += 1
                heapq.heappush(self._heap, (now + f.size / f.rate, fid, f.version, f))
                self._lower_theta(f.rate)
            else:
                self._lower_theta(bound)
                for lk in f.route:
                    dirty[lk] = None
        if dirty:
            self._arm_recompute()
        else:
            self._arm_wake()

    # -- finishing flows -----------------------------------------------------------------
    def _finish(self, f: _Flow) -> None:
        """Retire ``f`` (arrived, or empty); its links' other flows may speed up."""
        f.done = True
        f.remaining = 0.0
        self.flows_finished += 1
        fid = f.fid
        if self._live.pop(fid, None) is not None:
            if f.info.repeats:
                self._repeats_live -= 1
            on_link = self._on_link
            dirty = self._dirty
            touched = False
            for lk in f.route:
                d = on_link[lk]
                d.pop(fid, None)
                if d:
                    dirty[lk] = None
                    touched = True
            if touched:
                self._lower_theta(f.rate)
                self._arm_recompute()
        g = f.group
        g.pending -= 1
        if g.pending == 0:
            g.event.succeed()

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
        while heap:
            t, _, ver, f = heap[0]
            if f.done or ver != f.version:
                heappop(heap)
                continue
            if t > horizon:
                left = f.remaining - f.rate * (now - f.t_last)
                if left > _REL_EPS * f.size:
                    break
            heappop(heap)
            self._finish(f)
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
