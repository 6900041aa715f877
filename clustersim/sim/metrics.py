"""From one simulated run to the numbers people ask for.

Definitions (per worker, over the measured iterations - warmup excluded - then averaged):

* iteration time = (end of last iteration - start of first measured one) / measured iterations
* throughput = sum over workers of batch / iteration time (samples/s; async workers run at
  their own pace, so this is the sum of their rates, not p x one rate)
* compute / comm / wait per iteration: busy computing; blocked on communication already under
  way (exposed communication); blocked waiting for peers (stragglers, an idle server, an empty
  mailbox).  compute + comm + wait = iteration time for a synchronous worker.
* comm share, exposed = comm / iteration time; total = time any of the worker's communication
  was in flight (overlapped with compute or not) / iteration time (can exceed the exposed one
  when buckets overlap the backward pass; capped at 1 only by physics, not by us).
* utilisation = compute / iteration time (workers); a server's = its compute per worker
  iteration x the workers' measured iterations per second (busy fraction over the measured
  steps, by the utilisation law).  Update rate: the servers' updates per worker iteration x
  the same rate - both over the measured steps, as the throughput, not the whole run.
* staleness: samples recorded by the algorithms (``Record("staleness", v)``), in parameter
  versions between a worker's read and its write.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from clustersim.sim.engine import RunResult

__all__ = ["PointMetrics", "point_metrics", "summarize", "master_service_time"]


@dataclass
class PointMetrics:
    """One sweep point's numbers (definitions: module docs): times in seconds (``compute``,
    ``comm``, ``wait`` per iteration), throughput in samples/s, shares and utilisations as
    fractions, bytes sent per worker and iteration.  Over several seeds (:func:`summarize`) the
    means, with ``interval`` holding the 5th-95th percentiles of the key figures."""

    algorithm: str
    workers: int
    batch_per_worker: float
    iteration_time: float
    throughput: float
    compute: float
    comm: float
    wait: float
    comm_total: float
    comm_share: float
    comm_share_total: float
    worker_utilization: float
    server_utilization: float | None
    update_rate: float | None
    staleness_mean: float | None
    staleness_p90: float | None
    staleness_max: float | None
    bytes_per_iteration: float
    sim_events: int
    flows: int
    makespan: float
    speedup: float = 1.0
    efficiency: float = 1.0
    seeds: int = 1
    interval: dict[str, tuple[float, float]] = field(default_factory=dict)
    # time to accuracy (clustersim.convergence via sim/tta.py), when the workload has a
    # convergence profile; None where it has none, or the target is never reached (then
    # ``tta_note`` says why).  Steps count the algorithm's own step (sim/tta.py).
    steps_to_target: float | None = None
    samples_to_target: float | None = None
    epochs_to_target: float | None = None
    time_to_target: float | None = None
    statistical_efficiency: float | None = None
    goodput: float | None = None
    tta_note: str = ""
    #: what the steps came from (the "why"): effective batch of one step, the asynchrony
    #: terms added to McCandlish's K, the elastic centre's lag in steps (JSON only)
    convergence_terms: dict[str, float] = field(default_factory=dict)
    #: master-based methods: the busiest server's seconds per update at full load (the
    #: slowest of its thread, processor and link: master_service_time), and the worker count
    #: where it is busy all the time, W* = iteration time / its busy time per worker
    #: iteration (master_demand; clustersim.explore.saturation)
    service_time: float | None = None
    saturation_workers: float | None = None
    #: which of the busiest server's resources its ``service_time`` is: "thread",
    #: "processor" or "link" ("" without a server); a link-bound server is where FIFO link
    #: queues and max-min flows part (report/notes.py: switch_note)
    service_bound: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def point_metrics(algorithm: str, workers: int, batch: Sequence[float], run: RunResult,
                  measured: int, queueing: bool = True) -> PointMetrics:
    """Metrics of one run; ``batch[w]`` is worker w's batch, ``measured`` the iterations counted.

    ``queueing``: the run's servers serve workers one exchange at a time as they come, so
    that their saturation point ``W*`` means something.  A synchronous server (``sync_ps``)
    applies one update per round for everyone: every worker waits for it at every step at
    any count, there is no knee to find, and ``step / service`` would be ~1 - no
    ``saturation_workers`` for it (its ``service_time`` per update, a whole round, stays)."""
    # per worker and measured iteration, as numpy columns (a point has up to thousands of
    # workers): (counter - its value at the mark) / n - the same float64 operations, element
    # by element, as a loop over the workers; each column contiguous, so that the means
    # below sum exactly as they would over a list
    n = max(measured, 1)
    marks, now = run.worker_columns()
    ss = run.servers()
    stale = run.records("staleness", measured=True)  # the throughput's window
    comp, comm, wait, tot, sent, its = np.ascontiguousarray(((now - marks) / n).T)
    it = float(np.mean(its))
    thr = float(sum(b / t for b, t in zip(batch, its.tolist()) if t > 0))
    srv_util = upd = service = demand = None
    bound = ""
    if ss:
        witers = sum(len(a.iterations) - 1 for a in run.actors if a.role == "worker")
        per = _per_second(witers, its, run.makespan)
        # a server's updates over the run, per worker iteration, at the measured rate of
        # worker iterations; its utilisation: that rate times its busy time per update
        # after the warm-up - its busiest resource's, thread, processor or link, the one
        # its service time and W* are taken from (the utilisation law U = X S; the compute
        # alone read 0.5 % on a link-bound server that saturates, QA 18b); min: the two
        # windows differ by a few exchanges at most, and more than always busy is not a
        # result.  The busiest server's, as the service time is: the mean over servers
        # put a hybrid's global server, 37.8 % busy, at 16.6 % among its groups' local
        # servers (audit D)
        srv_util = float(max(min(_busy(a) * per, 1.0) for a in ss))
        nupd = sum(len(a.records.get("update", [])) for a in ss)
        upd = nupd * per if nupd else None
        load = master_demand(ss, witers)
        if load is not None:
            service, demand, bound = load
    return PointMetrics(
        algorithm=algorithm,
        workers=workers,
        batch_per_worker=float(np.mean(batch)),
        iteration_time=it,
        throughput=thr,
        compute=float(np.mean(comp)),
        comm=float(np.mean(comm)),
        wait=float(np.mean(wait)),
        comm_total=float(np.mean(tot)),
        comm_share=float(np.mean(comm)) / it if it > 0 else 0.0,
        comm_share_total=float(np.mean(tot)) / it if it > 0 else 0.0,
        worker_utilization=float(np.mean(comp)) / it if it > 0 else 0.0,
        server_utilization=srv_util,
        update_rate=upd,
        staleness_mean=float(np.mean(stale)) if stale else None,
        staleness_p90=float(np.percentile(stale, 90)) if stale else None,
        staleness_max=float(np.max(stale)) if stale else None,
        bytes_per_iteration=float(np.mean(sent)),
        sim_events=run.sim_events,
        flows=run.flows,
        makespan=run.makespan,
        service_time=service,
        service_bound=bound,
        saturation_workers=it / demand if demand is not None and queueing else None,
    )


def _per_second(worker_iterations: int, its: np.ndarray, makespan: float) -> float:
    """The factor that turns a server's count over the whole run (updates, seconds of
    compute) into a rate over the measured iterations: the workers' measured iterations
    per second (the sum of ``1 / iteration time``) divided by the worker iterations of the
    whole run.  Without either, the run's own length (``1 / makespan``).

    Why not ``/ makespan``, as before: the throughput is over the measured iterations, and
    the makespan also holds the warm-up, the ramp and - with heterogeneous workers - the
    tail where only the slow ones still run, so ``hetero_hybrid``'s all-async parameter
    server printed 10.1 updates/s beside 1,488 samples/s of one update per 64 samples
    (23.3/s), and a homogeneous one 10 % low (QA 11 F1)."""
    rate = float(sum(1.0 / t for t in its.tolist() if t > 0))
    if worker_iterations > 0 and rate > 0:
        return rate / worker_iterations
    return 1.0 / (makespan or 1.0)


def _window(a: Any) -> tuple[int, float, float] | None:
    """A server's (updates, compute, thread time) between its first update after the
    warm-up and its last (``ActorStats.after_warmup`` and ``last_update``: the same counters
    at both ends, so an update's compute counts once whether it ran before its record, as a
    blocking one, or beside the loop after it, as a lock-free one); None without two such
    updates.  Thread time: the clock less the idle time (``wait`` less ``serving``)."""
    first, last = a.after_warmup, getattr(a, "last_update", None)
    if first is None or last is None or last[1] <= first[1]:
        return None
    c0, n0, t0, idle0 = first
    c1, n1, t1, wait1, k1 = last
    idle1 = wait1 - math.fsum(a.records.get("serving", ())[:k1])
    return n1 - n0, c1 - c0, (t1 - idle1) - (t0 - idle0)


def _busy(a: Any) -> float:
    """A server's busy time over the run: the slowest of its thread, processor and link
    (:func:`master_service_time`), the thread's and the processor's as if every update took
    what one takes in :func:`_window` (a real run's first update, the first touch of the
    server's buffers, took 18-52 ms against 1.1 ms: over a 30-step run its compute had put
    the utilisation at 15-23 % where the measured steps were 9.5 % busy, QA 15).

    Why: the thread's time counted the warm-up and the end too.  A real parameter server
    whose first update took 18-52 ms (1.1 ms after) read 1.96 ms per update and saturation
    at 6.0 workers, where its measured steps give 1.34 ms and 8.8 (QA 15); a simulated
    master of 18.19 ms updates read 18.2-18.7 ms at light loads.  Up to its last update,
    not its end: after it the master only waits for its last answers to arrive.  The link's
    demand is over the whole run, its messages weighted to the measured steps' mix of
    peers (:func:`clustersim.sim.linkdemand.link_demands`)."""
    return _busy_bound(a)[0]


def _busy_bound(a: Any) -> tuple[float, str]:
    """:func:`_busy` and which resource it is: ``"thread"``, ``"processor"`` or ``"link"``
    (ties go to the first: a link exactly as busy as the thread does not bind alone)."""
    w = _window(a)
    if w is None:
        idle = a.wait - math.fsum(a.records.get("serving", ()))
        thread, compute = a.end - idle, a.compute
        own = max(thread, compute)
    else:
        n, compute, thread = w
        own = max(thread, compute) / n * len(a.records.get("update", ()))
    if a.link_demand > own:
        return a.link_demand, "link"
    return own, "thread" if thread >= compute else "processor"


def master_service_time(servers: Sequence[Any]) -> float | None:
    """Seconds per update the busiest of a run's ``servers`` (``RunResult.servers()``) can
    not serve anyone else - its capacity per exchange, so that ``1 / s`` is the most updates
    a second it applies however many workers ask; None without a server that applied an
    update.

    A server is held up by whichever of three resources is the slowest per update:

    * its thread: the time it is not waiting for work, ``end - (wait - serving)`` - every
      moment but those blocked in a receive for a request or push that had not come
      (``wait``), except the receives marked ``Recv(serving=True)``, where a master without
      a prefetch sits through a worker's transfer at any load (``records["serving"]``);
    * its processor: ``compute``, for updates that run beside the thread (Hogwild);
    * its link: ``link_demand``, what its messages (answers out, pushes in) need of the
      busiest link direction they cross at that link's full rate (``Engine._link_demand``).

    Why not their sum (compute plus time on the wire, as before): a non-blocking answer
    overlaps the next push and the update, and a prefetching master takes the next push in
    during its update, so the sum counted overlapping time twice and put the saturation
    point of those masters and of the parameter servers 25-40% too low (and, leaving out the
    push that the round-robin master sits through, its point 25% too high).  And why not
    the thread alone: at a light load a prefetching master finds nobody waiting and sits
    through the next push, which under load it would not - that wait is waiting for work.
    Why the link's demand rather than the time the answers spent on the wire: answers that
    overlap each counted in full (a link-bound parameter server of 16 workers came out 3x
    slower than the throughput it was simulated at), and an answer slowed by the receiver's
    link counted against the server's.
    """
    busiest = master_demand(servers, 1)
    return None if busiest is None else busiest[0]


def master_demand(servers: Sequence[Any], worker_iterations: int
                  ) -> tuple[float, float, str] | None:
    """``(s, D, bound)`` of the server with the most busy time - the one that saturates
    first: its service time per update (:func:`master_service_time`), its busy time per
    *worker iteration* ``D`` and the resource that holds it up (:func:`_busy_bound`) (``worker_iterations``: every worker's iterations in the run, as the
    servers' busy time covers the whole run).

    ``D`` is what the saturation point needs: ``W`` workers ask ``W / step`` iterations a
    second of it, so it is busy all the time once ``W = step / D`` (the utilisation law).
    ``D = s`` when every worker iteration is one exchange; with an exchange every ``tau``
    steps it is ``s / tau``, with a group of ``g`` workers pushing through a leader every
    ``k`` steps (hybrid) ``s / (g k)`` - so ``step / s``, what was printed before, put
    those masters' saturation ``tau`` or ``g k`` times too low."""
    best = None
    for a in servers:
        updates = len(a.records.get("update", ()))
        if not updates:
            continue
        busy, bound = _busy_bound(a)
        if busy > 0 and (best is None or busy > best[0]):
            best = (busy, updates, bound)
    if best is None:
        return None
    return best[0] / best[1], best[0] / max(worker_iterations, 1), best[2]


_AVG = ("iteration_time", "throughput", "compute", "comm", "wait", "comm_total", "comm_share",
        "comm_share_total", "worker_utilization", "bytes_per_iteration")


#: time-to-accuracy figures averaged over seeds (when every seed has one)
_TTA = ("steps_to_target", "samples_to_target", "epochs_to_target", "time_to_target",
        "statistical_efficiency", "goodput")
#: the servers' figures, averaged over seeds the same way (``staleness_max``: the largest)
_SERVER = ("update_rate", "server_utilization", "staleness_mean", "staleness_p90",
           "service_time", "saturation_workers")


def summarize(samples: Sequence[PointMetrics]) -> PointMetrics:
    """Mean over seeds, with a 90% interval (5th-95th percentile) of the key metrics.

    Every figure a seed gives is taken over the seeds: the servers' too (update rate,
    utilisation, staleness), which had been the first seed's beside a throughput of all of
    them (4 seeds: 560.1 samples/s, 18.36 updates/s where the seeds' mean is 17.50;
    audit D)."""
    if len(samples) == 1:
        return samples[0]
    base = PointMetrics(**{k: v for k, v in asdict(samples[0]).items()})
    for key in _AVG:
        vals = np.array([getattr(s, key) for s in samples], dtype=float)
        setattr(base, key, float(vals.mean()))
        lo, hi = np.percentile(vals, [5, 95])
        base.interval[key] = (float(lo), float(hi))
    for key in (*_TTA, *_SERVER):
        vals = [getattr(s, key) for s in samples]
        if all(v is not None for v in vals):
            setattr(base, key, float(np.mean(vals)))
    tops = [s.staleness_max for s in samples]
    if all(v is not None for v in tops):
        base.staleness_max = float(max(tops))  # type: ignore[type-var]
    base.seeds = len(samples)
    return base
