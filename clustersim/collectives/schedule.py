"""Collective operations as *schedules*: steps of concurrent point-to-point transfers.

Why schedules: the same description is (1) simulated flow by flow on the platform, (2) costed
analytically - each distinct step costed once, times its ``repeat`` - and (3) executed for real
with MPI point-to-point messages by ``realrun``.  One source, three uses, and the three can be
compared.

Timing semantics (the "bulk-synchronous step" model):

* Within a step every transfer starts at once; a step ends when its last transfer has arrived
  and every receiver has reduced what it had to reduce.  Steps run one after another.
* ``Transfer.reduce`` means the receiver adds the received buffer into its own (costed at the
  receiving device's reduction bandwidth); otherwise the data is only copied into place.
  By default the reduction is charged *after* the step's transfers (an MPI library reduces a
  message once it has arrived).  ``Schedule.fused_reduce`` (``meta["fused_reduce"]``, set by
  NCCL's schedules only) says the receiver reduces *while* it copies - NCCL's primitives run
  reduce-copy on every slot of a pipelined FIFO - so a step costs ``max(transfer, reduction)``
  instead of their sum, in both the analytic and the flow model.
* ``Step.repeat`` says the same step pattern happens that many times in a row.  The data moved
  differs (other chunks, see ``chunk_shift`` below), the sources, destinations and sizes do
  not - so neither does the timing, which is exactly what keeps a 4,253-rank ring at two step
  objects instead of millions of transfers.
* ``Schedule.convert_bytes`` is the number of fp32 bytes the busiest rank casts between fp32
  and fp16 in the fp16 variants: its input before sending plus its result after receiving
  (e.g. ``2 * nbytes`` for an allreduce).

Real MPI implementations let a rank start its next step as soon as *its own* transfers are done;
for the regular algorithms here (every rank does the same work per step) this is the same
time, for irregular ones (trees with partial fill) the step model is slightly pessimistic.

Data semantics - the contract an executor (``collectives.verify``, ``realrun``'s MPI executor)
implements:

* **Buffer.**  Every rank owns one working buffer of ``N`` elements holding the *whole*
  collective: the full vector for allreduce/broadcast/reduce, the full gathered result for
  allgather/gather (a rank's own contribution sits in its own block, like ``MPI_IN_PLACE``),
  the full input for reduce_scatter (rank ``r``'s result ends in block ``r``).  The buffer is
  cut into ``Schedule.segments`` segments; segment ``i`` is elements
  ``[floor(i*N/S), floor((i+1)*N/S))`` (see :func:`segment_bounds`), so any ``N`` works and
  some segments may be empty when ``N < S``.
* **Out of place.**  ``Schedule.inplace`` is False only for the alltoalls that read nothing
  but their input (direct, pairwise): transfers read the rank's *send* buffer and write its
  *receive* buffer, and the receive buffer starts as a copy of the send buffer (that is the
  rank's own block; every other block is overwritten).  Bruck's alltoall forwards blocks it
  received, so it is ``inplace`` and works on the receive buffer (a copy of the send buffer
  to start with, as MPICH and Open MPI copy theirs into a scratch buffer).
* **Mirror.**  ``Schedule.mirror``: after the last step every rank ``r`` moves segment
  ``r + i`` of its buffer to segment ``r - i`` (mod ``S``) - a local copy, free in the
  network models (Bruck's final rotation and reversal; no other schedule sets it).
* **Chunks.**  ``Transfer.chunk = (start, end)`` names the segments the sender reads,
  ``start`` in ``[0, S)`` and ``start < end <= start + S``: the segments
  ``start, start+1, ..., end-1`` taken *modulo S* (a chunk may wrap past the end of the
  buffer; binomial gathers rooted at rank ``r != 0`` need that).  A chunk may also be a
  tuple of such ranges, ``((a1, b1), (a2, b2), ...)``: *one* message gathering
  non-contiguous runs in that order (an MPI indexed datatype; Bruck's alltoall sends one per
  step), costed like any message of ``nbytes``.  ``Transfer.dst_chunk`` names
  where the receiver puts it (same width); ``None`` means "the same segments".  A ``chunk`` of
  ``None`` means the whole buffer ``(0, S)``.  Only alltoall uses a ``dst_chunk`` that differs
  from ``chunk``; like MPI_Alltoall's single count it needs ``N`` divisible by ``S``.
* **Repeats shift chunks.**  Occurrence ``j`` (0-based) of a step with ``repeat > 1`` moves
  every chunk and dst_chunk of the step by ``j * chunk_shift`` segments modulo ``S``; sources,
  destinations, sizes and ``reduce`` flags stay.  A ring's ``2(p-1)`` steps are two patterns
  with ``chunk_shift = -1``; a pipeline's steady state is one pattern with ``chunk_shift = +1``.
  Patterns whose *ranks* move between occurrences are never compressed (their timing would
  differ on a non-uniform network), they are written out step by step.
* **One occurrence.**  Every transfer reads its payload from the state the buffers had at the
  *start* of the occurrence; receivers receive into scratch space and apply all received
  payloads after the occurrence's messages are complete: ``reduce`` adds into the chunk,
  otherwise the chunk is overwritten.  Builders guarantee that an overwritten chunk receives no
  other write in the same occurrence.  Two transfers between the same pair in one occurrence
  are matched in the order they appear in ``Step.transfers`` (post sends and receives in list
  order - MPI's non-overtaking rule then pairs them correctly).
* **fp16.**  When ``Schedule.fp16`` is set, payloads travel as float16 (``nbytes`` already
  counts 2-byte elements) and are cast back on arrival; the buffers keep the user's dtype.

:meth:`Schedule.expanded` yields the concrete occurrences with their chunks already shifted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

__all__ = ["Transfer", "Step", "Schedule", "Chunk", "Runs", "segment_bounds", "chunk_indices",
           "chunk_runs", "shift_chunk", "mirror_segment"]

#: ``(start, end)`` segment range; ``end`` may exceed the segment count (wraps around)
Chunk = tuple[int, int]
#: one message made of several chunks, read (and written) in this order
Runs = tuple[Chunk, ...]


class Transfer(NamedTuple):
    """``nbytes`` from rank ``src`` to rank ``dst``; the receiver reduces it if ``reduce``.

    ``chunk``/``dst_chunk``: which segments are read at the sender / written at the receiver
    (module docstring).  A NamedTuple rather than a dataclass because schedules hold many of
    them and tuple construction is several times cheaper (a 4,253-rank ring builds in ms).
    """

    src: int
    dst: int
    nbytes: float
    reduce: bool = False
    chunk: Chunk | Runs | None = None
    dst_chunk: Chunk | Runs | None = None


def chunk_runs(chunk: Chunk | Runs) -> Runs:
    """The ranges of a chunk: ``(chunk,)`` for a plain range, the tuple itself for runs."""
    return chunk if isinstance(chunk[0], tuple) else (chunk,)  # type: ignore[return-value]


def shift_chunk(chunk: Chunk | Runs, shift: int, segments: int) -> Chunk | Runs:
    """``chunk`` moved by ``shift`` segments modulo ``segments`` (width kept)."""
    if isinstance(chunk[0], tuple):
        return tuple(shift_chunk(c, shift, segments) for c in chunk)  # type: ignore[misc]
    a, b = chunk
    a2 = (a + shift) % segments
    return (a2, a2 + (b - a))


def mirror_segment(rank: int, segment: int, segments: int) -> int:
    """Where :attr:`Schedule.mirror` moves ``segment`` of ``rank``: ``r + i -> r - i``."""
    return (2 * rank - segment) % segments


@dataclass(frozen=True)
class Step:
    """Transfers that run concurrently; the pattern occurs ``repeat`` times in a row.

    ``chunk_shift``: how far (in segments, modulo the schedule's segment count) every chunk
    moves from one occurrence to the next.
    """

    transfers: tuple[Transfer, ...]
    repeat: int = 1
    label: str = ""
    chunk_shift: int = 0

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise ValueError(f"step repeat must be >= 1, got {self.repeat}")

    def reduce_bytes(self) -> dict[int, float]:
        """Bytes each rank reduces in one occurrence of this step."""
        out: dict[int, float] = {}
        for t in self.transfers:
            if t.reduce:
                out[t.dst] = out.get(t.dst, 0.0) + t.nbytes
        return out

    def occurrence(self, j: int, segments: int) -> tuple[Transfer, ...]:
        """The concrete transfers of occurrence ``j`` (chunks shifted by ``j*chunk_shift``)."""
        if not 0 <= j < self.repeat:
            raise IndexError(f"occurrence {j} of a step repeated {self.repeat} times")
        d = j * self.chunk_shift
        if d % segments == 0:
            return self.transfers
        out = []
        for t in self.transfers:
            c = shift_chunk(t.chunk, d, segments) if t.chunk is not None else None
            dc = shift_chunk(t.dst_chunk, d, segments) if t.dst_chunk is not None else None
            out.append(t._replace(chunk=c, dst_chunk=dc))
        return tuple(out)


@dataclass(frozen=True)
class Schedule:
    """A collective as an ordered tuple of steps.

    ``nbytes`` is the user-facing message size (per rank buffer, as in nccl-tests ``size``;
    always fp32 bytes, also for fp16 variants).
    ``busbw_factor`` converts algorithm bandwidth into nccl-tests' *bus bandwidth*
    (e.g. ``2(p-1)/p`` for allreduce) so that numbers are comparable across rank counts.
    ``segments``, ``inplace`` and ``fp16`` describe the data each transfer moves (module
    docstring); ``meta`` carries what an executor needs to check results (``root``,
    ``servers``) and what built the schedule (``chunks``, ``inter``).
    """

    op: str
    algorithm: str
    ranks: int
    nbytes: float
    steps: tuple[Step, ...]
    convert_bytes: float = 0.0
    busbw_factor: float = 1.0
    meta: dict = field(default_factory=dict, compare=False)
    segments: int = 1
    inplace: bool = True
    fp16: bool = False
    #: bytes on the wire per payload byte: 2 for NCCL's LL protocol (a 4-byte flag beside every
    #: 4 bytes of data), 128/120 for LL128, 1 otherwise (see :mod:`.nccl_sched`)
    wire_factor: float = 1.0
    #: segment ``r + i`` of rank ``r`` moves to ``r - i`` after the last step (module docstring)
    mirror: bool = False

    @property
    def fused_reduce(self) -> bool:
        """True if receivers reduce while the data arrives (NCCL's reduce-copy), so a step's
        reduction overlaps its transfers (module docstring); set as ``meta["fused_reduce"]``
        by the builders of NCCL's schedules so that every other schedule keeps its cost."""
        return bool(self.meta.get("fused_reduce", False))

    @property
    def num_steps(self) -> int:
        return sum(s.repeat for s in self.steps)

    @property
    def wire_bytes(self) -> float:
        """Bytes of the whole buffer as it travels (half of ``nbytes`` in fp16, times the
        protocol's ``wire_factor``)."""
        return self.nbytes * (0.5 if self.fp16 else 1.0) * self.wire_factor

    def bytes_sent(self) -> dict[int, float]:
        """Total bytes each rank sends over the whole collective (a check on schedules)."""
        out: dict[int, float] = {}
        for s in self.steps:
            for t in s.transfers:
                out[t.src] = out.get(t.src, 0.0) + t.nbytes * s.repeat
        return out

    def bytes_received(self) -> dict[int, float]:
        out: dict[int, float] = {}
        for s in self.steps:
            for t in s.transfers:
                out[t.dst] = out.get(t.dst, 0.0) + t.nbytes * s.repeat
        return out

    def num_transfers(self) -> int:
        """Point-to-point messages over the whole collective (occurrences expanded)."""
        return sum(len(s.transfers) * s.repeat for s in self.steps)

    def expanded(self) -> Iterator[Step]:
        """Yield one concrete :class:`Step` (``repeat=1``) per occurrence, chunks shifted.

        For execution, not for costing (costing should use ``steps`` and ``repeat``).
        """
        for s in self.steps:
            if s.repeat == 1:
                yield s
                continue
            for j in range(s.repeat):
                yield Step(s.occurrence(j, self.segments), 1, s.label)

    def validate(self) -> None:
        """Raise ``ValueError`` if the schedule breaks the contract of this module.

        Checks ranks, chunk ranges, and that every transfer's ``nbytes`` equals its chunk's
        share of :attr:`wire_bytes` - the property that lets an executor trust both.
        """
        p, seg = self.ranks, self.segments
        if seg < 1:
            raise ValueError(f"segments must be >= 1, got {seg}")
        per_seg = self.wire_bytes / seg
        for i, s in enumerate(self.steps):
            for t in s.transfers:
                where = f"step {i} ({s.label or 'unlabelled'}) transfer {t}"
                if not (0 <= t.src < p and 0 <= t.dst < p) or t.src == t.dst:
                    raise ValueError(f"{where}: ranks must differ and lie in [0, {p})")
                width = seg
                for c in (t.chunk, t.dst_chunk):
                    if c is None:
                        continue
                    for a, b in chunk_runs(c):
                        if not (0 <= a < seg and a < b <= a + seg):
                            raise ValueError(f"{where}: chunk {c} outside [0, {seg}) segments")
                if t.chunk is not None:
                    width = _width(t.chunk)
                if t.dst_chunk is not None and _width(t.dst_chunk) != width:
                    raise ValueError(f"{where}: dst_chunk width differs from chunk width")
                want = per_seg * width
                if abs(t.nbytes - want) > 1e-9 * max(1.0, want):
                    raise ValueError(f"{where}: {t.nbytes} bytes for {width} segment(s), "
                                     f"expected {want}")


def segment_bounds(n_elements: int, segments: int) -> np.ndarray:
    """Element offsets of the ``segments + 1`` segment boundaries: ``floor(i*N/S)``."""
    i = np.arange(segments + 1, dtype=np.int64)
    return (i * int(n_elements)) // int(segments)


def _width(chunk: Chunk | Runs) -> int:
    return sum(b - a for a, b in chunk_runs(chunk))


def chunk_indices(chunk: Chunk | Runs | None, bounds: np.ndarray) -> slice | np.ndarray:
    """Element positions of ``chunk`` given :func:`segment_bounds` (a slice unless it wraps
    or has several runs)."""
    seg = len(bounds) - 1
    if chunk is None:
        return slice(0, int(bounds[-1]))
    if isinstance(chunk[0], tuple):
        return np.concatenate([np.arange(int(bounds[-1]))[chunk_indices(c, bounds)]
                               for c in chunk])  # type: ignore[union-attr]
    a, b = chunk
    if b <= seg:
        return slice(int(bounds[a]), int(bounds[b]))
    n = int(bounds[-1])
    return np.r_[int(bounds[a]):n, 0:int(bounds[b - seg])]
