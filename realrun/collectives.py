"""Collectives on real arrays: through the MPI library, or by executing our own schedules.

Both paths share one buffer convention - the one nccl-tests uses for its ``size`` column, so
that measured rows line up with simulated ones and with published nccl-tests/OSU tables:

=============== ============================== ==============================
op              send buffer (per rank)         receive buffer (per rank)
=============== ============================== ==============================
allreduce       N elements                     N elements (the sum)
broadcast       N elements (in place; root's)  -
reduce          N elements                     N elements (the sum, on root)
allgather       N/p elements (own block)       N elements (block r from rank r)
reduce_scatter  N elements                     N/p elements (block r of the sum)
alltoall        N elements (block j to rank j) N elements (block j from rank j)
gather          N/p elements (own block)       N elements (on root: block r from rank r)
scatter         N elements (root's)            N/p elements (block r of root's)
barrier         -                              -
=============== ============================== ==============================

``N = size / itemsize``, rounded down to a multiple of ``p`` for the ops that split the buffer
into ``p`` blocks.  Bus-bandwidth factors follow nccl-tests' PERFORMANCE.md.

The library path binds every argument once (:func:`library_call`) so that the per-iteration
cost is one Python call into mpi4py - the harness must not be what is measured.  The schedule
path lives in :mod:`realrun.schedexec`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clustersim.errors import InputError
from realrun.arrays import Backend, as_dtype

__all__ = ["LIBRARY_OPS", "CollectiveBuffers", "ScheduledCollective", "build", "busbw_factor",
           "check_op", "element_count", "library_call", "library_start", "make_buffers",
           "plan_cases", "run_library"]

LIBRARY_OPS = ("allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "alltoall",
               "gather", "scatter", "barrier")
_BLOCKED = ("allgather", "reduce_scatter", "alltoall", "gather", "scatter")


def check_op(op: str) -> str:
    if op not in LIBRARY_OPS:
        raise InputError(f"unknown collective {op!r} (allowed: {', '.join(LIBRARY_OPS)})",
                         path=("op",))
    return op


def busbw_factor(op: str, p: int) -> float:
    """nccl-tests' bus-bandwidth factor: busbw = algbw * factor (comparable across p)."""
    check_op(op)
    if p <= 1:
        return 1.0
    if op == "allreduce":
        return 2.0 * (p - 1) / p
    if op in _BLOCKED:
        return (p - 1) / p
    return 1.0


