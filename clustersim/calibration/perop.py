"""Per-operation validation: each operation's median time, predicted against measured.

Why: a validation case's iteration time can come out right while its parts are wrong in
opposite directions - on the H200 (docs/realrun.md) BSP's compute was right in total while
its forward pass was too slow and its backward too fast, and its all-reduce was 36% over.
The issue that asked for the GPU calibration asked for the per-operation comparison too:
every operation a real run traces (forward, backward, update, each collective, each
point-to-point message, a server's update) against the same operation in the simulator's
trace of the same point, by role and name.

Both traces use one schema (:class:`clustersim.trace.TraceEvent`).  Warm-up is left out: a
worker's events of iterations before ``warmup``; a server's (which has no iterations of its
own) first ``warmup * workers`` events of each operation, the exchanges of the warm-up.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

__all__ = ["op_medians", "compare_ops"]

_SKIP = ("record", "idle")


def op_medians(events: Iterable[Any], warmup: int, workers: int) -> dict[tuple[str, str, str],
                                                                       tuple[float, int]]:
    """(role, kind, label) -> (median duration over actors and steps, events counted)."""
    seen: dict[tuple[int, str, str], int] = {}
    durations: dict[tuple[str, str, str], list[float]] = {}
    for e in events:
        if e.kind in _SKIP:
            continue
        if e.role == "worker":
            if e.iteration is not None and e.iteration < warmup:
                continue
        else:
            k = (e.actor, e.kind, e.label)
            seen[k] = seen.get(k, 0) + 1
            if seen[k] <= warmup * workers:
                continue
        durations.setdefault((e.role, e.kind, e.label), []).append(e.end - e.start)
    return {k: (statistics.median(v), len(v)) for k, v in durations.items()}


def compare_ops(predicted: Iterable[Any], measured: Iterable[Any], warmup: int,
                workers: int) -> list[dict[str, Any]]:
    """One row per operation either trace has: role, kind, label, predicted and measured
    median seconds (``None`` where that side has no such operation) and the relative error."""
    pred = op_medians(predicted, warmup, workers)
    meas = op_medians(measured, warmup, workers)
    rows = []
    for key in sorted(set(pred) | set(meas)):
        p = pred.get(key, (None, 0))[0]
        m = meas.get(key, (None, 0))[0]
        err = p / m - 1.0 if p is not None and m else None
        rows.append({"role": key[0], "kind": key[1], "label": key[2], "predicted": p,
                     "measured": m, "error": err})
    return rows
