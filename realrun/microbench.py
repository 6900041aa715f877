"""Microbenchmarks that calibrate the model: what one link, one collective, one kernel costs.

What each measures and which model parameter it informs (docs/calibration.md):

============ ============================================ =================================
bench        measures                                     calibrates
============ ============================================ =================================
pingpong     one-way time of a message, by size (OSU      piecewise alpha-beta per link
             ``osu_latency`` style: half a round trip)     class, eager/rendezvous break
collective   one collective by size, ranks, algorithm      per-message overhead, efficiency
             (MPI library or our schedules); columns
             of nccl-tests: size, time, algbw, busbw
gemm         C = A @ B throughput                          compute efficiency (GEMM class)
memory       STREAM-like copy and triad                    memory bandwidth
reduce       ``a += b`` throughput                         reduction bandwidth
noise        one GEMM timed call by call, every rank      compute noise (jitter CV)
============ ============================================ =================================

Method, the same for all: a warm-up, then an iteration count chosen so that one batch lasts
about ``target`` seconds (rank 0 decides and broadcasts it, so ranks agree), then ``repeats``
timed batches.  Each batch is one trace event whose ``meta`` carries everything needed to
interpret it (bench, op, algorithm, size, iterations) - so the result rows can be rebuilt from
the traces alone (:func:`realrun.mbresults.results_from_events`), which is what fitting from a cluster's traces
needs.  A row reports the *median* batch (robust to a stray interruption in both directions)
and the fastest one (``time_min``).  Collective batches start after a barrier and a row's time
is the slowest rank's, as a collective is only over when every rank is done.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from realrun.arrays import as_dtype, get_backend
from realrun.collectives import library_call, make_buffers

__all__ = ["BenchConfig", "pingpong", "collective", "gemm", "memory", "reduction", "noise",
           "BENCHES", "DEFAULT_SIZES"]

BENCHES = ("pingpong", "collective", "gemm", "memory", "reduce", "noise")
#: the noise bench's GEMM (about a layer pass: 0.54 GFLOP) and how many calls it times
NOISE_GEMM = (128, 1024, 2048)
NOISE_CALLS = 150
DEFAULT_SIZES = tuple(4 ** k for k in range(0, 12))  # 1 B .. 4 MiB, OSU-like spacing


@dataclass(frozen=True)
class BenchConfig:
    """How long to measure: ``target`` seconds per batch, ``repeats`` batches per point;
    ``off_cache``: bytes of message buffers the communication benches rotate through
    (:func:`buffer_sets`; 0 = one buffer, reused hot)."""

    target: float = 0.02
    repeats: int = 5
    warmup: int = 3
    min_iters: int = 3
    max_iters: int = 10_000
    off_cache: int = 0


#: at most this many buffer sets per point when rotating (small messages stay cached anyway)
MAX_SETS = 16


def buffer_sets(set_bytes: float, off_cache: int) -> int:
    """How many buffer sets of ``set_bytes`` a point rotates through so that consecutive
    uses of one set are ``off_cache`` bytes of other buffers apart (Intel MPI Benchmarks'
    ``-off_cache`` idea).

    Why: a benchmark that sends the same buffer back to back measures messages whose data
    sit in the cache - on a machine with a large shared last-level cache, up to tens of MiB
    (measured here: an 8 MiB all-reduce 3.9 ms back to back, 4.6 ms with 64 MiB of other
    traffic between calls).  Training sends gradients and weights that compute has streamed
    other data over since their last message, so the calibration measures messages that way.
    """
    if off_cache <= 0 or set_bytes <= 0:
        return 1
    return int(min(MAX_SETS, max(1, -(-int(off_cache) // int(set_bytes)) + 1)))


def _iters_for(ctx: Any, cfg: BenchConfig, one: Callable[[], None], *, collective: bool = True
               ) -> int:
    """Warm up, time three calls, pick the batch length; rank 0's choice is broadcast.

    The median of three single calls, so that one preempted call does not shrink a batch to
    a handful of iterations.
    """
    sync = ctx.backend.synchronize
    for _ in range(cfg.warmup):
        one()
    sync()
    probes = []
    for _ in range(3):
        t = time.perf_counter()
        one()
        sync()  # a GPU call only enqueues its kernel: time it to its end, not its launch
        probes.append(time.perf_counter() - t)
    dt = max(statistics.median(probes), 1e-7)
    n = int(min(max(cfg.target / dt, cfg.min_iters), cfg.max_iters))
    return int(ctx.comm.bcast(n, root=0)) if collective else n


@dataclass
class _Point:
    """One measured configuration: its trace labels and the loop that runs ``n`` calls."""

    kind: str
    label: str
    meta: dict[str, Any]
    nbytes: float
    loop: Callable[[int], None]
    iters: int = 1


def _batches(ctx: Any, cfg: BenchConfig, kind: str, label: str, iters: int,
             body: Callable[[int], None], meta: dict[str, Any], *, nbytes: float,
             state: str, barrier: bool) -> None:
    """``cfg.repeats`` timed batches of one point, one trace event each."""
    pt = _Point(kind, label, meta, nbytes, body, iters)
    _interleaved(ctx, cfg, [pt], state=state, barrier=barrier)


def _interleaved(ctx: Any, cfg: BenchConfig, points: Sequence[_Point], *, state: str,
                 barrier: bool) -> None:
    """Repeat rounds over all points (round r measures every point once).

    Why interleave: a burst of other work on the machine then spoils one batch of many
    points instead of every batch of one point, and the per-point median and minimum stay
    honest - on a shared 2-core machine a size measured in one go could come out slower
    than a size 1000 times larger.
    """
    for rep in range(cfg.repeats):
        for pt in points:
            if barrier:
                ctx.comm.Barrier()
            with ctx.op(pt.kind, pt.label, state=state, nbytes=pt.nbytes,
                        meta={**pt.meta, "iters": pt.iters, "repeat": rep}):
                pt.loop(pt.iters)
                ctx.backend.synchronize()


# --- point to point ----------------------------------------------------------------------------
def _warm_up_pair(ctx: Any, cfg: BenchConfig, pair: tuple[int, int], nbytes: int,
                  mem: Any) -> None:
    """Exchange messages for ``5 * target`` seconds (rank ``a`` decides when to stop).

    A cold start (connection set-up, first page faults) would otherwise land on the first
    size only and make small messages look slower than larger ones.
    """
    a, b = pair
    me = ctx.rank
    warm = mem.zeros(max(nbytes, 1), "int8")
    deadline = time.perf_counter() + 5 * cfg.target
    more = me in pair
    while more:
        if me == a:
            ctx.comm.Send(warm, b, 6)
            ctx.comm.Recv(warm, b, 6)
            more = time.perf_counter() < deadline
            ctx.comm.send(more, b, 5)
        else:
            ctx.comm.Recv(warm, a, 6)
            ctx.comm.Send(warm, a, 6)
            more = ctx.comm.recv(source=a, tag=5)


def pingpong(ctx: Any, sizes: Sequence[int], cfg: BenchConfig = BenchConfig(),
             pair: tuple[int, int] = (0, 1)) -> None:
    """Ping-pong between ``pair`` (other ranks idle).  Time = round trip / 2, as OSU's."""
    if ctx.size < 2:
        return
    a, b = pair
    me = ctx.rank
    # device memory when MPI can read it (CUDA-aware); otherwise MPI sends host buffers and
    # each message is staged as training stages it: device -> host before the send, host ->
    # device after the receive (both copies are inside the timed round trip)
    be = ctx.backend
    mem = be if be.direct_mpi else get_backend("numpy")
    ctx.comm.Barrier()
    _warm_up_pair(ctx, cfg, pair, int(min(sizes, default=1)), mem)
    points = []
    for size in sizes:
        k = buffer_sets(size, cfg.off_cache)
        bufs, devs = [], []
        for _ in range(k):
            # staged: the host side is pinned, as the training's staging buffers are
            buf = (mem.zeros(max(int(size), 1), "int8") if be.direct_mpi
                   else be.host_empty(max(int(size), 1), "int8"))
            buf.fill(1)  # touched: untouched zero pages would all map to one cached page
            bufs.append(buf[: int(size)])
            if not be.direct_mpi and me in pair:  # only GPU ranks can lack direct MPI
                devs.append(be.zeros(max(int(size), 1), "int8")[: int(size)])
        out = be.stage_out if devs else None
        into = be.stage_in if devs else None
        if me == a:
            def loop(n: int, bufs=bufs, devs=devs, k=k, comm=ctx.comm, out=out,
                     into=into) -> None:
                for i in range(n):
                    buf = bufs[i % k]
                    if out:
                        out(devs[i % k], buf)
                    comm.Send(buf, b, 7)
                    comm.Recv(buf, b, 7)
                    if into:
                        into(buf, devs[i % k])
        elif me == b:
            def loop(n: int, bufs=bufs, devs=devs, k=k, comm=ctx.comm, out=out,
                     into=into) -> None:
                for i in range(n):
                    buf = bufs[i % k]
                    comm.Recv(buf, a, 7)
                    if into:
                        into(buf, devs[i % k])
                        out(devs[i % k], buf)
                    comm.Send(buf, a, 7)
        else:
            def loop(n: int) -> None:
                return None
        ctx.comm.Barrier()
        iters = _iters_for(ctx, cfg, lambda loop=loop: loop(1))
        points.append(_Point("pingpong", f"pingpong {int(size)}B",
                             {"bench": "pingpong", "size": int(size), "pair": [a, b]},
                             float(size), loop, iters))
    if me in pair:
        _interleaved(ctx, cfg, points, state="comm", barrier=False)
    ctx.comm.Barrier()


