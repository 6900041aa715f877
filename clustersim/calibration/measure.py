"""What ``clustersim calibrate --real`` measures, and how it gets the rows.

The plan is generic - nothing in it is chosen by looking at the scenarios the profile will be
validated on:

* ping-pong at every half power of two from 1 B to 32 MiB (51 sizes; the dense spacing is
  what lets the segmentation place eager/rendezvous and cache breakpoints);
* ping-pong and collectives rotate through 128 MiB of message buffers (:data:`OFF_CACHE`,
  ``realrun.microbench.buffer_sets``): training's messages are not in the cache when sent;
* all-reduce at every power of two from 1 KiB to 64 MiB, through the MPI library and our
  ring schedule (the fit uses the implementation the runs use, the other is reported);
* GEMMs shaped like the layers of deep-learning models as ``realrun.compute`` runs them -
  fully connected layers at batch 32-256 and widths 512-2048, convolutions as im2col GEMMs
  (ResNet-like stages at batch 4) - each in its forward, weight-gradient and input-gradient
  orientation, labelled with its kernel class;
* STREAM copy and ``a += b`` at 64 KiB - 64 MiB (caches to main memory);
* the same GEMMs and copies once more on rank 0 while the other ranks wait in MPI
  (:mod:`.contention`): training computes in both contexts;
* one GEMM of about a layer pass (128x1024x2048) timed call by call on every rank at once,
  150 calls: the machine's compute noise (``realrun.microbench.noise``).

``quick`` thins every list (about a third of the time) for a first look.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BenchPlan", "bench_plan", "gpu_plan", "PLAN_DEVICES", "run_benchmarks", "gemm_orientations", "OFF_CACHE"]

#: bytes of message buffers the communication benchmarks rotate through (beyond this VM's
#: 105 MiB last-level cache; see ``realrun.microbench.buffer_sets``)
OFF_CACHE = 128 << 20


def gemm_orientations(m: int, n: int, k: int) -> list[tuple[int, int, int]]:
    """Forward ``(m, n, k)``, weight gradient ``(k, n, m)``, input gradient ``(m, k, n)``:
    the three GEMMs ``realrun.compute`` runs for a layer whose forward GEMM is ``(m, n, k)``."""
    return [(m, n, k), (k, n, m), (m, k, n)]


def _fc(batch: int, width_in: int, width_out: int) -> list[tuple[int, int, int]]:
    return gemm_orientations(batch, width_out, width_in)


def _conv(batch: int, hw: int, c_in: int, c_out: int) -> list[tuple[int, int, int]]:
    return gemm_orientations(batch * hw * hw, c_out, c_in * 9)


@dataclass(frozen=True)
class BenchPlan:
    """What one ``calibrate --real`` measures (module docs): ping-pong and collective message
    sizes (bytes), the collective implementations (``mpi``: the library's own), GEMM shapes
    ``(m, n, k)`` with their kernel class, copy sizes (bytes); every point is timed in
    ``repeats`` batches of about ``target`` seconds."""

    pingpong_sizes: tuple[int, ...]
    collective_sizes: tuple[int, ...]
    algorithms: tuple[str, ...]
    gemm_shapes: tuple[tuple[int, int, int], ...]
    gemm_classes: Mapping[tuple[int, int, int], str] = field(default_factory=dict)
    mem_sizes: tuple[int, ...] = ()
    target: float = 0.02
    repeats: int = 7
    noise_calls: int = 150
    off_cache: int = OFF_CACHE
    #: the noise bench's GEMM (None: ``realrun.microbench.NOISE_GEMM``)
    noise_shape: tuple[int, int, int] | None = None
    #: "cpu" or "gpu": which device the shapes and sizes were chosen for
    device: str = "cpu"

    def describe(self) -> dict[str, Any]:
        """For the profile's ``source`` section."""
        return {"pingpong_sizes": len(self.pingpong_sizes),
                "collective_sizes": len(self.collective_sizes),
                "collective_algorithms": list(self.algorithms),
                "gemm_shapes": len(self.gemm_shapes), "mem_sizes": len(self.mem_sizes),
                "noise_calls": self.noise_calls, "off_cache": self.off_cache,
                "device": self.device,
                "batch_seconds": self.target, "repeats": self.repeats}


PLAN_DEVICES = ("auto", "cpu", "gpu")


def bench_plan(quick: bool = False, device: str = "cpu") -> BenchPlan:
    """The measurement plan (module docs); ``device="gpu"``: :func:`gpu_plan`."""
    if device == "auto":
        from realrun.arrays import gpu_present  # no CUDA import: a /dev scan

        device = "gpu" if gpu_present() else "cpu"
    if device == "gpu":
        return gpu_plan(quick)
    if quick:
        pp = tuple(sorted({2 ** k for k in range(0, 26)}))
        coll = tuple(4 ** k * 1024 for k in range(0, 8))
        fc = [*_fc(64, 512, 512), *_fc(128, 1024, 1024), *_fc(32, 2048, 1024)]
        conv = [*_conv(4, 28, 128, 128)]
        mem = (1 << 16, 1 << 20, 1 << 24, 1 << 26)
        target, repeats, calls = 0.01, 5, 60
    else:
        pp = tuple(sorted({int(round(2 ** (k / 2))) for k in range(0, 51)}))
        coll = tuple(1 << k for k in range(10, 27))
        fc = [*_fc(64, 512, 512), *_fc(128, 1024, 1024), *_fc(32, 2048, 1024),
              *_fc(256, 1024, 2048), *_fc(64, 2048, 2048)]
        conv = [*_conv(4, 56, 64, 64), *_conv(4, 28, 128, 128), *_conv(4, 14, 256, 256)]
        mem = tuple(1 << k for k in range(16, 27, 2))
        target, repeats, calls = 0.02, 7, 150
    shapes, classes = _classified(fc, conv)
    return BenchPlan(pp, coll, ("mpi", "ring"), tuple(shapes), classes, mem, target, repeats,
                     calls)


def _classified(fc: Sequence[tuple[int, int, int]], conv: Sequence[tuple[int, int, int]]
                ) -> tuple[list[tuple[int, int, int]], dict[tuple[int, int, int], str]]:
    classes: dict[tuple[int, int, int], str] = {}
    shapes: list[tuple[int, int, int]] = []
    for cls, group in (("fc", fc), ("conv", conv)):
        for s in group:
            if s not in classes:
                classes[s] = cls
                shapes.append(s)
    return shapes, classes


def gpu_plan(quick: bool = False) -> BenchPlan:
    """The plan for ranks on a GPU: the CPU plan's method, with GPU-sized work.

    Why other sizes: an H100/H200 runs the CPU plan's largest GEMM (256x2048x1024, 1 GFLOP)
    in about 20 us, so every GEMM of that plan would measure the per-call launch cost only
    and the fitted efficiency would not transfer to layers a GPU is used for.  Here fully
    connected layers span batch 256-4096 and widths 1024-8192 (1-550 GFLOP per GEMM) and
    convolutions are im2col GEMMs of ResNet-like stages at batch 32; memory kernels go from
    1 MiB (inside the 50-60 MB L2) to 1 GiB; the noise GEMM is a 34 GFLOP layer pass.
    Messages keep the CPU plan's sizes: ranks without CUDA-aware MPI stage them through
    host memory, which is what the ping-pong then measures.  They are sent back to back from
    one buffer set (no :data:`OFF_CACHE` rotation): the CPU plan rotates because a CPU
    rank's compute streams other data over the caches between two messages, but a GPU
    rank's compute never touches host memory, and its staging buffers - allocated once,
    reused every step (``realrun``'s and any careful GPU job's) - hold what the last exchange
    left.  Measured on an H200 with rotation (tests/data/gpu_h200_pinned): the training
    runs' 48 MiB all-reduce took 36-39 ms where the rotated benchmark gives 49 ms, and their
    48 MiB parameter-server messages were 18% faster than its ping-pong.
    """
    cpu = bench_plan(quick, "cpu")
    if quick:
        fc = [*_fc(256, 2048, 2048), *_fc(1024, 4096, 4096), *_fc(4096, 8192, 8192)]
        conv = [*_conv(32, 28, 128, 128)]
        mem = (1 << 20, 1 << 24, 1 << 28)
        calls = 60
    else:
        fc = [*_fc(256, 1024, 1024), *_fc(256, 2048, 2048), *_fc(1024, 4096, 4096),
              *_fc(2048, 4096, 8192), *_fc(4096, 8192, 8192)]
        conv = [*_conv(32, 56, 64, 64), *_conv(32, 28, 128, 128), *_conv(32, 14, 256, 256)]
        mem = tuple(1 << k for k in range(20, 31, 2))
        calls = 150
    shapes, classes = _classified(fc, conv)
    return BenchPlan(cpu.pingpong_sizes, cpu.collective_sizes, cpu.algorithms, tuple(shapes),
                     classes, mem, cpu.target, cpu.repeats, calls, 0,
                     noise_shape=(1024, 4096, 4096), device="gpu")


def run_benchmarks(plan: BenchPlan, *, np: int = 2, out_dir: str | os.PathLike[str],
                   timeout: float = 900.0, mpiexec: str | None = None,
                   hostfile: str | None = None, env: Mapping[str, str] | None = None
                   ) -> tuple[list[Any], list[dict[str, Any]]]:
    """Run the plan on ``np`` real MPI ranks: (trace events, per-rank trace headers).

    The traces are the source of truth (:func:`.rows.rows_from_events` turns them into
    rows).  Imports :mod:`realrun` (and through it launches ``mpiexec``) only when called.
    """
    from clustersim.calibration.contention import run_contention
    from realrun.api import load_traces, run_microbenchmarks

    run_microbenchmarks(
        np, out_dir=out_dir, sizes=list(plan.pingpong_sizes),
        collective_sizes=list(plan.collective_sizes), ops=("allreduce",),
        algorithms=plan.algorithms, gemm_shapes=list(plan.gemm_shapes),
        mem_sizes=list(plan.mem_sizes), noise_calls=plan.noise_calls,
        noise_shape=plan.noise_shape,
        off_cache=plan.off_cache,
        target=plan.target, repeats=plan.repeats,
        timeout=timeout, mpiexec=mpiexec, hostfile=hostfile, env=env)
    headers, events = load_traces(Path(out_dir))
    events += run_contention(plan.gemm_shapes, plan.mem_sizes, np=np,
                             out_dir=Path(out_dir) / "contention", target=plan.target,
                             repeats=plan.repeats, timeout=timeout, mpiexec=mpiexec,
                             hostfile=hostfile, env=env)
    return events, headers


def classify_rows(rows: Sequence[dict[str, Any]], plan: BenchPlan) -> list[dict[str, Any]]:
    """Rows with ``class`` set on GEMM rows whose shape the plan labelled."""
    out = []
    for r in rows:
        if r.get("bench") == "gemm":
            key = (int(r["m"]), int(r["n"]), int(r["k"]))
            if key in plan.gemm_classes:
                r = {**r, "class": plan.gemm_classes[key]}
        out.append(r)
    return out
