"""MPICH's default algorithm selection (MPICH 3.3 to 4.2).

MPICH 3.x chose in ``MPIR_<Coll>_intra_auto`` (``src/mpi/coll/<coll>/<coll>.c``); MPICH 4.x
routes through the collective selection framework (``src/mpi/coll/src/csel.c``) whose
built-in default tree (``coll_selection.json``/``MPII_coll_generic_json``) encodes the same
rules, and still falls back to the ``_intra_auto`` functions.  Thresholds are the CVAR
defaults (``src/mpi/coll/cvars.txt``); sizes are bytes of the message as MPI sees it:

======================  =====================================================================
allreduce               ``nbytes <= ALLREDUCE_SHORT_MSG_SIZE`` (2048) or ``count < pof2``:
                        recursive doubling; else Rabenseifner (reduce-scatter + allgather,
                        ``allreduce_intra_reduce_scatter_allgather.c``, nearest first)
broadcast               ``nbytes < BCAST_SHORT_MSG_SIZE`` (12288) or ``p < BCAST_MIN_PROCS``
                        (8): binomial; ``nbytes < BCAST_LONG_MSG_SIZE`` (524288) and p a
                        power of two: scatter + recursive-doubling allgather; else scatter +
                        ring allgather
allgather               total ``< ALLGATHER_LONG_MSG_SIZE`` (524288) and p a power of two:
                        recursive doubling; total ``< ALLGATHER_SHORT_MSG_SIZE`` (81920):
                        Bruck; else ring
alltoall                block ``<= ALLTOALL_SHORT_MSG_SIZE`` (256) and p >= 8: Bruck;
                        block ``<= ALLTOALL_MEDIUM_MSG_SIZE`` (32768): scattered (isend/irecv);
                        else pairwise
reduce_scatter          total ``< REDSCAT_COMMUTATIVE_LONG_MSG_SIZE`` (524288): recursive
                        halving; else pairwise
reduce                  ``nbytes > REDUCE_SHORT_MSG_SIZE`` (2048) and ``count >= pof2``:
                        reduce-scatter + gather; else binomial
gather, scatter         binomial
======================  =====================================================================

Commutative operations (sums) are assumed throughout, as for gradients.  The reduce-scatter +
gather reduce is ``mpich_reduce_scatter_gather`` (:mod:`.ompi_reduce`).
Bruck's all-to-all is the ``bruck`` schedule (one packed message per step, :mod:`.bruck`).
"""

from __future__ import annotations

from clustersim.collectives.selection import Choice, Context

__all__ = ["decide", "THRESHOLDS"]

THRESHOLDS = {
    "ALLREDUCE_SHORT_MSG_SIZE": 2048,
    "BCAST_SHORT_MSG_SIZE": 12288,
    "BCAST_LONG_MSG_SIZE": 524288,
    "BCAST_MIN_PROCS": 8,
    "ALLGATHER_SHORT_MSG_SIZE": 81920,
    "ALLGATHER_LONG_MSG_SIZE": 524288,
    "ALLTOALL_SHORT_MSG_SIZE": 256,
    "ALLTOALL_MEDIUM_MSG_SIZE": 32768,
    "REDSCAT_COMMUTATIVE_LONG_MSG_SIZE": 524288,
    "REDUCE_SHORT_MSG_SIZE": 2048,
}
T = THRESHOLDS


def _pow2(p: int) -> bool:
    return p & (p - 1) == 0


def decide(c: Context) -> Choice:
    """MPICH's choice for ``c`` (module docstring)."""
    p, n = c.ranks, c.nbytes
    if c.op == "allreduce":
        if n <= T["ALLREDUCE_SHORT_MSG_SIZE"] or c.count < c.pof2:
            return Choice("recursive_doubling", "recursive_doubling")
        return Choice("rabenseifner_mpich", "rabenseifner")
    if c.op == "broadcast":
        if n < T["BCAST_SHORT_MSG_SIZE"] or p < T["BCAST_MIN_PROCS"]:
            return Choice("binomial", "binomial")
        if n < T["BCAST_LONG_MSG_SIZE"] and _pow2(p):
            return Choice("scatter_rd_allgather", "scatter_recursive_doubling_allgather")
        return Choice("scatter_allgather", "scatter_ring_allgather")
    if c.op == "allgather":
        if n < T["ALLGATHER_LONG_MSG_SIZE"] and _pow2(p):
            return Choice("recursive_doubling", "recursive_doubling")
        if n < T["ALLGATHER_SHORT_MSG_SIZE"]:
            return Choice("bruck", "brucks")
        return Choice("ring", "ring")
    if c.op == "alltoall":
        block = n / p
        if block <= T["ALLTOALL_SHORT_MSG_SIZE"] and p >= 8:
            return Choice("bruck", "brucks")
        if block <= T["ALLTOALL_MEDIUM_MSG_SIZE"]:
            return Choice("direct", "scattered")
        return Choice("pairwise", "pairwise")
    if c.op == "reduce_scatter":
        if n < T["REDSCAT_COMMUTATIVE_LONG_MSG_SIZE"]:
            return Choice("recursive_halving", "recursive_halving")
        return Choice("pairwise", "pairwise")
    if c.op == "reduce":
        if n > T["REDUCE_SHORT_MSG_SIZE"] and c.count >= c.pof2:
            return Choice("mpich_reduce_scatter_gather", "reduce_scatter_gather")
        return Choice("binomial", "binomial")
    if c.op in ("gather", "scatter"):
        return Choice("binomial", "binomial")
    return Choice("direct", "direct")                      # p2p
