"""Run a training scenario for real: ``run_scenario`` (launcher side) and its job setup.

``run_scenario`` resolves the scenario exactly as the simulator would (same file, same
``--set`` overrides, same :class:`~clustersim.algorithms.base.JobInfo` as
:func:`clustersim.sim.sweep.build_job`, same actor placement), starts one MPI rank per actor
(``python -m realrun.trainmain``, through :func:`realrun.launch.launch`: timeouts, per-rank
logs, failure blame, no stray processes), then reads the per-rank traces and reduces them to
the simulator's :class:`~clustersim.sim.metrics.PointMetrics` with
:mod:`clustersim.trace_metrics`.  Predicted and measured are then the same record of the same
point - what the calibration's validation compares.

Outputs in ``out_dir``: ``trace.rank<r>.jsonl`` (one per rank, flushed per event),
``trace.chrome.json`` (Perfetto), ``metrics.json``, ``math.rank<r>.json`` and ``.npy`` (with
``math``: first and final loss, a digest of the weights, the weights), ``grad_norms.csv`` (with
``math``, BSP exchanging gradients on 2+ workers: per step the workers' local and the
all-reduced gradient's squared norms, :mod:`realrun.gradnorms`) and ``logs/`` (per-rank stdout/stderr/exit/state).
A failed or hung rank raises :class:`~realrun.launch.RealRunError` naming the rank and its
log; everything traced up to then stays in ``out_dir``.  Before the launch every output of an
earlier run is removed from ``out_dir`` (:mod:`realrun.outdir`), so after a failure the folder
holds this run's partial traces and nothing of another run.  Metrics are taken over the
iterations the traces hold (:mod:`realrun.coverage`), never over the scenario's count.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clustersim.errors import InputError
from clustersim.report.output import write_json
from clustersim.trace import TraceEvent, write_chrome
from realrun.launch import LaunchResult, RealRunError, launch
from realrun.outdir import check_out_dir, clear_previous

__all__ = ["RealRunResult", "TrainSetup", "prepare", "run_scenario", "load_run",
           "RANK_MODULE"]

RANK_MODULE = "realrun.trainmain"


@dataclass
class TrainSetup:
    """One point of a scenario, resolved the way :func:`clustersim.sim.sweep.simulate_point`
    resolves it."""

    scenario: Any
    algorithm: Any  # AlgorithmSpec
    workers: int
    servers: int
    batch: int
    costs: Any  # CostModel
    job: Any  # JobInfo
    actors: list[Any]
    placement: list[int]
    sets: tuple[str, ...]
    #: the run the scenario asked for, where whole exchange periods lengthened it (else None)
    asked: Any = None

    @property
    def np(self) -> int:
        return len(self.actors)

    @property
    def hosts(self) -> dict[int, int]:
        """Actor rank -> machine id of its device in the scenario's platform."""
        plat = self.scenario.platform
        return {a.rank: plat.host(self.placement[i]) for i, a in enumerate(self.actors)}


def _pick_algorithm(scn: Any, name: str | None) -> Any:
    algs = scn.algorithms
    if name is None:
        return algs[0]
    for a in algs:
        if a.title == name:
            return a
    for a in algs:
        if a.name == name:
            return a
    from clustersim.errors import unknown_name

    raise unknown_name("algorithm of this scenario", name, [a.title for a in algs],
                       path=("algorithm",))


