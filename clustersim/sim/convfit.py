"""Emulation runs that calibrate the analytic convergence model (issue 11).

Two products, both from :func:`clustersim.sim.emulate.run_emulation` (each algorithm's real
arithmetic in simulated-time order) on the small tasks of :mod:`clustersim.algorithms.tasks`:

* **the tasks' own profiles**: synchronous SGD (bsp) at several global batches, steps to
  target, the batch law ``S(B)`` fitted to them (:func:`measure_task_profile`), cross-checked
  with McCandlish's ``B_simple`` estimated from gradient norms (:func:`task_noise_log`);
* **observations** of the asynchronous, elastic and gossip algorithms over a grid that moves
  each asymptotic term (:data:`GRIDS`): for each run the :class:`RunStats` the analytic path
  builds (``clustersim.sim.tta``, from what the run measured: its staleness samples, its
  timing) and the emulated steps to target in the analytic model's step unit - what
  :func:`clustersim.convergence.fit.fit_constants` fits the constants on.

The base scenario is ``knl_easgd_compare``'s platform (identical KNL cores, GoogLeNet timing,
its 2% jitter so that staleness is spread, not a constant): the timing shapes the staleness,
the task supplies the arithmetic.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clustersim.algorithms.base import get_algorithm
from clustersim.convergence import ConvergenceResult, RunStats, predict
from clustersim.convergence.fit import Observation
from clustersim.convergence.profile import ConvergenceProfile, task_profile
from clustersim.scenario.schema import AlgorithmSpec, Scenario, load_scenario
from clustersim.sim.emulate import EmulationResult, run_emulation
from clustersim.sim.tta import emulation_stats

__all__ = ["GridPoint", "GRIDS", "TASK_DEFAULTS", "base_scenario", "emulate_sync",
           "measure_task_profile", "task_noise_log", "observe", "observations",
           "analytic_for_emulation", "twin_mismatch", "Calibration", "calibrate"]

#: the settings every run of a task uses (the task's defaults, written out: the profiles in
#: task_profiles.yaml hold for these only)
TASK_DEFAULTS: dict[str, dict[str, Any]] = {
    "digits": {"task": "digits", "target": 0.9, "lr": 0.1, "batch": 32, "hidden": 32},
    "teacher_student": {"task": "teacher_student", "target": 0.99, "lr": 0.05, "batch": 32,
                        "features": 32, "noise": 0.5},
}

#: (workers, task batch) of the bsp runs the batch law is fitted on: global batches 1 .. 256
SYNC_POINTS = ((1, 1), (1, 2), (1, 4), (1, 8), (1, 16), (1, 32), (2, 32), (4, 32), (8, 32))


@dataclass(frozen=True)
class GridPoint:
    """One emulated configuration; ``task`` overrides the task settings (async_msgd: the
    momentum and the LR it is paired with); ``heldout`` points are not fitted on."""

    family: str
    algorithm: str
    workers: int
    params: dict[str, Any] = field(default_factory=dict)
    task: dict[str, Any] = field(default_factory=dict)
    heldout: bool = False

    @property
    def label(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in {**self.params, **self.task}.items())
        return f"{self.algorithm} p={self.workers}" + (f" {extra}" if extra else "")


def _msgd(mu: float, workers: int, lr: float, heldout: bool = False) -> GridPoint:
    # the server's heavy ball with LR lr (1 - mu): the same steady-state step as the
    # reference's plain SGD (lr / (1 - mu) = lr), so what remains is asynchrony's cost
    return GridPoint("momentum", "async_msgd", workers, {},
                     {"momentum": mu, "lr": round(lr * (1.0 - mu), 6)}, heldout)


def _grid(full: bool, lr: float) -> list[GridPoint]:
    g: list[GridPoint] = []
    ws, hold = ((2, 4, 8, 16), (6, 12)) if full else ((2, 4), (3,))
    for alg in ("async_sgd", "hogwild_sgd") if full else ("async_sgd",):
        g += [GridPoint("staleness", alg, w) for w in ws]
        g += [GridPoint("staleness", alg, w, heldout=True) for w in hold]
    for mu in (0.5, 0.8) if full else (0.5,):
        g += [_msgd(mu, w, lr) for w in ((2, 4, 8) if full else (2, 4))]
        g += [_msgd(mu, 6 if full else 3, lr, heldout=True)]
    taus, betas = ((1, 4, 10), (0.3, 0.9)) if full else ((1, 4), (0.5,))
    for tau in taus:
        for beta in betas:
            g.append(GridPoint("elastic", "sync_easgd", 4, {"tau": tau, "beta": beta}))
    if full:
        g += [GridPoint("elastic", "async_easgd", 8, {"tau": t, "beta": b})
              for t in (1, 4) for b in (0.3, 0.9)]
        g += [GridPoint("elastic", "sync_easgd", 8, {"tau": 6, "beta": 0.6}, heldout=True),
              GridPoint("elastic", "async_easgd", 8, {"tau": 2, "beta": 0.6}, heldout=True)]
    else:
        g.append(GridPoint("elastic", "sync_easgd", 4, {"tau": 2, "beta": 0.7}, heldout=True))
    ps = (0.02, 0.05, 0.2, 1.0) if full else (0.05, 0.5)
    g += [GridPoint("gossip", "gosgd", w, {"p": p}) for w in ((4, 8) if full else (4,))
          for p in ps]
    g.append(GridPoint("gossip", "gosgd", 6 if full else 4, {"p": 0.1}, heldout=True))
    return g


GRIDS: dict[str, Callable[[float], list[GridPoint]]] = {
    "small": lambda lr: _grid(False, lr), "full": lambda lr: _grid(True, lr)}


def base_scenario(task: str, workers: int, algorithm: str = "bsp",
                  task_overrides: dict[str, Any] | None = None,
                  max_iterations: int = 2000, eval_updates: int = 1) -> Scenario:
    """``knl_easgd_compare``'s platform and timing with ``run.emulation`` on ``task``."""
    from clustersim.shipped import find_shipped

    path = find_shipped("scenarios", "knl_easgd_compare")
    if path is None:
        raise FileNotFoundError("the shipped scenario knl_easgd_compare.yaml is missing")
    emulation = {**TASK_DEFAULTS[task], **(task_overrides or {}),
                 "eval_updates": eval_updates, "max_iterations": max_iterations}
    return load_scenario(Path(path), [
        f"sweep.workers=[{workers}]", "run.convergence=emulate",
        f"run.emulation={json.dumps(emulation)}", f'algorithm={{"name": "{algorithm}"}}',
        "compare=[]"])


