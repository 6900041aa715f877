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

* **Rates: incremental max-min** (:mod:`clustersim.network.sharing`): only the flows
  connected to a change are refilled, rates below the lowest changed level stay, and all
  changes of one timestamp are batched into one recomputation.
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
from typing import Any

import numpy as np
import simpy

from clustersim.network.flowrecords import FlowState, _Flow, _Group, _RouteInfo
from clustersim.network.params import NetworkParams
from clustersim.network.routecost import RouteCosting
from clustersim.network.sharing import LAZY, MaxMinSharing, call_at

__all__ = ["FlowNetwork", "FlowState", "LAZY"]

#: a flow whose undrained bytes are below this fraction of its size counts as arrived
_REL_EPS = 1e-9
#: finish times this close (relative to the clock) are the same instant
_TIME_EPS = 1e-12


#: per-link columns a network derives from its platform's (protocol keys, effective
#: capacities, both as lists), kept for the next network over the same arrays and
#: parameters: a 100,000-GPU platform has 314,000 links, and every engine makes a network
_LINK_COLUMNS: dict[tuple, tuple] = {}


def _link_columns(capacity: Any, latency: Any, cap: np.ndarray, lat: np.ndarray,
                  params: NetworkParams, kinds: Sequence[str] | None,
                  transports: Sequence[str | None] | None) -> tuple:
    """``(protocol keys, capacity x efficiency, that as a list, latencies as a list)``,
    memoised by the identity of the caller's (read-only) arrays and the parameters."""
    frozen = all(isinstance(a, np.ndarray) and not a.flags.writeable
                 for a in (capacity, latency))
    key = (id(capacity), id(latency), id(kinds), id(transports), params.efficiency,
           params.key_signature)
    hit = _LINK_COLUMNS.get(key) if frozen else None
    if hit is not None and hit[0] is capacity and hit[1] is latency and hit[2] is kinds \
            and hit[3] is transports:
        return hit[4]
    eff = cap * params.efficiency
    got = (params.link_keys(kinds, transports), eff, eff.tolist(), lat.tolist())
    if frozen:
        if len(_LINK_COLUMNS) > 16:
            _LINK_COLUMNS.clear()
        _LINK_COLUMNS[key] = (capacity, latency, kinds, transports, got)
    return got


class FlowNetwork(RouteCosting, MaxMinSharing):
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
        self._kinds, self._cap, self._cap_list, self._lat_list = _link_columns(
            capacity, latency, cap, lat, params, link_kinds, link_transports)
        self._weights = params.weights
        self._protocols = params.tabled
        self._coll_charge = params.collective_efficiency != 1.0
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
    def for_platform(cls, env: simpy.Environment, platform: Any,
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
            call_at(self.env, delay, simpy.events.NORMAL,
                     lambda _ev, v=version: self._wake(v))