def element_count(op: str, nbytes: float, p: int, itemsize: int) -> int:
    """Elements ``N`` of the full buffer for a ``size`` of ``nbytes`` (see module table)."""
    check_op(op)
    if op == "barrier":
        return 0
    n = max(int(nbytes) // itemsize, 1)
    if op in _BLOCKED:
        n = max(n // p, 1) * p
    return n


@dataclass
class CollectiveBuffers:
    """The arrays one rank passes to a collective; ``recv`` is ``None`` when in place."""

    op: str
    count: int
    send: Any
    recv: Any

    @property
    def nbytes(self) -> int:
        """The ``size`` (bytes of the full buffer) these buffers represent."""
        return self.count * (self.send.itemsize if self.send is not None else 0)


def make_buffers(backend: Backend, op: str, nbytes: float, p: int, rank: int,
                 dtype: Any = "float32", seed: int = 0) -> CollectiveBuffers:
    """Buffers for one collective, filled with rank-specific random values.

    Values differ by rank (seeded by ``seed`` and ``rank``) so that a sum that drops or
    double-counts a contribution shows up in a comparison.
    """
    dt = as_dtype(dtype)
    n = element_count(op, nbytes, p, dt.itemsize)
    rnd = backend.random
    seed_int = seed * 1_000_003 + rank
    if op == "barrier":
        return CollectiveBuffers(op, 0, None, None)
    if op == "broadcast":
        return CollectiveBuffers(op, n, rnd(n, dt, seed_int), None)
    if op in ("allgather", "gather"):
        return CollectiveBuffers(op, n, rnd(n // p, dt, seed_int), backend.empty(n, dt))
    if op in ("reduce_scatter", "scatter"):
        return CollectiveBuffers(op, n, rnd(n, dt, seed_int), backend.empty(n // p, dt))
    return CollectiveBuffers(op, n, rnd(n, dt, seed_int), backend.empty(n, dt))


def library_call(comm: Any, bufs: CollectiveBuffers, *, root: int = 0,
                 backend: Backend | None = None) -> Callable[[], None]:
    """A zero-argument callable that performs the collective with the MPI library once.

    With a GPU backend whose MPI is not CUDA-aware, the callable stages through host copies
    (what Theano-MPI's ``ar`` strategy did); otherwise buffers go to MPI directly.
    """
    from mpi4py import MPI  # lazy

    op = check_op(bufs.op)
    if op == "barrier":
        return comm.Barrier
    send, recv = bufs.send, bufs.recv
    if backend is not None and not backend.direct_mpi:
        return _staged(comm, bufs, root, backend)
    if op == "allreduce":
        return lambda: comm.Allreduce(send, recv, MPI.SUM)
    if op == "broadcast":
        return lambda: comm.Bcast(send, root)
    if op == "reduce":
        return lambda: comm.Reduce(send, recv, MPI.SUM, root)
    if op == "allgather":
        return lambda: comm.Allgather(send, recv)
    if op == "reduce_scatter":
        return lambda: comm.Reduce_scatter_block(send, recv, MPI.SUM)
    if op == "gather":
        return lambda: comm.Gather(send, recv, root)
    if op == "scatter":
        return lambda: comm.Scatter(send, recv, root)
    return lambda: comm.Alltoall(send, recv)


def _host_mirror(backend: Backend, dev: Any) -> np.ndarray:
    """A pinned host buffer of ``dev``'s size and dtype holding a copy of it (set-up only)."""
    host = backend.host_empty(len(dev), dev.dtype)
    backend.stage_out(dev, host)
    return host


def _staged(comm: Any, bufs: CollectiveBuffers, root: int, backend: Backend
            ) -> Callable[[], None]:
    host = CollectiveBuffers(bufs.op, bufs.count, _host_mirror(backend, bufs.send),
                             None if bufs.recv is None else _host_mirror(backend, bufs.recv))
    inner = library_call(comm, host, root=root)

    def run() -> None:
        backend.synchronize()
        # straight into the preallocated host buffer: a fresh host array per call (what
        # ``to_host`` gives) costs page faults and a second copy - above glibc's 32 MiB
        # mmap threshold on every call, which made the H200 run's 48 MiB all-reduce take
        # 62 ms where the 16 MiB benchmark (11.6 ms) extrapolates to 35 ms
        backend.stage_out(bufs.send, host.send)
        inner()
        if bufs.recv is not None:
            backend.from_host(host.recv, out=bufs.recv)
        else:
            backend.from_host(host.send, out=bufs.send)

    return run


def library_start(comm: Any, bufs: CollectiveBuffers, *, root: int = 0) -> Any:
    """Start the collective non-blocking (``I...`` calls); returns the MPI request.

    For operations issued with ``blocking=False`` (overlap with the backward pass); only for
    buffers MPI can read directly.
    """
    from mpi4py import MPI  # lazy

    op = check_op(bufs.op)
    send, recv = bufs.send, bufs.recv
    if op == "barrier":
        return comm.Ibarrier()
    if op == "allreduce":
        return comm.Iallreduce(send, recv, MPI.SUM)
    if op == "broadcast":
        return comm.Ibcast(send, root)
    if op == "reduce":
        return comm.Ireduce(send, recv, MPI.SUM, root)
    if op == "allgather":
        return comm.Iallgather(send, recv)
    if op == "reduce_scatter":
        return comm.Ireduce_scatter_block(send, recv, MPI.SUM)
    if op == "gather":
        return comm.Igather(send, recv, root)
    if op == "scatter":
        return comm.Iscatter(send, recv, root)
    return comm.Ialltoall(send, recv)


def run_library(comm: Any, bufs: CollectiveBuffers, *, root: int = 0,
                backend: Backend | None = None) -> Any:
    """Run the collective once through the library; returns the result array (or None)."""
    library_call(comm, bufs, root=root, backend=backend)()
    return bufs.send if bufs.op == "broadcast" else bufs.recv


# --- our schedules ---------------------------------------------------------------------------
def build(op: str, algorithm: str, ranks: int, nbytes: float, **kw: Any) -> Any:
    """Our schedule for ``op`` (``clustersim.collectives.build_schedule``), validated.

    Keyword arguments go to ``build_schedule`` (``hosts`` for ``hierarchical``, ``root``,
    ``chunks``, ``fp16``, ``tree``, ``inter``).
    """
    from clustersim.collectives import build_schedule

    sched = build_schedule(op, algorithm, ranks, nbytes, **kw)
    sched.validate()
    return sched


def plan_cases(ops: Sequence[str], algorithms: Sequence[str]) -> list[tuple[str, str]]:
    """(op, algorithm) pairs to run: each requested algorithm with every op that has it.

    ``mpi`` means the library (every op); ``all`` every schedule of each op.  A name that no
    requested op knows is an input error listing what the ops do have.
    """
    from clustersim.collectives import list_algorithms

    cases: list[tuple[str, str]] = []
    known: set[str] = {"mpi", "all"}
    for op in ops:
        check_op(op)
        have = list_algorithms(op)[op] if op != "barrier" else []
        known.update(have)
        for alg in algorithms:
            if alg == "all":
                cases += [(op, a) for a in have]
            elif alg == "mpi" or alg in have:
                cases.append((op, alg))
    unknown = [a for a in algorithms if a not in known]
    if unknown:
        raise InputError(f"unknown algorithm {unknown[0]!r} for {', '.join(ops)} (allowed: "
                         f"{', '.join(sorted(known))})", path=("algorithms",))
    return cases


class ScheduledCollective:
    """One collective run by :class:`~realrun.schedexec.ScheduleExecutor` on user buffers.

    Maps the user-facing buffers (module table) onto the schedule's *working buffer* (one
    buffer holding the whole collective): allreduce/reduce work in ``recv`` after copying
    ``send`` into it (what an out-of-place MPI call does internally too), allgather/gather
    place their block into ``recv``, reduce-scatter/scatter work on a scratch copy of ``send``
    and hand back block ``r``, alltoall runs out of place from ``send`` into ``recv``.  With a GPU whose MPI
    is not CUDA-aware the working buffer is a host copy.
    """

    def __init__(self, comm: Any, schedule: Any, bufs: CollectiveBuffers,
                 backend: Backend) -> None:
        from realrun.arrays import get_backend
        from realrun.schedexec import ScheduleExecutor, block_bounds

        op = check_op(bufs.op)
        if schedule.op != op:
            raise ValueError(f"schedule is for {schedule.op!r}, buffers for {op!r}")
        if op == "barrier":
            raise ValueError("a barrier has no data schedule; use the library path")
        self.op = op
        self.bufs = bufs
        self.backend = backend
        self.rank = comm.Get_rank()
        self.staged = not backend.direct_mpi
        wb = get_backend("numpy") if self.staged else backend
        self.work_backend = wb
        n = bufs.count
        dt = bufs.send.dtype
        self.executor = ScheduleExecutor(comm, schedule, n, wb, dt)
        b = block_bounds(n, comm.Get_size())
        self.block = slice(int(b[self.rank]), int(b[self.rank + 1]))
        if op == "broadcast":
            self.work = bufs.send
        elif op in ("reduce_scatter", "scatter"):
            self.work = backend.empty(n, dt)
        else:
            self.work = bufs.recv
        if self.staged:  # host mirrors of the device buffers (pinned on a GPU)
            self.work = backend.host_empty(n, dt)
            self.send_h = backend.host_empty(len(bufs.send), dt)
        self.messages = self.executor.messages

    def run(self) -> Any:
        """Execute once; returns the array holding this rank's result."""
        bufs, op, work = self.bufs, self.op, self.work
        send = bufs.send
        if self.staged:
            self.backend.synchronize()
            self.backend.stage_out(send, self.send_h)  # no fresh host array per call
            send = self.send_h
        if op == "alltoall":
            self.executor.run(send, work)
        else:
            if op in ("allgather", "gather"):
                work[self.block] = send
            elif op != "broadcast" or self.staged:
                work[...] = send
            self.executor.run(work)
        if op in ("reduce_scatter", "scatter"):
            if self.staged:
                self.backend.from_host(work[self.block], out=bufs.recv)
            else:
                bufs.recv[...] = work[self.block]
            return bufs.recv
        target = bufs.send if op == "broadcast" else bufs.recv
        if self.staged:
            self.backend.from_host(work, out=target)
        return target

    def free(self) -> None:
        self.executor.free()
