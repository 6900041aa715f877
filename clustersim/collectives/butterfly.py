"""Rabenseifner's allreduce in MPICH's partner order: nearest partners first.

MPICH (``src/mpi/coll/allreduce/allreduce_intra_reduce_scatter_allgather.c``, MPICH 3.3 to
4.2) and Open MPI (``ompi_coll_base_allreduce_intra_redscat_allgather`` in
``coll_base_allreduce.c``, 4.x/5.0) both run the reduce-scatter as *recursive vector halving
with distance doubling*: the first exchange is with the partner ``rank ^ 1`` and moves half of
the buffer, the next with ``rank ^ 2`` and a quarter, and so on; the allgather then runs the
masks in the reverse order (distance halving: ``p'/2`` first, ``1`` last).  The textbook order of :mod:`.recursive` is the opposite (``p'/2`` first in the
reduce-scatter).  On a crossbar both cost the same; on a hierarchical network the order decides
which exchange - the big first one or the small last one - crosses the spine: with ranks
numbered host by host MPICH's order keeps the half-buffer exchange inside a host.

Which half a rank keeps: the one on its side of the partner (lower half when its mask bit is
0).  Rank ``i`` therefore ends the reduce-scatter with the block whose index is ``i`` with its
low ``log2 p'`` bits reversed; the allgather undoes it, so no permutation is needed.  Ranks
beyond a power of two are folded in as in :func:`.plan.fold` (MPICH's "rem" handling).
"""

from __future__ import annotations

from collections.abc import Sequence

from clustersim.collectives.plan import Plan, fold

__all__ = ["near_first_rabenseifner"]


def _masks_up(p2: int) -> list[int]:
    out, m = [], 1
    while m < p2:
        out.append(m)
        m *= 2
    return out


def near_first_rabenseifner(plan: Plan, members: Sequence[int] | None = None) -> None:
    """Halving reduce-scatter with masks 1, 2, 4, ...; doubling allgather with ..., 4, 2, 1.

    ``plan.segments`` must be ``p' = pow2_floor(p)``.  Cost on a crossbar equals the textbook
    Rabenseifner: ``2 log2 p'`` steps moving ``2 (p'-1)/p' n`` bytes per rank.
    """
    members = list(range(plan.ranks) if members is None else members)
    core, pairs = fold(members)
    n = len(core)
    if plan.segments != n:
        raise ValueError("the near-first Rabenseifner needs one segment per core rank")
    plan.add([plan.xfer(e, o, reduce=True) for e, o in pairs], label="fold extra ranks in")
    held = [(0, n) for _ in range(n)]             # segment range each core rank is reducing
    history: list[list[tuple[int, int]]] = []
    for m in _masks_up(n):
        history.append(list(held))
        trs, nxt = [], []
        for i in range(n):
            lo, hi = held[i]
            mid = (lo + hi) // 2
            keep, give = ((lo, mid), (mid, hi)) if i & m == 0 else ((mid, hi), (lo, mid))
            trs.append(plan.xfer(core[i], core[i ^ m], give[0], give[1] - give[0], reduce=True))
            nxt.append(keep)
        plan.add(trs, label=f"halving reduce-scatter (distance {m})")
        held = nxt
    for m, before in zip(reversed(_masks_up(n)), reversed(history)):
        trs = [plan.xfer(core[i], core[i ^ m], held[i][0], held[i][1] - held[i][0])
               for i in range(n)]
        plan.add(trs, label=f"doubling allgather (distance {m})")
        held = before
    plan.add([plan.xfer(o, e) for e, o in pairs], label="hand results to folded ranks")
