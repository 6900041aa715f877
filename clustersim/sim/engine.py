"""The simulated backend: interprets actor generators on SimPy, the platform and the network.

Each actor (worker, server) pulls operations from its algorithm generator and turns each into
SimPy events (driven by callbacks on those events rather than by a SimPy process - the
same events, scheduled in the same order, with less Python per event; see :class:`_Actor`):

* ``Compute``   -> a timeout whose length the :class:`~clustersim.sim.costs.CostModel` gives
  (roofline per layer, per device kind, times a seeded jitter factor);
* ``Collective``-> a rendezvous of the group (matched by call order, as in MPI); when the last
  member arrives, the collective's schedule runs on the flow network (``flow``) or is costed
  analytically from its schedule and cached (``analytic``); every member resumes at its end;
* ``Send``/``Recv`` -> a flow on the network (or, above ``P2P_FLOW_MAX_ACTORS`` actors, a
  FIFO reservation of every link on the route) and a mailbox per actor, so incast at a
  parameter server is contention, not a formula;
* ``Wait``      -> waits for the handles of earlier non-blocking operations;
* ``Record``    -> a metric sample; ``Record("iteration", i)`` marks iteration boundaries.

Accounting per actor: ``compute`` (busy), ``comm`` (blocked on communication that was already
under way), ``wait`` (blocked because peers had not arrived yet: stragglers, or an empty
mailbox), and ``comm_total`` (time any of its communication was in flight, overlapped or not).

Speed (bench/bench_training.py, bench/bench_knl.py): a run is hundreds of thousands of events,
so the hot paths avoid per-event allocation and calls - one reusable timer per actor,
messages as timeouts that carry their own delivery data, costs looked up by operation
identity, handles and messages built without their dataclass ``__init__``, SimPy's loop
written out (:class:`_Environment`, with a FIFO lane for events due "now"), a message
handed straight to a receiver blocked in a matching ``Recv``, message plans kept per
platform across runs, and the cyclic garbage collector off during a run.
None of it changes which events are scheduled, when or in which order: results, traces and
``sim_events`` are those of the straightforward process-based interpreter.
"""

from __future__ import annotations

import gc
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import partial
from heapq import heappop, heappush
from typing import Any

import simpy
from simpy.events import NORMAL as _NORMAL
from simpy.events import URGENT as _URGENT

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


@dataclass(slots=True)  # slots: read and written on every event of the actor
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
    """A collective group resolved once: members, their devices and machines, and the
    matching state of its collectives (``seq[i]``: how many collectives actor ``i`` has
    issued on the group; ``open[k]``: the rendezvous of the k-th, until complete)."""

    __slots__ = ("gid", "members", "devices", "hosts", "shared", "n", "seq", "open")

    def __init__(self, gid: int, members: tuple[int, ...], devices: tuple[int, ...],
                 hosts: tuple[int, ...]) -> None:
        self.gid = gid
        self.members = members
        self.devices = devices
        self.hosts = hosts
        self.shared = len(set(devices)) < len(devices)
        self.n = len(members)
        self.seq: dict[int, int] = {}
        self.open: dict[int, _Rendezvous] = {}


class _Rendezvous:
    """Arrivals at one collective instance: (actor index, arrival time, blocking)."""

    __slots__ = ("n", "parts", "done", "last")

    def __init__(self, env: simpy.Environment, n: int) -> None:
        self.n = n
        self.parts: list[tuple[int, float, bool]] = []
        self.done = env.event()
        self.last = 0.0


# Operations' results are frozen dataclasses whose generated __init__ sets every field through
# object.__setattr__ (~0.3 us a field).  The engine makes one Handle per non-blocking operation
# and one Message per message, so it fills their slots directly (the same objects: equal,
# hashable, frozen for everyone else).
_new = object.__new__
_set_handle_id = Handle.id.__set__  # type: ignore[attr-defined]
_MSG_FIELDS = ("src", "tag", "nbytes", "data", "sent_at")
_MSG_SET = tuple(getattr(Message, f).__set__ for f in _MSG_FIELDS)
# a field added to either class must be filled here too
assert tuple(f.name for f in fields(Message)) == _MSG_FIELDS
assert tuple(f.name for f in fields(Handle)) == ("id",)