# --- collectives -------------------------------------------------------------------------------
def collective(ctx: Any, op: str, sizes: Sequence[int], cfg: BenchConfig = BenchConfig(),
               algorithm: str = "mpi", dtype: str = "float32",
               hosts: Sequence[int] | None = None,
               make_schedule: Callable[..., Any] | None = None) -> None:
    """One collective by size; ``algorithm="mpi"`` is the library, anything else our schedule.

    ``make_schedule(op, algorithm, ranks, nbytes, hosts=)`` builds the schedule (defaults to
    :func:`realrun.collectives.build`); a parameter so that callers can pass their own.
    ``hosts`` (machine of every rank, for ``hierarchical``) defaults to the real hosts.
    Sizes are measured interleaved, a barrier before every batch.
    """
    from realrun.collectives import ScheduledCollective, build

    p = ctx.size
    dt = as_dtype(dtype)
    points = []
    runners = []
    for size in sizes:
        # 2 x size: a send and a receive buffer of about the message size per set
        sets = [make_buffers(ctx.backend, op, size, p, ctx.rank, dt, seed=ctx.rank + 1 + j)
                for j in range(buffer_sets(2 * size, cfg.off_cache))]
        bufs = sets[0]
        meta = {"bench": "collective", "op": op, "algorithm": algorithm, "size": bufs.nbytes,
                "count": bufs.count, "dtype": dt.name, "ranks": p}
        calls = []
        for one in sets:
            if algorithm == "mpi":
                calls.append(library_call(ctx.comm, one, backend=ctx.backend))
            else:
                sched = (make_schedule or build)(op, algorithm, p, float(one.nbytes),
                                                 hosts=tuple(hosts or ctx.host_ids()))
                runner = ScheduledCollective(ctx.comm, sched, one, ctx.backend)
                runners.append(runner)
                calls.append(runner.run)
                meta.update(messages=runner.messages, steps=sched.num_steps)
        call = calls[0]
        if len(sets) > 1:
            meta["buffer_sets"] = len(sets)

        def loop(n: int, calls=calls) -> None:
            k = len(calls)
            for i in range(n):
                calls[i % k]()

        ctx.comm.Barrier()
        iters = _iters_for(ctx, cfg, call)
        points.append(_Point(op, f"{op} {algorithm}", meta, float(bufs.nbytes), loop, iters))
    _interleaved(ctx, cfg, points, state="comm", barrier=True)
    for runner in runners:
        runner.free()


