"""Run a training scenario: every algorithm at every point of the workers sweep.

Per point: build the job (batch per worker from weak/strong scaling, gradient buckets from
the compute profile), the algorithm's actors, their placement, run the engine (once per seed
when compute jitter makes runs differ), and reduce to :class:`PointMetrics`.  Speedup and
parallel efficiency are relative to the smallest point of the same algorithm.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from clustersim.algorithms.base import ActorSpec, AlgorithmDef, JobInfo, get_algorithm
from clustersim.errors import InputError
from clustersim.scenario.placement import machine_servers
from clustersim.scenario.schema import AlgorithmSpec, Scenario
from clustersim.sim.costs import CostModel
from clustersim.sim.emulate import EmulationResult, emulate_point
from clustersim.sim.engine import Engine, RunResult
from clustersim.sim.grouped import run_grouped, worker_classes
from clustersim.sim.metrics import PointMetrics, point_metrics, summarize
from clustersim.sim.pool_run import run_tasks
from clustersim.sim.runwindow import aligned_run
from clustersim.sim.tta import attach_convergence
from clustersim.trace import TraceEvent

__all__ = ["SweepResult", "run_sweep", "run_sweeps", "simulate_point", "build_job",
           "place_actors", "sweep_cases", "sweep_tasks", "run_tasks", "assemble_sweep",
           "prepare_point", "aligned_run"]  # aligned_run: from sim/runwindow.py


#: grouped runs where exact (sim/grouped.py); tests turn it off to compare with the exact path
GROUPED = True


@dataclass
class SweepResult:
    """One scenario's sweep: ``points`` per algorithm title, one summary (seeds merged) per
    worker count in sweep order; ``runs``: the engine's full results kept for ``--trace``."""

    points: dict[str, list[PointMetrics]] = field(default_factory=dict)
    runs: dict[tuple[str, int], RunResult] = field(default_factory=dict)
    #: ``run.convergence: emulate``: per algorithm title (as in ``points``), one
    #: :class:`~clustersim.sim.emulate.EmulationResult` per sweep point, in the same order
    emulation: dict[str, list[EmulationResult]] = field(default_factory=dict)
    #: beside each emulated point: the analytic model's time to the same target for the same
    #: run (inf: it says never; None: no twin for the run), to show where the two agree
    emulation_analytic: dict[str, list[float | None]] = field(default_factory=dict)

    def trace_events(self) -> list[TraceEvent]:
        """Trace of the run kept for ``--trace``: the largest point of the first algorithm."""
        return [ev for run in self.runs.values() for ev in run.events]


def worker_counts(scn: Scenario) -> tuple[int, ...]:
    """The sweep's worker counts, else one point with every device of the platform."""
    if scn.sweep is not None:
        return scn.sweep.workers
    return (scn.platform.num_devices,)


def batch_per_worker(scn: Scenario, workers: int) -> int:
    """Samples each worker computes per step: the workload's fixed batch (weak scaling), or
    the global batch shared out (strong scaling, or no per-worker batch given), at least 1."""
    wl = scn.workload
    assert wl is not None
    strong = scn.sweep is not None and scn.sweep.scaling == "strong"
    if strong or wl.batch_per_worker is None:
        if wl.global_batch is None:
            raise InputError("strong scaling needs workload.global_batch",
                             path=("workload", "global_batch"))
        return max(1, round(wl.global_batch / workers))
    return wl.batch_per_worker


def place_actors(num_workers: int, num_servers: int, num_devices: int,
                 colocate: Sequence[int | None] = (),
                 devices: Sequence[int] | None = None) -> list[int]:
    """Workers on devices 0..w-1; servers on the next free devices, or shared with the first
    workers' devices when the platform is full (documented in the output).  A server whose
    ``colocate[s]`` names a worker rank shares that worker's device instead (node-local
    processes) and takes no free device.  ``devices``: the devices the other servers take,
    in order (``placement.server: machine``, :func:`~clustersim.scenario.placement.
    machine_servers`)."""
    place = list(range(num_workers))
    k = 0  # servers placed on free devices so far
    for s in range(num_servers):
        c = colocate[s] if s < len(colocate) else None
        if c is not None:
            place.append(place[c])
            continue
        d = num_workers + k if devices is None else devices[k]
        place.append(d if d < num_devices else k % max(num_workers, 1))
        k += 1
    return place


