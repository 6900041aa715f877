"""Execute a collective :class:`~clustersim.collectives.schedule.Schedule` with MPI messages.

This is the third use of a schedule (after flow simulation and analytic costing): every
transfer becomes a real ``Isend``/``Irecv`` and every ``reduce`` a real ``a += b``, so the
schedule's *data* semantics are checked against the MPI library's result and its *timing*
against the model.  The executor implements the data contract documented in
:mod:`clustersim.collectives.schedule`:

* one working buffer of ``N`` elements per rank, cut into ``Schedule.segments`` segments at
  ``floor(i*N/S)``; chunks are segment ranges taken modulo ``S`` (a chunk may wrap);
* within one occurrence every payload is read from the buffer as it was at the start of the
  occurrence and every received payload lands in scratch space first, to be added
  (``reduce``) or copied into place only after all of the occurrence's messages completed;
* sends and receives between the same pair are posted in list order (MPI's non-overtaking
  rule matches them);
* alltoall (``inplace=False``) reads the send buffer and writes the receive buffer, which
  starts as a copy of the send buffer; an in-place alltoall (Bruck's, which forwards received
  blocks) works on the receive buffer alone after that copy;
* a chunk made of several runs is one message, packed in run order;
* ``Schedule.mirror``: after the last occurrence segment ``r + i`` moves to ``r - i``;
* fp16 schedules ship float16 payloads and cast back on arrival.

Everything that does not depend on the data - which rank sends which element ranges in which
occurrence, the scratch and packing buffers - is compiled once per (schedule, rank, ``N``), so
a run is only MPI calls and arithmetic.  The schedule runs on a private duplicate of the
communicator, so its messages can never match an application's own sends and receives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from clustersim.collectives.schedule import Schedule, mirror_segment, segment_bounds
from realrun.arrays import Backend

__all__ = ["ScheduleExecutor", "block_bounds"]

Ranges = tuple[tuple[int, int], ...]


def _ranges(chunk: Any, bounds: np.ndarray) -> Ranges:
    """Element ranges ``(lo, hi)`` of a chunk: one range, two when it wraps, those of every
    run in order for a tuple of runs."""
    seg = len(bounds) - 1
    if chunk is None:
        return ((0, int(bounds[-1])),)
    if isinstance(chunk[0], tuple):
        return tuple(r for c in chunk for r in _ranges(c, bounds))
    a, b = chunk
    if b <= seg:
        return ((int(bounds[a]), int(bounds[b])),)
    return ((int(bounds[a]), int(bounds[-1])), (0, int(bounds[b - seg])))


def _length(r: Ranges) -> int:
    return sum(hi - lo for lo, hi in r)


def block_bounds(n_elements: int, p: int) -> np.ndarray:
    """Rank ``r``'s block of a blocked collective is ``[b[r], b[r+1])`` (same cut as segments)."""
    return segment_bounds(n_elements, p)


@dataclass(frozen=True)
class _Send:
    peer: int
    ranges: Ranges
    pack: int  # index into the pack pool, or -1 to send a view of the buffer directly


@dataclass(frozen=True)
class _Recv:
    peer: int
    ranges: Ranges
    reduce: bool
    slot: int  # index into the scratch pool