# --- local kernels -----------------------------------------------------------------------------
def gemm(ctx: Any, shapes: Iterable[tuple[int, int, int]], cfg: BenchConfig = BenchConfig(),
         dtype: str = "float32", precisions: Sequence[str] | None = None) -> None:
    """GEMM throughput on every rank at once (as data-parallel workers compute).

    ``precisions`` (fp32, tf32, bf16, fp16; :mod:`realrun.precision`) measures every shape in
    each; the rows tell them apart by ``dtype`` (float32, tf32, bfloat16, float16).
    """
    cases = [(s, p) for s in shapes for p in (precisions or [None])]
    for (m, n, k), prec in cases:
        kern = ctx.backend.gemm(m, n, k, dtype, precision=prec)
        ctx.comm.Barrier()
        iters = _iters_for(ctx, cfg, kern)

        def loop(it: int, kern=kern) -> None:
            for _ in range(it):
                kern()

        meta = {"bench": "gemm", "m": m, "n": n, "k": k, "dtype": kern.dtype_name,
                "flops": kern.flops}
        tag = "" if prec is None else f" {prec}"
        _batches(ctx, cfg, "compute", f"gemm {m}x{n}x{k}{tag}", iters, loop, meta,
                 nbytes=0.0, state="compute", barrier=True)


