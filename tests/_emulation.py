"""Helpers of the emulation tests: a scenario with a given algorithm and emulation settings,
and hand-written SGD loops on the same tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from clustersim.algorithms.base import get_algorithm
from clustersim.algorithms.tasks import TaskModel, make_task
from clustersim.scenario.schema import AlgorithmSpec, Scenario, load_scenario
from clustersim.sim.emulate import Emulation, run_emulation

ROOT = Path(__file__).resolve().parents[1]
#: many identical KNL cores, GoogLeNet timing: a cheap platform for up to hundreds of workers
BASE = ROOT / "scenarios" / "knl_easgd_compare.yaml"


def scenario(emulation: dict[str, Any], workers: int, name: str = "async_sgd") -> Scenario:
    sets = ["workload.jitter=0", f"sweep.workers=[{workers}]", "run.convergence=emulate",
            f"run.emulation={json.dumps(emulation)}", f'algorithm={{"name": "{name}"}}',
            "compare=[]"]
    return load_scenario(BASE, sets)


def emulate(name: str, params: dict[str, Any], workers: int, emulation: dict[str, Any],
            seed: int = 0) -> Emulation:
    """Emulate ``name`` with ``params`` taken as given (not validated: alpha = beta = 0 is
    allowed here, to switch the elastic force off)."""
    scn = scenario(emulation, workers)
    full = {k: p.default for k, p in get_algorithm(name).params.items()} | params
    return run_emulation(scn, AlgorithmSpec(name, full), workers, seed)


def sgd_loop(emulation: dict[str, Any], steps: int, shard: int = 0, shards: int = 1,
             stream: int = 0, seed: int = 0, delay: int = 0) -> np.ndarray:
    """Plain sequential SGD, by hand: ``w -= lr * grad`` on the worker's own batches;
    ``delay = 1``: each gradient taken at the weights before the previous update (what a
    lock-free server that answers before it applies gives its only worker)."""
    spec = scenario(emulation, 1).run.emulation
    task = make_task(spec.task, seed, **spec.task_settings)
    m = TaskModel(task, shard=shard, shards=shards, stream=stream)
    w = task.initial_weights()
    lr = np.float32(task.lr)
    read = w.copy()  # the weights the worker holds
    for _ in range(steps):
        _, g = task.loss_grad(w if delay == 0 else read, m._next())  # the same batches
        read = w.copy()
        w -= lr * g
    return w
