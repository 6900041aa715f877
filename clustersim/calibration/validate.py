"""Honest validation: predict end-to-end runs that were not in the fit, then measure them.

The profile is fitted on microbenchmarks only (ping-pong, collectives, GEMM, memory,
reduction).  Here whole training scenarios - synchronous and asynchronous algorithms - are
predicted by the simulator with the profile applied, and run for real on MPI ranks
(:func:`realrun.train.run_scenario`, imported lazily); nothing of those runs feeds back into
any parameter.  Per case the table shows iteration time and communication share, predicted
and measured, with the iteration time's relative error; the summary is the mean absolute
percentage error (MAPE) of iteration time over the cases.

Both sides use the same definitions (:mod:`clustersim.sim.metrics`, which the measured
metrics of :mod:`clustersim.trace_metrics` reuse): iteration time over the measured
iterations (warmup excluded), communication share = exposed communication / iteration time.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clustersim.calibration.applyprofile import apply_profile_data
from clustersim.calibration.profile import Profile
from clustersim.errors import InputError

__all__ = ["Case", "Measured", "ValidationReport", "predict_scenario", "scenario_point",
           "run_cases", "recorded_cases", "build_report", "validate_scenarios",
           "default_scenarios"]


@dataclass
class Case:
    """One scenario point, predicted and measured."""

    scenario: str
    algorithm: str
    workers: int
    predicted: Any  # PointMetrics
    measured: Any  # PointMetrics: the run with the median iteration time
    run_dir: str = ""
    #: iteration times of every repeat (s), in run order
    repeats: list[float] = field(default_factory=list)
    #: 1-minute load average when each repeat started
    loads: list[float] = field(default_factory=list)
    #: per operation, median predicted against median measured (:mod:`.perop`)
    ops: list[dict[str, Any]] = field(default_factory=list)
    #: the measured iteration time the error is taken against: the median of the repeats
    #: (with an even number, the mean of the two middle ones), or the fastest; None: the
    #: chosen run's (``measured``)
    reference: float | None = None

    @property
    def measured_time(self) -> float:
        """The measured iteration time the case stands for (:attr:`reference`)."""
        return self.reference if self.reference is not None else self.measured.iteration_time

    @property
    def error(self) -> float:
        """Relative error of the predicted iteration time against :attr:`measured_time`.

        Why not the chosen run's own time: with an even number of repeats the run that stands
        for the case (it must be a real run, for the per-operation rows) is the faster of the
        two middle ones - with two repeats the fastest - and the error was taken against it,
        so a prediction that is optimistic looked better than the median: MAPE 5.7 % printed
        where the median's was 7.3 % (QA 15)."""
        return self.predicted.iteration_time / self.measured_time - 1.0

    @property
    def share_error(self) -> float:
        """Predicted minus measured communication share (percentage points / 100)."""
        return self.predicted.comm_share - self.measured.comm_share

    def as_dict(self) -> dict[str, Any]:
        p, m = self.predicted, self.measured
        return {"scenario": self.scenario, "algorithm": self.algorithm, "workers": self.workers,
                "iteration_time": {"predicted": _g(p.iteration_time),
                                   "measured": _g(self.measured_time), "error": _g(self.error)},
                "comm_share": {"predicted": _g(p.comm_share), "measured": _g(m.comm_share)},
                "compute": {"predicted": _g(p.compute), "measured": _g(m.compute)},
                "comm": {"predicted": _g(p.comm), "measured": _g(m.comm)},
                "wait": {"predicted": _g(p.wait), "measured": _g(m.wait)},
                "measured_repeats": [_g(x) for x in self.repeats],
                # a recorded run's load is unknown: null, as profiles and JSON have no NaN
                "load_average": [_g(x) if math.isfinite(x) else None for x in self.loads],
                "operations": [{k: (_g(v) if isinstance(v, float) else v)
                                for k, v in row.items()} for row in self.ops]}


def _g(x: float) -> float:
    return float(f"{x:.6g}")


@dataclass
class ValidationReport:
    """The validated cases and their summary, :attr:`mape`: the mean absolute relative error
    of iteration time over the cases, as a fraction (0.057 is 5.7 %; NaN without cases)."""

    cases: list[Case] = field(default_factory=list)

    @property
    def mape(self) -> float:
        if not self.cases:
            return math.nan
        return sum(abs(c.error) for c in self.cases) / len(self.cases)

    def as_dict(self) -> dict[str, Any]:
        return {"mape_iteration_time": _g(self.mape) if self.cases else None,
                "cases": [c.as_dict() for c in self.cases]}


