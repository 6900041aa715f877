"""Convergence emulation: each algorithm's real arithmetic, run in simulated-time order.

The algorithms already carry their math (``ctx.math``: a ``Compute``'s ``fn``, a message's
or a collective's ``data``), and the engine calls it at the simulated moment the operation
completes.  This module attaches a small real task to every actor
(:mod:`clustersim.algorithms.tasks`), runs the scenario's point until the task's metric
reaches the target (or ``max_time`` / ``max_iterations``), and samples the *reference model*
on held-out data between events - without scheduling anything, so the run's timing is the
timing-only run's, event for event.

So a worker's gradient is computed on the weights it holds at that simulated moment (a
parameter-server worker on the last reply it got: its staleness is real), servers and centres
move in event order, and collectives return their real reductions
(:mod:`clustersim.sim.reductions`).  What the curve measures, per algorithm (the model a user
would deploy):

============================ ============================================================
bsp                          the replicas (identical: worker 0's); with weight averaging
                             the mean of the replicas
async_sgd, async_msgd,       the servers' weights (shard ``k``'s piece from server ``k``)
hogwild_sgd, sync_ps
easgd_round_robin,           the centre (the master's weights)
async_easgd, async_measgd,
hogwild_easgd
sync_easgd                   the centre (worker 0's copy: the root's with reduce_broadcast)
gosgd                        the mean of the replicas (an update: any worker's local step)
============================ ============================================================

``updates`` counts the reference model's updates (server applies, centre moves, BSP steps);
``steps`` the workers' gradient computations; ``samples`` = steps x the task's batch.
hybrid attaches no math yet and is refused with a clear error.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from clustersim.algorithms.base import ActorSpec
from clustersim.algorithms.proxy import part_slices
from clustersim.algorithms.tasks import TaskModel, make_task, task_math
from clustersim.errors import InputError
from clustersim.scenario.emulation import EmulationSpec
from clustersim.scenario.schema import AlgorithmSpec, Scenario
from clustersim.sim.engine import Engine, RunResult

__all__ = ["EMULATED_ALGORITHMS", "Emulation", "EmulationResult", "emulate_point",
           "hook_actors", "run_emulation"]

#: algorithms whose math hooks are complete (the others ignore ``ctx.math``)
EMULATED_ALGORITHMS = ("bsp", "sync_easgd", "async_sgd", "async_msgd", "hogwild_sgd",
                       "sync_ps", "easgd_round_robin", "async_easgd", "async_measgd",
                       "hogwild_easgd", "gosgd")


@dataclass
class EmulationResult:
    """The convergence curve of one algorithm at one sweep point, and what reaching the
    target took (``math.inf`` when the run stopped first).

    Curve columns, one entry per sample: ``time`` (simulated seconds), ``updates`` (of the
    reference model), ``steps`` (worker gradient steps, all workers), ``samples`` (training
    samples those steps read), ``loss`` (held-out loss of the reference model), ``metric``
    (the task's metric, ``metric_name``)."""

    algorithm: str
    workers: int
    task: str
    metric_name: str
    target: float
    time: list[float] = field(default_factory=list)
    updates: list[int] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    metric: list[float] = field(default_factory=list)
    time_to_target: float = math.inf
    updates_to_target: float = math.inf
    steps_to_target: float = math.inf
    samples_to_target: float = math.inf
    #: why the run ended: "target", "max_time" or "max_iterations" (the workers finished)
    stopped: str = ""

    @property
    def reached(self) -> bool:
        return self.stopped == "target"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the to-target figures are ``None`` where not reached (JSON has no
        infinity)."""
        out = {k: getattr(self, k) for k in (
            "algorithm", "workers", "task", "metric_name", "target", "stopped")}
        out["curve"] = {k: list(getattr(self, k)) for k in (
            "time", "updates", "steps", "samples", "loss", "metric")}
        for k in ("time_to_target", "updates_to_target", "steps_to_target",
                  "samples_to_target"):
            v = getattr(self, k)
            out[k] = None if math.isinf(v) else v
        return out


def hook_actors(actors: list[ActorSpec], maths: list[Any]) -> list[ActorSpec]:
    """The actors with ``maths[rank]`` as their ``ctx.math`` - what a backend's
    ``ActorSpec.start(job, math)`` does, for the engine, which starts actors without math."""

    def hooked(a: ActorSpec) -> ActorSpec:
        body = a.body
        m = maths[a.rank]
        return ActorSpec(a.rank, a.role, a.index,
                         lambda ctx: body(replace(ctx, math=m)), a.colocate)

    return [hooked(a) for a in actors]


def _reference(name: str, params: dict[str, Any], actors: list[ActorSpec],
               maths: list[TaskModel]) -> tuple[Callable[[], np.ndarray], Callable[[], int]]:
    """(weights of the reference model, its update count) for the algorithm ``name``."""
    servers = sorted((a for a in actors if a.role != "worker"), key=lambda a: a.index)
    workers = [maths[a.rank] for a in actors if a.role == "worker"]
    if servers:
        ms = [maths[a.rank] for a in servers]
        first = ms[0]
        if len(ms) == 1:
            return (lambda: first.weights), (lambda: first.steps)
        cuts = part_slices(first.weights.size, len(ms))
        return ((lambda: np.concatenate([m.weights[c] for m, c in zip(ms, cuts)])),
                (lambda: first.steps))
    w0 = workers[0]
    if name == "sync_easgd":  # the worker keeps the centre once it has started
        start = w0.params()
        return ((lambda: getattr(w0, "centre", start)),
                (lambda: getattr(w0, "centre_moves", 0)))
    if name == "gosgd":  # the replicas' mean; every local step moves it
        return ((lambda: np.mean([m.weights for m in workers], axis=0, dtype=np.float32)),
                (lambda: sum(m.steps for m in workers)))
    if params.get("exchange") == "weights":
        return ((lambda: np.mean([m.weights for m in workers], axis=0, dtype=np.float32)),
                (lambda: w0.steps))
    return (lambda: w0.weights), (lambda: w0.steps)


class _Sampler:
    """The engine's observer: samples the reference model at multiples of ``eval_every``
    simulated seconds and every ``eval_updates`` of its updates, stops the run at the target
    or past ``max_time``."""

    def __init__(self, env: Any, spec: EmulationSpec, res: EmulationResult, task: Any,
                 weights: Callable[[], np.ndarray], updates: Callable[[], int],
                 workers: list[TaskModel]) -> None:
        self.env = env
        self.res = res
        self.task = task
        self.weights = weights
        self.updates = updates
        self.workers = workers
        self.batch = int(task.batch)
        self.every = spec.eval_every
        self.k = 1 if self.every is not None else 0  # the next time sample: k * every
        self.each = spec.eval_updates
        self.next_update = spec.eval_updates if spec.eval_updates else math.inf
        self.max_time = spec.max_time
        self.target = spec.target
        self.last: tuple[float, int, int] | None = None

    def sample(self, t: float) -> bool:
        """Record the reference model now, as the state at simulated time ``t``; True when
        the target is reached."""
        u = int(self.updates())
        steps = sum(m.grads for m in self.workers)
        if self.last == (t, u, steps):
            return False
        self.last = (t, u, steps)
        loss, metric = self.task.evaluate(self.weights())
        r = self.res
        r.time.append(float(t))
        r.updates.append(u)
        r.steps.append(steps)
        r.samples.append(steps * self.batch)
        r.loss.append(float(loss))
        r.metric.append(float(metric))
        if metric >= self.target and r.stopped != "target":
            r.stopped = "target"
            r.time_to_target, r.updates_to_target = float(t), float(u)
            r.steps_to_target, r.samples_to_target = float(steps), float(steps * self.batch)
            return True
        return False

    def __call__(self, t: float) -> bool:
        """Before the event at time ``t`` (everything before it has happened)."""
        if self.every is not None:
            while (due := self.k * self.every) < t and due <= self.max_time:
                self.k += 1
                if self.sample(due):
                    return True
        if t > self.max_time:
            self.sample(self.max_time)
            if self.res.stopped != "target":
                self.res.stopped = "max_time"
            return True
        u = self.updates()
        if u >= self.next_update:
            self.next_update = (u // self.each + 1) * self.each
            return self.sample(self.env.now)
        return False


@dataclass
class Emulation:
    """One emulated run: its curve, the engine's result, and every actor's model (in rank
    order: what the tests compare with hand-written loops)."""

    result: EmulationResult
    run: RunResult
    models: list[TaskModel]


def emulate_point(scn: Scenario, alg: AlgorithmSpec, workers: int, seed: int,
                  title: str | None = None) -> tuple[EmulationResult, RunResult]:
    """Emulate the convergence of ``alg`` on ``workers`` workers (``run.emulation``'s task
    and limits); the run's timing is that of :func:`~clustersim.sim.sweep.simulate_point`
    with ``run.iterations`` replaced by ``max_iterations``."""
    em = run_emulation(scn, alg, workers, seed, title)
    return em.result, em.run


def run_emulation(scn: Scenario, alg: AlgorithmSpec, workers: int, seed: int,
                  title: str | None = None) -> Emulation:
    """:func:`emulate_point`, with the actors' models.

    BLAS runs on one thread here: a float32 matrix product sums in another order on two
    threads, and every emulated loss moved at ~1e-9 with ``OPENBLAS_NUM_THREADS`` (the same
    scenario and seed, other bytes on a batch node or a Dask worker; audit B M1).  The
    task's matrices are small, where one thread is also the faster."""
    from threadpoolctl import threadpool_limits  # scikit-learn's own dependency

    with threadpool_limits(limits=1, user_api="blas"):
        return _run_emulation(scn, alg, workers, seed, title)


def _run_emulation(scn: Scenario, alg: AlgorithmSpec, workers: int, seed: int,
                   title: str | None) -> Emulation:
    from clustersim.sim.sweep import prepare_point  # the sweep imports this module

    spec = scn.run.emulation
    if alg.name not in EMULATED_ALGORITHMS:
        raise InputError(f"convergence emulation needs the algorithm's math hooks; "
                         f"{alg.name} has none (emulated: {', '.join(EMULATED_ALGORITHMS)})",
                         path=("run", "convergence"))
    scn, job, actors, placement, costs = prepare_point(
        scn, alg, workers, seed, iterations=spec.max_iterations)
    task = make_task(spec.task, seed, **spec.task_settings)
    maths = [task_math(task, job, a.rank, a.role, a.index) for a in actors]
    weights, updates = _reference(alg.name, dict(alg.params), actors, maths)
    engine = Engine(scn.platform, job, hook_actors(actors, maths), placement, costs,
                    params=scn.network, fidelity=scn.run.fidelity, warmup=0)
    res = EmulationResult(title or alg.title, workers, task.name, task.metric, spec.target)
    sampler = _Sampler(engine.env, spec, res, task, weights, updates,
                       [m for a, m in zip(actors, maths) if a.role == "worker"])
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        if not sampler.sample(0.0):
            run = engine.run(watch=sampler)
        else:
            run = engine.run(watch=lambda t: True)
    finally:
        if gc_was_on:
            gc.enable()
    if not res.stopped:
        sampler.sample(engine.env.now)
        if not res.stopped:
            res.stopped = "max_iterations"
    return Emulation(res, run, maths)