class ScheduleExecutor:
    """A schedule compiled for one rank and one buffer length; call :meth:`run` repeatedly.

    ``comm`` must have ``schedule.ranks`` members (schedule rank ``i`` is ``comm`` rank ``i``).
    ``n_elements`` is ``N``, the working buffer's length; ``dtype`` the buffer's element type.
    """

    def __init__(self, comm: Any, schedule: Schedule, n_elements: int, backend: Backend,
                 dtype: Any = np.float32) -> None:
        if comm.Get_size() != schedule.ranks:
            raise ValueError(f"schedule for {schedule.ranks} ranks run on a communicator of "
                             f"{comm.Get_size()}")
        self.schedule = schedule
        self.backend = backend
        self.n = int(n_elements)
        self.dtype = np.dtype(dtype)
        self.wire_dtype = np.dtype(np.float16) if schedule.fp16 else self.dtype
        self.rank = comm.Get_rank()
        self.comm = comm.Dup()  # private message space
        bounds = segment_bounds(self.n, schedule.segments)
        self._occurrences: list[tuple[tuple[_Send, ...], tuple[_Recv, ...]]] = []
        pack_sizes: list[int] = []
        scratch_sizes: list[int] = []
        for step in schedule.expanded():
            sends: list[_Send] = []
            recvs: list[_Recv] = []
            npack = 0
            for t in step.transfers:
                if t.src == self.rank:
                    rg = _ranges(t.chunk, bounds)
                    packed = len(rg) > 1 or schedule.fp16
                    idx = -1
                    if packed:
                        idx = npack
                        npack += 1
                        _grow(pack_sizes, idx, _length(rg))
                    sends.append(_Send(t.dst, rg, idx))
                if t.dst == self.rank:
                    rg = _ranges(t.dst_chunk if t.dst_chunk is not None else t.chunk, bounds)
                    _grow(scratch_sizes, len(recvs), _length(rg))
                    recvs.append(_Recv(t.src, rg, bool(t.reduce), len(recvs)))
            if sends or recvs:
                self._occurrences.append((tuple(sends), tuple(recvs)))
        #: ``Schedule.mirror`` as (to, from) element offsets of equal segments: slice copies
        #: through a scratch copy of the buffer work alike on NumPy and CuPy
        self._mirror: list[tuple[int, int, int]] = []
        self._mirror_tmp = None
        if schedule.mirror:
            seg = schedule.segments
            for k in range(seg):
                j = mirror_segment(self.rank, k, seg)
                self._mirror.append((int(bounds[k]), int(bounds[j]),
                                     int(bounds[k + 1] - bounds[k])))
            self._mirror_tmp = backend.empty(self.n, self.dtype)
        self._pack = [backend.empty(n, self.wire_dtype) for n in pack_sizes]
        self._scratch = [backend.empty(n, self.wire_dtype) for n in scratch_sizes]

    @property
    def messages(self) -> int:
        """Messages this rank sends per run (for reporting)."""
        return sum(len(s) for s, _ in self._occurrences)

    def run(self, buf: Any, out: Any = None) -> Any:
        """Execute the schedule on ``buf`` (in place); alltoall writes ``out`` from ``buf``.

        Returns the buffer holding the result (``buf``, or ``out`` for alltoall).
        """
        from mpi4py import MPI  # lazy

        if len(buf) != self.n:
            raise ValueError(f"buffer of {len(buf)} elements, executor compiled for {self.n}")
        if self.schedule.inplace and out is None:
            src = dst = buf
        elif self.schedule.inplace:
            out[...] = buf
            src = dst = out
        else:
            if out is None or len(out) != self.n:
                raise ValueError("an out-of-place schedule (alltoall) needs out= of the "
                                 "same length as the send buffer")
            out[...] = buf
            src, dst = buf, out
        comm = self.comm
        add = self.backend.add_
        waitall = MPI.Request.Waitall
        sync = self.backend.synchronize if self.backend.is_gpu else None
        for sends, recvs in self._occurrences:
            reqs = []
            for rv in recvs:
                scratch = self._scratch[rv.slot][: _length(rv.ranges)]
                reqs.append(comm.Irecv(scratch, rv.peer, 0))
            payloads = []
            for sd in sends:
                if sd.pack < 0:
                    lo, hi = sd.ranges[0]
                    payloads.append(src[lo:hi])
                    continue
                payload = self._pack[sd.pack][: _length(sd.ranges)]
                o = 0
                for lo, hi in sd.ranges:
                    payload[o:o + hi - lo] = src[lo:hi]  # casts to fp16 when needed
                    o += hi - lo
                payloads.append(payload)
            if sync is not None and sends:
                sync()  # device copies must land before MPI reads the memory
            for sd, payload in zip(sends, payloads):
                reqs.append(comm.Isend(payload, sd.peer, 0))
            waitall(reqs)
            for rv in recvs:
                o = 0
                scratch = self._scratch[rv.slot]
                for lo, hi in rv.ranges:
                    part = scratch[o:o + hi - lo]
                    if rv.reduce:
                        add(dst[lo:hi], part)
                    else:
                        dst[lo:hi] = part
                    o += hi - lo
        if self._mirror:
            tmp = self._mirror_tmp
            tmp[...] = dst
            for to, frm, w in self._mirror:
                dst[to:to + w] = tmp[frm:frm + w]
        return dst

    def free(self) -> None:
        self.comm.Free()


def _grow(sizes: list[int], idx: int, n: int) -> None:
    while len(sizes) <= idx:
        sizes.append(0)
    sizes[idx] = max(sizes[idx], n)