def default_scenarios(root: str | Path | None = None, device: str | None = None) -> list[Path]:
    """The shipped real-run scenarios, sorted: ``scenarios/real_gpu_*.yaml`` for
    ``device="gpu"`` (a one-GPU machine), the other ``real_*.yaml`` for ``"cpu"`` (CPU
    cores: the GPU cases' 17 GFLOP layers would take minutes a step there), all of them
    for ``None``."""
    from clustersim.shipped import shipped_dir

    base = Path(root) if root is not None else shipped_dir("scenarios")
    found = sorted(base.glob("real_*.yaml")) if base is not None else []
    if device is None:
        return found
    return [f for f in found if f.name.startswith("real_gpu_") == (device == "gpu")]


def _main_point(scn: Any, algorithm: str | None, workers: int | None) -> tuple[Any, int]:
    algs = scn.algorithms
    if scn.workload is None or not algs:  # a collective benchmark: no training point
        raise InputError("a validation scenario must be a training scenario (a 'workload' "
                         "and an 'algorithm'), not a collective benchmark",
                         file=str(scn.file) if getattr(scn, "file", None) else None)
    alg = algs[0]
    if algorithm is not None:
        match = [a for a in algs if algorithm in (a.title, a.name)]
        if not match:
            from clustersim.errors import unknown_name

            raise unknown_name("algorithm", algorithm, [a.title for a in algs],
                               path=("algorithm",))
        alg = match[0]
    if workers is None:
        workers = scn.sweep.workers[-1] if scn.sweep is not None else scn.platform.num_devices
    return alg, workers


def predict_scenario(path: str | Path, profile: Profile | None, *, algorithm: str | None = None,
                     workers: int | None = None, sets: Sequence[str] = ()) -> tuple[Any, str, int]:
    """(PointMetrics, algorithm title, workers) the simulator predicts for one scenario point,
    with ``profile`` applied (``None``: the scenario as written)."""
    metrics, title, workers, _ = _predict(path, profile, algorithm, workers, sets, False)
    return metrics, title, workers


def _predict(path: str | Path, profile: Profile | None, algorithm: str | None,
             workers: int | None, sets: Sequence[str], trace: bool
             ) -> tuple[Any, str, int, Any]:
    """:func:`predict_scenario`, and with ``trace`` the run's events and warm-up too (a
    trace does not change a run's metrics)."""
    from clustersim.scenario.schema import load_scenario
    from clustersim.sim.sweep import aligned_run, simulate_point

    scn = load_scenario(path, list(sets))
    if profile is not None:
        scn, _, _ = apply_profile_data(scn, profile)
    alg, workers = _main_point(scn, algorithm, workers)
    metrics, res = simulate_point(scn, alg, workers, scn.run.seed, trace)
    warmup = aligned_run(scn.run, alg).warmup  # as the point ran it
    return metrics, alg.title, workers, (res.events, warmup) if trace else None


def scenario_point(path: str | Path, sets: Sequence[str] = ()) -> tuple[str, int]:
    """(algorithm title, workers) of the point a validation runs: the main algorithm at the
    largest sweep point."""
    from clustersim.scenario.schema import load_scenario

    alg, workers = _main_point(load_scenario(path, list(sets)), None, None)
    return alg.title, workers


