"""Compute noise: the noise bench's rows, the fitted jitter, and its trip through a profile.

Closed forms: the CV of known call times; the profile's device jitter becomes the workload's
``jitter`` (reported as moved) only when every device of the platform is calibrated, and a
synchronous run predicted with it waits for its stragglers (slower than without).
"""

from __future__ import annotations

import statistics

import pytest
import yaml

from clustersim.calibration.applyprofile import apply_profile_data
from clustersim.calibration.pipeline import calibrate_rows, make_target
from clustersim.calibration.profile import (
    Profile,
    dump_profile,
    parse_profile,
)
from clustersim.calibration.rows import noise_rows, rows_from_events
from clustersim.errors import InputError
from clustersim.scenario.schema import PROJECT_ROOT, load_scenario
from clustersim.sim.sweep import run_sweep
from clustersim.trace import TraceEvent

BSP = PROJECT_ROOT / "scenarios" / "real_bsp_mlp.yaml"


def noise_events(times_by_rank: dict[int, list[float]], repeat: int = 0) -> list[TraceEvent]:
    out, t = [], 0.0
    for rank, times in times_by_rank.items():
        for i, d in enumerate(times):
            out.append(TraceEvent(rank, "bench", "compute", t, t + d, "noise gemm", 0.0,
                                  meta={"bench": "noise", "m": 8, "n": 8, "k": 8,
                                        "dtype": "float32", "iters": 1, "call": i,
                                        "repeat": repeat}))
            t += d
    return out


def cv(xs: list[float]) -> float:
    return statistics.pstdev(xs) / statistics.fmean(xs)


def test_noise_row_is_the_median_cv_of_rank_and_round_samples():
    a, b, c = [1.0, 1.2, 0.8, 1.0], [2.0, 2.0, 2.0, 2.4], [1.0, 1.5, 1.0, 1.5]
    rows = noise_rows(noise_events({0: a, 1: b}) + noise_events({0: c}, repeat=100000))
    assert len(rows) == 1
    row = rows[0]
    assert row["cv"] == pytest.approx(statistics.median([cv(a), cv(b), cv(c)]), rel=1e-12)
    assert row["cv_low"] == pytest.approx(min(cv(a), cv(b), cv(c)))
    assert row["cv_high"] == pytest.approx(max(cv(a), cv(b), cv(c)))
    assert row["samples"] == 3 and row["calls"] == 12


def test_noise_rows_come_last_and_other_benches_ignore_them():
    rows = rows_from_events(noise_events({0: [1.0, 2.0]}))
    assert [r["bench"] for r in rows] == ["noise"]
    assert noise_rows([]) == []


def test_pipeline_writes_jitter_and_a_fit_line():
    scn = load_scenario(BSP)
    rows = noise_rows(noise_events({0: [1.0, 1.2, 0.8, 1.0], 1: [1.0, 1.1, 0.9, 1.0]}))
    cal = calibrate_rows(rows, make_target(scn.platform, 2))
    dev = cal.profile.devices[cal.target.device]
    assert dev["jitter"] == pytest.approx(rows[0]["cv"])
    line = next(x for x in cal.lines if x.parameter.endswith(".jitter"))
    assert line.value == pytest.approx(rows[0]["cv"]) and line.bench == "noise"


def prof(jitter: float) -> Profile:
    return Profile(devices={"localhost_core": {"peak": 60e9, "jitter": jitter}})


def test_profile_jitter_becomes_the_workload_jitter_and_is_reported():
    scn = load_scenario(BSP)
    assert scn.workload.jitter == 0.0
    new, changes, _ = apply_profile_data(scn, prof(0.15))
    assert new.workload.jitter == pytest.approx(0.15)
    moved = {c.name: c for c in changes}
    assert moved["workload.jitter"].after == pytest.approx(0.15)
    again = parse_profile(yaml.safe_load(dump_profile(prof(0.15))))
    assert again.devices["localhost_core"]["jitter"] == pytest.approx(0.15)


def test_bad_jitter_names_the_field():
    with pytest.raises(InputError, match="jitter"):
        parse_profile({"format": "clustersim-calibration/1",
                       "devices": {"localhost_core": {"jitter": 3}}})


def test_synchronous_training_pays_for_measured_noise():
    """BSP waits for the slower rank every step: its mean iteration grows with the jitter."""
    scn = load_scenario(BSP)
    quiet = run_sweep(apply_profile_data(scn, prof(0.0))[0], jobs=1)
    noisy = run_sweep(apply_profile_data(scn, prof(0.2))[0], jobs=1)
    t0 = next(iter(quiet.points.values()))[0].iteration_time
    t1 = next(iter(noisy.points.values()))[0].iteration_time
    assert t1 > t0 * 1.01


def test_buffer_sets_keep_reuse_beyond_the_cache():
    from realrun.microbench import MAX_SETS, buffer_sets

    assert buffer_sets(8 << 20, 0) == 1  # off: one buffer, reused hot
    assert buffer_sets(16 << 20, 128 << 20) == 9  # 8 other sets between two uses of one
    assert buffer_sets(256 << 20, 128 << 20) == 2
    assert buffer_sets(8, 128 << 20) == MAX_SETS  # small messages: capped
