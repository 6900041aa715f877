"""Bruck's allgather, the direct (isend/irecv) all-to-all, and Open MPI's segmented ring.

* **Bruck allgather** (Bruck et al. 1997, "Efficient algorithms for all-to-all communications
  in multiport message-passing systems", IEEE TPDS 8(11); MPICH ``allgather_intra_brucks.c``,
  Open MPI ``ompi_coll_base_allgather_intra_bruck``): in step ``k`` rank ``r`` sends everything
  it has gathered so far - the blocks ``r, r+1, ...`` - to ``r - 2^k`` and receives the next
  run from ``r + 2^k``.  ``ceil(log2 p)`` steps for any p, step ``k`` moving
  ``min(2^k, p - 2^k)`` blocks of ``n/p``.  The libraries gather into a rotated scratch
  buffer and rotate once at the end (local, free here); our schedule writes each block
  straight to its final place, which the wrapping chunks of :mod:`.schedule` allow.
* **Bruck all-to-all** (same paper; MPICH ``alltoall_intra_brucks.c``, Open MPI
  ``ompi_coll_base_alltoall_intra_bruck``): rank ``r`` rotates its blocks so that block ``i``
  is the one for rank ``r + i``; in step ``k`` it sends to ``r + 2^k`` *every* block whose
  index has bit ``k`` set - its own and ones it received in earlier steps - and receives the
  same indices from ``r - 2^k``; a final local rotation and reversal puts block ``i`` (which
  came from ``r - i``) in place ``r - i``.  The libraries pack each step's blocks with an
  indexed datatype into *one* message, so here each step is one transfer per rank whose chunk
  is a tuple of runs (:mod:`.schedule`): ``ceil(log2 p)`` steps, step ``k`` moving ``m_k`` =
  the number of ``i`` in ``1..p-1`` with bit ``k`` set blocks of ``n/p``.  We keep the send
  order (block ``i`` of rank ``r`` in segment ``r + i``, a wrapping run needs no copy), so the
  first rotation is free by construction and the last is ``Schedule.mirror`` (local copies,
  free in the network models, as in the allgather).
* **Direct all-to-all** (MPICH ``alltoall_intra_scattered.c``, Open MPI
  ``alltoall_intra_basic_linear``): every rank posts all its sends and receives at once - one
  step of ``p(p-1)`` messages of ``n/p``.  (MPICH throttles to ``MPIR_CVAR_ALLTOALL_THROTTLE``
  = 32 outstanding requests; with fewer than 33 ranks that is the same thing.)
* **Segmented ring allreduce** (Open MPI ``ompi_coll_base_allreduce_intra_ring_segmented``):
  each of the ``p`` ring blocks is cut into ``phases`` pieces of at most ``segsize`` bytes; the
  reduce-scatter runs once per phase (``phases * (p-1)`` steps of ``n/(p*phases)``), then one
  allgather moves whole blocks (``p-1`` steps of ``n/p``).
"""

from __future__ import annotations

from clustersim.collectives.plan import Plan, ceil_log2, make_transfers, new_transfer

__all__ = ["bruck_allgather", "bruck_alltoall", "direct_alltoall", "segmented_ring_allreduce"]


def bruck_allgather(plan: Plan) -> None:
    """Rank r starts with block r (segments = p); ``ceil(log2 p)`` steps."""
    p = plan.ranks
    for k in range(ceil_log2(p)):
        d = 1 << k
        cnt = min(d, p - d)
        plan.add([plan.xfer(r, (r - d) % p, r, cnt) for r in range(p)],
                 label=f"bruck allgather (distance {d}, {cnt} block(s))")


