"""The second recorded H200 session (tests/data/gpu_h200_pinned, 2026-11-27): pinned staging
buffers, the full GPU plan, three validation scenarios.  Parsed, refitted and re-validated
on a machine without a GPU; docs/realrun.md ("Second H200 session") tells the story."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "gpu_h200_pinned"
SCENARIOS = [ROOT / "scenarios" / f"{s}.yaml"
             for s in ("real_gpu_bsp_mlp", "real_gpu_async_ps", "real_gpu_bsp_wide_batch")]


def test_pinned_staging_beats_pageable_copies():
    """The evidence for realrun's pinned staging buffers: at 16 MiB and more a pinned
    buffer moves at least 3x what a reused pageable one does and 5x a fresh one (whose page
    faults the H200 session's first BSP run paid), and at most PCIe 5.0 x16's 64 GB/s."""
    rows = json.loads((DATA / "staging.json").read_text())
    by = {(r["bytes"], r["way"]): r["GB/s"] for r in rows}
    for size in (16 << 20, 48 << 20, 64 << 20):
        for way in ("d2h", "h2d"):
            pinned = by[(size, f"{way} reused pinned")]
            assert 30 < pinned < 64
            assert pinned > 3 * by[(size, f"{way} reused pageable")]
        assert by[(size, "d2h reused pinned")] > 5 * by[(size, "d2h fresh pageable")]


def test_as_run_validation_is_recorded_with_its_three_cases():
    got = json.loads((DATA / "calibrate.json").read_text())["validation"]
    assert [c["scenario"] for c in got["cases"]] == [p.stem for p in SCENARIOS]
    assert got["mape_iteration_time"] == pytest.approx(0.148, abs=0.001)
    for case in got["cases"]:
        assert len(case["measured_repeats"]) == 3


@pytest.fixture(scope="module")
def refit(tmp_path_factory) -> dict:
    """``calibrate`` on the recorded traces, validated on the recorded runs (``--runs``; the
    scenarios are the shipped ones that have runs there)."""
    out = tmp_path_factory.mktemp("refit")
    cmd = [sys.executable, "-m", "clustersim", "calibrate", str(DATA / "bench"),
           "--platform", str(ROOT / "topologies" / "h200_shared.yaml"),
           "--runs", str(DATA / "validation"),
           "--out", str(out / "profile.yaml"), "--json", str(out / "fit.json"), "-q"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=out, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    return {**json.loads((out / "fit.json").read_text()), "dir": str(out)}


def _param(fit: dict, name: str) -> dict:
    return next(f for f in fit["fit"] if f["parameter"] == name)


def test_refit_separates_the_gpu_from_its_share(refit):
    """Fitted on the GEMMs timed alone, the roofline's residual halves against one fit over
    both contexts (35% RMS as run), and the two ranks got 0.89-1.0 of the GPU together."""
    share = _param(refit, "device.h200_rank.share_efficiency")
    assert 0.85 <= share["value"] <= 1.0
    assert share["points"] >= 8
    fc = _param(refit, "compute.efficiency.fc")
    assert fc["rms_rel"] < 0.25
    assert 0.6 < fc["value"] < 0.9  # 40-60 TFLOP/s of the 67 fp32 peak: session 1's range


def test_refit_predicts_bsp_compute_on_the_shared_gpu(refit):
    """Per operation, predicted against measured in runs the fit never saw: BSP's compute
    with two ranks on the GPU within 15% (it was predicted at half the measured time before
    the GPU was modelled as time-shared), every iteration within 30%."""
    cases = {c["scenario"]: c for c in refit["validation"]["cases"]}
    for name in ("real_gpu_bsp_mlp", "real_gpu_bsp_wide_batch"):
        c = cases[name]["compute"]
        assert c["predicted"] == pytest.approx(c["measured"], rel=0.15), name
    for name, c in cases.items():
        assert abs(c["iteration_time"]["error"]) < 0.3, name
    # 0.140 until the ping-pong fit merged the undetermined 16-32 MiB segment (QA 12 F6):
    # lone 48 MiB messages drain at the merged segment's rate, async PS +9.1% -> +1.1%
    assert refit["validation"]["mape_iteration_time"] == pytest.approx(0.113, abs=0.01)


def test_training_all_reduce_beats_the_rotated_benchmark(refit):
    """The evidence for the GPU plan's back-to-back messages (clustersim/calibration/
    measure.py): the benchmark rotated its buffers, and the simulator reproduces it (the
    predicted 48 MiB all-reduce is what the benchmark's 32/64 MiB points interpolate to),
    but the same all-reduce inside training took 20-35% less time."""
    c = {c["scenario"]: c for c in refit["validation"]["cases"]}["real_gpu_bsp_mlp"]["comm"]
    assert 0.65 < c["measured"] / c["predicted"] < 0.8


def test_refit_found_the_recorded_scenarios(refit):
    assert sorted(c["scenario"] for c in refit["validation"]["cases"]) == sorted(
        p.stem for p in SCENARIOS)


@pytest.mark.parametrize("extra,words", [
    (["--real"], "give it with TRACES, not --real"),
    (["DATA"], "directory"),
    (["DATA", "--no-validate"], "cannot go with --no-validate"),
])
def test_runs_misuse_is_an_input_error(tmp_path, extra, words):
    runs = str(DATA / "validation") if words != "directory" else str(tmp_path / "none")
    extra = [str(DATA / "bench") if e == "DATA" else e for e in extra]
    res = subprocess.run([sys.executable, "-m", "clustersim", "calibrate", *extra, "--runs",
                          runs, "--out", str(tmp_path / "p.yaml")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert words in res.stderr and "runs" in res.stderr
    assert not (tmp_path / "p.yaml").exists()


def test_default_validation_scenarios_follow_the_plan_device():
    """A CPU calibration does not validate on the GPU scenarios (17 GFLOP layers on CPU
    cores), a GPU one validates on them alone."""
    from clustersim.calibration.validate import default_scenarios

    gpu = default_scenarios(ROOT / "scenarios", device="gpu")
    cpu = default_scenarios(ROOT / "scenarios", device="cpu")
    assert [p.stem for p in gpu] == sorted(p.stem for p in SCENARIOS)
    assert cpu and not set(cpu) & set(gpu)
    assert sorted(cpu + gpu) == default_scenarios(ROOT / "scenarios")


def test_refit_profile_reads_back_and_predicts_what_the_validation_printed(refit):
    """The profile a `--runs` validation wrote (unknown load averages: null) applies with
    `predict --calibration`, and predicts the iteration time the validation printed."""
    out = Path(refit["dir"]) / "p.json"
    res = subprocess.run([sys.executable, "-m", "clustersim", "predict",
                          str(SCENARIOS[0]), "--calibration",
                          str(Path(refit["dir"]) / "profile.yaml"), "-q", "--json", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    pts = next(iter(json.loads(out.read_text())["algorithms"].values()))
    case = {c["scenario"]: c for c in refit["validation"]["cases"]}[SCENARIOS[0].stem]
    assert pts[0]["iteration_time"] == pytest.approx(case["iteration_time"]["predicted"],
                                                     rel=1e-5)
    assert case["load_average"] == [None, None, None]


def test_per_operation_report_names_every_traced_operation(refit):
    """The validation compares operations, not only iterations: every operation the real
    runs traced is there, with the simulator's figure beside it.  Where the model's parts
    are right (the wide-batch BSP case's passes, the async worker's backward) they agree
    within 15%; the memory-bound update is the known miss (docs/realrun.md)."""
    cases = {c["scenario"]: c for c in refit["validation"]["cases"]}
    ops = {name: {(o["role"], o["kind"], o["label"]): o for o in c["operations"]}
           for name, c in cases.items()}
    assert {("worker", "allreduce", "allreduce"), ("worker", "compute", "forward"),
            ("worker", "compute", "backward"), ("worker", "compute", "update")} <= set(
        ops["real_gpu_bsp_mlp"])
    assert {("worker", "send", "push"), ("worker", "recv", "pull"),
            ("server", "compute", "server accumulate")} <= set(ops["real_gpu_async_ps"])
    wide = ops["real_gpu_bsp_wide_batch"]
    for label in ("forward", "backward"):
        o = wide[("worker", "compute", label)]
        assert abs(o["error"]) < 0.15, o
    assert abs(ops["real_gpu_async_ps"][("worker", "compute", "backward")]["error"]) < 0.15
    assert wide[("worker", "compute", "update")]["error"] < -0.5