def _spec(name: str, params: dict[str, Any]) -> AlgorithmSpec:
    full = {k: p.default for k, p in get_algorithm(name).params.items()} | params
    return AlgorithmSpec(name, full)


def emulate_sync(task: str, workers: int, batch: int, seed: int,
                 max_iterations: int = 4000) -> EmulationResult:
    """bsp on ``workers`` x ``batch`` (global batch) to the task's target."""
    scn = base_scenario(task, workers, "bsp", {"batch": batch}, max_iterations)
    return run_emulation(scn, _spec("bsp", {}), workers, seed).result


def measure_task_profile(task: str, seeds: Sequence[int] = (0, 1, 2),
                         points: Sequence[tuple[int, int]] = SYNC_POINTS
                         ) -> dict[str, Any]:
    """Steps to target of bsp at each global batch (updates of the replicas), per seed.

    Returns ``{"batches": [...], "steps": [[per seed] ...]}``; ``inf`` where a seed never
    reached the target within ``max_iterations``."""
    out: dict[str, Any] = {"batches": [], "steps": []}
    for workers, batch in points:
        runs = [emulate_sync(task, workers, batch, s).updates_to_target for s in seeds]
        out["batches"].append(workers * batch)
        out["steps"].append(runs)
    return out


def task_noise_log(task: str, steps: int = 200, small: int = 32, parts: int = 8,
                   seed: int = 0) -> Any:
    """A gradient-norm log of sequential SGD on ``task`` (McCandlish et al. 2018, App. A.1):
    at every step the gradient of one batch of ``small`` and the mean of ``parts`` such
    batches (``small x parts``), read at the same weights; the run steps with the first.
    :func:`clustersim.convergence.noise_scale.estimate` turns it into ``B_simple``."""
    from clustersim.algorithms.tasks import TaskModel, make_task
    from clustersim.convergence.noise_scale import NormLog

    settings = {k: v for k, v in TASK_DEFAULTS[task].items() if k not in ("task", "target")}
    settings["batch"] = small
    t = make_task(task, seed, **settings)
    models = [TaskModel(t, shard=i, shards=parts, stream=i) for i in range(parts)]
    w = t.initial_weights()
    rows = []
    for k in range(steps):
        grads = [t.loss_grad(w, m._next())[1].astype(np.float64) for m in models]
        big = np.mean(grads, axis=0)
        rows.append((k, small, small * parts, float(grads[0] @ grads[0]), float(big @ big)))
        w = w - np.float32(t.lr) * grads[0].astype(np.float32)
    cols = np.array(rows, dtype=float).T
    return NormLog(cols[0], cols[1], cols[2], cols[3], cols[4], source=f"{task} SGD")