class _Environment(simpy.Environment):
    """SimPy's environment with its event loop written out for runs without ``until``.

    ``run()`` does what ``Environment.run()`` does - pop the earliest event, clear and call
    its callbacks, crash on an undefused failure - without a ``step()`` call and a
    ``try``/``except`` per event (a run processes hundreds of thousands of events; SimPy's
    loop costs about a third of what a bare SimPy process costs per event).  Runs with
    ``until`` use SimPy's own loop.

    *The lane.*  Half the events of a message-heavy run are scheduled for the current
    instant at ``NORMAL`` priority (an actor woken by mail, an event that succeeds now); in
    the heap each such entry sifts from the bottom to the top and back down (~2 log n tuple
    comparisons).  While ``run()`` drives, they go to a FIFO beside the heap instead: they
    all carry the current time and increasing ids, so the FIFO is sorted by the heap's own
    key ``(time, priority, id)``, and ``run()`` takes whichever of the two heads has the
    smaller key - the events come out in exactly the order the heap alone gives them, and
    are numbered (``RunResult.sim_events``) the same.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lane: deque[tuple] = deque()
        self._laned = False
        #: schedule an entry ``(now, NORMAL, id, event)`` (the engine's hot paths build it);
        #: not a bound method of the environment, which would make it a reference cycle
        #: (freed only by the cyclic collector, which is off during runs)
        self._heap_push = partial(heappush, self._queue)
        self.push_now = self._heap_push

    def schedule(self, event: simpy.Event, priority: int = _NORMAL, delay: Any = 0) -> None:
        item = (self._now + delay, priority, next(self._eid), event)
        if self._laned and priority == _NORMAL and delay == 0:
            self._lane.append(item)
        else:
            heappush(self._queue, item)

    def run(self, until: Any = None) -> Any:
        if until is not None:
            return super().run(until)
        queue = self._queue
        lane = self._lane
        take = lane.popleft
        pop = heappop
        self._laned = True
        self.push_now = lane.append
        try:
            while True:
                if lane:
                    if queue and queue[0] < lane[0]:
                        self._now, _, _, event = pop(queue)
                    else:
                        self._now, _, _, event = take()
                elif queue:
                    self._now, _, _, event = pop(queue)
                else:
                    break
                callbacks, event.callbacks = event.callbacks, None
                for callback in callbacks:
                    callback(event)
                if not event._ok and not hasattr(event, "_defused"):
                    exc = type(event._value)(*event._value.args)
                    exc.__cause__ = event._value
                    raise exc
        finally:
            self._laned = False
            self.push_now = self._heap_push
            while lane:  # left by a crash: back to the heap, where peek() and step() look
                heappush(queue, lane.popleft())
        return None


def _at(env: simpy.Environment, delay: float, priority: int, callback) -> simpy.Event:
    """Schedule ``callback(event)`` after ``delay`` (an int 0 keeps the clock's type, as
    SimPy's own zero delays do) at ``priority``: a bare, already
    succeeded event - what :class:`simpy.Timeout` and SimPy's process start do, minus the
    process."""
    ev = simpy.Event(env)
    ev._ok = True  # noqa: SLF001
    ev._value = None  # noqa: SLF001
    ev.callbacks.append(callback)
    env.schedule(ev, priority, delay)
    return ev


class _Wake:
    """An actor's own timer, re-armed for every wait on its clock (compute run ahead, its
    end, mail): a succeeded event that is scheduled again once processed.  Nothing but the
    actor waits for it, so one object per actor replaces a :class:`simpy.Timeout` per wait.

    Not a :class:`simpy.Event`: the event loop reads ``callbacks``, ``_ok`` and ``_value``
    only, and a slotted object without SimPy's ``__init__`` is cheaper to arm."""

    __slots__ = ("callbacks",)
    _ok = True
    _value = None

    def __init__(self) -> None:
        self.callbacks: list | None = None  # armed by ``callbacks = [...]`` + a schedule