def memory(ctx: Any, sizes: Sequence[int], cfg: BenchConfig = BenchConfig(),
           dtype: str = "float32") -> None:
    """STREAM-like copy (``b = a``) and triad (``a = b + s*c``) on arrays of ``size`` bytes.

    Bytes are counted the STREAM way (copy 2, triad 3 array sizes per iteration).  NumPy
    evaluates the triad in two passes (``a = s*c``; ``a += b``), which really moves 5 array
    sizes - the reported triad bandwidth is therefore what a NumPy/CuPy triad achieves, not
    the hardware peak; ``copy`` is the cleaner figure for the memory-bandwidth parameter.
    """
    xp = ctx.backend.xp
    dt = as_dtype(dtype)
    for size in sizes:
        n = max(int(size) // dt.itemsize, 1)
        a = ctx.backend.random(n, dt, 1)
        b = ctx.backend.random(n, dt, 2)
        c = ctx.backend.random(n, dt, 3)
        s = dt.type(3.0)

        def copy(it: int, a=a, b=b) -> None:
            for _ in range(it):
                xp.copyto(b, a)

        def triad(it: int, a=a, b=b, c=c, s=s) -> None:
            for _ in range(it):
                xp.multiply(c, s, out=a)
                xp.add(a, b, out=a)

        for name, fn, moved in (("copy", copy, 2), ("triad", triad, 3)):
            ctx.comm.Barrier()
            iters = _iters_for(ctx, cfg, lambda fn=fn: fn(1))
            meta = {"bench": "memory", "kernel": name, "size": n * dt.itemsize,
                    "bytes_moved": moved * n * dt.itemsize, "dtype": dt.name}
            _batches(ctx, cfg, "compute", f"{name} {n * dt.itemsize}B", iters, fn, meta,
                     nbytes=float(n * dt.itemsize), state="compute", barrier=True)


def reduction(ctx: Any, sizes: Sequence[int], cfg: BenchConfig = BenchConfig(),
              dtype: str = "float32") -> None:
    """``a += b`` on ``size``-byte operands: what a receiver pays to reduce a chunk."""
    dt = as_dtype(dtype)
    for size in sizes:
        n = max(int(size) // dt.itemsize, 1)
        a = ctx.backend.random(n, dt, 1)
        b = ctx.backend.random(n, dt, 2) * dt.type(1e-6)  # keep values bounded

        def loop(it: int, a=a, b=b, add=ctx.backend.add_) -> None:
            for _ in range(it):
                add(a, b)

        ctx.comm.Barrier()
        iters = _iters_for(ctx, cfg, lambda loop=loop: loop(1))
        meta = {"bench": "reduce", "size": n * dt.itemsize, "dtype": dt.name}
        _batches(ctx, cfg, "compute", f"reduce {n * dt.itemsize}B", iters, loop, meta,
                 nbytes=float(n * dt.itemsize), state="compute", barrier=True)


def noise(ctx: Any, shape: tuple[int, int, int] = NOISE_GEMM, calls: int = NOISE_CALLS,
          dtype: str = "float32") -> None:
    """One GEMM on every rank at once, each call timed on its own (one event per call).

    Why: a kernel's time varies from call to call on a real machine (OS noise, a shared
    host's neighbours, frequency changes), and in synchronous training every step waits for
    the slowest rank - a cost the batch means of the ``gemm`` bench average away.  The
    spread of these calls is what the simulator's compute jitter stands for; the calibration
    takes its coefficient of variation (``clustersim.calibration.rows.noise_rows``).
    """
    m, n, k = shape
    kern = ctx.backend.gemm(m, n, k, dtype)
    for _ in range(3):
        kern()
    ctx.backend.synchronize()
    meta = {"bench": "noise", "m": m, "n": n, "k": k, "dtype": as_dtype(dtype).name,
            "flops": 2.0 * m * n * k, "iters": 1, "repeat": 0}
    ctx.comm.Barrier()
    for i in range(int(calls)):
        with ctx.op("compute", f"noise gemm {m}x{n}x{k}", state="compute", nbytes=0.0,
                    meta={**meta, "call": i}):
            kern()
            ctx.backend.synchronize()
    ctx.comm.Barrier()