def prepare(scenario: str | os.PathLike[str], *, algorithm: str | None = None,
            workers: int | None = None, iterations: int | None = None,
            sets: Sequence[str] = (), np: int | None = None) -> TrainSetup:
    """Load the scenario and build the job of one point (no MPI involved).

    ``workers`` defaults to ``np`` minus the algorithm's servers when ``np`` is given, else to
    the largest point of the scenario's sweep.  ``iterations`` overrides ``run.iterations``
    (lowering ``run.warmup`` when it would not leave a measured iteration).
    """
    from clustersim.algorithms.base import get_algorithm
    from clustersim.scenario.schema import load_scenario
    from clustersim.sim.sweep import prepare_point, worker_counts

    sets = list(sets)
    asked_workers = workers
    typed: dict[str, str] = {}  # an override made here -> the option the user typed
    if iterations is not None:
        if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
            raise InputError(f"iterations must be a whole number >= 1, not {iterations!r}",
                             path=("iterations",))
        base = load_scenario(scenario, sets)
        sets.append(f"run.iterations={iterations}")
        typed[sets[-1]] = f"--iterations {iterations}"
        if base.run.warmup >= iterations:
            sets.append(f"run.warmup={iterations - 1}")
            typed[sets[-1]] = f"--iterations {iterations}"
    scn = _load(scenario, sets, typed)
    if scn.workload is None:
        raise InputError("a real training run needs a 'workload' and an 'algorithm' (this "
                         "scenario is a collective benchmark: use `clustersim calibrate "
                         "--real` or realrun's microbenchmarks)", path=("workload",))
    alg = _pick_algorithm(scn, algorithm)
    defn = get_algorithm(alg.name)
    servers = int(defn.servers(alg.params))
    if workers is None:
        if np is not None:
            workers = np - servers
            if workers < 1:
                raise InputError(f"--np must be at least {servers + 1} ({alg.title} needs "
                                 f"at least 1 worker plus {servers} server(s)), not {np}")
        else:
            workers = worker_counts(scn)[-1]
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError(f"workers must be a whole number >= 1, not {workers!r}",
                         path=("workers",))
    if np is not None and np != workers + servers:
        raise InputError(f"--np {np} does not match {workers} worker(s) + {servers} "
                         f"server(s) of {alg.title} (one MPI rank per actor)", path=("np",))
    sets.append(f"sweep.workers=[{workers}]")
    if asked_workers is not None or np is not None:  # else the file's own largest point
        typed[sets[-1]] = (f"--workers {workers}" if asked_workers is not None
                           else f"--np {np}")
    scn = _load(scenario, sets, typed)
    alg = _pick_algorithm(scn, algorithm)
    # the simulator's own preparation of the point: the same job, actors and placement
    # (``placement.server: machine`` included: each server on a machine of its own)
    asked = scn.run
    scn, job, actors, placement, costs = prepare_point(scn, alg, workers, scn.run.seed)
    srv = [a for a in actors if a.role != "worker"]
    return TrainSetup(scn, alg, workers, len(srv), costs.batch, costs, job, actors, placement,
                      tuple(sets), None if scn.run == asked else asked)


def _load(scenario: str | os.PathLike[str], sets: Sequence[str],
          typed: Mapping[str, str]) -> Any:
    """``load_scenario`` with an error in an override :func:`prepare` made from an option
    cited as that option (``--np 100``), not as a ``--set`` the user never typed."""
    from clustersim.scenario.schema import load_scenario

    try:
        return load_scenario(scenario, sets)
    except InputError as exc:
        for item, option in typed.items():
            if exc.origin == f"--set {item}":
                exc.origin = option
        raise


@dataclass
class RealRunResult:
    """A finished real run: where its traces are, the events, and the measured metrics."""

    scenario: str
    algorithm: str
    workers: int
    np: int
    out_dir: Path
    traces: list[Path]
    headers: list[dict[str, Any]]
    events: list[TraceEvent]
    metrics: Any  # clustersim.sim.metrics.PointMetrics
    launch: LaunchResult | None  # None: loaded from a recorded run (:func:`load_run`)
    math: list[dict[str, Any]] = field(default_factory=list)
    #: what the traces held (:class:`realrun.coverage.Coverage`); a partial run loaded with
    #: ``load_run(..., partial=True)`` is measured over ``coverage.measured`` iterations
    coverage: Any = None

    def to_dict(self) -> dict[str, Any]:
        cov = self.coverage
        return {"complete": cov.complete if cov is not None else None,
                "iterations_completed": cov.completed if cov is not None else None,
                "iterations_measured": cov.measured if cov is not None else None,
                "scenario": self.scenario, "algorithm": self.algorithm, "workers": self.workers,
                "np": self.np, "out_dir": str(self.out_dir),
                "traces": [str(p) for p in self.traces], "metrics": self.metrics.to_dict(),
                "elapsed": self.launch.elapsed if self.launch is not None else None,
                "math": self.math}