class _Post:
    """A point-to-point message in flight: a timeout (its delivery time) that carries the
    message's sender, operation and start, so that delivery is one bound method of the engine
    instead of a timeout plus a closure per message.

    Like :class:`_Wake`, a slotted stand-in for a succeeded :class:`simpy.Event`: what waits
    for a message (a ``Wait`` on its handle, :class:`_AllOf`) only appends to ``callbacks``
    and reads ``_value``.  A sender blocked in its ``Send`` is not a callback but ``sender``:
    delivery resumes it last, where its ``_resumed`` callback would have run (the next and
    only other callback of the event), without a bound method and a callback per message."""

    __slots__ = ("callbacks", "src", "op", "t0", "sender")
    _ok = True
    _value = None

    def __init__(self, callback, i: int, op: Send, t0: float) -> None:
        self.callbacks = [callback]
        self.src = i
        self.op = op
        self.t0 = t0
        self.sender: _Actor | None = None


class _AllOf:
    """SimPy's ``AllOf`` reduced to what ``Wait`` needs: when the last of ``events`` has been
    processed, one event succeeds (scheduled at the same point of the same callback chain as
    the condition's, so the run's event order is the same) and calls ``callback``."""

    __slots__ = ("left", "done")

    def __init__(self, env: simpy.Environment, events: list[simpy.Event], callback) -> None:
        self.left = len(events)
        self.done = simpy.Event(env)
        self.done.callbacks.append(callback)
        check = self._check
        for ev in events:
            ev.callbacks.append(check)

    def _check(self, _ev: simpy.Event) -> None:
        self.left -= 1
        if self.left == 0:
            self.done.succeed()


#: how a point-to-point message travels (see ``Engine._plan``)
_LOCAL, _QUEUED, _FLOW, _HEADER = 0, 1, 2, 3


