"""Kernels timed while the other ranks wait inside MPI: the context training computes in.

Why a benchmark of its own: a rank of a training run never computes on an idle machine.  In
synchronous training the other workers compute at the same time (``realrun``'s GEMM and
memory benchmarks measure that: every rank runs the kernel at once); in parameter-server and
elastic training the server - and in synchronous training the rank that finished first -
waits in a blocking MPI call, and MPICH waits by *polling*.  On machines whose cores share
execution units or memory bandwidth (SMT siblings, a VM's vCPUs), a polling neighbour slows
the kernels measurably; measured on the 2-vCPU VM this was written on, a 64x512x512 GEMM ran
at 38-45 GFLOP/s with the other rank asleep, 26 with it computing, and 16-24 with it polling
in ``MPI_Recv``.  Calibrating compute on both contexts makes the fitted roofline describe
kernels the way training runs them.

Rank program (``python -m clustersim.calibration.contention`` under ``mpiexec``): rank 0
times each GEMM shape and copy size in batches (same method as ``realrun.microbench``: an
iteration count for about ``target`` seconds, ``repeats`` batches) while every other rank
sits in a blocking ``Recv`` that rank 0 releases after the point.  Events carry
``meta.context = "peer_polling"``.  :func:`run_contention` launches it through
:func:`realrun.launch.launch` (timeouts, logs, no stray processes).  mpi4py is imported only
on the ranks.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["CONTEXT", "run_contention", "main"]

CONTEXT = "peer_polling"
_TAG = 31


def _iters(call: Callable[[], None], target: float) -> int:
    for _ in range(3):
        call()
    probes = []
    for _ in range(3):
        t = time.perf_counter()
        call()
        probes.append(time.perf_counter() - t)
    return int(min(max(target / max(statistics.median(probes), 1e-7), 3), 10_000))


def _points(backend: Any, shapes: Sequence[tuple[int, int, int]], sizes: Sequence[int]
            ) -> list[tuple[str, dict[str, Any], Callable[[], None]]]:
    xp = backend.xp
    out: list[tuple[str, dict[str, Any], Callable[[], None]]] = []
    for m, n, k in shapes:
        kern = backend.gemm(m, n, k, "float32")
        out.append((f"gemm {m}x{n}x{k}", {"bench": "gemm", "m": m, "n": n, "k": k,
                                          "dtype": "float32", "flops": 2.0 * m * n * k},
                    kern.run))
    for size in sizes:
        n = max(int(size) // 4, 1)
        a = backend.random(n, "float32", 1)
        b = backend.random(n, "float32", 2)
        out.append((f"copy {n * 4}B", {"bench": "memory", "kernel": "copy", "size": n * 4,
                                       "bytes_moved": 2 * n * 4, "dtype": "float32"},
                    lambda a=a, b=b: xp.copyto(b, a)))
    return out


def _run(ctx: Any, shapes: Sequence[tuple[int, int, int]], sizes: Sequence[int],
         target: float, repeats: int) -> None:
    import numpy as np

    token = np.zeros(1, dtype=np.int8)
    comm = ctx.comm
    for label, meta, call in _points(ctx.backend, shapes, sizes):
        comm.Barrier()
        if ctx.rank == 0:
            iters = _iters(call, target)
            for rep in range(repeats):
                with ctx.op("compute", label, state="compute",
                            meta={**meta, "context": CONTEXT, "iters": iters, "repeat": rep}):
                    for _ in range(iters):
                        call()
                    ctx.backend.synchronize()
            for r in range(1, ctx.size):
                comm.Send(token, r, _TAG)
        else:
            with ctx.op("recv", "wait for rank 0", state="comm"):
                comm.Recv(token, 0, _TAG)  # MPICH polls here: the context being measured


def _shapes(text: str) -> list[tuple[int, int, int]]:
    out = []
    for item in (s for s in text.split(",") if s.strip()):
        m, n, k = (int(x) for x in item.lower().split("x"))
        out.append((m, n, k))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """The rank program, run on every rank under ``mpiexec`` (module docs); 0 when done.  A
    rank that fails aborts the job, so that the others do not wait in ``Recv`` forever."""
    ap = argparse.ArgumentParser(prog="python -m clustersim.calibration.contention")
    ap.add_argument("--out", required=True)
    ap.add_argument("--gemm", type=_shapes, default=[])
    ap.add_argument("--mem-sizes", type=lambda s: [int(x) for x in s.split(",") if x],
                    default=[])
    ap.add_argument("--target", type=float, default=0.02)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    from realrun.runtime import RankContext

    ctx = RankContext(a.out, role="bench", header={"command": "contention"})
    try:
        _run(ctx, a.gemm, a.mem_sizes, a.target, a.repeats)
        ctx.comm.Barrier()
        ctx.state.set("done")
    except BaseException:  # a rank that fails must not leave the others in Recv forever
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
        ctx.comm.Abort(1)
        return 1
    finally:
        ctx.close()
    return 0


def run_contention(shapes: Sequence[tuple[int, int, int]], sizes: Sequence[int], *,
                   np: int, out_dir: str | os.PathLike[str], target: float = 0.02,
                   repeats: int = 5, timeout: float = 900.0, mpiexec: str | None = None,
                   hostfile: str | None = None, env: Mapping[str, str] | None = None
                   ) -> list[Any]:
    """Launch the rank program on ``np`` ranks; the trace events of every rank."""
    from realrun.api import load_traces
    from realrun.launch import launch

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("trace.rank*.jsonl"):
        old.unlink()
    argv = ["--out", str(out), "--gemm", ",".join(f"{m}x{n}x{k}" for m, n, k in shapes),
            "--mem-sizes", ",".join(str(int(s)) for s in sizes), "--target", repr(target),
            "--repeats", str(int(repeats))]
    launch("clustersim.calibration.contention", argv, np, timeout=timeout,
           log_dir=out / "logs", mpiexec=mpiexec, hostfile=hostfile, env=env)
    _, events = load_traces(out)
    return events


if __name__ == "__main__":  # pragma: no cover - runs under mpiexec
    sys.exit(main())
