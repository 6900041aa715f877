"""The simulated backend: interprets actor generators on SimPy, the platform and the network.

Each actor (worker, server) is a SimPy process that pulls operations from its algorithm
generator and turns each into events:

* ``Compute``   -> a timeout whose length the :class:`~clustersim.sim.costs.CostModel` gives
  (roofline per layer, per device kind, times a seeded jitter factor);
* ``Collective``-> a rendezvous of the group (matched by call order, as in MPI); when the last
  member arrives, the collective's schedule runs on the flow network (``flow``) or is costed
  analytically from its schedule and cached (``analytic``); every member resumes at its end;
* ``Send``/``Recv`` -> a flow on the network and a mailbox per actor (point-to-point always
  runs at flow level, so incast at a parameter server is contention, not a formula);
* ``Wait``      -> waits for the handles of earlier non-blocking operations;
* ``Record``    -> a metric sample; ``Record("iteration", i)`` marks iteration boundaries.

Accounting per actor: ``compute`` (busy), ``comm`` (blocked on communication that was already
under way), ``wait`` (blocked because peers had not arrived yet: stragglers, or an empty
mailbox), and ``comm_total`` (time any of its communication was in flight, overlapped or not).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import simpy

from clustersim.algorithms.base import ActorSpec, JobInfo
from clustersim.algorithms.ops import (
    Collective,
    Compute,
    Handle,
    Message,
    Record,
    Recv,
    Send,
    Wait,
)
from clustersim.collectives import build_schedule
from clustersim.network.analytic import cost_schedule
from clustersim.network.flow import FlowNetwork
from clustersim.network.flowsim import schedule_process
from clustersim.network.params import NetworkParams
from clustersim.network.queueing import LinkQueues
from clustersim.platform.model import Platform
from clustersim.sim.mailbox import Mailbox
from clustersim.trace import TraceEvent

__all__ = ["Engine", "ActorStats", "RunResult", "COLLECTIVE_FLOW_MAX_RANKS",
           "P2P_FLOW_MAX_ACTORS", "DEFAULT_ALGORITHMS"]

#: schedule the engine uses for a collective that names no algorithm (a library call in the
#: real backend is costed with these too; calibration fits its overhead against them)
DEFAULT_ALGORITHMS: dict[str, str] = {
    "allreduce": "ring", "broadcast": "binomial", "reduce": "binomial", "allgather": "ring",
    "reduce_scatter": "ring", "alltoall": "pairwise", "barrier": "recursive_doubling"}

#: ``auto`` fidelity runs a collective flow by flow up to this group size, analytically above
#: (flow and analytic agree within 5% on the regular cases up to 64 ranks; see docs/fidelity.md).
COLLECTIVE_FLOW_MAX_RANKS = 16

#: ``auto`` fidelity runs point-to-point messages as flows (max-min sharing) up to this many
#: actors, and above it as FIFO link queues (clustersim.network.queueing: same link
#: throughput, O(hops) per message) - a parameter server with thousands of clients would
#: otherwise re-solve max-min over thousands of flows at every message.
P2P_FLOW_MAX_ACTORS = 64


@dataclass
class ActorStats:
    rank: int
    role: str
    device: int
    compute: float = 0.0
    comm: float = 0.0
    wait: float = 0.0
    comm_total: float = 0.0
    bytes_sent: float = 0.0
    iterations: list[float] = field(default_factory=list)  # start time of each iteration
    end: float = 0.0
    #: counters when the actor started its first measured iteration (after warmup)
    mark: tuple[float, float, float, float, float, float] | None = None
    records: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


@dataclass
class RunResult:
    """Everything one simulated run produced."""

    makespan: float
    actors: list[ActorStats]
    events: list[TraceEvent]
    flows: int
    sim_events: int


class _Group:
    """A collective group resolved once: members, their devices and machines."""

    __slots__ = ("gid", "members", "devices", "hosts", "shared")

    def __init__(self, gid: int, members: tuple[int, ...], devices: tuple[int, ...],
                 hosts: tuple[int, ...]) -> None:
        self.gid = gid
        self.members = members
        self.devices = devices
        self.hosts = hosts
        self.shared = len(set(devices)) < len(devices)


class _Rendezvous:
    """Arrivals at one collective instance: (actor index, arrival time, blocking)."""

    __slots__ = ("n", "parts", "done", "last")

    def __init__(self, env: simpy.Environment, n: int) -> None:
        self.n = n
        self.parts: list[tuple[int, float, bool]] = []
        self.done = env.event()
        self.last = 0.0


class Engine:
    """One simulated run of a set of actors placed on a platform."""

    def __init__(
        self,
        platform: Platform,
        job: JobInfo,
        actors: Sequence[ActorSpec],
        placement: Sequence[int],
        costs: Any,
        *,
        params: NetworkParams = NetworkParams(),
        fidelity: str = "auto",
        default_algorithms: dict[str, str] | None = None,
        trace: bool = False,
        until: float | None = None,
        warmup: int = 0,
    ) -> None:
        if len(placement) != len(actors):
            raise ValueError("one device per actor")
        self.platform = platform
        self.job = job
        self.actors = list(actors)
        self.placement = list(placement)
        self.costs = costs
        self.params = params
        self.fidelity = fidelity
        self.defaults = dict(DEFAULT_ALGORITHMS)
        self.defaults.update(default_algorithms or {})
        self.trace = trace
        self.until = until
        self.warmup = warmup
        self.env = simpy.Environment()
        self.net = FlowNetwork.for_platform(self.env, platform, params)
        queued = fidelity == "analytic" or (fidelity == "auto"
                                            and len(self.actors) > P2P_FLOW_MAX_ACTORS)
        self._queues = LinkQueues(platform.capacity, params.efficiency) if queued else None
        self.stats = [ActorStats(a.rank, a.role, self.placement[i])
                      for i, a in enumerate(self.actors)]
        self.events: list[TraceEvent] = []
        self._workers = tuple(a.rank for a in self.actors if a.role == "worker")
        self._rv: dict[tuple[int, int], _Rendezvous] = {}
        self._seq: list[dict[int, int]] = [{} for _ in self.actors]
        self._groups: dict[int, tuple[Any, _Group]] = {}
        self._by_members: dict[tuple[int, ...], _Group] = {}
        self._tail: dict[int, simpy.Event] = {}
        self._mail: list[Mailbox] = [Mailbox() for _ in self.actors]
        self._mail_wait: list[list[simpy.Event]] = [[] for _ in self.actors]
        self._handles: dict[int, tuple[simpy.Event, _Rendezvous | None]] = {}
        self._next_handle = 0
        self._sched_cache: dict[tuple, Any] = {}
        self._cost_cache: dict[tuple, float] = {}
        self._iter = [0] * len(self.actors)
        self._latency: dict[tuple[int, ...], float] = {}  # route -> header-only message time

    # -- running ---------------------------------------------------------------------------
    def run(self) -> RunResult:
        for i, a in enumerate(self.actors):
            self.env.process(self._actor(i, a))
        self.env.run(until=self.until)
        for st in self.stats:
            if not st.end:
                st.end = self.env.now
        # SimPy numbers every scheduled event from an itertools.count: the next id is the total
        scheduled = next(self.env._eid)  # noqa: SLF001
        return RunResult(self.env.now, self.stats, self.events, self.net.flows_started,
                         scheduled)

    def _actor(self, i: int, spec: ActorSpec):
        """The interpreter loop: the hot path of every simulation, kept flat on purpose
        (no sub-generators for blocking compute and collectives).

        Consecutive blocking ``Compute`` and ``Record`` operations are run ahead of the clock
        and waited for with *one* timeout (``ahead`` holds the compute time not yet waited
        for): they touch nothing but the actor itself, so only the number of SimPy events
        changes - a worker's forward, backward and update become one event instead of three.
        Any other operation first waits out ``ahead``.
        """
        env = self.env
        gen = spec.start(self.job)
        st = self.stats[i]
        device = self.placement[i]
        cost = self.costs.compute
        timeout = env.timeout
        trace = self.trace
        value: Any = None
        send = gen.send
        ahead = 0.0
        while True:
            try:
                op = send(value)
            except StopIteration:
                break
            value = None
            kind = type(op)
            if kind is Compute and op.blocking:
                dt = cost(op, spec, device, self._iter[i])
                if trace:
                    t = env.now + ahead
                    self._ev(i, "compute", t, t + dt, op.label or op.phase)
                ahead += dt
                st.compute += dt
                if op.fn is not None:
                    value = op.fn(op.data)
                continue
            if kind is Record:
                now = env.now + ahead
                if op.key == "iteration":
                    st.iterations.append(now)
                    self._iter[i] = int(op.value)
                    if op.value == self.warmup:
                        st.mark = (st.compute, st.comm, st.wait, st.comm_total, st.bytes_sent,
                                   now)
                else:
                    st.records[op.key].append(float(op.value))
                    if trace:
                        self._ev(i, "record", now, now, op.key, value=float(op.value))
                continue
            if ahead > 0:
                yield timeout(ahead)
                ahead = 0.0
            t0 = env.now
            if kind is Compute:  # non-blocking: runs beside the actor
                value = self._spawn(self._compute(i, spec, op))
            elif kind is Collective:
                rv = self._arrive(i, op)
                if op.blocking:
                    yield rv.done
                    value = rv.done.value
                else:
                    value = self._handle(rv.done, rv)
            elif kind is Send:
                ev = self._start_send(i, op)
                if op.blocking:
                    if ev is not None:
                        yield ev
                else:
                    if ev is None:  # a local copy is delivered at once
                        ev = env.event()
                        ev.succeed()
                    value = self._handle(ev)
            elif kind is Recv:
                if op.blocking:
                    value = yield from self._recv(i, op)
                else:
                    value = self._spawn(self._recv(i, op))
            elif kind is Wait:
                entries = [self._handles.pop(h.id) for h in op.handles]
                pending = [e for e, _ in entries if not e.processed]
                if pending:
                    yield pending[0] if len(pending) == 1 else env.all_of(pending)
                blocked = env.now - t0
                if blocked > 0:
                    # the part before the last peer arrived is waiting for stragglers
                    lasts = [rv.last for _, rv in entries if rv is not None]
                    waited = min(max(max(lasts, default=t0) - t0, 0.0), blocked)
                    st.wait += waited
                    st.comm += blocked - waited
                    if trace:
                        self._ev(i, "wait", t0, env.now, "wait handles")
                value = [e.value for e, _ in entries]
            else:
                raise TypeError(f"actor {spec.rank} yielded {op!r}, not an operation")
        if ahead > 0:
            yield timeout(ahead)
        st.end = env.now
        st.iterations.append(env.now)
        if st.mark is None:  # servers (no iterations) or runs shorter than the warmup
            st.mark = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)

    def _compute(self, i: int, spec: ActorSpec, op: Compute):
        """Non-blocking compute (runs beside the actor)."""
        env = self.env
        t0 = env.now
        dt = self.costs.compute(op, spec, self.placement[i], self._iter[i])
        if dt > 0:
            yield env.timeout(dt)
        self.stats[i].compute += dt
        if self.trace:
            self._ev(i, "compute", t0, env.now, op.label or op.phase)
        return op.fn(op.data) if op.fn is not None else None

    def _handle(self, event: simpy.Event, rv: _Rendezvous | None = None) -> Handle:
        h = Handle(self._next_handle)
        self._next_handle += 1
        self._handles[h.id] = (event, rv)
        return h

    def _spawn(self, proc) -> Handle:
        return self._handle(self.env.process(proc))

    def _ev(self, i: int, kind: str, t0: float, t1: float, label: str = "", **kw: Any) -> None:
        a = self.actors[i]
        self.events.append(TraceEvent(a.rank, a.role, kind, t0, t1, label,
                                      iteration=self._iter[i], **kw))

    # -- collectives -------------------------------------------------------------------------
    def _group(self, members: tuple[int, ...] | None) -> _Group:
        """Resolve a group: by tuple identity first (hashing a 4,000-rank tuple on every call
        would dominate the run), then by content, so equal groups built separately by
        different actors still meet in one rendezvous."""
        key = id(members)
        hit = self._groups.get(key)
        if hit is not None and hit[0] is members:
            return hit[1]
        ranks = self._workers if members is None else tuple(members)
        g = self._by_members.get(ranks)
        if g is None:
            devices = tuple(self.placement[r] for r in ranks)
            g = _Group(len(self._by_members), ranks, devices,
                       tuple(self.platform.host(d) for d in devices))
            self._by_members[ranks] = g
        self._groups[key] = (members, g)  # keeps `members` alive, so its id is not reused
        return g

    def _arrive(self, i: int, op: Collective) -> _Rendezvous:
        g = self._group(op.group)
        seqs = self._seq[i]
        seq = seqs.get(g.gid, 0)
        seqs[g.gid] = seq + 1
        key = (g.gid, seq)
        rv = self._rv.get(key)
        if rv is None:
            rv = self._rv[key] = _Rendezvous(self.env, len(g.members))
        rv.parts.append((i, self.env.now, op.blocking))
        if len(rv.parts) == rv.n:
            del self._rv[key]
            rv.last = self.env.now
            # collectives of one group run in order, as on one NCCL stream / MPI communicator:
            # a bucket's all-reduce starts when the previous one has finished
            prev = self._tail.get(g.gid)
            self._tail[g.gid] = rv.done
            self.env.process(self._run_collective(op, g, rv, prev))
        return rv

    def _settle(self, op: Collective, rv: _Rendezvous) -> None:
        """Account a finished collective for every member at once."""
        now = self.env.now
        busy = now - rv.last
        for i, t_arr, blocking in rv.parts:
            st = self.stats[i]
            st.comm_total += busy
            st.bytes_sent += op.nbytes
            if blocking:
                st.wait += rv.last - t_arr
                st.comm += busy
            if self.trace:
                if blocking and rv.last > t_arr:
                    self._ev(i, "wait", t_arr, rv.last, f"wait for {op.op}")
                self._ev(i, op.op, rv.last, now, op.label or op.op, nbytes=op.nbytes)

    def _schedule(self, op: Collective, g: _Group):
        alg = op.algorithm or self.defaults.get(op.op, "ring")
        nbytes = op.nbytes if op.op != "barrier" else 1.0
        name = "allreduce" if op.op == "barrier" else op.op
        key = (name, alg, g.gid, nbytes, op.fp16, op.root)
        s = self._sched_cache.get(key)
        if s is None:
            s = build_schedule(name, alg, len(g.devices), nbytes, hosts=list(g.hosts),
                               root=op.root, fp16=op.fp16)
            self._sched_cache[key] = s
        return s

    def _run_collective(self, op: Collective, g: _Group, rv: _Rendezvous,
                        prev: simpy.Event | None = None):
        if prev is not None and not prev.processed:
            yield prev
        devices = g.devices
        if len(devices) > 1 and not g.shared:
            sched = self._schedule(op, g)
            flow = self.fidelity == "flow" or (
                self.fidelity == "auto" and len(devices) <= COLLECTIVE_FLOW_MAX_RANKS)
            staging = self.costs.staging_time(op, devices)
            if staging:
                yield self.env.timeout(staging)
            if flow:
                yield self.env.process(schedule_process(self.env, self.net, sched, self.platform,
                                                        list(devices)))
            else:
                ck = (id(sched), g.gid)
                t = self._cost_cache.get(ck)
                if t is None:
                    t = float(cost_schedule(sched, self.platform, list(devices),
                                            self.params).time)
                    self._cost_cache[ck] = t
                yield self.env.timeout(t)
            if staging:
                yield self.env.timeout(staging)
        # actors sharing a device (or a group of one) exchange through memory: no network time
        self._settle(op, rv)
        rv.done.succeed(op.data)

    def _index(self, rank: int) -> int:
        # actor ranks are 0..n-1 in list order (checked by the sweep runner)
        return rank

    # -- point to point ----------------------------------------------------------------------
    def _start_send(self, i: int, op: Send) -> simpy.Event | None:
        """Start a point-to-point message; the returned event fires when it has arrived
        (``None``: delivered already, sender and receiver share a device).

        The message is delivered and accounted by a callback of the transfer event, so a
        non-blocking send needs no process of its own.  A header-only message (``nbytes`` 0)
        never competes for bandwidth: it takes the route's latency (plus the per-message
        overhead), exactly what a zero-byte flow takes, without the flow bookkeeping - and is
        therefore not counted in ``RunResult.flows``.
        """
        j = self._index(op.dst)
        route = self.platform.route(self.placement[i], self.placement[j])
        t0 = self.env.now
        if not route:
            self._sent(i, op, t0)
            return None
        if op.nbytes > 0 and self._queues is not None:
            lat, drain = self.net.message_plan(route, op.nbytes)
            ev = self.env.timeout(self._queues.reserve(route, drain, t0, lat) - t0)
        elif op.nbytes > 0:
            ev = self.net.transfer(route, op.nbytes)
        else:
            lat = self._latency.get(route)
            if lat is None:
                lat = self._latency[route] = self.net.message_latency(route, 0.0)
            ev = self.env.timeout(lat)
        ev.callbacks.append(lambda _ev: self._sent(i, op, t0))
        return ev

    def _sent(self, i: int, op: Send, t0: float) -> None:
        """The message has arrived: deliver it and account the sender's time."""
        env = self.env
        st = self.stats[i]
        self._deliver(self._index(op.dst), Message(self.actors[i].rank, op.tag, op.nbytes,
                                                   op.data, t0))
        st.bytes_sent += op.nbytes
        st.comm_total += env.now - t0
        if op.blocking:
            st.comm += env.now - t0
        if self.trace:
            self._ev(i, "send", t0, env.now, op.label or "send", nbytes=op.nbytes, peer=op.dst)

    def _deliver(self, j: int, msg: Message) -> None:
        self._mail[j].put(msg)
        waiters, self._mail_wait[j] = self._mail_wait[j], []
        for ev in waiters:
            ev.succeed()

    def _recv(self, i: int, op: Recv):
        env = self.env
        st = self.stats[i]
        t0 = env.now
        box = self._mail[i]
        while True:
            m = box.take(op.src, op.tag)
            if m is not None:
                if op.blocking:
                    st.wait += env.now - t0
                if self.trace and env.now > t0:
                    self._ev(i, "recv", t0, env.now, op.label or "recv", nbytes=m.nbytes,
                             peer=m.src)
                return m
            if op.poll:
                return None
            ev = env.event()
            self._mail_wait[i].append(ev)
            yield ev
