"""The real-run backend on a GPU machine, end to end, in one command.

    python bench/bench_gpu.py --out out/gpu            # everything below, ~5 min on an H200
    python bench/bench_gpu.py --out out/gpu --steps probe,precision

Steps (each in its own process with its own time limit; a failed step is logged and the next
one runs, so one broken path does not cost the others' measurements):

probe       the GPU, CuPy, the MPI library and whether it is CUDA-aware (``probe.json``)
precision   one rank: GEMMs by shape in fp32, tf32, bf16 and fp16 (cuBLAS, ``realrun.precision``),
            STREAM copy/triad and ``a += b`` from 1 MiB to 1 GiB, the noise bench
            (``precision/results.json`` and traces)
staging     device<->host copies of 1-64 MiB into a fresh pageable array, a reused pageable one
            and a reused pinned one (``staging.json``): what each way of staging a message
            through the host costs, the evidence for realrun's pinned staging buffers
idle        a 2048x2048x2048 GEMM, the MLP's layer, and a 48 MiB copy timed back to back and
            after the GPU idled 2-50 ms (``idle.json``): whether kernels that follow an idle
            spell - training's update after its all-reduce, a worker's forward after waiting
            for weights - run slower than the back-to-back benchmarks (docs/realrun.md,
            second H200 session)
nccl        two ranks on the one GPU try an NCCL all-reduce through ``cupy.cuda.nccl``
            (``nccl.json``: the time, or NCCL's refusal, which is what NCCL answers when two
            ranks of one communicator share a device)
calibrate   ``clustersim calibrate --real --plan gpu`` on 2 ranks sharing the GPU, validated on
            ``scenarios/real_gpu_*.yaml`` run for real (``calibrate/``, profile, JSON report)
torch       the same GEMM shapes through PyTorch, when installed: an independent figure for
            the CuPy/cuBLAS numbers (``torch.json``); not used by any fit

Prints one line per step and writes ``summary.json``.  Needs CuPy and an NVIDIA GPU; on a
machine without one, ``probe`` says so and the other steps are skipped.  The probe also
starts two MPI ranks and stops everything when they do not see a world of two: mpi4py then
loads another MPI than ``mpiexec``'s (a system Open MPI beside the pip MPICH) - set
``MPI4PY_LIBMPI`` to the MPICH wheel's ``libmpi.so.12`` (docs/realrun.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("probe", "precision", "staging", "idle", "nccl", "calibrate", "torch")
#: square and layer-like GEMMs, as (m, n, k)
SHAPES = ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
          (2048, 2048, 8192), (8192, 2048, 2048), (256, 4096, 4096))
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
MEM_SIZES = tuple(1 << k for k in range(20, 31, 2))


def _probe(out: Path) -> dict:
    info: dict = {"python": sys.version.split()[0]}
    try:
        info["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version,clocks.max.sm",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        info["nvidia_smi"] = f"unavailable: {exc}"
    import cupy as cp

    dev = cp.cuda.Device(0)
    props = cp.cuda.runtime.getDeviceProperties(0)
    info.update(cupy=cp.__version__, cuda_runtime=cp.cuda.runtime.runtimeGetVersion(),
                device=props["name"].decode(), sms=props["multiProcessorCount"],
                compute_capability=dev.compute_capability,
                memory_bytes=props["totalGlobalMem"])
    from realrun.arrays import gpu_present

    info["gpu_present"] = gpu_present()
    res = subprocess.run([sys.executable, "-c", "from mpi4py import MPI; import json; "
                          "q=getattr(MPI,'Query_cuda_support',None); print(json.dumps("
                          "{'mpi': MPI.Get_library_version().splitlines()[0], "
                          "'cuda_aware': bool(q()) if q else None}))"],
                         capture_output=True, text=True, timeout=60)
    info["mpi"] = json.loads(res.stdout) if res.returncode == 0 else res.stderr[-500:]
    from realrun.launch import find_mpiexec

    world = subprocess.run([find_mpiexec(), "-n", "2", sys.executable, "-c",
                            "from mpi4py import MPI; print(MPI.COMM_WORLD.Get_size())"],
                           capture_output=True, text=True, timeout=120)
    sizes = sorted(world.stdout.split())
    info["world_of_two"] = sizes
    if sizes != ["2", "2"]:
        raise RuntimeError(f"mpiexec -n 2 started ranks that see worlds of {sizes}: mpi4py "
                           f"loads another MPI ({info['mpi']}) than {find_mpiexec()}; set "
                           f"MPI4PY_LIBMPI to that mpiexec's libmpi")
    return info


QUICK = False


def _precision(out: Path) -> dict:
    from realrun.api import run_microbenchmarks

    rows = run_microbenchmarks(1, out_dir=out / "precision", benches=("gemm", "memory",
                               "reduce", "noise"), gemm_shapes=SHAPES,
                               gemm_precisions=PRECISIONS, mem_sizes=MEM_SIZES,
                               noise_shape=(1024, 4096, 4096), noise_calls=200,
                               target=0.02 if QUICK else 0.05, repeats=3 if QUICK else 5,
                               backend="cupy", timeout=400)
    best: dict = {}
    for r in rows:
        if r["bench"] == "gemm":
            best[r["dtype"]] = max(best.get(r["dtype"], 0.0), r["flop_rate"])
    return {"rows": len(rows), "best_gemm_tflops": {k: round(v / 1e12, 1)
                                                      for k, v in best.items()}}


NCCL_RANK = """
import json, sys, time
import cupy as cp
from mpi4py import MPI
from cupy.cuda import nccl
comm = MPI.COMM_WORLD
r, p = comm.Get_rank(), comm.Get_size()
uid = comm.bcast(nccl.get_unique_id() if r == 0 else None, root=0)
try:
    nc = nccl.NcclCommunicator(p, uid, r)
    x = cp.ones(1 << 18, dtype=cp.float32)
    s = cp.cuda.Stream.null
    for _ in range(3):
        nc.allReduce(x.data.ptr, x.data.ptr, x.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, s.ptr)
    s.synchronize()
    t = time.perf_counter()
    for _ in range(20):
        nc.allReduce(x.data.ptr, x.data.ptr, x.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, s.ptr)
    s.synchronize()
    got = {"ok": True, "seconds_per_1MiB_allreduce": (time.perf_counter() - t) / 20,
           "nccl_version": nccl.get_version()}
