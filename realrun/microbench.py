"""Microbenchmarks that calibrate the model: what one link, one collective, one kernel costs.

What each measures and which model parameter it informs (../shared/DESIGN.md section 3):

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
============ ============================================ =================================

Method, the same for all: a warm-up, then an iteration count chosen so that one batch lasts
about ``target`` seconds (rank 0 decides and broadcasts it, so ranks agree), then ``repeats``
timed batches.  Each batch is one trace event whose ``meta`` carries everything needed to
interpret it (bench, op, algorithm, size, iterations) - so the result rows can be rebuilt from
the traces alone (:func:`results_from_events`), which is what fitting from a cluster's traces
needs.  A row reports the *median* batch (robust to a stray interruption in both directions)
and the fastest one (``time_min``).  Collective batches start after a barrier and a row's time
is the slowest rank's, as a collective is only over when every rank is done.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from clustersim.trace import TraceEvent
from realrun.arrays import _dtype
from realrun.collectives import busbw_factor, library_call, make_buffers

__all__ = ["BenchConfig", "pingpong", "collective", "gemm", "memory", "reduction",
           "results_from_events", "BENCHES", "DEFAULT_SIZES"]

BENCHES = ("pingpong", "collective", "gemm", "memory", "reduce")
DEFAULT_SIZES = tuple(4 ** k for k in range(0, 12))  # 1 B .. 4 MiB, OSU-like spacing


@dataclass(frozen=True)
class BenchConfig:
    """How long to measure: ``target`` seconds per batch, ``repeats`` batches per point."""

    target: float = 0.02
    repeats: int = 5
    warmup: int = 3
    min_iters: int = 3
    max_iters: int = 10_000


def _iters_for(ctx: Any, cfg: BenchConfig, one: Callable[[], None], *, collective: bool = True
               ) -> int:
    """Warm up, time three calls, pick the batch length; rank 0's choice is broadcast.

    The median of three single calls, so that one preempted call does not shrink a batch to
    a handful of iterations.
    """
    for _ in range(cfg.warmup):
        one()
    probes = []
    for _ in range(3):
        t = time.perf_counter()
        one()
        probes.append(time.perf_counter() - t)
    dt = max(statistics.median(probes), 1e-7)
    n = int(min(max(cfg.target / dt, cfg.min_iters), cfg.max_iters))
    return int(ctx.comm.bcast(n, root=0)) if collective else n


def _batches(ctx: Any, cfg: BenchConfig, kind: str, label: str, iters: int,
             body: Callable[[int], None], meta: dict[str, Any], *, nbytes: float,
             state: str, barrier: bool) -> None:
    for rep in range(cfg.repeats):
        if barrier:
            ctx.comm.Barrier()
        with ctx.op(kind, label, state=state, nbytes=nbytes,
                    meta={**meta, "iters": iters, "repeat": rep}):
            body(iters)
            ctx.backend.synchronize()


# --- point to point ----------------------------------------------------------------------------
def pingpong(ctx: Any, sizes: Sequence[int], cfg: BenchConfig = BenchConfig(),
             pair: tuple[int, int] = (0, 1)) -> None:
    """Ping-pong between ``pair``; other ranks wait at the barriers.  Time = RTT / 2."""
    if ctx.size < 2:
        return
    a, b = pair
    me = ctx.rank
    xp = ctx.backend
    # A cold start (connection set-up, first page faults) would land on the first size only
    # and make small messages look slower than larger ones: exchange for a while first.
    warm = xp.zeros(max(int(min(sizes, default=1)), 1), "int8")
    ctx.comm.Barrier()
    deadline = time.perf_counter() + 5 * cfg.target
    for _ in range(10_000):
        if me == a:
            ctx.comm.Send(warm, b, 6)
            ctx.comm.Recv(warm, b, 6)
            more = time.perf_counter() < deadline
            ctx.comm.send(more, b, 5)
        elif me == b:
            ctx.comm.Recv(warm, a, 6)
            ctx.comm.Send(warm, a, 6)
            more = ctx.comm.recv(source=a, tag=5)
        else:
            break
        if not more:
            break
    for size in sizes:
        buf = xp.zeros(max(int(size), 1), "int8")[: int(size)]
        if me == a:
            def loop(n: int, buf=buf, comm=ctx.comm) -> None:
                for _ in range(n):
                    comm.Send(buf, b, 7)
                    comm.Recv(buf, b, 7)
        elif me == b:
            def loop(n: int, buf=buf, comm=ctx.comm) -> None:
                for _ in range(n):
                    comm.Recv(buf, a, 7)
                    comm.Send(buf, a, 7)
        else:
            def loop(n: int) -> None:
                return None
        ctx.comm.Barrier()
        iters = _iters_for(ctx, cfg, lambda loop=loop: loop(1))
        meta = {"bench": "pingpong", "size": int(size), "pair": [a, b]}
        if me in pair:
            _batches(ctx, cfg, "pingpong", f"pingpong {int(size)}B", iters, loop, meta,
                     nbytes=float(size), state="comm", barrier=False)
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
    """
    from realrun.collectives import ScheduledCollective, build

    p = ctx.size
    dt = _dtype(dtype)
    for size in sizes:
        bufs = make_buffers(ctx.backend, op, size, p, ctx.rank, dt)
        runner = None
        if algorithm == "mpi":
            call = library_call(ctx.comm, bufs, backend=ctx.backend)
            messages = None
        else:
            sched = (make_schedule or build)(op, algorithm, p, float(bufs.nbytes),
                                             hosts=tuple(hosts or ctx.host_ids()))
            runner = ScheduledCollective(ctx.comm, sched, bufs, ctx.backend)
            call = runner.run
            messages = runner.messages

        def loop(n: int, call=call) -> None:
            for _ in range(n):
                call()

        ctx.comm.Barrier()
        iters = _iters_for(ctx, cfg, call)
        meta = {"bench": "collective", "op": op, "algorithm": algorithm, "size": bufs.nbytes,
                "count": bufs.count, "dtype": dt.name, "ranks": p}
        if messages is not None:
            meta["messages"] = messages
            meta["steps"] = sched.num_steps
        _batches(ctx, cfg, op, f"{op} {algorithm}", iters, loop, meta, nbytes=bufs.nbytes,
                 state="comm", barrier=True)
        if runner is not None:
            runner.free()