class _SideCompute:
    """A non-blocking ``Compute`` in flight (see :meth:`Engine._compute`)."""

    __slots__ = ("eng", "i", "spec", "op", "done", "t0", "dt")

    def __init__(self, eng: Engine, i: int, spec: ActorSpec, op: Compute,
                 done: simpy.Event) -> None:
        self.eng = eng
        self.i = i
        self.spec = spec
        self.op = op
        self.done = done
        self.t0 = 0.0
        self.dt = 0.0

    def start(self, _ev: simpy.Event) -> None:
        eng = self.eng
        env = eng.env
        self.t0 = env.now
        dt = self.dt = eng.costs.compute(self.op, self.spec, eng.placement[self.i],
                                         eng._iter[self.i])
        if dt > 0:
            _at(env, dt, _NORMAL, self.finish)
        else:
            self.finish(None)

    def finish(self, _ev: simpy.Event | None) -> None:
        eng = self.eng
        op = self.op
        eng.stats[self.i].compute += self.dt
        if eng.trace:
            eng._ev(self.i, "compute", self.t0, eng.env.now, op.label or op.phase)
        self.done.succeed(op.fn(op.data) if op.fn is not None else None)


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
        self.env = _Environment()
        self.net = FlowNetwork.for_platform(self.env, platform, params)
        queued = fidelity == "analytic" or (fidelity == "auto"
                                            and len(self.actors) > P2P_FLOW_MAX_ACTORS)
        self._queues = LinkQueues(platform.capacity, params.efficiency) if queued else None
        self.stats = [ActorStats(a.rank, a.role, self.placement[i])
                      for i, a in enumerate(self.actors)]
        self.events: list[TraceEvent] = []
        self._workers = tuple(a.rank for a in self.actors if a.role == "worker")
        self._groups: dict[int, tuple[Any, _Group]] = {}
        self._by_members: dict[tuple[int, ...], _Group] = {}
        self._tail: dict[int, simpy.Event] = {}
        self._mail: list[Mailbox] = [Mailbox() for _ in self.actors]
        # who waits for mail, per actor: the actor itself (blocked in Recv) or the event of a
        # non-blocking Recv's process
        self._mail_wait: list[list[Any]] = [[] for _ in self.actors]
        self._handles: dict[int, tuple[simpy.Event, _Rendezvous | None]] = {}
        self._next_handle = 0
        self._sched_cache: dict[tuple, Any] = {}
        self._cost_cache: dict[tuple, float] = {}
        self._iter = [0] * len(self.actors)
        self._ranks = [a.rank for a in self.actors]
        self._latency: dict[tuple[int, ...], float] = {}  # route -> header-only message time
        # plans by (source device, destination device, bytes), shared by every run on this
        # platform with these parameters in this process (see _new_plan)
        memo = getattr(platform, "memo", None)
        key = ("p2p plans", params, queued)
        try:
            shared = memo.setdefault(key, {}) if memo is not None else {}
        except TypeError:  # parameters that do not hash: plans for this run only
            shared = {}
        self._shared_plans: dict[tuple[int, int, float], tuple] = shared
        # non-blocking Recv processes under way per actor (a message is handed straight to a
        # blocked actor only when none could take it first; see _arrived)
        self._nb_recv = [0] * len(self.actors)
        # what _Actor reads of the cost model, looked up once instead of once per actor
        self._cost_hooks = (getattr(costs, "op_table", None),
                            getattr(costs, "jitter_buffer", None),
                            getattr(costs, "draw_jitter", None))

    # -- running ---------------------------------------------------------------------------
    def run(self) -> RunResult:
        env = self.env
        queue = env._queue
        for i, a in enumerate(self.actors):
            # what env.process() does: the actor starts at an URGENT event of time 0 (here
            # the actor's own timer, free until then)
            actor = _Actor(self, i, a)
            wake = actor.wake
            wake.callbacks = [actor.start]
            heappush(queue, (env._now + 0, _URGENT, next(env._eid), wake))
        # The cyclic garbage collector is off while the events run: a run allocates millions
        # of short-lived objects (events, messages, tuples), each allocation burst triggers a
        # collection, and the older generations hold the whole platform graph (4,352 devices
        # for the KNL scenarios), which every full collection walks - 15-25% of a run's time.
        # What a run allocates is freed by reference counting (callbacks are dropped once an
        # event is processed); the collector resumes afterwards for anything else.
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            env.run(until=self.until)
        finally:
            if gc_was_on:
                gc.enable()
        for st in self.stats:
            if not st.end:
                st.end = env.now
        # SimPy numbers every scheduled event from an itertools.count: the next id is the total
        scheduled = next(env._eid)  # noqa: SLF001
        return RunResult(env.now, self.stats, self.events, self.net.flows_started,
                         scheduled)

    def _compute(self, i: int, spec: ActorSpec, op: Compute) -> Handle:
        """Non-blocking compute: runs beside the actor; the handle's event succeeds with the
        operation's result when it is done.

        What a SimPy process running it would do, written as two callbacks with the same
        events in the same order: its start (an URGENT event now), its timeout, and its end
        (the process's own event, scheduled when it returns).  A lock-free server starts one
        per update, and a process costs several times the Python of two callbacks.
        """
        env = self.env
        done = simpy.Event(env)  # plays the process's part: what Wait waits for
        _at(env, 0, _URGENT, _SideCompute(self, i, spec, op, done).start)
        return self._handle(done)

    def _handle(self, event: simpy.Event, rv: _Rendezvous | None = None) -> Handle:
        n = self._next_handle
        self._next_handle = n + 1
        h = _new(Handle)
        _set_handle_id(h, n)
        self._handles[n] = (event, rv)
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

    def _arrive(self, i: int, op: Collective, g: _Group) -> _Rendezvous:
        """Actor ``i`` arrives at its next collective on group ``g`` (matched by call order,
        as in MPI); the last member to arrive starts it."""
        seqs = g.seq
        seq = seqs.get(i, 0)
        seqs[i] = seq + 1
        opened = g.open
        rv = opened.get(seq)
        if rv is None:
            rv = opened[seq] = _Rendezvous(self.env, g.n)
        now = self.env._now
        parts = rv.parts
        parts.append((i, now, op.blocking))
        if len(parts) == rv.n:
            del opened[seq]
            rv.last = now
            # collectives of one group run in order, as on one NCCL stream / MPI communicator:
            # a bucket's all-reduce starts when the previous one has finished
            gid = g.gid
            prev = self._tail.get(gid)
            self._tail[gid] = rv.done
            self.env.process(self._run_collective(op, g, rv, prev))
        return rv

    def _settle(self, op: Collective, rv: _Rendezvous) -> None:
        """Account a finished collective for every member at once."""
        now = self.env._now
        last = rv.last
        busy = now - last
        nbytes = op.nbytes
        stats = self.stats
        trace = self.trace
        for i, t_arr, blocking in rv.parts:
            st = stats[i]
            st.comm_total += busy
            st.bytes_sent += nbytes
            if blocking:
                st.wait += last - t_arr
                st.comm += busy
            if trace:
                if blocking and last > t_arr:
                    self._ev(i, "wait", t_arr, last, f"wait for {op.op}")
                self._ev(i, op.op, last, now, op.label or op.op, nbytes=nbytes)

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

    # -- point to point ----------------------------------------------------------------------
    def _new_plan(self, src_dev: int, dst_dev: int, nbytes: float) -> tuple:
        """How a message of ``nbytes`` from device ``src_dev`` to ``dst_dev`` travels:
        ``(mode, route, latency, bytes to drain, per-link drain times)``.  Pure in the devices
        and the size (routes are deterministic, protocol costs depend on the route and size
        only), so :meth:`_start_send` computes it once per device pair and size and keeps it
        on the platform for every later run in this process with the same network parameters
        (a 4,000-worker point needs 8,000 of them, a few milliseconds each time otherwise)."""
        route = self.platform.route(src_dev, dst_dev)
        if not route:
            return _LOCAL, route, 0.0, 0.0, ()
        if nbytes > 0 and self._queues is not None:
            lat, drain = self.net.message_plan(route, nbytes)
            rate = self._queues.rate
            # what LinkQueues.reserve divides per link, divided once
            return _QUEUED, route, lat, drain, tuple(drain / rate[lk] for lk in route)
        if nbytes > 0:
            return _FLOW, route, 0.0, nbytes, ()
        lat = self._latency.get(route)
        if lat is None:
            lat = self._latency[route] = self.net.message_latency(route, 0.0)
        return _HEADER, route, lat, 0.0, ()

    def _start_send(self, i: int, op: Send) -> simpy.Event | None:
        """Start a point-to-point message; the returned event fires when it has arrived
        (``None``: delivered already, sender and receiver share a device).

        The message is delivered and accounted by a callback of the transfer event, so a
        non-blocking send needs no process of its own.  A header-only message (``nbytes`` 0)
        never competes for bandwidth: it takes the route's latency (plus the per-message
        overhead), exactly what a zero-byte flow takes, without the flow bookkeeping - and is
        therefore not counted in ``RunResult.flows``.
        """
        placement = self.placement
        # actor ranks are actor indices (0..n-1, checked by the sweep runner); one lookup in
        # the shared plans: a point of few iterations sends each (actor, peer, size) only a
        # few times, so a per-actor cache in front would mostly miss
        key = (placement[i], placement[op.dst], op.nbytes)
        plan = self._shared_plans.get(key)
        if plan is None:
            plan = self._shared_plans[key] = self._new_plan(*key)
        mode = plan[0]
        env = self.env
        t0 = env._now
        if mode == _QUEUED:
            post = _Post(self._arrived, i, op, t0)
            # env.schedule(), inline: at the booked arrival
            arrival = self._queues.reserve_times(plan[1], plan[4], t0, plan[2])
            # now + (arrival - now), as a timeout's delay adds up (not always == arrival)
            heappush(env._queue, (t0 + (arrival - t0), _NORMAL, next(env._eid), post))
            return post
        if mode == _HEADER:
            post = _Post(self._arrived, i, op, t0)
            heappush(env._queue, (t0 + plan[2], _NORMAL, next(env._eid), post))
            return post
        if mode == _LOCAL:
            self._arrived(_Post(None, i, op, t0))
            return None
        ev = self.net.transfer(plan[1], op.nbytes)
        ev.callbacks.append(lambda _ev: self._arrived(_Post(None, i, op, t0)))
        return ev

    def _arrived(self, post: _Post) -> None:
        """The message has arrived (the callback of its :class:`_Post`, or called at once by
        a local copy): deliver it and account the sender's time.

        A receiver blocked in a ``Recv`` that this message matches, with nothing else that
        could take it (no other waiter, no non-blocking ``Recv`` under way), gets it handed
        over with its wake-up (``_Actor.got``) instead of through its mailbox: the message
        would be the earliest match in the box (the receiver blocked because there was
        none), so the wake-up would take exactly this one - the same result, the same
        events, without filing and taking it.
        """
        env = self.env
        now = env._now
        i = post.src
        op = post.op
        t0 = post.t0
        j = op.dst  # actor ranks are 0..n-1 in list order (checked by the sweep runner)
        m = _new(Message)  # Message(src, tag, nbytes, data, sent_at), slots filled directly
        s_src, s_tag, s_nbytes, s_data, s_sent = _MSG_SET
        s_src(m, self._ranks[i])
        s_tag(m, op.tag)
        s_nbytes(m, op.nbytes)
        s_data(m, op.data)
        s_sent(m, t0)
        waiters = self._mail_wait[j]
        if waiters:
            self._mail_wait[j] = []
            w = waiters[0]
            if (len(waiters) == 1 and type(w) is _Actor and not self._nb_recv[j]
                    and ((src := w.recv_op.src) == ANY or src == m.src)
                    and ((tag := w.recv_op.tag) == ANY or tag == m.tag)):
                w.got = m
                wake = w.wake
                wake.callbacks = [w._mailed]
                env.push_now((now, _NORMAL, next(env._eid), wake))  # at once
            else:
                self._mail[j].put(m)
                for w in waiters:
                    if type(w) is _Actor:  # the actor itself, blocked in Recv: its own timer
                        wake = w.wake
                        wake.callbacks = [w._mailed]
                        env.push_now((now, _NORMAL, next(env._eid), wake))  # at once
                    else:  # a non-blocking Recv's process
                        w.succeed()
        else:
            self._mail[j].put(m)
        st = self.stats[i]
        nbytes = op.nbytes
        st.bytes_sent += nbytes
        st.comm_total += now - t0
        if op.blocking:
            st.comm += now - t0
        if self.trace:
            self._ev(i, "send", t0, now, op.label or "send", nbytes=nbytes, peer=j)
        sender = post.sender
        if sender is not None:  # its _resumed(post), the post's next callback
            sender.run(None, None)

    def _recv(self, i: int, op: Recv):
        """A non-blocking ``Recv``: a process beside the actor (the blocking one is inlined
        in :class:`_Actor`)."""
        env = self.env
        st = self.stats[i]
        t0 = env.now
        box = self._mail[i]
        try:
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
        finally:
            self._nb_recv[i] -= 1  # counted up by the actor when it spawned this receive