def run_scenario(
    scenario: Any,
    *,
    np: int | None = None,
    algorithm: str | None = None,
    iterations: int | None = None,
    out_dir: str | os.PathLike[str],
    timeout: float,
    mpiexec: str | None = None,
    hostfile: str | None = None,
    sets: Sequence[str] = (),
    workers: int | None = None,
    collectives: str = "library",
    math: bool = False,
    backend: str = "auto",
    env: Mapping[str, str] | None = None,
) -> RealRunResult:
    """Run one point of a training scenario on real MPI ranks and measure it.

    ``scenario`` is a scenario file (or a loaded ``Scenario``, whose ``file`` is used - pass
    its ``--set`` overrides again as ``sets``).  ``algorithm`` picks one of the scenario's
    algorithms by label or name (default: the main one).  One rank per actor: ``np`` = workers
    + servers (give either; default workers: the largest sweep point).  ``collectives``:
    ``library`` or ``schedules`` (:mod:`realrun.opcollectives`); ``math`` attaches the proxy
    model so the run really trains.  ``env`` adds variables to the ranks' environment.

    Raises :class:`~clustersim.errors.InputError` for bad input (before anything starts) and
    :class:`~realrun.launch.RealRunError` when a rank fails or the run exceeds ``timeout``.
    """
    from realrun.opcollectives import COLLECTIVE_MODES

    path = getattr(scenario, "file", scenario)
    if path is None:
        raise InputError("run_scenario needs a scenario file (this Scenario was not loaded "
                         "from one)", path=("scenario",))
    if not Path(path).is_file():
        raise InputError(f"scenario file {str(path)!r} not found", path=("scenario",))
    if collectives not in COLLECTIVE_MODES:
        raise InputError(f"unknown collectives mode {collectives!r} (allowed: "
                         f"{', '.join(COLLECTIVE_MODES)})", path=("collectives",))
    setup = prepare(path, algorithm=algorithm, workers=workers, iterations=iterations,
                    sets=sets, np=np)
    if hostfile is None:  # with a hostfile the ranks' GPUs are on other machines
        from realrun.arrays import check_backend

        check_backend(backend)
    check_out_dir(out_dir)  # a file, a name too long, no permission: exit 2 before launching
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    clear_previous(out)  # the folder must never mix an earlier run's outputs with this one's
    argv = ["--scenario", str(Path(path).resolve()), "--algorithm", setup.algorithm.title,
            "--collectives", collectives, "--backend", backend, "--out", str(out)]
    for s in setup.sets:
        argv += ["--set", s]
    if math:
        argv.append("--math")
    res = launch(RANK_MODULE, argv, setup.np, timeout=timeout, log_dir=out / "logs",
                 mpiexec=mpiexec, hostfile=hostfile, env=env)
    try:
        result = _measured(setup, out, res)
    except InputError as exc:  # every rank exited 0, yet the traces are not a whole run
        raise RealRunError(f"every rank exited 0 but {exc}; see {out / 'logs'}",
                           kind="launch", rank=None, log=out / "logs" / "mpiexec.log",
                           reason="incomplete traces", log_dir=out / "logs",
                           run_id=res.run_id) from None
    # whole or not at all: a stop during the write must not leave half a success, which
    # realrun.partial would then take for one and not replace
    write_json(out / "metrics.json", result.to_dict())
    write_chrome(out / "trace.chrome.json", result.events, f"{setup.scenario.name} (measured)")
    if math:  # BSP's per-step gradient norms -> the log `calibrate --convergence` reads
        from realrun.gradnorms import write_norm_log

        write_norm_log(out, result.headers, result.events)
    return result