def _load() -> float:
    """The 1-minute load average (NaN where the OS has none): how busy the machine was."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return math.nan


@dataclass
class Measured:
    """One real run of a validation scenario."""

    result: Any  # realrun.train.RealRunResult
    load: float  # load average when it started


def run_cases(scenarios: Sequence[str | Path], *, out_dir: str | Path, timeout: float,
              collectives: str = "library", repeats: int = 1, first: int = 0,
              mpiexec: str | None = None, hostfile: str | None = None,
              sets: Sequence[str] = (), runner: Callable[..., Any] | None = None,
              progress: Callable[[str], None] | None = None) -> list[list[Measured]]:
    """Run every scenario's main point ``repeats`` times for real, round-robin over the
    scenarios (so a burst of other work hits one repeat of several cases rather than every
    repeat of one).  ``first`` numbers the run directories (``run<first + r>``).

    ``runner`` defaults to :func:`realrun.train.run_scenario` (same keyword arguments).
    """
    if runner is None:
        from realrun.train import run_scenario as runner
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    points = [scenario_point(path, sets) for path in scenarios]
    runs: list[list[Measured]] = [[] for _ in scenarios]
    for rep in range(first, first + repeats):
        for i, path in enumerate(scenarios):
            name = Path(path).stem
            title, workers = points[i]
            if progress is not None:
                progress(f"running {name} for real ({title}, {workers} worker(s)), "
                         f"run {rep + 1}")
            load = _load()
            res = runner(str(path), out_dir=Path(out_dir) / name / f"run{rep}",
                         timeout=timeout, mpiexec=mpiexec, hostfile=hostfile,
                         sets=tuple(sets), workers=workers, collectives=collectives)
            runs[i].append(Measured(res, load))
    return runs


def recorded_cases(scenarios: Sequence[str | Path], runs_dir: str | Path,
                   sets: Sequence[str] = ()) -> list[list[Measured]]:
    """The validation runs recorded earlier under ``runs_dir/<scenario>/run*/`` (what
    :func:`run_cases` writes), measured again from their traces instead of run again.  The
    load average when they ran is not recorded (NaN)."""
    from realrun.train import load_run

    out: list[list[Measured]] = []
    for path in scenarios:
        name = Path(path).stem
        dirs = sorted((d for d in (Path(runs_dir) / name).glob("run*")
                       if d.name[3:].isdigit() and d.is_dir()), key=lambda d: int(d.name[3:]))
        if not dirs:
            raise InputError(f"no recorded runs of {name!r} in {str(runs_dir)!r} (expected "
                             f"{name}/run0/, run1/ ... as `calibrate --real` writes them)",
                             path=("runs",))
        _title, workers = scenario_point(path, sets)
        out.append([Measured(load_run(path, d, workers=workers, sets=sets), math.nan)
                    for d in dirs])
    return out


def build_report(profile: Profile, scenarios: Sequence[str | Path],
                 runs: Sequence[Sequence[Measured]], sets: Sequence[str] = (),
                 pick: str = "median") -> ValidationReport:
    """Predict every scenario with ``profile`` and set it against its measured runs: the run
    with the median iteration time stands for the case, or with ``pick="min"`` the fastest
    (the statistic that matches a profile fitted with ``--statistic min``: both sides then
    describe the least disturbed machine)."""
    if pick not in ("median", "min"):
        raise ValueError(f"pick must be 'median' or 'min', not {pick!r}")
    report = ValidationReport()
    from clustersim.calibration.perop import compare_ops

    for path, results in zip(scenarios, runs):
        times = [r.result.metrics.iteration_time for r in results]
        order = sorted(range(len(results)), key=lambda j: times[j])
        at = 0 if pick == "min" else (len(order) - 1) // 2
        mid = results[order[at]].result
        measured = getattr(mid, "events", None)  # a run without its trace: no per-op rows
        pred, title, workers, traced = _predict(path, profile, None, None, sets,
                                                bool(measured))
        ops = compare_ops(traced[0], measured, traced[1], workers) if measured else []
        ref = min(times) if pick == "min" else float(statistics.median(times))
        report.cases.append(Case(Path(path).stem, title, workers, pred, mid.metrics,
                                 str(mid.out_dir), times, [r.load for r in results], ops,
                                 reference=ref))
    return report


def validate_scenarios(profile: Profile, scenarios: Sequence[str | Path], *,
                       out_dir: str | Path, timeout: float, collectives: str = "library",
                       repeats: int = 1, mpiexec: str | None = None,
                       hostfile: str | None = None, sets: Sequence[str] = (),
                       runner: Callable[..., Any] | None = None,
                       progress: Callable[[str], None] | None = None) -> ValidationReport:
    """Run every scenario's main point for real (:func:`run_cases`), then compare with the
    predictions of ``profile`` (:func:`build_report`)."""
    runs = run_cases(scenarios, out_dir=out_dir, timeout=timeout, collectives=collectives,
                     repeats=repeats, mpiexec=mpiexec, hostfile=hostfile, sets=sets,
                     runner=runner, progress=progress)
    return build_report(profile, scenarios, runs, sets)