except Exception as exc:
    got = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
got = comm.gather(got, root=0)
if r == 0:
    print(json.dumps(got))
"""


def _nccl(out: Path) -> dict:
    from realrun.launch import find_mpiexec

    script = out / "nccl_rank.py"
    script.write_text(NCCL_RANK)
    res = subprocess.run([find_mpiexec(), "-n", "2", sys.executable, str(script)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "NCCL_DEBUG": "WARN"})
    (out / "nccl.log").write_text(res.stdout + res.stderr)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("[")]
    return {"exit": res.returncode, "ranks": json.loads(lines[-1]) if lines else None}


def _timed(fn, reps: int, idle: float = 0.0) -> list[float]:
    """Seconds of ``reps`` calls of ``fn``, each waited for on the GPU; ``idle``: seconds the
    GPU sits idle before each call (the caller warms it up first)."""
    import cupy as cp

    sync = cp.cuda.Device().synchronize
    got = []
    for _ in range(reps):
        if idle:
            time.sleep(idle)
        t = time.perf_counter()
        fn()
        sync()
        got.append(time.perf_counter() - t)
    return got


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def _staging(out: Path) -> dict:
    import cupy as cp
    import cupyx
    import numpy as np

    rows = []
    for mib in (1, 4, 16, 48, 64):
        n = mib << 20
        dev = cp.ones(n, dtype=cp.uint8)
        page = np.ones(n, dtype=np.uint8)
        pin = cupyx.empty_pinned((n,), dtype=np.uint8)
        pin[...] = 1
        ways = {"d2h fresh pageable": lambda d=dev: cp.asnumpy(d),
                "d2h reused pageable": lambda d=dev, h=page: d.get(out=h),
                "d2h reused pinned": lambda d=dev, h=pin: d.get(out=h),
                "h2d reused pageable": lambda d=dev, h=page: d.set(h),
                "h2d reused pinned": lambda d=dev, h=pin: d.set(h)}
        for way, fn in ways.items():
            t = _median(_timed(fn, 8)[1:])  # the first call warms up
            rows.append({"bytes": n, "way": way, "seconds": t, "GB/s": round(n / t / 1e9, 2)})
    (out / "staging.json").write_text(json.dumps(rows, indent=1))
    return {"GB/s at 48 MiB": {r["way"]: r["GB/s"] for r in rows if r["bytes"] == 48 << 20}}


def _idle(out: Path) -> dict:
    import cupy as cp

    n = 2048
    a = cp.random.random((n, n), dtype=cp.float32)
    b = cp.random.random((n, n), dtype=cp.float32)
    c = cp.empty((n, n), dtype=cp.float32)
    src = cp.ones(12 << 20, dtype=cp.float32)  # 48 MiB
    dst = cp.empty_like(src)
    kernels = {"gemm 2048^3": lambda: cp.matmul(a, b, out=c),
               "copy 48 MiB": lambda: cp.copyto(dst, src)}
    rows = []
    for name, fn in kernels.items():
        _timed(fn, 20)  # warm: clocks up, kernels loaded
        for idle_ms in (0, 2, 5, 20, 50):
            got = _timed(fn, 9, idle_ms / 1e3)
            rows.append({"kernel": name, "idle_ms": idle_ms, "median_s": _median(got),
                         "min_s": min(got)})
    (out / "idle.json").write_text(json.dumps(rows, indent=1))
    base = {r["kernel"]: r["median_s"] for r in rows if r["idle_ms"] == 0}
    return {"slowdown after 20 ms idle": {r["kernel"]: round(r["median_s"] / base[r["kernel"]], 2)
                                         for r in rows if r["idle_ms"] == 20}}


SCENARIOS = ("scenarios/real_gpu_bsp_mlp.yaml", "scenarios/real_gpu_async_ps.yaml",
             "scenarios/real_gpu_bsp_wide_batch.yaml")


def _calibrate(out: Path) -> dict:
    cmd = [sys.executable, "-m", "clustersim", "calibrate", "--real", "--plan", "gpu",
           "--np", "2", "--platform", "topologies/h200_shared.yaml",
           "--scenarios", *SCENARIOS,
           "--repeats", "3", "--timeout", "300", *(["--quick"] if QUICK else []),
           "--work-dir", str(out / "calibrate"),
           "--out", str(out / "h200_profile.yaml"), "--json", str(out / "calibrate.json")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=540, cwd=ROOT)
    (out / "calibrate.log").write_text(res.stdout + res.stderr)
    return {"exit": res.returncode, "tail": (res.stdout + res.stderr)[-1500:]}


def _torch(out: Path) -> dict:
    import torch

    got = {}
    for prec in PRECISIONS:
        dt = torch.float16 if prec == "fp16" else torch.bfloat16 if prec == "bf16" else \
            torch.float32
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        for m, n, k in SHAPES:
            a = torch.rand(m, k, device="cuda", dtype=dt)
            b = torch.rand(k, n, device="cuda", dtype=dt)
            for _ in range(3):
                a @ b
            torch.cuda.synchronize()
            reps = max(3, int(2e12 / (2 * m * n * k)))
            t = time.perf_counter()
            for _ in range(reps):
                a @ b
            torch.cuda.synchronize()
            dt_s = (time.perf_counter() - t) / reps
            got[f"{prec} {m}x{n}x{k}"] = round(2 * m * n * k / dt_s / 1e12, 2)
    return {"torch": torch.__version__, "tflops": got}


def _step(name: str, out: Path) -> dict:
    fn = {"probe": _probe, "precision": _precision, "staging": _staging, "idle": _idle,
          "nccl": _nccl, "calibrate": _calibrate, "torch": _torch}[name]
    t = time.perf_counter()
    try:
        got = {"ok": True, **fn(out)}
    except Exception as exc:  # noqa: BLE001 - the next steps still run; the error is kept
        import traceback

        got = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
               "traceback": traceback.format_exc()[-3000:]}
    got["seconds"] = round(time.perf_counter() - t, 1)
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("out/gpu"))
    ap.add_argument("--steps", default=",".join(STEPS),
                    help=f"comma list of {', '.join(STEPS)} (default: all)")
    ap.add_argument("--quick", action="store_true",
                    help="the calibration's quick plan and shorter precision batches")
    a = ap.parse_args(argv)
    global QUICK
    QUICK = a.quick
    steps = [s for s in a.steps.split(",") if s]
    bad = [s for s in steps if s not in STEPS]
    if bad:
        print(f"error: unknown step {bad[0]!r} (allowed: {', '.join(STEPS)})", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    summary: dict = {}
    for name in steps:
        summary[name] = _step(name, a.out)
        brief = {k: v for k, v in summary[name].items() if k not in ("traceback", "tail")}
        print(f"{name}: {json.dumps(brief)[:600]}", flush=True)
        (a.out / "summary.json").write_text(json.dumps(summary, indent=1))
        if name == "probe" and not summary[name]["ok"]:
            print("no usable GPU/CuPy: the other steps are skipped", file=sys.stderr)
            return 1
    return 0 if all(s["ok"] for s in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