class _Actor:
    """The interpreter of one actor: pulls operations from its generator, turns them into
    events - the hot path of every simulation.

    It is driven by callbacks rather than by a SimPy process: every wait registers one bound
    method on the event it waits for (``_flushed``, ``_resumed``, ``_mailed``, ``_waited``,
    ``_ended``), and :meth:`run` goes on from there until the actor blocks again.  That is
    what a process does (its ``_resume`` callback sends the event's value into a generator),
    without the generator frame in between; the events themselves - which are scheduled,
    when, in which order - are the ones the process-based interpreter scheduled, so a run is
    the same run.

    Consecutive blocking ``Compute`` and ``Record`` operations are run ahead of the clock and
    waited for with *one* timer (``ahead`` holds the compute time not yet waited for): they
    touch nothing but the actor itself, so only the number of SimPy events changes - a
    worker's forward, backward and update become one event instead of three.  Any other
    operation first waits out ``ahead``.
    """

    __slots__ = ("eng", "i", "spec", "st", "device", "send", "wake", "pending", "t0",
                 "entries", "recv_op", "table", "jbuf", "jdraw", "box", "gkey", "group", "got")

    def __init__(self, eng: Engine, i: int, spec: ActorSpec) -> None:
        self.eng = eng
        self.i = i
        self.spec = spec
        self.st = eng.stats[i]
        self.device = eng.placement[i]
        self.send = None
        self.wake = _Wake()
        self.pending: Any = None  # the operation that waits for the compute run ahead
        self.t0 = 0.0  # when the current blocking Recv or Wait started
        self.entries: list | None = None  # the handles' (event, rendezvous) of a Wait
        self.recv_op: Recv | None = None
        self.got: Message | None = None  # a message handed over with the wake-up (_arrived)
        # the cost model's per-kind operation table and this rank's jitter buffer, read
        # inline below; a cost model without them is asked through compute() every time
        op_table, jitter_buffer, self.jdraw = eng._cost_hooks
        self.table: dict = op_table(self.device) if op_table is not None else {}
        self.jbuf: list[float] = jitter_buffer(spec.rank) if jitter_buffer is not None else []
        self.box = eng._mail[i]
        # the group of this actor's last collective (``op.group`` -> resolved group): an
        # algorithm issues its collectives on the same few group tuples
        self.gkey: Any = None
        self.group: _Group | None = None

    # -- callbacks ---------------------------------------------------------------------------
    def start(self, _ev: simpy.Event) -> None:
        self.send = self.spec.start(self.eng.job).send
        self.run(None, None)

    def _flushed(self, _ev: simpy.Event) -> None:
        """The compute run ahead is over: the operation that waited for it starts now."""
        op, self.pending = self.pending, None
        self.run(None, op)

    def _resumed(self, ev: simpy.Event) -> None:
        """A blocking collective or send is done (its value goes back to the generator)."""
        self.run(ev._value, None)  # noqa: SLF001

    def _mailed(self, _ev: simpy.Event) -> None:
        """Mail arrived while blocked in ``Recv``: take it, or wait again."""
        op = self.recv_op
        m = self.got
        if m is not None:
            self.got = None
        else:
            m = self.box.take(op.src, op.tag)
            if m is None:
                self._wait_mail()
                return
        eng = self.eng
        now = eng.env._now
        t0 = self.t0
        self.recv_op = None
        self.st.wait += now - t0
        if eng.trace and now > t0:
            eng._ev(self.i, "recv", t0, now, op.label or "recv", nbytes=m.nbytes, peer=m.src)
        self.run(m, None)

    def _wait_mail(self) -> None:
        # the next delivery to this actor schedules its timer for ``_mailed`` (at once, as
        # ``Event.succeed()`` would schedule an event of its own)
        self.eng._mail_wait[self.i].append(self)

    def _waited(self, _ev: simpy.Event) -> None:
        """The handles of a ``Wait`` are complete: account the blocked time, resume."""
        eng = self.eng
        now = eng.env._now
        t0 = self.t0
        entries, self.entries = self.entries, None
        blocked = now - t0
        last = t0  # the last peer's arrival at any of the collectives waited for
        for _, rv in entries:
            if rv is not None and rv.last > last:
                last = rv.last
        if blocked > 0:
            st = self.st
            # the part before the last peer arrived is waiting for stragglers
            waited = min(last - t0, blocked)
            st.wait += waited
            st.comm += blocked - waited
            if eng.trace:
                eng._ev(self.i, "wait", t0, now, "wait handles")
        if len(entries) == 1:
            self.run([entries[0][0]._value], None)  # noqa: SLF001
        else:
            self.run([e._value for e, _ in entries], None)  # noqa: SLF001

    def _ended(self, _ev: simpy.Event | None) -> None:
        env = self.eng.env
        st = self.st
        st.end = env.now
        st.iterations.append(env.now)
        if st.mark is None:  # servers (no iterations) or runs shorter than the warmup
            st.mark = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        # the event a finished SimPy process schedules (nobody waits for it)
        wake = self.wake
        wake.callbacks = []
        env.schedule(wake, _NORMAL, 0)  # 0, not 0.0: the clock keeps SimPy's number type

    # -- the loop ----------------------------------------------------------------------------
    def run(self, value: Any, op: Any) -> None:
        """Send ``value`` into the generator and interpret what it yields until the actor
        blocks (``op``: an operation already taken from it, to start first)."""
        eng = self.eng
        env = eng.env
        send = self.send
        st = self.st
        table = self.table
        trace = eng.trace
        i = self.i
        ahead = 0.0
        while True:
            if op is None:
                try:
                    op = send(value)
                except StopIteration:
                    if ahead > 0:
                        wake = self.wake
                        wake.callbacks = [self._ended]
                        env.schedule(wake, _NORMAL, ahead)
                    else:
                        self._ended(None)
                    return
                value = None
                kind = type(op)
                if kind is Compute and op.blocking:
                    hit = table.get(id(op))
                    if hit is not None and hit[0] is op:
                        dt = hit[1]
                        if hit[2]:
                            jbuf = self.jbuf
                            dt *= jbuf.pop() if jbuf else self.jdraw(self.spec.rank)
                    else:
                        dt = eng.costs.compute(op, self.spec, self.device, eng._iter[i])
                    if trace:
                        t = env._now + ahead
                        eng._ev(i, "compute", t, t + dt, op.label or op.phase)
                    ahead += dt
                    st.compute += dt
                    if op.fn is not None:
                        value = op.fn(op.data)
                    op = None
                    continue
                if kind is Record:
                    now = env._now + ahead
                    if op.key == "iteration":
                        st.iterations.append(now)
                        eng._iter[i] = int(op.value)
                        if op.value == eng.warmup:
                            st.mark = (st.compute, st.comm, st.wait, st.comm_total,
                                       st.bytes_sent, now)
                    else:
                        st.records[op.key].append(float(op.value))
                        if trace:
                            eng._ev(i, "record", now, now, op.key, value=float(op.value))
                    op = None
                    continue
                if ahead > 0:
                    self.pending = op
                    wake = self.wake
                    wake.callbacks = [self._flushed]
                    heappush(env._queue, (env._now + ahead, _NORMAL, next(env._eid), wake))
                    return
            else:
                kind = type(op)
            # ``op`` starts now
            if kind is Collective:
                members = op.group
                if members is not self.gkey or self.group is None:
                    self.group = eng._group(members)
                    self.gkey = members
                rv = eng._arrive(i, op, self.group)
                if op.blocking:
                    rv.done.callbacks.append(self._resumed)
                    return
                n = eng._next_handle  # eng._handle(rv.done, rv), inline
                eng._next_handle = n + 1
                value = _new(Handle)
                _set_handle_id(value, n)
                eng._handles[n] = (rv.done, rv)
            elif kind is Send:
                ev = eng._start_send(i, op)
                if op.blocking:
                    if ev is not None:
                        if type(ev) is _Post:  # delivery resumes it (see _Post)
                            ev.sender = self
                        else:
                            ev.callbacks.append(self._resumed)
                        return
                else:
                    if ev is None:  # a local copy is delivered at once
                        ev = env.event()
                        ev.succeed()
                    n = eng._next_handle  # eng._handle(ev), inline
                    eng._next_handle = n + 1
                    value = _new(Handle)
                    _set_handle_id(value, n)
                    eng._handles[n] = (ev, None)
            elif kind is Recv:
                if op.blocking:
                    box = self.box
                    m = box.take(op.src, op.tag) if box._live else None  # noqa: SLF001
                    if m is not None:
                        value = m
                    elif not op.poll:
                        self.recv_op = op
                        self.t0 = env._now
                        self._wait_mail()
                        return
                else:
                    eng._nb_recv[i] += 1  # until the receive's process ends (see _arrived)
                    value = eng._spawn(eng._recv(i, op))
            elif kind is Wait:
                handles = eng._handles
                hs = op.handles
                if len(hs) == 1:  # the common case, without the list comprehensions
                    entry = handles.pop(hs[0].id)
                    e = entry[0]
                    if e.callbacks is None:
                        value = [e._value]  # noqa: SLF001
                        op = None
                        continue
                    self.entries = [entry]
                    self.t0 = env._now
                    e.callbacks.append(self._waited)
                    return
                entries = [handles.pop(h.id) for h in hs]
                pending = [e for e, _ in entries if e.callbacks is not None]
                if pending:
                    self.entries = entries
                    self.t0 = env._now
                    if len(pending) == 1:
                        pending[0].callbacks.append(self._waited)
                    else:
                        _AllOf(env, pending, self._waited)
                    return
                value = [e._value for e, _ in entries]  # noqa: SLF001
            elif kind is Compute:  # non-blocking: runs beside the actor
                value = eng._compute(i, self.spec, op)
            else:
                raise TypeError(f"actor {self.spec.rank} yielded {op!r}, not an operation")
            op = None