def build_job(scn: Scenario, alg: AlgorithmSpec, defn: AlgorithmDef, workers: int, seed: int,
              costs: CostModel) -> JobInfo:
    """One point as plain data for an algorithm's ``build`` (it never reads the scenario)."""
    run = scn.run
    plat = scn.platform
    return JobInfo(
        workers=workers,
        iterations=run.iterations,
        grad_bytes=float(costs.grad_bytes),
        num_layers=costs.num_layers,
        buckets=costs.buckets(),
        hosts=tuple(plat.host(d) for d in range(workers)),
        devices=tuple(plat.spec(d).name for d in range(workers)),
        servers=defn.servers(alg.params),
        batch=costs.batch,
        seed=seed,
        params=dict(alg.params),
    )


def simulate_point(scn: Scenario, alg: AlgorithmSpec, workers: int, seed: int,
                   trace: bool = False) -> tuple[PointMetrics, RunResult]:
    """One point's metrics and run: these arguments alone decide it (any executor, order)."""
    # the cyclic garbage collector waits until the point is done (set-up included: its
    # thousands of actors, stats and mailboxes would trigger full collections of the whole
    # platform graph; see Engine.run)
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        return _simulate_point(scn, alg, workers, seed, trace)
    finally:
        if gc_was_on:
            gc.enable()


def prepare_point(scn: Scenario, alg: AlgorithmSpec, workers: int, seed: int,
                  iterations: int | None = None
                  ) -> tuple[Scenario, JobInfo, list[ActorSpec], list[int], CostModel]:
    """What a point runs: the point's scenario, its job (``iterations``: instead of
    ``run.iterations``, for the convergence emulation), the algorithm's actors, their
    placement and the cost model."""
    scn = scn.at_workers(workers)  # the point's own fields (sweep.at), if it has any
    if iterations is None:  # whole exchange periods (the emulation sets its own length)
        scn = replace(scn, run=aligned_run(scn.run, alg))
    defn = get_algorithm(alg.name)
    batch = batch_per_worker(scn, workers)
    own = None  # placement.server: machine - each server's device is its own machine
    if scn.placement is not None and scn.placement.server == "machine":
        count = defn.servers(alg.params)  # the servers that take a device of their own
        if count:
            from clustersim.platform.gang import whole_machine

            own = machine_servers(scn.platform, workers, count)
            scn = replace(scn, platform=whole_machine(scn.platform, tuple(own)))
    costs = CostModel(scn, batch, seed)
    job = build_job(scn, alg, defn, workers, seed, costs)
    if iterations is not None:
        job = replace(job, iterations=iterations)
    actors = defn.actors(job)
    if [a.rank for a in actors] != list(range(len(actors))):
        raise RuntimeError(f"algorithm {alg.name} must number its actors 0..n-1 in order")
    servers = [a for a in actors if a.role != "worker"]
    own_device = sum(1 for a in servers if a.colocate is None)
    if own_device != job.servers:  # the job and a whole-machine placement count servers()
        raise RuntimeError(f"algorithm {alg.name} made {own_device} server actor(s) of a "
                           f"device of their own (colocate=None) but its "
                           f"AlgorithmDef.servers() says {job.servers}: set servers=")
    placement = place_actors(workers, len(servers), scn.platform.num_devices,
                             [a.colocate for a in servers], own)
    costs.share_devices(placement, [a.role for a in actors])
    return scn, job, actors, placement, costs


