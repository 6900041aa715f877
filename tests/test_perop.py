"""Per-operation medians for the calibration's validation (clustersim/calibration/perop.py)."""

from __future__ import annotations

import pytest

from clustersim.calibration.perop import compare_ops, op_medians
from clustersim.trace import TraceEvent


def _worker(actor: int, it: int, label: str, dt: float) -> TraceEvent:
    return TraceEvent(actor, "worker", "compute", 10.0 * it, 10.0 * it + dt, label,
                      iteration=it)


def test_warm_up_is_left_out_for_workers_by_iteration_and_for_servers_by_count():
    ev = [_worker(0, it, "forward", 5.0 if it < 2 else 1.0) for it in range(6)]
    # a server serving 2 workers: its first warmup * workers = 4 updates are the warm-up's
    ev += [TraceEvent(9, "server", "compute", float(i), float(i) + (7.0 if i < 4 else 2.0),
                      "update", iteration=0) for i in range(10)]
    ev.append(TraceEvent(0, "worker", "record", 0.0, 0.0, "iteration", iteration=3))
    got = op_medians(ev, warmup=2, workers=2)
    assert got == {("worker", "compute", "forward"): (1.0, 4),
                   ("server", "compute", "update"): (2.0, 6)}


def test_compare_ops_pairs_by_role_kind_and_label_and_keeps_one_sided_rows():
    pred = [_worker(0, it, "forward", 1.2) for it in range(4)]
    pred += [TraceEvent(0, "worker", "wait", 0.0, 0.5, "wait for allreduce", iteration=3)]
    meas = [_worker(0, it, "forward", 1.0) for it in range(4)]
    rows = compare_ops(pred, meas, warmup=1, workers=1)
    by = {r["label"]: r for r in rows}
    assert by["forward"]["error"] == pytest.approx(0.2)
    assert by["wait for allreduce"]["measured"] is None
    assert by["wait for allreduce"]["error"] is None
