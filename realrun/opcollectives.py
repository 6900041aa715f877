"""``Collective`` operations on real buffers: the MPI library, or our schedules.

Which path (``--collectives``):

* ``library`` (default): the MPI library's own call on the group's communicator
  (``Allreduce``, ``Bcast``, ...; ``Iallreduce``, ... when the operation is non-blocking) - what
  a framework calls, and what the calibration's collective benchmarks time by default;
* ``schedules``: when the operation's algorithm (or the simulator's default for that
  collective) names one of :mod:`clustersim.collectives`, its schedule is executed with
  point-to-point messages (:class:`realrun.collectives.ScheduledCollective`) - the same
  schedule the simulator costs, so a difference between predicted and measured is the
  network model's, not the algorithm's.  An algorithm that cannot run here (``copper`` on 3
  ranks) falls back to the library and says so in the event's ``meta``.

Buffers follow :mod:`realrun.collectives`' convention (nccl-tests' ``size``): ``N =
nbytes / 4`` fp32 elements for an all-reduce.  ``fp16`` operations put fp16 on the wire: the
library sums float16 buffers (MPICH supports it), schedules ship fp16 payloads.  Buffers
come from a pool keyed by shape and are reused across iterations (a training loop does not
allocate its gradient buffers per step).  When the operation carries ``data`` (the proxy
model's arrays) the data fills the head of the send buffer (the buffer grows if the data is
larger) and the result - the sum, the root's data, the gathered blocks - is returned as a new
array; without data the result is ``None``, as in the simulator.

Schedules run eagerly, even for a non-blocking operation: the executor is a blocking loop of
``Isend``/``Irecv`` steps, so the operation is complete when it returns (its handle is
already done).  Collectives of one group are issued in the same order on every member
(``ops.py``'s rule), so eager execution cannot deadlock.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clustersim.errors import InputError
from realrun.collectives import (
    CollectiveBuffers,
    ScheduledCollective,
    build,
    element_count,
    library_call,
    library_start,
    make_buffers,
)

__all__ = ["COLLECTIVE_MODES", "DEFAULT_ALGORITHMS", "Collectives", "Running", "group_id"]

COLLECTIVE_MODES = ("library", "schedules")

#: the simulator's default schedule per collective (clustersim.sim.engine.Engine.defaults)
DEFAULT_ALGORITHMS = {"allreduce": "ring", "broadcast": "binomial", "reduce": "binomial",
                      "allgather": "ring", "reduce_scatter": "ring", "alltoall": "pairwise",
                      "barrier": "recursive_doubling"}

_HEAD = ("allreduce", "reduce", "broadcast")  # data sits at the head of a full-size buffer


def group_id(members: tuple[int, ...]) -> str:
    """A short id of a group that every rank computes alike (CRC-32, not salted hash())."""
    return f"{zlib.crc32(','.join(map(str, members)).encode()):08x}"


@dataclass
class _Slot:
    """Pooled buffers of one shape, and the schedule runners compiled for them."""

    bufs: CollectiveBuffers
    runners: dict[tuple, Any] = field(default_factory=dict)


@dataclass
class Running:
    """A started collective: done when ``request`` is ``None`` or has completed."""

    op: Any
    members: tuple[int, ...]
    gid: str
    seq: int
    start: float
    meta: dict[str, Any]
    slot: _Slot | None
    pool_key: tuple | None
    request: Any = None
    done_at: float | None = None
    data_len: int = 0
    result: Any = None


class Collectives:
    """Runs one rank's ``Collective`` operations (see the module docstring)."""

    def __init__(self, ctx: Any, *, workers: tuple[int, ...], hosts: dict[int, int],
                 mode: str = "library", defaults: dict[str, str] | None = None) -> None:
        if mode not in COLLECTIVE_MODES:
            raise InputError(f"unknown collectives mode {mode!r} (allowed: "
                             f"{', '.join(COLLECTIVE_MODES)})", path=("collectives",))
        self.ctx = ctx
        self.backend = ctx.backend
        self.workers = workers
        self.hosts = hosts  # actor rank -> machine id in the scenario's platform
        self.mode = mode
        self.defaults = dict(DEFAULT_ALGORITHMS)
        self.defaults.update(defaults or {})
        self._seq: dict[tuple[int, ...], int] = {}
        self._gids: dict[tuple[int, ...], tuple[str, Any, int]] = {}
        self._pool: dict[tuple, list[_Slot]] = {}
        self._noschedule: dict[tuple, str] = {}

    # -- buffers --------------------------------------------------------------------------------
    def _acquire(self, key: tuple, p: int, rank: int) -> _Slot:
        free = self._pool.setdefault(key, [])
        if free:
            return free.pop()
        op, count, dtype = key
        bufs = make_buffers(self.backend, op, count * np.dtype(dtype).itemsize, p, rank, dtype,
                            seed=rank + 1)
        return _Slot(bufs)

    def release(self, run: Running) -> None:
        if run.slot is not None and run.pool_key is not None:
            self._pool.setdefault(run.pool_key, []).append(run.slot)
            run.slot = None

    # -- running --------------------------------------------------------------------------------
    def start(self, op: Any, now: float, blocking: bool) -> Running:
        """Issue ``op``; a blocking caller then calls :meth:`wait`."""
        members = self.workers if op.group is None else tuple(op.group)
        known = self._gids.get(members)
        if known is None:  # once per group: id, communicator, my index in it
            known = self._gids[members] = (group_id(members), self.ctx.group_comm(members),
                                           members.index(self.ctx.rank))
        gid, comm, me = known
        p = len(members)
        seq = self._seq.get(members, 0)
        self._seq[members] = seq + 1
        alg = op.algorithm or self.defaults.get(op.op, "ring")
        meta: dict[str, Any] = {"g": gid, "seq": seq, "nb": not blocking, "requested": alg}
        run = Running(op, members, gid, seq, now, meta, None, None)
        if op.op == "barrier":
            meta.update(path="library", algorithm="mpi")
            if blocking:
                comm.Barrier()
            else:
                run.request = comm.Ibarrier()
            return run
        data = None if op.data is None else np.asarray(op.data).reshape(-1)
        dtype = "float16" if op.fp16 and self.mode == "library" else "float32"
        itemsize = np.dtype(dtype).itemsize
        count = element_count(op.op, op.nbytes / 4.0 * itemsize, p, itemsize)
        if data is not None:
            need = data.size if op.op in _HEAD or op.op in ("reduce_scatter", "alltoall") \
                else data.size * p
            if need > count:
                count = element_count(op.op, need * itemsize, p, itemsize)
            run.data_len = data.size
        key = (op.op, count, dtype)
        slot = self._acquire(key, p, me)
        run.slot, run.pool_key = slot, key
        bufs = slot.bufs
        if data is not None:
            bufs.send[: data.size] = data
            if op.op in ("reduce_scatter", "alltoall"):  # the whole buffer is the result
                bufs.send[data.size:] = 0
            # (for the others only the head is read back: the padding may keep its values,
            # which an out-of-place collective never changes - no memset in the timed part)
        runner, why = self._runner(op, alg, p, members, comm, slot)
        if runner is not None:
            meta.update(path="schedule", algorithm=alg)
            runner.run()
        else:
            meta.update(path="library", algorithm="mpi")
            if why:
                meta["fallback"] = why
            if blocking or not self.backend.direct_mpi:
                lkey = ("mpi", members, op.root)
                call = slot.runners.get(lkey)
                if call is None:  # bound once per buffer set: one Python call per operation
                    call = slot.runners[lkey] = library_call(comm, bufs, root=op.root,
                                                             backend=self.backend)
                call()
            else:
                run.request = library_start(comm, bufs, root=op.root)
        return run

    def _runner(self, op: Any, alg: str, p: int, members: tuple[int, ...], comm: Any,
                slot: _Slot) -> tuple[Any, str]:
        """The compiled schedule for ``op`` on this slot, or ``(None, why not)`` for the
        library path (``why`` empty when the library was asked for)."""
        if self.mode != "schedules" or p < 2:
            return None, ""
        rkey = (alg, members, bool(op.fp16), op.root)
        runner = slot.runners.get(rkey)
        if runner is not None:
            return runner, ""
        why = self._noschedule.get((op.op, *rkey))
        if why is not None:
            return None, why
        try:
            sched = build(op.op, alg, p, float(slot.bufs.nbytes), root=op.root,
                          fp16=bool(op.fp16), hosts=[self.hosts.get(r, 0) for r in members])
        except (InputError, ValueError, KeyError) as exc:
            why = self._noschedule[(op.op, *rkey)] = str(exc)
            return None, why
        runner = slot.runners[rkey] = ScheduledCollective(comm, sched, slot.bufs, self.backend)
        return runner, ""

    def free(self) -> None:
        """Free the communicators the compiled schedules duplicated."""
        for slots in self._pool.values():
            for slot in slots:
                for runner in slot.runners.values():
                    if isinstance(runner, ScheduledCollective):
                        runner.free()
                slot.runners.clear()

    def test(self, run: Running, now: Any) -> bool:
        """Has ``run`` completed?  Records when it was first seen complete."""
        if run.done_at is None and (run.request is None or run.request.Test()):
            run.done_at = now()
            self._finish(run)
        return run.done_at is not None

    def wait(self, run: Running, now: Any) -> Any:
        """Block until ``run`` completes; returns its result (``None`` without data)."""
        if run.done_at is None:
            if run.request is not None:
                run.request.Wait()
            run.done_at = now()
            self._finish(run)
        return run.result

    def _finish(self, run: Running) -> None:
        op, slot = run.op, run.slot
        if op.data is not None and slot is not None:
            bufs = slot.bufs
            k = run.data_len
            kind = op.op
            if kind == "broadcast":
                out = bufs.send[:k]
            elif kind in ("allreduce", "reduce"):
                out = bufs.recv[:k]
            else:
                out = bufs.recv
            mine = kind != "reduce" or run.members.index(self.ctx.rank) == op.root
            src = np.asarray(op.data)
            run.result = self.backend.to_host(out).astype(src.dtype) if mine else None
        self.release(run)
