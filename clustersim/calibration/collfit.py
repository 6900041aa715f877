"""Per-step software overhead of collectives, fitted against the simulator's own schedules.

Ping-pong fixes what one message costs; a collective adds what its runtime does between
messages - posting a step's sends and receives, waiting for them, bookkeeping - which a
Python schedule executor pays far more of than MPI's C code.  The model: every occurrence
of a schedule step that moves data costs ``NetworkParams.step_overhead`` more than its
transfers (and its reduction).  So for each measured collective the simulator's cost of the
*same* schedule with ``step_overhead = 0`` is computed - on the platform and network already
calibrated from ping-pong and the reduction benchmark, at the fidelity the simulator would
choose - and one robust fit finds the overhead:

    measured ~ model(step_overhead = 0) + (data-moving step occurrences) x step_overhead

A row measured with the MPI library (``algorithm: mpi``) is modelled with the schedule the
simulator uses for a collective that names no algorithm (:data:`clustersim.sim.engine.
DEFAULT_ALGORITHMS`): that is how predictions of library runs are made, so that is what the
overhead must correct.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from clustersim.calibration.fit import FitResult, robust_fit
from clustersim.collectives import build_schedule
from clustersim.network.fidelity import cost_collective
from clustersim.network.params import NetworkParams
from clustersim.platform.model import Platform
from clustersim.sim.engine import DEFAULT_ALGORITHMS

__all__ = ["CollectiveFit", "model_algorithm", "collective_times", "fit_step_overhead"]


def model_algorithm(op: str, algorithm: str) -> str:
    """The schedule the simulator uses for a measured ``(op, algorithm)``."""
    if algorithm == "mpi":
        return DEFAULT_ALGORITHMS.get(op, "ring")
    return algorithm


@dataclass
class CollectiveFit:
    step_overhead: float
    fit: FitResult | None
    #: per row: (op, algorithm, ranks, size, measured, predicted with the fitted overhead)
    table: list[tuple[str, str, int, float, float, float]] = field(default_factory=list)


def collective_times(rows: Sequence[Mapping[str, Any]], platform: Platform,
                     placement: Sequence[int], params: NetworkParams
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(model time with ``step_overhead = 0``, data-moving step occurrences) per row."""
    base = replace(params, step_overhead=0.0)
    times, steps = [], []
    for r in rows:
        op, p, size = str(r["op"]), int(r["ranks"]), float(r["size"])
        if p > len(placement):
            raise ValueError(f"a {p}-rank collective needs {p} placed ranks, "
                             f"have {len(placement)}")
        devs = list(placement[:p])
        hosts = [platform.host(d) for d in devs]
        sched = build_schedule(op, model_algorithm(op, str(r["algorithm"])), p, size,
                               hosts=hosts)
        cost = cost_collective(sched, platform, devs, base, fidelity="auto")
        moving = sum(s.repeat for s in sched.steps
                     if any(platform.route(devs[t.src], devs[t.dst]) for t in s.transfers))
        times.append(cost.time)
        steps.append(moving)
    return np.array(times, dtype=float), np.array(steps, dtype=float)


def fit_step_overhead(rows: Sequence[Mapping[str, Any]], platform: Platform,
                      placement: Sequence[int], params: NetworkParams, *,
                      loss: str = "soft_l1", f_scale: float = 0.05) -> CollectiveFit:
    """Fit ``step_overhead`` (module docs); no rows -> the current value, unfitted."""
    rows = [r for r in rows if r.get("op") != "barrier"]
    if not rows:
        return CollectiveFit(params.step_overhead, None)
    base, steps = collective_times(rows, platform, placement, params)
    measured = np.array([float(r["time"]) for r in rows])
    gap = (measured - base) / np.maximum(steps, 1.0)
    guess = max(float(np.median(gap)), 0.0)
    scale = max(guess, float(measured.min()) * 0.1, 1e-9)
    fit = robust_fit(lambda x: base + steps * x[0], measured, [guess], ("step_overhead",),
                     scale=[scale], lower=[0.0], loss=loss, f_scale=f_scale)
    ovh = fit["step_overhead"]
    table = [(str(r["op"]), str(r["algorithm"]), int(r["ranks"]), float(r["size"]),
              float(m), float(b + s * ovh))
             for r, m, b, s in zip(rows, measured, base, steps)]
    return CollectiveFit(ovh, fit, table)