def _simulate_point(scn: Scenario, alg: AlgorithmSpec, workers: int, seed: int,
                    trace: bool) -> tuple[PointMetrics, RunResult]:
    scn, job, actors, placement, costs = prepare_point(scn, alg, workers, seed)
    batch = costs.batch
    # classes of provably identical workers run as one representative each (sim/grouped.py)
    classes = worker_classes(alg.name, scn, actors, placement, trace) if GROUPED else None
    if classes is not None:
        res = run_grouped(scn, job, actors, placement, costs, classes)
    else:
        engine = Engine(scn.platform, job, actors, placement, costs, params=scn.network,
                        fidelity=scn.run.fidelity, trace=trace, warmup=scn.run.warmup)
        res = engine.run()
    m = point_metrics(alg.title, workers, [batch] * workers, res,
                      scn.run.iterations - scn.run.warmup,
                      queueing=get_algorithm(alg.name).family != "sync")
    # emulate: the emulated task is the measure (its analytic twin is printed beside it)
    profile = (scn.workload.convergence if scn.run.convergence in ("auto", "analytic")
               else None)
    if profile is not None:
        attach_convergence(m, profile, alg, job, res, scn.workload.optimizer)
    return m, res


def default_jobs() -> int:
    """Worker processes for sweeps: ``CLUSTERSIM_JOBS`` or the cores this process may use
    (:func:`clustersim._jobs.usable_cores`)."""
    from clustersim._jobs import check_jobs, usable_cores

    env = os.environ.get("CLUSTERSIM_JOBS")
    if env:
        try:
            n = int(env)  # 0 or below is refused as -j 0 is (it meant 1, silently)
        except ValueError:
            raise InputError(f"CLUSTERSIM_JOBS must be a whole number, not {env!r}") from None
        why = check_jobs(n)
        if why is not None:
            raise InputError(f"CLUSTERSIM_JOBS: {why}")
        return n
    return usable_cores()


def run_sweep(scn: Scenario, trace: bool = False,
              progress_factory: Callable[[int], AbstractContextManager[Any]] | None = None,
              jobs: int | None = None) -> SweepResult:
    """Every algorithm at every sweep point, for the scenario and each of its variants.

    Points are independent (each is seeded by itself), so they run on a local process pool
    (``jobs`` processes, default :func:`default_jobs`; 1 = in this process) and are assembled
    in sweep order: the output does not depend on which process ran what.  The pool forks,
    so the scenario is shared, not pickled; where fork is unavailable the sweep runs here.
    """
    return run_sweeps([scn], trace, progress_factory, jobs)[0]


def run_sweeps(scns: Sequence[Scenario], trace: bool = False,
               progress_factory: Callable[[int], AbstractContextManager[Any]] | None = None,
               jobs: int | None = None) -> list[SweepResult]:
    """:func:`run_sweep` of each scenario, all on one pool: one pool start, and one queue
    that the pool's processes empty heaviest first, instead of one pool per sweep that
    waits for its own last point (``predict`` runs its headline band beside its sweep so).
    Each result equals :func:`run_sweep`'s for that scenario alone; ``trace`` traces the
    first scenario's largest point."""
    cases: list[Case] = []
    spans: list[tuple[int, int]] = []
    for s in scns:
        mine = sweep_cases(s)
        spans.append((len(cases), len(cases) + len(mine)))
        cases += mine
    tasks = sweep_tasks(cases)
    jobs = default_jobs() if jobs is None else max(1, jobs)  # a bad CLUSTERSIM_JOBS: now
    traced = None
    if trace:
        s0 = cases[0][1]
        traced = (0, worker_counts(s0)[-1], 0, s0.run.seed)
    outs = [SweepResult() for _ in scns]
    results: dict[tuple[int, int, int], PointMetrics] = {}
    ctx = progress_factory(len(tasks)) if progress_factory else nullcontext(lambda n=1: None)
    with ctx as advance:
        if traced is not None:  # the traced run stays here: its events are not shipped back
            ci, w, r, seed = traced
            m, res = simulate_point(cases[ci][1], cases[ci][2], w, seed, True)
            results[(ci, w, r)] = m
            outs[0].runs[(cases[ci][0], w)] = res
            advance(1)
        run_tasks(cases, [t for t in tasks if t[:3] not in results], results, jobs, advance)
    return [assemble_sweep(cases[a:b], results, out, first=a)
            for (a, b), out in zip(spans, outs)]