def _steps_unit(stats: RunStats) -> float:
    """Samples in one step of the analytic model (elastic/gossip: every worker's)."""
    return stats.batch * (stats.workers if stats.kind in ("elastic", "gossip") else 1)


def observe(task: str, point: GridPoint, seeds: Sequence[int],
            profile: ConvergenceProfile | None = None) -> Observation:
    """Emulate ``point`` with each seed; the observation's steps are the geometric mean of
    the seeds' steps to target (``inf`` when fewer than half reached it) in the analytic
    unit, its RunStats the first seed's (the grid's timing is deterministic up to jitter)."""
    profile = profile or task_profile(task)
    ref = profile.ref_steps
    settings = {**TASK_DEFAULTS[task], **point.task}
    kind = get_algorithm(point.algorithm).convergence
    per_worker = 10 * ref * (1 if kind in ("elastic", "gossip") else 1.0 / point.workers)
    scn = base_scenario(task, point.workers, point.algorithm, point.task,
                        max_iterations=int(per_worker) + 100,
                        eval_updates=point.workers if kind == "gossip" else 1)
    alg = _spec(point.algorithm, point.params)
    logs, stats = [], None
    for seed in seeds:
        em = run_emulation(scn, alg, point.workers, seed)
        stale = [float(v) for v in em.run.records("staleness")]
        st = emulation_stats(point.algorithm, dict(alg.params), point.workers,
                             int(settings["batch"]), em.result, stale,
                             momentum=float(settings.get("momentum", 0.9)))
        if st is None:
            logs.append(math.inf)
            continue
        stats = stats or st
        logs.append(math.log(em.result.samples_to_target / _steps_unit(st))
                    if em.result.reached else math.inf)
    done = [x for x in logs if math.isfinite(x)]
    if stats is None:
        raise RuntimeError(f"{point.label}: the emulation measured no step")
    steps = math.exp(float(np.mean(done))) if 2 * len(done) >= len(logs) else math.inf
    spread = float(np.std(done, ddof=1)) if len(done) > 1 else 0.0
    return Observation(f"{task}: {point.label}", point.family, profile, stats, steps, spread,
                       len(seeds))


def observations(task: str, grid: str, seeds: Sequence[int],
                 progress: Callable[[str], None] | None = None
                 ) -> tuple[list[Observation], list[Observation]]:
    """(fit, held-out) observations of ``grid`` ("small" or "full") on ``task``."""
    fit, held = [], []
    lr = float(TASK_DEFAULTS[task]["lr"])
    profile = task_profile(task)
    for point in GRIDS[grid](lr):
        obs = observe(task, point, seeds, profile)
        (held if point.heldout else fit).append(obs)
        if progress:
            progress(obs.label)
    return fit, held