def _measured(setup: TrainSetup, out: Path, res: LaunchResult | None, *,
              partial: bool = False) -> RealRunResult:
    """The run in ``out`` as :class:`RealRunResult`: its traces reduced to metrics.

    Measured over the iterations the traces hold, never over the scenario's count
    (:mod:`realrun.coverage`): an incomplete run (a rank that traced nothing or never reached
    its end, or fewer iterations than asked) raises :class:`InputError` saying what is
    missing, unless ``partial`` - then it is measured over the iterations every worker
    completed, and ``result.coverage`` says how many that was.
    """
    from realrun.api import load_traces

    headers, events = load_traces(out)
    cov = traced_coverage(setup, events)
    if not cov.complete and (not partial or cov.measured < 1):
        hint = ("nothing after the warm-up to measure" if cov.measured < 1 else
                f"rerun it; from Python, load_run(..., partial=True) measures the "
                f"{cov.measured} iteration(s) it holds")
        raise InputError(f"the run in {str(out)!r} is incomplete: {cov.describe()}; its "
                         f"traces do not measure the scenario: {hint}", path=("runs",))
    return measure(setup, out, res, headers, events, cov)


def traced_coverage(setup: TrainSetup, events: Sequence[TraceEvent]) -> Any:
    """The :class:`realrun.coverage.Coverage` of ``events`` (a run of ``setup``)."""
    from realrun.coverage import coverage

    scn = setup.scenario
    workers = [a.rank for a in setup.actors if a.role == "worker"]
    return coverage(events, np=setup.np, workers=workers, asked=scn.run.iterations,
                    warmup=scn.run.warmup)


def measure(setup: TrainSetup, out: Path, res: LaunchResult | None,
            headers: list[dict[str, Any]], events: list[TraceEvent],
            cov: Any) -> RealRunResult:
    """``events`` (with ``cov``, their :func:`traced_coverage`) reduced to metrics: over the
    iterations every worker completed when the run is incomplete (``cov.measured`` >= 1 is
    the caller's to check), over the scenario's count when it is complete.

    Split from :func:`_measured` so that :mod:`realrun.partial` can look at the coverage
    first (to say why a stopped run gave nothing to measure) without reading the traces
    twice."""
    from clustersim.trace_metrics import measured_metrics
    from realrun.coverage import cut_to

    scn = setup.scenario
    if not cov.complete:
        workers = [a.rank for a in setup.actors if a.role == "worker"]
        events = cut_to(events, workers, cov.completed)
    metrics = measured_metrics(events, algorithm=setup.algorithm.title,
                               batch=[setup.batch] * setup.workers, warmup=scn.run.warmup,
                               iterations=cov.completed if not cov.complete
                               else scn.run.iterations)
    maths = [json.loads(p.read_text()) for p in
             sorted(out.glob("math.rank*.json"), key=lambda p: int(p.stem[len("math.rank"):]))]
    traces = sorted(out.glob("trace.rank*.jsonl"),
                    key=lambda p: int(p.name[len("trace.rank"):-len(".jsonl")]))
    return RealRunResult(scn.name, setup.algorithm.title, setup.workers, setup.np, out,
                         traces, headers, events, metrics, res, maths, cov)


def load_run(scenario: str | os.PathLike[str], out_dir: str | os.PathLike[str], *,
             workers: int | None = None, algorithm: str | None = None,
             sets: Sequence[str] = (), partial: bool = False) -> RealRunResult:
    """A run recorded earlier in ``out_dir`` (its ``trace.rank*.jsonl``), measured again
    from its traces - how a profile fitted elsewhere is validated against runs made on the
    cluster (``clustersim calibrate TRACES --runs DIR``) without running them again.  The
    scenario and point must be the ones the run was made of.

    A run that did not finish (stopped, failed, timed out) is refused with
    :class:`InputError` saying how far it got - measured as if complete it would be wrong by
    the ratio of asked to completed iterations; with ``partial`` it is measured over the
    iterations every worker completed (``result.coverage``)."""
    out = Path(out_dir)
    if not sorted(out.glob("trace.rank*.jsonl")):
        raise InputError(f"no trace.rank*.jsonl in {str(out)!r}: not a recorded run",
                         path=("runs",))
    setup = prepare(scenario, algorithm=algorithm, workers=workers, sets=sets)
    return _measured(setup, out, None, partial=partial)
