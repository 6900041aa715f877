"""``python -m realrun COMMAND``: the programs every rank runs under ``mpiexec``.

Commands:

* ``microbench``  ping-pong, collectives (library and our schedules), GEMM, memory, reduce;
  writes ``trace.rank<r>.jsonl`` per rank and (rank 0) ``results.json``.
* ``verify``      runs our schedules and the MPI library on the same random inputs and
  compares the results; writes ``verify.json`` and exits 1 on any mismatch.
* ``selftest``    a small training-like loop (compute + all-reduce per iteration) with optional
  fault injection (``--fault exit|kill|hang|raise``) - it is how the launcher's failure
  handling is tested, and a quick check that MPI works on a new machine.

They are normally started by :func:`realrun.launch.launch` (see :mod:`realrun.api`), but work
under any ``mpiexec`` too.  An exception on one rank aborts the whole job (``MPI_Abort``)
after the traceback is written to that rank's stderr, so a Python error never leaves the
other ranks waiting in a collective forever.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clustersim.errors import InputError
from clustersim.units import UnitError, parse_size
from realrun.runtime import inject_fault

__all__ = ["main", "build_parser"]

FAULTS = ("exit", "kill", "hang", "raise")


def _sizes(text: str) -> list[int]:
    try:
        return [int(parse_size(s)) for s in text.split(",") if s.strip()]
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _size(text: str) -> int:
    try:
        return int(parse_size(text, allow_zero=True))
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _names(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def _shapes(text: str) -> list[tuple[int, int, int]]:
    """``256,512x512x1024`` -> square 256 and a 512x512x1024 GEMM."""
    out = []
    for item in _names(text):
        parts = [int(x) for x in item.lower().split("x")]
        if len(parts) == 1:
            parts *= 3
        if len(parts) != 3 or min(parts) < 1:
            raise argparse.ArgumentTypeError(f"GEMM shape {item!r}: use N or MxNxK")
        out.append((parts[0], parts[1], parts[2]))
    return out


def build_parser() -> argparse.ArgumentParser:
    from realrun.arrays import BACKEND_CHOICES
    from realrun.microbench import BENCHES, NOISE_CALLS, NOISE_GEMM

    ap = argparse.ArgumentParser(prog="python -m realrun",
                                 description="realrun rank programs (run under mpiexec)")
    sub = ap.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--out", required=True, type=Path, help="directory for traces/results")
        p.add_argument("--backend", default="auto", choices=BACKEND_CHOICES)
        p.add_argument("--dtype", default="float32", choices=("float32", "float64", "float16"))

    mb = sub.add_parser("microbench", help="microbenchmarks for calibration")
    common(mb)
    mb.add_argument("--benches", type=_names, default=list(BENCHES),
                    help=f"comma list of {', '.join(BENCHES)}")
    mb.add_argument("--sizes", type=_sizes, default=None,
                    help="message sizes (ping-pong and collectives), e.g. 1KiB,64KiB,4MiB")
    mb.add_argument("--coll-sizes", type=_sizes, default=None,
                    help="sizes for the collectives only (default: --sizes)")
    mb.add_argument("--ops", type=_names, default=["allreduce"],
                    help="collectives, e.g. allreduce,allgather,reduce_scatter")
    mb.add_argument("--algorithms", type=_names, default=["mpi"],
                    help="'mpi' (the library) and/or our schedules, e.g. mpi,ring")
    mb.add_argument("--gemm", type=_shapes, default=[(256, 256, 256), (512, 512, 512)],
                    help="GEMM shapes: N or MxNxK, comma separated")
    mb.add_argument("--gemm-precisions", type=_names, default=None,
                    help="GEMM precisions, comma list of fp32, tf32, bf16, fp16 (tf32 and "
                         "bf16 need a GPU; default: --dtype)")
    mb.add_argument("--mem-sizes", type=_sizes, default=[1 << 16, 1 << 20, 16 << 20],
                    help="array sizes for memory/reduce benches")
    mb.add_argument("--ranks-per-host", type=int, default=None,
                    help="pretend hosts of this many ranks (hierarchical schedules)")
    mb.add_argument("--noise-gemm", type=_shapes, default=[NOISE_GEMM],
                    help="GEMM shape MxNxK the noise bench times call by call "
                         "(default %(default)s)")
    mb.add_argument("--noise-calls", type=int, default=NOISE_CALLS,
                    help="calls the noise bench times (default %(default)s)")
    mb.add_argument("--off-cache", type=_size, default=0,
                    help="bytes of message buffers ping-pong and collectives rotate through, "
                         "so a message's data are not in the cache (e.g. 128MiB; default 0: "
                         "one buffer, reused)")
    mb.add_argument("--target", type=float, default=0.02, help="seconds per timed batch")
    mb.add_argument("--repeats", type=int, default=5, help="timed batches per point")

    vf = sub.add_parser("verify", help="our schedules vs the MPI library, same inputs")
    common(vf)
    vf.add_argument("--ops", type=_names, default=["allreduce"])
    vf.add_argument("--algorithms", type=_names, default=["all"],
                    help="schedules to check, or 'all' (every algorithm of each op)")
    vf.add_argument("--sizes", type=_sizes, default=[4, 1000, 1 << 16])
    vf.add_argument("--iterations", type=int, default=2, help="runs per case (reuse check)")
    vf.add_argument("--ranks-per-host", type=int, default=None,
                    help="pretend hosts of this many ranks (hierarchical schedules)")

    st = sub.add_parser("selftest", help="compute + allreduce loop, optional fault injection")
    common(st)
    st.add_argument("--iterations", type=int, default=20)
    st.add_argument("--size", type=_sizes, default=[1 << 16], help="all-reduce bytes")
    st.add_argument("--compute", type=float, default=0.001, help="seconds of compute per step")
    st.add_argument("--fault", choices=FAULTS, default=None)
    st.add_argument("--fault-rank", type=int, default=1)
    st.add_argument("--fault-after", type=int, default=5, help="iterations before the fault")
    return ap


# --- commands ----------------------------------------------------------------------------------
def _microbench(ctx: Any, a: argparse.Namespace) -> int:
    from realrun import microbench as mb
    from realrun.runtime import write_json

    unknown = [b for b in a.benches if b not in mb.BENCHES]
    if unknown:
        raise InputError(f"unknown bench {unknown[0]!r} (allowed: {', '.join(mb.BENCHES)})",
                         path=("benches",))
    from realrun.precision import meta_dtype

    for prec in a.gemm_precisions or []:
        meta_dtype(prec)  # unknown names are input errors before anything runs
    if a.noise_calls < 2:
        raise InputError(f"--noise-calls must be at least 2, not {a.noise_calls}",
                         path=("noise_calls",))
    if a.off_cache < 0:
        raise InputError(f"--off-cache must be >= 0 bytes, not {a.off_cache}",
                         path=("off_cache",))
    cfg = mb.BenchConfig(target=a.target, repeats=a.repeats, off_cache=a.off_cache)
    sizes = a.sizes or list(mb.DEFAULT_SIZES)
    if "pingpong" in a.benches:
        mb.pingpong(ctx, sizes, cfg)
    if "collective" in a.benches:
        from realrun.collectives import plan_cases

        for op, alg in plan_cases(a.ops, a.algorithms):
            mb.collective(ctx, op, a.coll_sizes or sizes, cfg, algorithm=alg, dtype=a.dtype,
                          hosts=ctx.host_ids(a.ranks_per_host))
    if "gemm" in a.benches:
        mb.gemm(ctx, a.gemm, cfg, dtype=a.dtype, precisions=a.gemm_precisions)
    if "memory" in a.benches:
        mb.memory(ctx, a.mem_sizes, cfg, dtype=a.dtype)
    if "reduce" in a.benches:
        mb.reduction(ctx, a.mem_sizes, cfg, dtype=a.dtype)
    if "noise" in a.benches:
        mb.noise(ctx, a.noise_gemm[0], a.noise_calls, dtype=a.dtype)
    everyone = ctx.comm.gather(ctx.events, root=0)
    if ctx.rank == 0:
        from realrun.mbresults import results_from_events

        rows = results_from_events(ev for evs in everyone for ev in evs)
        write_json(ctx.out_dir / "results.json", rows)
    return 0


def _verify(ctx: Any, a: argparse.Namespace) -> int:
    import numpy as np

    from realrun.collectives import (
        ScheduledCollective,
        build,
        make_buffers,
        plan_cases,
        run_library,
    )
    from realrun.runtime import write_json

    p, r = ctx.size, ctx.rank
    # relative to the largest |value|: fp32 sums of p values in [0, p) differ by a few ulps
    # between summation orders; fp16 payloads lose 11 bits
    rtol = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}[a.dtype]
    hosts = ctx.host_ids(a.ranks_per_host)
    rows: list[dict[str, Any]] = []
    bad = 0
    everything = "all" in a.algorithms
    for op, alg in plan_cases(a.ops, [x for x in a.algorithms if x != "mpi"]):
        if op == "barrier":
            continue
        for size in a.sizes:
            bufs = make_buffers(ctx.backend, op, size, p, r, a.dtype, seed=11)
            try:
                sched = build(op, alg, p, float(bufs.nbytes), hosts=hosts)
            except InputError as exc:
                if not everything:
                    raise
                rows.append({"op": op, "algorithm": alg, "ranks": p, "size": bufs.nbytes,
                             "skipped": exc.message})
                continue
            root = int(sched.meta.get("root", 0))
            ref_bufs = make_buffers(ctx.backend, op, size, p, r, a.dtype, seed=11)
            ref = ctx.backend.to_host(run_library(ctx.comm, ref_bufs, root=root)).copy()
            tol = rtol if not sched.fp16 else max(rtol, 2e-2)
            runner = ScheduledCollective(ctx.comm, sched, bufs, ctx.backend)
            errs = []
            for it in range(a.iterations):
                with ctx.op(op, f"{op} {alg}", nbytes=bufs.nbytes, iteration=it,
                            meta={"check": True, "algorithm": alg, "size": bufs.nbytes}):
                    out = ctx.backend.to_host(runner.run())
                if ref.size == 0 or (op in ("reduce", "gather") and r != root):
                    errs.append(0.0)  # no result defined on this rank
                else:
                    scale = max(float(np.max(np.abs(ref))), 1e-30)
                    errs.append(float(np.max(np.abs(out - ref))) / scale)
                # in-place ops (broadcast) consume their input: restore it for the next run
                fresh = make_buffers(ctx.backend, op, size, p, r, a.dtype, seed=11)
                bufs.send[...] = fresh.send
            runner.free()
            worst = max(ctx.comm.allgather(max(errs)))
            ok = worst <= tol
            bad += not ok
            rows.append({"op": op, "algorithm": alg, "ranks": p, "size": bufs.nbytes,
                         "count": bufs.count, "max_rel_error": worst, "ok": ok,
                         "tolerance": tol, "steps": sched.num_steps,
                         "segments": sched.segments})
    if r == 0:
        write_json(ctx.out_dir / "verify.json", rows)
        for row in rows:
            what = (f"skipped: {row['skipped']}" if "skipped" in row else
                    f"err={row['max_rel_error']:.2e} {'ok' if row['ok'] else 'MISMATCH'}")
            print(f"{row['op']:>14} {row['algorithm']:>20} p={p} size={row['size']:>9} {what}")
    return 1 if bad else 0


def _selftest(ctx: Any, a: argparse.Namespace) -> int:
    from realrun.collectives import library_call, make_buffers

    bufs = make_buffers(ctx.backend, "allreduce", a.size[0], ctx.size, ctx.rank, a.dtype)
    call = library_call(ctx.comm, bufs, backend=ctx.backend)
    for it in range(a.iterations):
        if a.fault and ctx.rank == a.fault_rank and it == a.fault_after:
            _inject(a.fault)
        with ctx.op("compute", "step", state="compute", iteration=it):
            time.sleep(a.compute)
        with ctx.op("allreduce", "allreduce mpi", nbytes=bufs.nbytes, iteration=it):
            call()
    return 0


def _inject(fault: str) -> None:
    inject_fault(fault, "selftest")


COMMANDS = {"microbench": _microbench, "verify": _verify, "selftest": _selftest}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, set up the rank, run the command; abort the job on any exception."""
    args = build_parser().parse_args(argv)
    from realrun.runtime import RankContext

    ctx = None
    try:
        ctx = RankContext(args.out, role="bench" if args.command == "microbench" else "worker",
                          backend=args.backend, keep_events=args.command == "microbench",
                          header={"command": args.command, "argv": list(argv or sys.argv[1:])})
        rc = COMMANDS[args.command](ctx, args)
        ctx.comm.Barrier()
        ctx.close()
        return rc
    except BaseException as exc:  # noqa: BLE001 - any failure must end the whole job
        if isinstance(exc, SystemExit) and not exc.code:
            raise
        msg = str(exc) if isinstance(exc, InputError) else traceback.format_exc()
        print(msg, file=sys.stderr, flush=True)
        _mark_failed(ctx, f"{type(exc).__name__}: {exc}")
        from mpi4py import MPI

        MPI.COMM_WORLD.Abort(2 if isinstance(exc, InputError) else 1)
        return 1  # not reached


def _mark_failed(ctx: Any, why: str) -> None:
    """Leave a ``failed`` state record: MPI_Abort kills this process (and its wrapper) before
    any exit status can be written, so this record is how the launcher learns who failed."""
    from mpi4py import MPI

    from realrun.rankstate import LOG_DIR_VAR, StateFile, state_path

    if ctx is not None:
        ctx.trace.close()
        ctx.state.set("failed", why)
        return
    log_dir = os.environ.get(LOG_DIR_VAR)
    if log_dir:
        rank = MPI.COMM_WORLD.Get_rank()
        StateFile(state_path(log_dir, rank), rank).set("failed", why)


if __name__ == "__main__":
    sys.exit(main())
