"""Recorded H200 measurements (tests/data/gpu_h200, 2026-11-26): parsed, fitted and predicted
on a machine without a GPU.  What they pin down is in docs/realrun.md ("Measured on an H200")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim.calibration.precision import precision_table
from clustersim.catalog import builtin_catalog
from clustersim.trace import read_jsonl
from realrun.mbresults import results_from_events

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "gpu_h200"
H200 = builtin_catalog().devices["h200"]


def _precision_rows() -> list[dict]:
    _, events = read_jsonl(DATA / "precision" / "trace.rank0.jsonl")
    return results_from_events(events)


def test_precision_rows_rebuild_from_the_traces():
    """The rows realrun wrote on the GPU are what the traces alone give back (the fit can
    work from a cluster's traces), and each precision measured the same 7 shapes."""
    rows = _precision_rows()
    saved = json.loads((DATA / "precision" / "results.json").read_text())
    key = lambda r: (r["bench"], r.get("m"), r.get("n"), r.get("k"), r.get("dtype"),  # noqa: E731
                     r.get("kernel"), r.get("size"))
    assert {key(r): r["time"] for r in rows} == pytest.approx({key(r): r["time"] for r in saved},
                                                              rel=1e-9)
    gemm = [r for r in rows if r["bench"] == "gemm"]
    assert sorted({r["dtype"] for r in gemm}) == ["bfloat16", "float16", "float32", "tf32"]
    assert len(gemm) == 4 * 7


def test_tensor_core_precisions_beat_fp32_and_stay_under_the_datasheet():
    """Invariants of the hardware: no precision beats its dense datasheet peak; tf32 runs at
    least 5x fp32 and bf16 at least 1.5x tf32 on the large shapes (tensor cores engaged -
    a GEMM issued with a wrong compute type would show as fp32 speed)."""
    table = precision_table(_precision_rows(), H200)
    for dtype, row in table.items():
        assert 0.5 < row["efficiency"] <= 1.0, (dtype, row)
        assert row["rms_rel"] < 0.2, (dtype, row)  # time = overhead + flops/rate fits
    assert table["tf32"]["best"] > 5 * table["float32"]["best"]
    assert table["bfloat16"]["best"] > 1.5 * table["tf32"]["best"]
    assert 2e-6 < table["float32"]["overhead"] < 50e-6  # a CuPy call from Python


def test_cupy_gemm_rates_agree_with_pytorch_on_the_same_gpu():
    """PyTorch (an independent caller of cuBLAS) measured the same shapes in the same session:
    for shapes of 4096 and more, realrun's CuPy figures agree within 15% (they differ by
    the per-call overhead and by cuBLAS's kernel choice, not by what the GPU can do)."""
    torch_tflops = json.loads((DATA / "session.json").read_text())["torch"]["tflops"]
    name = {"float32": "fp32", "tf32": "tf32", "bfloat16": "bf16", "float16": "fp16"}
    checked = 0
    for r in _precision_rows():
        if r["bench"] != "gemm" or min(r["m"], r["n"], r["k"]) < 4096:
            continue
        ref = torch_tflops[f"{name[r['dtype']]} {r['m']}x{r['n']}x{r['k']}"]
        assert r["flop_rate"] / 1e12 == pytest.approx(ref, rel=0.15), r
        checked += 1
    assert checked == 8


def test_memory_copy_reaches_most_of_the_datasheet_bandwidth():
    """STREAM copy of 1 GiB (beyond the 60 MB L2) moves 80-100% of the 4.8 TB/s datasheet."""
    copy = [r for r in _precision_rows() if r["bench"] == "memory" and r["kernel"] == "copy"]
    big = max(copy, key=lambda r: r["size"])
    assert big["size"] == 1 << 30
    assert 0.8 * H200.mem_bw < big["bandwidth"] <= H200.mem_bw


def test_nccl_refused_two_ranks_on_one_gpu():
    """Two ranks of one NCCL communicator on one device: NCCL refuses (invalid usage,
    'Duplicate GPU detected'), so collectives between ranks sharing the GPU went through
    host-staged MPI - recorded, not assumed."""
    session = json.loads((DATA / "session.json").read_text())
    assert all(not r["ok"] and "INVALID_USAGE" in r["error"] for r in session["nccl"]["ranks"])
    assert "Duplicate GPU detected" in (DATA / "nccl_warn.log").read_text()
    assert session["probe"]["mpi"]["cuda_aware"] is None  # pip MPICH: no CUDA support query


@pytest.mark.parametrize("scenario", ["real_gpu_bsp_mlp", "real_gpu_async_ps"])
def test_recorded_profile_predicts_here_what_it_predicted_on_the_gpu_machine(scenario, tmp_path):
    """Same scenario and profile, same prediction on a machine without a GPU (the report's
    predicted iteration time came from the H200 machine's own run of the simulator).  That
    simulator did not yet know the ranks share the GPU, so the platform is taken as it was
    then: ``time_shared: false``."""
    report = json.loads((DATA / "calibrate.json").read_text())["validation"]
    case = next(c for c in report["cases"] if c["scenario"] == scenario)
    out = tmp_path / "p.json"
    plat = (ROOT / "topologies" / "h200_shared.yaml").read_text()
    (tmp_path / "plat.yaml").write_text(plat.replace("time_shared: true", "time_shared: false"))
    scn = (ROOT / "scenarios" / f"{scenario}.yaml").read_text()
    (tmp_path / "s.yaml").write_text(scn.replace("topologies/h200_shared.yaml", "plat.yaml"))
    subprocess.run([sys.executable, "-m", "clustersim", "predict", str(tmp_path / "s.yaml"),
                    "--calibration", str(DATA / "h200_profile.yaml"), "-q", "--json",
                    str(out)], cwd=ROOT, check=True, capture_output=True)
    pts = next(iter(json.loads(out.read_text())["algorithms"].values()))
    assert pts[0]["iteration_time"] == pytest.approx(case["iteration_time"]["predicted"],
                                                     rel=1e-5)
    # and the measured side is what the repeats say (median of 3)
    reps = sorted(case["measured_repeats"])
    assert case["iteration_time"]["measured"] == pytest.approx(reps[1], rel=1e-5)


def test_recorded_benchmark_traces_refit_offline(tmp_path):
    """`calibrate TRACES` fits the GPU machine's benchmark traces here: the host-staged link
    comes out at the ping-pong's large-message bandwidth (2.9 GB/s one way).  The GPU is
    time-shared by the two ranks, so the roofline is fitted on the kernels timed on one rank
    alone (clustersim/calibration/sharefit.py): its fp32 rate and copy bandwidth then agree
    with the one-rank precision benchmark of the same session (15%), the residual drops
    from the 32.9% of the fit over both contexts, and the ranks got 0.85-1 of the GPU."""
    prof = tmp_path / "p.yaml"
    js = tmp_path / "p.json"
    subprocess.run([sys.executable, "-m", "clustersim", "calibrate", str(DATA / "bench"),
                    "--platform", "topologies/h200_shared.yaml", "--out", str(prof),
                    "--json", str(js), "-q"], cwd=ROOT, check=True, capture_output=True)
    fit = {f["parameter"]: f for f in json.loads(js.read_text())["fit"]}
    rec = {f["parameter"]: f for f in json.loads((DATA / "calibrate.json").read_text())["fit"]}
    assert 0.85 <= fit["device.h200_rank.share_efficiency"]["value"] <= 1.0
    assert fit["compute.efficiency.fc"]["rms_rel"] < 0.5 * rec["compute.efficiency.fc"]["rms_rel"]
    fp32 = precision_table(_precision_rows(), H200)["float32"]["rate"]
    assert fit["compute.efficiency.fc"]["value"] * H200.peak == pytest.approx(fp32, rel=0.15)
    copy = max((r for r in _precision_rows() if r["bench"] == "memory"
                and r["kernel"] == "copy"), key=lambda r: r["size"])
    assert fit["device.h200_rank.mem_efficiency"]["value"] * H200.mem_bw == pytest.approx(
        copy["bandwidth"], rel=0.15)
    beta = fit["pingpong.gpu_hoststaged.3.beta"]["value"]  # s/B of the largest segment
    rows = json.loads((DATA / "bench" / "calibration_rows.json").read_text())
    big = max((r for r in rows if r["bench"] == "pingpong"), key=lambda r: r["size"])
    assert 1.0 / beta == pytest.approx(big["size"] / big["time"], rel=0.1)


def test_gpu_plan_without_a_gpu_is_an_input_error(tmp_path):
    """`calibrate --real --plan gpu` here would run 550 GFLOP GEMMs on CPU cores for hours:
    refused before anything is measured, naming the allowed plans (exit 2, no traceback)."""
    from realrun.arrays import gpu_present

    if gpu_present():
        pytest.skip("this machine has a GPU: the GPU plan is allowed")
    res = subprocess.run([sys.executable, "-m", "clustersim", "calibrate", "--real", "--plan",
                          "gpu", "--work-dir", str(tmp_path / "w"), "--out",
                          str(tmp_path / "p.yaml")], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "no NVIDIA GPU" in res.stderr and "allowed: auto, cpu" in res.stderr
    assert not (tmp_path / "w").exists() and not (tmp_path / "p.yaml").exists()


def test_the_gpu_plan_sizes_gemms_for_a_gpu():
    """The GPU plan's GEMMs take milliseconds on an H200 (the recorded fp32 rate), not the
    tens of microseconds the CPU plan's would - so they measure the GPU, not the call."""
    from clustersim.calibration.measure import bench_plan

    fp32 = precision_table(_precision_rows(), H200)["float32"]
    for quick in (True, False):
        gpu, cpu = bench_plan(quick, "gpu"), bench_plan(quick, "cpu")
        assert gpu.device == "gpu" and set(gpu.gemm_classes.values()) == {"fc", "conv"}
        gpu_t = max(2 * m * n * k for m, n, k in gpu.gemm_shapes) / fp32["rate"]
        cpu_t = max(2 * m * n * k for m, n, k in cpu.gemm_shapes) / fp32["rate"]
        assert gpu_t > 5e-3 and cpu_t < 50e-6
        assert max(gpu.mem_sizes) >= 1 << 28 > 60e6  # beyond the H200's L2
