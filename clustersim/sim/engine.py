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
    ANY,
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
from clustersim.platform.model import Platform
from clustersim.trace import TraceEvent

__all__ = ["Engine", "ActorStats", "RunResult", "COLLECTIVE_FLOW_MAX_RANKS"]

#: ``auto`` fidelity runs a collective flow by flow up to this group size, analytically above
#: (flow and analytic agree within 5% on the regular cases up to 64 ranks; see docs/fidelity.md).
COLLECTIVE_FLOW_MAX_RANKS = 16


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


class _Rendezvous:
    __slots__ = ("n", "arrived", "done", "last")

    def __init__(self, env: simpy.Environment, n: int) -> None:
        self.n = n
        self.arrived = 0
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
        self.defaults = {"allreduce": "ring", "broadcast": "binomial", "reduce": "binomial",
                         "allgather": "ring", "reduce_scatter": "ring", "alltoall": "pairwise",
                         "barrier": "recursive_doubling"}
        self.defaults.update(default_algorithms or {})
        self.trace = trace
        self.until = until
        self.warmup = warmup
        self.env = simpy.Environment()
        self.net = FlowNetwork(self.env, platform.capacity, platform.latency, params)
        self.stats = [ActorStats(a.rank, a.role, self.placement[i])
                      for i, a in enumerate(self.actors)]
        self.events: list[TraceEvent] = []
        self._workers = tuple(a.rank for a in self.actors if a.role == "worker")
        self._rv: dict[tuple, _Rendezvous] = {}
        self._seq: dict[tuple[int, tuple], int] = defaultdict(int)
        self._mail: list[list[Message]] = [[] for _ in self.actors]
        self._mail_wait: list[list[simpy.Event]] = [[] for _ in self.actors]
        self._handles: dict[int, simpy.Event] = {}
        self._next_handle = 0
        self._sched_cache: dict[tuple, Any] = {}
        self._cost_cache: dict[tuple, float] = {}
        self._iter = [0] * len(self.actors)

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
        env = self.env
        gen = spec.start(self.job)
        st = self.stats[i]
        value: Any = None
        while True:
            try:
                op = gen.send(value)
            except StopIteration:
                break
            value = None
            t0 = env.now
            if isinstance(op, Compute):
                if op.blocking:
                    value = yield from self._compute(i, spec, op)
                else:
                    value = self._spawn(self._compute(i, spec, op))
            elif isinstance(op, Collective):
                proc = self._collective(i, op)
                if op.blocking:
                    value = yield from proc
                else:
                    value = self._spawn(proc)
            elif isinstance(op, Send):
                proc = self._send(i, op)
                if op.blocking:
                    value = yield from proc
                else:
                    value = self._spawn(proc)
            elif isinstance(op, Recv):
                proc = self._recv(i, op)
                if op.blocking:
                    value = yield from proc
                else:
                    value = self._spawn(proc)
            elif isinstance(op, Wait):
                evs = [self._handles.pop(h.id) for h in op.handles]
                pending = [e for e in evs if not e.processed]
                if pending:
                    yield env.all_of(pending)
                st.comm += env.now - t0
                if self.trace and env.now > t0:
                    self._ev(i, "wait", t0, env.now, "wait handles")
                value = [e.value for e in evs]
            elif isinstance(op, Record):
                if op.key == "iteration":
                    st.iterations.append(env.now)
                    self._iter[i] = int(op.value)
                    if op.value == self.warmup:
                        st.mark = (st.compute, st.comm, st.wait, st.comm_total, st.bytes_sent,
                                   env.now)
                else:
                    st.records[op.key].append(float(op.value))
                    if self.trace:
                        self._ev(i, "record", env.now, env.now, op.key, value=float(op.value))
            else:
                raise TypeError(f"actor {spec.rank} yielded {op!r}, not an operation")
        st.end = env.now
        st.iterations.append(env.now)
        if st.mark is None:  # servers (no iterations) or runs shorter than the warmup
            st.mark = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)

    def _compute(self, i: int, spec: ActorSpec, op: Compute):
        env = self.env
        t0 = env.now
        dt = self.costs.compute(op, spec, self.placement[i], self._iter[i])
        if dt > 0:
            yield env.timeout(dt)
        self.stats[i].compute += dt
        if self.trace:
            self._ev(i, "compute", t0, env.now, op.label or op.phase)
        return op.fn(op.data) if op.fn is not None else None

    def _spawn(self, proc) -> Handle:
        h = Handle(self._next_handle)
        self._next_handle += 1
        self._handles[h.id] = self.env.process(proc)
        return h

    def _ev(self, i: int, kind: str, t0: float, t1: float, label: str = "", **kw: Any) -> None:
        a = self.actors[i]
        self.events.append(TraceEvent(a.rank, a.role, kind, t0, t1, label,
                                      iteration=self._iter[i], **kw))

    # -- collectives -------------------------------------------------------------------------
    def _collective(self, i: int, op: Collective):
        env = self.env
        st = self.stats[i]
        group = op.group if op.group is not None else self._workers
        key_seq = (i, group)
        seq = self._seq[key_seq]
        self._seq[key_seq] = seq + 1
        key = (group, seq)
        rv = self._rv.get(key)
        if rv is None:
            rv = self._rv[key] = _Rendezvous(env, len(group))
        rv.arrived += 1
        t_arrive = env.now
        if rv.arrived == rv.n:
            del self._rv[key]
            rv.last = env.now
            env.process(self._run_collective(op, group, rv))
        yield rv.done
        wait = rv.last - t_arrive
        busy = env.now - rv.last
        st.wait += wait
        st.comm_total += busy
        if op.blocking:
            st.comm += busy
        if group and self.actors[i].rank == group[0]:
            st.bytes_sent += op.nbytes
        if self.trace:
            if wait > 0:
                self._ev(i, "wait", t_arrive, rv.last, f"wait for {op.op}")
            self._ev(i, op.op, rv.last, env.now, op.label or op.op, nbytes=op.nbytes)
        return rv.done.value

    def _schedule(self, op: Collective, devices: tuple[int, ...]):
        alg = op.algorithm or self.defaults.get(op.op, "ring")
        hosts = tuple(self.platform.host(d) for d in devices)
        nbytes = op.nbytes if op.op != "barrier" else 1.0
        name = "allreduce" if op.op == "barrier" else op.op
        key = (name, alg, len(devices), nbytes, hosts, op.fp16, op.root)
        s = self._sched_cache.get(key)
        if s is None:
            s = build_schedule(name, alg, len(devices), nbytes, hosts=list(hosts), root=op.root,
                               fp16=op.fp16)
            self._sched_cache[key] = s
        return s

    def _run_collective(self, op: Collective, group: tuple[int, ...], rv: _Rendezvous):
        devices = tuple(self.placement[self._index(r)] for r in group)
        if len(set(devices)) < len(devices):
            # actors sharing a device exchange through memory: only the reduction costs
            yield self.env.timeout(0.0)
        elif len(devices) > 1 and op.nbytes >= 0:
            sched = self._schedule(op, devices)
            flow = self.fidelity == "flow" or (
                self.fidelity == "auto" and len(devices) <= COLLECTIVE_FLOW_MAX_RANKS)
            staging = self.costs.staging_time(op, devices)
            if staging:
                yield self.env.timeout(staging)
            if flow:
                yield self.env.process(schedule_process(self.env, self.net, sched, self.platform,
                                                        list(devices)))
            else:
                ck = (id(sched), devices)
                t = self._cost_cache.get(ck)
                if t is None:
                    t = float(cost_schedule(sched, self.platform, list(devices),
                                            self.params).time)
                    self._cost_cache[ck] = t
                yield self.env.timeout(t)
            if staging:
                yield self.env.timeout(staging)
        rv.done.succeed(op.data)

    def _index(self, rank: int) -> int:
        # actor ranks are 0..n-1 in list order (checked by the sweep runner)
        return rank

    # -- point to point ----------------------------------------------------------------------
    def _send(self, i: int, op: Send):
        env = self.env
        st = self.stats[i]
        t0 = env.now
        j = self._index(op.dst)
        route = self.platform.route(self.placement[i], self.placement[j])
        if route:
            yield self.net.transfer(route, op.nbytes)
        msg = Message(self.actors[i].rank, op.tag, op.nbytes, op.data, t0)
        self._deliver(j, msg)
        st.bytes_sent += op.nbytes
        st.comm_total += env.now - t0
        if op.blocking:
            st.comm += env.now - t0
        if self.trace:
            self._ev(i, "send", t0, env.now, op.label or "send", nbytes=op.nbytes, peer=op.dst)
        return None

    def _deliver(self, j: int, msg: Message) -> None:
        self._mail[j].append(msg)
        waiters, self._mail_wait[j] = self._mail_wait[j], []
        for ev in waiters:
            ev.succeed()

    def _recv(self, i: int, op: Recv):
        env = self.env
        st = self.stats[i]
        t0 = env.now
        box = self._mail[i]
        while True:
            for k, m in enumerate(box):
                if (op.src == ANY or m.src == op.src) and (op.tag == ANY or m.tag == op.tag):
                    del box[k]
                    if op.blocking:
                        st.wait += env.now - t0
                    if self.trace and env.now > t0:
                        self._ev(i, "recv", t0, env.now, op.label or "recv", nbytes=m.nbytes,
                                 peer=m.src)
                    return m
            ev = env.event()
            self._mail_wait[i].append(ev)
            yield ev
