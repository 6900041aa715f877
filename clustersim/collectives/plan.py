"""Shared machinery of the schedule builders: a step accumulator and rank arithmetic.

A :class:`Plan` knows the segment size, so every transfer a builder makes carries bytes that
match its chunk (the invariant :meth:`Schedule.validate` checks).  Builders work on *member
lists* - the actual ranks in the algorithm's own order (virtual rank ``v`` is ``members[v]``)
- so one ring or binomial tree serves a whole communicator, a root other than 0, the leaders
of a hierarchical allreduce or the ranks of one host.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat

from clustersim.collectives.schedule import Schedule, Step, Transfer

__all__ = ["BULK", "Plan", "new_transfer", "pow2_floor", "ceil_log2", "fold", "fold_targets", "group_range",
           "make_transfers"]

#: builds a Transfer straight from a 6-tuple at C speed (no Python-level __new__)
new_transfer = partial(tuple.__new__, Transfer)


#: what :func:`make_transfers` built, by the id of its result: ``(transfers, sources,
#: destinations, bytes, reduce)`` - so that a consumer that wants columns (the analytic
#: model's, clustersim/network/analytic.py) reads the sources and destinations it was
#: given instead of taking 100,000 tuples apart again.  The consumer takes its entry out;
#: the ones nobody takes (flow-costed schedules) are dropped past 64 entries.
BULK: dict[int, tuple] = {}


def make_transfers(srcs: Iterable[int], dsts: Iterable[int], nbytes: float, reduce: bool,
                   chunks: Iterable[tuple[int, int]]) -> tuple[Transfer, ...]:
    """Many same-size transfers at once (the fast path for rings of thousands of ranks)."""
    out = tuple(map(new_transfer, zip(srcs, dsts, repeat(float(nbytes)), repeat(bool(reduce)),
                                       chunks, repeat(None))))
    if isinstance(srcs, (range, list, tuple)) and isinstance(dsts, (range, list, tuple)):
        if len(BULK) > 64:
            BULK.clear()
        BULK[id(out)] = (out, srcs, dsts, float(nbytes), bool(reduce))
    return out


@dataclass
class Plan:
    """Steps of one schedule under construction, with its segmentation."""

    ranks: int
    nbytes: float
    segments: int = 1
    fp16: bool = False
    inplace: bool = True
    wire_factor: float = 1.0
    steps: list[Step] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    mirror: bool = False

    def __post_init__(self) -> None:
        #: wire bytes of one segment (fixed: segments never change after construction)
        self.seg_bytes = (self.nbytes * (0.5 if self.fp16 else 1.0) * self.wire_factor
                          / self.segments)

    def xfer(self, src: int, dst: int, start: int = 0, width: int | None = None,
             reduce: bool = False, dst_start: int | None = None) -> Transfer:
        """Transfer of ``width`` segments from ``start`` (default: the whole buffer)."""
        s = self.segments
        w = s if width is None else width
        a = start % s
        dc = None
        if dst_start is not None:
            d = dst_start % s
            dc = (d, d + w)
        return new_transfer((src, dst, self.seg_bytes * w, reduce, (a, a + w), dc))

    def add(self, transfers: Sequence[Transfer], repeat: int = 1, shift: int = 0,
            label: str = "") -> None:
        """Append a step; empty steps and zero repeats are dropped (p = 1, empty groups)."""
        if transfers and repeat > 0:
            self.steps.append(Step(tuple(transfers), repeat, label, shift))

    def add_rounds(self, rounds: Iterable[Sequence[Transfer]], label: str) -> None:
        for r in rounds:
            self.add(r, label=label)

    def to_schedule(self, op: str, algorithm: str, convert_bytes: float,
                    busbw_factor: float) -> Schedule:
        return Schedule(op, algorithm, self.ranks, float(self.nbytes), tuple(self.steps),
                        convert_bytes, busbw_factor, dict(self.meta), self.segments,
                        self.inplace, self.fp16, self.wire_factor, self.mirror)


def pow2_floor(p: int) -> int:
    """Largest power of two <= p (p >= 1)."""
    return 1 << (p.bit_length() - 1)


def ceil_log2(p: int) -> int:
    """Number of rounds of a binomial tree on p ranks."""
    return (p - 1).bit_length()


def fold(members: Sequence[int]) -> tuple[list[int], list[tuple[int, int]]]:
    """MPICH's fold of a non-power-of-two group into a power of two.

    With ``p' = pow2_floor(p)`` and ``rem = p - p'``, the first ``2*rem`` members pair up
    (even, odd); the even one hands its data to the odd one before the power-of-two algorithm
    and gets the result back after it (Thakur, Rabenseifner, Gropp 2005, "Optimization of
    collective communication operations in MPICH", sec. 4).  Returns the ``p'`` core members
    in core-rank order and the ``(even, odd)`` pairs.
    """
    p = len(members)
    rem = p - pow2_floor(p)
    pairs = [(members[2 * i], members[2 * i + 1]) for i in range(rem)]
    core = [members[2 * i + 1] for i in range(rem)] + list(members[2 * rem:])
    return core, pairs


def fold_targets(p: int) -> list[tuple[int, int]]:
    """Block ranges (one block per original rank) each core rank of :func:`fold` stands for.

    Core rank ``i < rem`` holds the blocks of ranks ``2i`` and ``2i+1``; the others one block.
    The ranges are contiguous and increasing, so any run of core ranks covers one range.
    """
    rem = p - pow2_floor(p)
    return [(2 * i, 2 * i + 2) if i < rem else (i + rem, i + rem + 1)
            for i in range(pow2_floor(p))]


def group_range(targets: Sequence[tuple[int, int]], first: int, count: int) -> tuple[int, int]:
    """Segment range covered by ``count`` consecutive core ranks starting at ``first``."""
    return targets[first][0], targets[first + count - 1][1]
