"""Ring algorithms: reduce-scatter, allgather and their composition, the ring allreduce.

Member ``v`` sends to member ``v+1`` (mod P) in every step, one segment at a time; after
``P-1`` reduce steps each member owns one fully reduced segment, after ``P-1`` copy steps
everybody has everything (Patarasuk & Yuan 2009, "Bandwidth optimal all-reduce algorithms for
clusters of workstations").  Cost on a uniform network: ``2(P-1)(alpha + n/(P B))`` plus
``(P-1) n/P`` bytes of reduction per rank - bandwidth-optimal for any P, not only powers of
two, which is why NCCL uses rings inside a node.

Every step of a phase moves the same pattern with the segment index one lower, so a phase is a
single :class:`Step` with ``repeat = P-1`` and ``chunk_shift = -1``: a 4,253-rank ring
allreduce is two step objects.
"""

from __future__ import annotations

from collections.abc import Sequence

from clustersim.collectives.plan import Plan, make_transfers

__all__ = ["ring_phase", "ring_allreduce", "ring_reduce_scatter", "ring_allgather"]


def _unit_chunks(p: int) -> list[tuple[int, int]]:
    return [(v, v + 1) for v in range(p)]


def ring_phase(plan: Plan, members: Sequence[int], first: int, reduce: bool,
               label: str, chunks: list[tuple[int, int]] | None = None) -> None:
    """``P-1`` ring steps: at step ``k`` member ``v`` sends segment ``(v + first - k) mod P``.

    ``plan.segments`` must equal ``len(members)``.  ``chunks`` may pass the shared list of
    one-segment chunks ``[(0, 1), (1, 2), ...]`` so that two phases reuse the same tuples.
    """
    p = len(members)
    if p < 2:
        return
    unit = chunks if chunks is not None else _unit_chunks(p)
    f = first % p
    rotated = unit[f:] + unit[:f]                 # member v starts with segment v + first
    dsts = list(members[1:]) + [members[0]]
    plan.add(make_transfers(members, dsts, plan.seg_bytes, reduce, rotated),
             repeat=p - 1, shift=-1, label=label)


def ring_reduce_scatter(plan: Plan, members: Sequence[int] | None = None) -> None:
    """Reduce-scatter leaving member ``v``'s block ``v`` fully reduced (needs segments = P)."""
    members = range(plan.ranks) if members is None else members
    ring_phase(plan, members, -1, True, "ring reduce-scatter")


def ring_allgather(plan: Plan, members: Sequence[int] | None = None) -> None:
    """Allgather starting from member ``v`` owning block ``v`` (needs segments = P)."""
    members = range(plan.ranks) if members is None else members
    ring_phase(plan, members, 0, False, "ring allgather")


def ring_allreduce(plan: Plan, members: Sequence[int] | None = None) -> None:
    """Reduce-scatter then allgather; after the first phase member ``v`` owns ``v+1``."""
    members = range(plan.ranks) if members is None else members
    unit = _unit_chunks(len(members))
    ring_phase(plan, members, 0, True, "ring reduce-scatter", unit)
    ring_phase(plan, members, 1, False, "ring allgather", unit)
