"""The gradient norms of a real BSP run with ``--math``, as a norm log.

With the proxy model attached, every BSP worker records per step its own gradient's squared
norm (``grad_sq_local``, batch ``B_small`` = the proxy's batch) and the all-reduced mean
gradient's (``grad_sq_mean``, batch ``B_big`` = workers x B_small)
(:func:`clustersim.algorithms.bsp._bsp_math_worker`).  :func:`write_norm_log` turns those
trace records into ``grad_norms.csv`` in the run's directory, the format ``clustersim
calibrate --convergence`` reads (:mod:`clustersim.convergence.noise_scale`), so the gradient
noise scale of a real run is one command away.  ``sq_norm_small`` is the mean over the workers
of their local squared norms: as unbiased as one worker's, with less variance.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from clustersim.convergence.noise_scale import format_log

__all__ = ["NORM_LOG", "norm_rows", "write_norm_log"]

NORM_LOG = "grad_norms.csv"


def norm_rows(events: Sequence[Any], workers: int, batch: int
              ) -> list[tuple[int, int, int, float, float]]:
    """``(step, batch_small, batch_big, sq_norm_small, sq_norm_big)`` per iteration in which
    every worker recorded both norms (a run cut short leaves its last step out)."""
    local: dict[int, dict[int, float]] = defaultdict(dict)
    mean: dict[int, dict[int, float]] = defaultdict(dict)
    for ev in events:
        if ev.kind != "record" or ev.iteration is None or ev.value is None:
            continue
        if ev.label == "grad_sq_local":
            local[int(ev.iteration)][int(ev.actor)] = float(ev.value)
        elif ev.label == "grad_sq_mean":
            mean[int(ev.iteration)][int(ev.actor)] = float(ev.value)
    rows = []
    for it in sorted(local):
        if len(local[it]) != workers or len(mean.get(it, {})) != workers:
            continue
        small = sum(local[it][w] for w in sorted(local[it])) / workers
        big = sum(mean[it][w] for w in sorted(mean[it])) / workers  # equal on every worker
        rows.append((it, batch, batch * workers, small, big))
    return rows


def write_norm_log(out_dir: Path, headers: Sequence[Mapping[str, Any]],
                   events: Sequence[Any]) -> Path | None:
    """Write ``grad_norms.csv`` when the run recorded norms and had at least two workers
    (one worker has no second batch size); returns its path, or ``None``."""
    if not headers:
        return None
    head = headers[0]
    workers, batch = int(head.get("workers", 0)), head.get("math_batch")
    if workers < 2 or not batch:
        return None
    rows = norm_rows(events, workers, int(batch))
    if not rows:
        return None
    path = Path(out_dir) / NORM_LOG
    path.write_text(format_log(rows, comment=(
        f"gradient norms of a real run: scenario {head.get('scenario', '?')}, algorithm "
        f"{head.get('algorithm', '?')}, {workers} workers, proxy model batch {batch}\n"
        "sq_norm_small: mean over the workers of their local gradients' squared norms; "
        "sq_norm_big: the all-reduced mean gradient's")))
    return path