def bruck_alltoall(plan: Plan) -> None:
    """Segments = p, in place, mirrored at the end; one message per rank and step.

    Step ``k`` (``d = 2^k``): the indices with bit ``k`` set are the runs ``[j, j + d)`` for
    ``j = d, 3d, 5d, ...`` (the last one cut at p - Open MPI's datatype has exactly these
    runs); rank ``r`` reads them at segments ``r + i`` and rank ``r + d`` writes them at
    ``r + d + i``, overwriting the ones it sends in the same step (reads see the step's start).
    """
    p = plan.ranks
    for k in range(ceil_log2(p)):
        d = 1 << k
        runs = [(j, min(j + d, p)) for j in range(d, p, 2 * d)]
        m = sum(b - a for a, b in runs)
        plan.add([new_transfer((r, (r + d) % p, plan.seg_bytes * m, False, _at(runs, r, p),
                                _at(runs, r + d, p))) for r in range(p)],
                 label=f"bruck alltoall (distance {d}, {m} block(s))")
    plan.mirror = True


def _at(runs: list[tuple[int, int]], base: int, p: int) -> tuple:
    """Block-index runs as segments of rank ``base`` (block i in segment base + i)."""
    ch = tuple(((base + a) % p, (base + a) % p + b - a) for a, b in runs)
    return ch[0] if len(ch) == 1 else ch


def direct_alltoall(plan: Plan) -> None:
    """One step: rank r sends its block j into block r of rank j, for every j != r."""
    p = plan.ranks
    plan.add([plan.xfer(r, j, j, 1, dst_start=r) for r in range(p) for j in range(p) if j != r],
             label="all-to-all (all sends posted at once)")


def segmented_ring_allreduce(plan: Plan, phases: int) -> None:
    """Open MPI's segmented ring (segments = p * phases; block v owns ``[v*ph, (v+1)*ph)``).

    Member ``v`` sends to ``v+1``.  Reduce-scatter phase ``k``: at step ``s`` member ``v``
    sends piece ``k`` of block ``v - s`` (chunk shift ``-phases`` = one block back per step);
    after ``p-1`` steps member ``v`` owns block ``v+1`` fully reduced, then the allgather
    circulates whole blocks.
    """
    p, ph = plan.ranks, phases
    if p < 2:
        return
    if plan.segments != p * ph:
        raise ValueError("the segmented ring needs p * phases segments")
    dsts = list(range(1, p)) + [0]
    for k in range(ph):
        chunks = [(v * ph + k, v * ph + k + 1) for v in range(p)]
        plan.add(make_transfers(range(p), dsts, plan.seg_bytes, True, chunks), repeat=p - 1,
                 shift=-ph, label=f"segmented ring reduce-scatter (phase {k + 1}/{ph})")
    chunks = [(((v + 1) % p) * ph, ((v + 1) % p) * ph + ph) for v in range(p)]
    plan.add(make_transfers(range(p), dsts, plan.seg_bytes * ph, False, chunks), repeat=p - 1,
             shift=-ph, label="segmented ring allgather")


def neighbor_exchange_allgather(plan: Plan) -> None:
    """Open MPI's neighbour-exchange allgather (Chen et al., HPC Asia 2005), even p (segments = p).

    Step 0: even rank ``r`` and ``r+1`` swap their blocks, so each holds the pair
    ``[2q, 2q+2)``.  Step ``i >= 1``: every rank forwards the pair it received last (its own at
    step 1) to its right neighbour on odd steps and to its left one on even steps (left/right
    mirrored for odd ranks).  ``p/2`` steps: one of ``n/p``, ``p/2 - 1`` of ``2n/p``.
    """
    p = plan.ranks
    if p % 2:
        raise ValueError("neighbour exchange needs an even number of ranks")
    if p < 2:
        return
    nb = [[(r + 1) % p, (r - 1) % p] if r % 2 == 0 else [(r - 1) % p, (r + 1) % p]
          for r in range(p)]
    plan.add([plan.xfer(r, nb[r][0], r, 1) for r in range(p)], label="neighbour exchange 0")
    last = [r // 2 for r in range(p)]                 # pair each rank received last
    for i in range(1, p // 2):
        trs, got = [], [0] * p
        for r in range(p):
            dst = nb[r][i % 2]
            trs.append(plan.xfer(r, dst, 2 * last[r], 2))
            got[dst] = last[r]
        plan.add(trs, label=f"neighbour exchange {i}")
        last = got
