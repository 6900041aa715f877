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

Modules: :mod:`~clustersim.sim.events` (the event loop and light events),
:mod:`~clustersim.sim.actor` (the actor interpreter), :mod:`~clustersim.sim.collective_run`
(rendezvous and collectives), :mod:`~clustersim.sim.p2p` (sends and receives), and this one
(the engine that ties them together, and what a run returns).
"""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from heapq import heappush
from typing import Any

import numpy as np
import simpy
from simpy.events import URGENT as _URGENT

from clustersim.algorithms.base import ActorSpec, JobInfo
from clustersim.algorithms.ops import Compute, Handle
from clustersim.network.flow import FlowNetwork
from clustersim.network.params import NetworkParams
from clustersim.network.queueing import LinkQueues
from clustersim.platform.model import Platform
from clustersim.sim.actor import _Actor, _SideCompute
from clustersim.sim.collective_run import (
    COLLECTIVE_FLOW_MAX_RANKS,
    CollectiveRunner,
    _Group,
    _Rendezvous,
)
from clustersim.sim.events import _at, _Environment, _new, _set_handle_id
from clustersim.sim.linkdemand import RouteTable, link_demands
from clustersim.sim.mailbox import Mailbox
from clustersim.sim.p2p import P2P_FLOW_MAX_ACTORS, PointToPoint
from clustersim.trace import TraceEvent

__all__ = ["Engine", "ActorStats", "RunResult", "COLLECTIVE_FLOW_MAX_RANKS",
           "P2P_FLOW_MAX_ACTORS", "DEFAULT_ALGORITHMS"]

#: schedule the engine uses for a collective that names no algorithm (a library call in the
#: real backend is costed with these too; calibration fits its overhead against them)
DEFAULT_ALGORITHMS: dict[str, str] = {
    "allreduce": "ring", "broadcast": "binomial", "reduce": "binomial", "allgather": "ring",
    "reduce_scatter": "ring", "alltoall": "pairwise", "barrier": "recursive_doubling"}


@dataclass(slots=True)  # slots: read and written on every event of the actor
class ActorStats:
    """One actor's running totals as the engine counts them: simulated seconds (``compute``,
    ``comm``, ``wait``, ``comm_total``) and ``bytes_sent``; :mod:`.metrics` reads them from the
    ``mark`` (its first measured iteration) to the ``end``."""

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
    #: servers only: seconds the busiest link direction its messages cross (sent and
    #: received) needs for them at the link's full rate - its service demand on that link,
    #: load-independent (Engine._link_demand; sim/metrics.py master_service_time)
    link_demand: float = 0.0
    #: merged spans of the communication counted in ``comm_total`` (sim/inflight.py)
    inflight: list[list[float]] = field(default_factory=list)
    #: servers only: (compute, updates applied, time, idle: ``wait`` less ``serving``) at
    #: its first update after the last worker began its measured steps - so that a server's
    #: figures leave out the warm-up (sim/metrics.py); ``armed`` until that update
    after_warmup: tuple[float, int, float, float] | None = None
    #: servers only: (compute, updates applied, time, ``wait``, ``serving`` records) at its
    #: last update since then
    last_update: tuple[float, int, float, float, int] | None = None
    #: how many samples of each ``records`` key it had when the last worker began its
    #: measured steps: the ones before are the warm-up's (:meth:`RunResult.records`)
    records_from: dict[str, int] | None = None
    armed: bool = False


def counter_rows(stats: Sequence[ActorStats]) -> tuple[np.ndarray, np.ndarray]:
    """``stats``' counters at their mark and at the end: ``(compute, comm, wait, comm_total,
    bytes_sent, end)`` rows, one per actor (an actor without a mark counts from zero)."""
    zero = (0.0,) * 6
    marks = np.array([a.mark or zero for a in stats], dtype=float).reshape(-1, 6)
    now = np.array([(a.compute, a.comm, a.wait, a.comm_total, a.bytes_sent, a.end)
                    for a in stats], dtype=float).reshape(-1, 6)
    return marks, now


@dataclass
class RunResult:
    """Everything one simulated run produced."""

    makespan: float
    #: per actor, in rank order: a list, or a grouped run's
    #: :class:`~clustersim.sim.grouped.GroupedStats` (copies made when asked for), which
    #: answers the three readers below from its representatives without making any
    actors: Sequence[ActorStats]
    events: list[TraceEvent]
    flows: int
    sim_events: int

    def worker_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """The workers' counters at their mark and at the end, ``(compute, comm, wait,
        comm_total, bytes_sent, end)`` rows in actor order (what the metrics average)."""
        own = getattr(self.actors, "worker_columns", None)
        if own is not None:
            return own()
        return counter_rows([a for a in self.actors if a.role == "worker"])

    def servers(self) -> list[ActorStats]:
        """The actors that are not workers (masters, parameter-server shards)."""
        own = getattr(self.actors, "servers", None)
        return own() if own is not None else [a for a in self.actors if a.role != "worker"]

    def records(self, key: str, measured: bool = False) -> list[float]:
        """Every actor's ``records[key]`` samples, actor after actor; ``measured``: only
        those recorded after the last worker began its measured steps
        (``ActorStats.records_from``; all of them in a run without a warm-up).

        Why ``measured``: the staleness of the warm-up round is a start-up transient (every
        worker starts at once, so pushes see 0, 1, ..., p-1 updates) that the steps after it
        do not have; taken with it, the time to target of ``knl_4253``'s Async SGD was 21 %
        short and moved with ``run.iterations`` (QA 16)."""
        own = getattr(self.actors, "records_of", None)
        if own is not None:
            return own(key, measured)
        if not measured:
            return [v for a in self.actors for v in a.records.get(key, [])]
        return [v for a in self.actors
                for v in a.records.get(key, [])[(a.records_from or {}).get(key, 0):]]


class Engine(CollectiveRunner, PointToPoint):
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
        world: tuple[tuple[int, ...], tuple[int, ...]] | None = None,
    ) -> None:
        """``world``: (ranks, devices) of *every* worker when ``actors`` are only the
        representatives of classes of identical workers (:mod:`clustersim.sim.grouped`):
        collectives on all workers then run on these ranks and devices, and start once each
        representative has arrived."""
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
        # adaptive routing (UGAL): flows are routed when they start, from the link loads
        self._adaptive = bool(getattr(platform, "adaptive", False))
        queued = fidelity == "analytic" or (fidelity == "auto"
                                            and len(self.actors) > P2P_FLOW_MAX_ACTORS)
        self._queues = LinkQueues(platform.capacity, params.efficiency) if queued else None
        #: ``auto`` runs every collective as flows, whatever its size, where point-to-point
        #: messages are flows too and servers run beside the workers (hybrid: a group's
        #: all-reduce and its leader's pushes to the global server share a NIC) - costed
        #: alone above 16 ranks, such a collective lost that contention (QA 13: -8.5 ms a step
        #: at 17 workers).  Bounded by the flows' own limit of 64 actors.
        self._mixed_flows = (fidelity == "auto" and not queued
                             and any(a.role != "worker" for a in self.actors))
        self.stats = [ActorStats(a.rank, a.role, self.placement[i])
                      for i, a in enumerate(self.actors)]
        #: workers yet to begin their measured steps (mark_warmup_done)
        self._unmarked = sum(1 for a in self.actors if a.role == "worker")
        self.events: list[TraceEvent] = []
        self._workers = tuple(a.rank for a in self.actors if a.role == "worker")
        self._world = world
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
            # the plans' routes by plan id (plan[5]), for the servers' link demand
            table = memo.setdefault(("plan routes", params, queued), RouteTable()) \
                if memo is not None else RouteTable()
        except TypeError:  # parameters that do not hash: plans for this run only
            shared, table = {}, RouteTable()
        self._shared_plans: dict[tuple[int, int, float], tuple] = shared
        self._plan_routes = table
        # non-blocking Recv processes under way per actor (a message is handed straight to a
        # blocked actor only when none could take it first; see _arrived)
        self._nb_recv = [0] * len(self.actors)
        # the plan id of every message: what the servers' link demand is summed from after
        # the run (None: no server)
        self._servers = frozenset(i for i, a in enumerate(self.actors) if a.role != "worker")
        self._msg_log: list[int] | None = [] if self._servers else None
        # what _Actor reads of the cost model, looked up once instead of once per actor
        self._cost_hooks = (getattr(costs, "op_table", None),
                            getattr(costs, "jitter_buffer", None),
                            getattr(costs, "draw_jitter", None))

    # -- running ---------------------------------------------------------------------------
    def mark_warmup_done(self) -> None:
        """A worker began its measured steps; after the last one, every server notes its
        compute, updates, clock and idle time at its next update (``ActorStats.after_warmup``):
        a server's first updates can cost many times the later ones (a real run's first touch
        of its buffers took 18-52 ms against 1.1 ms, QA 15), and its figures are taken over
        the measured steps.  Every actor notes how many samples it has recorded so far
        (``ActorStats.records_from``), so that the staleness is taken over them too."""
        self._unmarked -= 1
        if self._unmarked == 0 and self.warmup > 0:  # no warm-up: the whole run counts
            for st in self.stats:
                st.records_from = {k: len(v) for k, v in st.records.items()}
                if st.role != "worker":
                    st.armed = True  # noted at its next update (actor.py): the compute
                    # counter already holds an update run ahead whose record is to come

    def run(self, watch: Any = None) -> RunResult:
        """Run every actor to its end.  ``watch``: an observer called before each event with
        its time, which may stop the run (:meth:`_Environment.run_watched`; the convergence
        emulation's sampler) - ``None`` for every timing run."""
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
            if watch is None:
                env.run(until=self.until)
            else:
                env.run_watched(watch)
        finally:
            if gc_was_on:
                gc.enable()
        for st in self.stats:
            if not st.end:
                st.end = env.now
        if self._msg_log:
            self._link_demand()
        # SimPy numbers every scheduled event from an itertools.count: the next id is the total
        scheduled = next(env._eid)  # noqa: SLF001
        return RunResult(env.now, self.stats, self.events, self.net.flows_started,
                         scheduled)

    def _link_demand(self) -> None:
        """Each server's ``link_demand`` (:mod:`clustersim.sim.linkdemand`: the bottleneck
        law's demand of its messages on its busiest link direction; the route is the minimal
        one under adaptive routing)."""
        demand = link_demands(self._msg_log or [], self._plan_routes,
                              [self.placement[a] for a in self._servers], self._step_rates())
        for a in self._servers:
            self.stats[a].link_demand = demand[self.placement[a]]

    def _step_rates(self) -> dict[int, float]:
        """Per device, the measured step rate of its workers (1 / the time from their mark
        to their end, summed): the weights of :func:`link_demands`.  A worker without a
        mark (a run shorter than its warm-up) is left out."""
        rates: dict[int, float] = {}
        for i, a in enumerate(self.actors):
            st = self.stats[i]
            if a.role != "worker" or st.mark is None or not st.end > st.mark[5]:
                continue
            d = self.placement[i]
            rates[d] = rates.get(d, 0.0) + 1.0 / (st.end - st.mark[5])
        return rates

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