Case = tuple[str, Scenario, AlgorithmSpec]


def sweep_cases(scn: Scenario) -> list[Case]:
    """(title, scenario, algorithm) for every algorithm of the scenario and its variants."""
    if scn.workload is None or not scn.algorithms:
        raise InputError("a training prediction needs 'workload' and 'algorithm' sections")
    cases: list[Case] = []
    base_prefix = f"{scn.label} · " if scn.variants else ""
    for prefix, s in ((base_prefix, scn), *((f"{label} · ", v) for label, v in scn.variants)):
        cases += [(prefix + alg.title, s, alg) for alg in s.algorithms]
    titles = [t for t, _, _ in cases]
    if len(set(titles)) != len(titles):
        dup = next(t for t in titles if titles.count(t) > 1)
        raise InputError(f"two algorithms would both be reported as {dup!r}: give them "
                         f"distinct 'label's", path=("compare",), file=scn.file)
    return cases


def sweep_tasks(cases: Sequence[Case], first: int = 0) -> list[tuple[int, int, int, int]]:
    """``(case index, workers, repeat, seed)`` of every run; case indices start at ``first``
    (several sweeps' cases can share one list and one pool)."""
    tasks: list[tuple[int, int, int, int]] = []
    for ci, (_title, s, _alg) in enumerate(cases, start=first):
        repeats = s.run.repeats if s.workload.jitter > 0 else 1
        tasks += [(ci, w, r, s.run.seed + r) for w in worker_counts(s) for r in range(repeats)]
    return tasks


def assemble_sweep(cases: Sequence[Case], results: dict[tuple[int, int, int], PointMetrics],
                   out: SweepResult | None = None, first: int = 0,
                   emulate: Callable[[int, Scenario, AlgorithmSpec, str], Any] | None = None
                   ) -> SweepResult:
    """Points in sweep order (seeds summarized, speedup and efficiency relative to the
    smallest point) from the runs' metrics; ``first`` as in :func:`sweep_tasks`.
    ``emulate(case index, scenario, algorithm, title)``: a case's emulated runs (default:
    :func:`_emulate_case`; the what-if page reads them from its cache)."""
    out = SweepResult() if out is None else out
    for ci, (title, s, alg) in enumerate(cases, start=first):
        repeats = s.run.repeats if s.workload.jitter > 0 else 1
        pts: list[PointMetrics] = []
        for w in worker_counts(s):
            samples = [results[(ci, w, r)] for r in range(repeats)]
            for m in samples:
                m.algorithm = title
            pts.append(summarize(samples))
        base = pts[0]
        for p in pts:
            p.speedup = p.throughput / base.throughput if base.throughput > 0 else 0.0
            p.efficiency = p.speedup / (p.workers / base.workers)
        out.points[title] = pts
        if s.run.convergence == "emulate":  # one run per point, at the scenario's seed
            out.emulation[title], out.emulation_analytic[title] = (
                _emulate_case(s, alg, title) if emulate is None else emulate(ci, s, alg, title))
    return out


def _emulate_case(s: Scenario, alg: AlgorithmSpec, title: str
                  ) -> tuple[list[EmulationResult], list[float | None]]:
    """Every point of one algorithm emulated, each with the analytic prediction for that run
    (the task's profile, the emulation's fitted constants, the run's own staleness)."""
    from clustersim.sim.convfit import analytic_for_emulation

    results, analytic = [], []
    for w in worker_counts(s):
        res, run = emulate_point(s, alg, w, s.run.seed, title)
        stale = [float(v) for v in run.records("staleness")]
        pred = analytic_for_emulation(s, alg, w, res, staleness=stale)
        results.append(res)
        # inf: the analytic model says never (its table prints "never"); None: no twin
        analytic.append(None if pred is None else float(pred.time_to_target))
    return results, analytic