# --- local kernels -----------------------------------------------------------------------------
def gemm(ctx: Any, shapes: Iterable[tuple[int, int, int]], cfg: BenchConfig = BenchConfig(),
         dtype: str = "float32") -> None:
    """GEMM throughput on every rank at once (as data-parallel workers compute)."""
    for m, n, k in shapes:
        kern = ctx.backend.gemm(m, n, k, dtype)
        ctx.comm.Barrier()
        iters = _iters_for(ctx, cfg, kern)

        def loop(it: int, kern=kern) -> None:
            for _ in range(it):
                kern()

        meta = {"bench": "gemm", "m": m, "n": n, "k": k, "dtype": _dtype(dtype).name,
                "flops": kern.flops}
        _batches(ctx, cfg, "compute", f"gemm {m}x{n}x{k}", iters, loop, meta,
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
    dt = _dtype(dtype)
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
    dt = _dtype(dtype)
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


# --- results -----------------------------------------------------------------------------------
_KEYS = {
    "pingpong": ("size",),
    "collective": ("op", "algorithm", "ranks", "size", "dtype"),
    "gemm": ("m", "n", "k", "dtype"),
    "memory": ("kernel", "size", "dtype"),
    "reduce": ("size", "dtype"),
}


def results_from_events(events: Iterable[TraceEvent]) -> list[dict[str, Any]]:
    """Result rows from microbenchmark trace events of all ranks (order of first appearance).

    Per batch the per-iteration time is ``duration / iters``; a collective batch's time is the
    slowest rank's in that repeat; a row takes the median over repeats.  Ping-pong keeps the
    first rank of the pair (its loop is the round trip) and halves it.
    """
    groups: dict[tuple, dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    metas: dict[tuple, dict[str, Any]] = {}
    for ev in events:
        m = ev.meta
        bench = m.get("bench")
        if bench not in _KEYS or "iters" not in m:
            continue
        if bench == "pingpong" and ev.actor != m.get("pair", [0])[0]:
            continue
        key = (bench, *(m.get(k) for k in _KEYS[bench]))
        metas.setdefault(key, m)
        per_iter = ev.duration / m["iters"]
        if bench == "pingpong":
            per_iter /= 2.0
        groups[key][int(m.get("repeat", 0))][ev.actor] = per_iter
    rows: list[dict[str, Any]] = []
    for key, reps in groups.items():
        m = metas[key]
        bench = key[0]
        if bench == "collective":
            times = [max(by_rank.values()) for by_rank in reps.values()]
        else:
            times = [statistics.median(by_rank.values()) for by_rank in reps.values()]
        t = statistics.median(times)
        row: dict[str, Any] = {"bench": bench, **{k: m.get(k) for k in _KEYS[bench]},
                               "time": t, "time_min": min(times), "repeats": len(times),
                               "iters": m["iters"]}
        if bench == "pingpong":
            row["bandwidth"] = m["size"] / t if t > 0 else 0.0
            row["ranks"] = 2
        elif bench == "collective":
            algbw = m["size"] / t if t > 0 else 0.0
            row.update(count=m.get("count"), algbw=algbw,
                       busbw=algbw * busbw_factor(m["op"], m["ranks"]))
            if "messages" in m:
                row["messages"] = m["messages"]
        elif bench == "gemm":
            row.update(flops=m["flops"], flop_rate=m["flops"] / t if t > 0 else 0.0)
        elif bench == "memory":
            row.update(bytes_moved=m["bytes_moved"],
                       bandwidth=m["bytes_moved"] / t if t > 0 else 0.0)
        else:
            row["rate"] = m["size"] / t if t > 0 else 0.0
        rows.append(row)
    return rows