def analytic_for_emulation(scn: Scenario, alg: AlgorithmSpec, workers: int,
                           emulation_result: EmulationResult, metrics: Any = None,
                           staleness: Sequence[float] = ()) -> ConvergenceResult | None:
    """The analytic prediction of an emulated point, to show beside it: steps and time to the
    target of the emulation's task, from the task's profile (``task_profiles.yaml``) and the
    current constants (the scenario's ``workload.convergence.constants`` if given, else the
    shipped file), with the RunStats the emulated run measured (its timing up to the target
    and ``staleness``; ``metrics`` is unused when the emulation's own timing is at hand, and
    serves when the emulation reached nothing).  ``None`` where the task has no profile or
    the run measured no step.  The steps are in the analytic unit (elastic and gossip: local
    steps of every worker), like :func:`observe`'s.
    """
    spec = scn.run.emulation
    try:
        profile = task_profile(spec.task)
    except Exception:  # noqa: BLE001 - a task without a profile: nothing to compare
        return None
    if twin_mismatch(spec):  # the profile's steps are to its own target, at its settings
        return None
    from dataclasses import replace

    from clustersim.convergence.constants import emulation_constants

    wl = scn.workload
    given = wl.convergence.constants if wl is not None and wl.convergence is not None else None
    # the emulation's own fit unless the scenario names constants of its own
    profile = replace(profile, constants=given or emulation_constants())
    settings = dict(spec.task_settings)
    batch = int(settings.get("batch", TASK_DEFAULTS.get(spec.task, {}).get("batch", 32)))
    stats = emulation_stats(alg.name, dict(alg.params), workers, batch, emulation_result,
                            list(staleness), momentum=float(settings.get("momentum", 0.9)),
                            metrics=metrics)
    return None if stats is None else predict(profile, stats)


def twin_mismatch(spec: Any) -> str | None:
    """How an emulation's settings (``run.emulation``) differ from those its task's profile
    was measured at (:func:`~clustersim.convergence.profile.task_profile_settings`), as
    words; None where they agree (or the task has no profile).

    Why: the profile's steps are the steps to its own target at its own learning rate,
    batch and size, so the analytic twin of a run at target 0.999 printed target 0.9's
    4.43 min beside an emulation that never got there (QA 16)."""
    from clustersim.convergence.profile import task_profile_settings

    try:
        measured = task_profile_settings(spec.task)
    except KeyError:
        return None
    mine = {**TASK_DEFAULTS.get(spec.task, {}), **dict(spec.task_settings),
            "target": spec.target}
    diff = [f"{k} {mine.get(k)!s} (profile: {v!s})" for k, v in measured.items()
            if k != "task" and mine.get(k) != v]
    return ", ".join(diff) or None


@dataclass
class Calibration:
    """What :func:`calibrate` measured and fitted (``seconds``: wall time of the emulations,
    ``steps``: worker gradient steps they emulated, for the bench's steps per second)."""

    fit: Any  # clustersim.convergence.fit.ConstantsFit
    heldout: list[Observation]
    heldout_errors: list[float]
    seconds: float = 0.0
    runs: int = 0

    @property
    def heldout_median(self) -> float:
        e = [x for x in self.heldout_errors]
        return float(np.median(e)) if e else math.nan


def calibrate(tasks: Sequence[str], grid: str, seeds: Sequence[int],
              progress: Callable[[str], None] | None = None) -> Calibration:
    """Emulate ``grid`` on every task with ``seeds``, fit the constants on the fit points,
    and measure the held-out points' median ``|steps error|`` at the fitted constants."""
    import time

    from clustersim.convergence.fit import fit_constants, validation_errors

    t0 = time.perf_counter()
    fit_obs: list[Observation] = []
    held: list[Observation] = []
    for task in tasks:
        if task not in TASK_DEFAULTS:
            raise ValueError(f"no emulation task {task!r} with a profile (allowed: "
                             f"{', '.join(TASK_DEFAULTS)})")
        f, h = observations(task, grid, seeds, progress)
        fit_obs += f
        held += h
    seconds = time.perf_counter() - t0
    result = fit_constants(fit_obs)
    return Calibration(result, held, validation_errors(held, result.constants), seconds,
                       (len(fit_obs) + len(held)) * len(seeds))
