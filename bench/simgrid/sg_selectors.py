"""SMPI 3.32's collective selectors (``mpich``, ``ompi``) as the algorithm each one runs.

Kept apart from ``sg_clustersim.py`` (the mapping and the predictor) because these functions
encode SimGrid's decision tables (smpi_mpich_selector.cpp, smpi_openmpi_selector.cpp), not
clustersim: each answers, for a case of ``p`` ranks and ``n`` bytes of floats summed, which
SMPI algorithm runs, which clustersim schedule sends the same messages, and whether they are
the same (``exact``).
"""

from __future__ import annotations


def pof2(p: int) -> int:
    return 1 << (p.bit_length() - 1)


# --- SMPI 3.32's selectors, as the algorithm each one runs for our cases ------------------
# (smpi_mpich_selector.cpp, smpi_openmpi_selector.cpp; a commutative sum of floats, one rank
# per host.)  Each returns (SMPI algorithm, clustersim algorithm, exact).

def smpi_mpich_allreduce(p: int, n: float) -> tuple[str, str, bool]:
    """SMPI's mpich allreduce runs mvapich2_two_level on MPI_COMM_WORLD (commutative op):
    with one rank per host its shared-memory steps are empty, and its leaders' allreduce is
    ``MV2_Allreducection``, which defaults to allreduce__rdb - recursive doubling at every
    size (MPICH's own allreduce switches to Rabenseifner above 2 KiB)."""
    return "mvapich2_two_level(rdb)", "recursive_doubling", True


def smpi_mpich_bcast(p: int, n: float) -> tuple[str, str, bool]:
    """SMPI's mpich bcast runs SMP_binomial on a uniform communicator (every run here):
    with one rank per host, the binomial tree over the hosts."""
    return "SMP_binomial", "binomial", True


def smpi_mpich_allgather(p: int, n: float) -> tuple[str, str, bool]:
    if p & (p - 1) == 0 and n < 524288:
        return "rdb", "recursive_doubling", True
    if n <= 81920:
        return "bruck", "bruck", True
    return "ring(pairwise)", "ring", False  # SMPI's "ring" allgather is a pairwise exchange


def smpi_mpich_alltoall(p: int, n: float) -> tuple[str, str, bool]:
    block = n / p
    if block < 256 and p >= 8:
        return "bruck", "direct", False  # clustersim has no Bruck alltoall
    if block < 32768:
        return "mvapich2_scatter_dest", "direct", False  # posted in throttled batches
    if p % 2:
        return "pair", "pairwise", False
    return "ring", "pairwise", True


def smpi_ompi_allreduce(p: int, n: float) -> tuple[str, str, bool]:
    """Open MPI 4.1's table (the same as clustersim's ``openmpi-4.1``); SMPI's functions:
    1/2 redbcast, 3 rdb, 4 lr, 5 ompi_ring_segmented, 6 rab_rdb."""
    from clustersim.collectives.select_openmpi import ALLREDUCE_41, _table
    alg = _table(ALLREDUCE_41, p, n)
    count = n / 4
    if alg in (1, 2):
        return "redbcast", "binomial_tree", False  # SMPI's default reduce/bcast inside
    if alg == 3:
        return "rdb", "recursive_doubling", True
    if alg == 5 and count >= p * (1 << 20) / 4:
        return "ompi_ring_segmented", "ring_segmented", False
    if alg in (4, 5):  # lr (segmented ring below p segments falls back to lr)
        if count < p:
            return "lr->redbcast", "binomial_tree", False  # default reduce/bcast inside
        if count % p:  # lr reduces the count mod p leftover through this selector again
            return "lr+leftover(ompi)", "ring", False
        return "lr", "ring", True
    if count < pof2(p):
        return "rab_rdb->rdb", "recursive_doubling", True
    return "rab_rdb", "rabenseifner_mpich", True


def smpi_ompi_alltoall(p: int, n: float) -> tuple[str, str, bool]:
    """Open MPI 4.1's table by block bytes (clustersim's ``openmpi-4.1``); SMPI runs
    basic_linear for linear, linear_sync and two_proc, pair (partner r xor k) for pairwise."""
    from clustersim.collectives.select_openmpi import ALLTOALL_41, _table
    alg = _table(ALLTOALL_41, p, n / p)
    if alg == 2:
        return "pair", "pairwise", False
    if alg == 3:
        return "bruck", "direct", False
    return "basic_linear", "direct", True


def smpi_ompi_allgather(p: int, n: float) -> tuple[str, str, bool]:
    """Open MPI 4.1's allgather table (by block bytes) as SMPI 3.32 has it, for the rank
    counts run here (p < 32, and 64 <= p < 128).  clustersim's ``openmpi-4.1`` keeps the 4.0
    allgather rules, so this compares the algorithm SMPI runs, not the selection."""
    block = n / p
    if p == 2:
        return "pair", "ring", False
    if p < 32:
        return "rdb", "recursive_doubling", True
    if 64 <= p < 128:
        if block < 512:
            return "rdb", "recursive_doubling", True
        if block < 65536:
            return "ompi_neighborexchange", "neighbor_exchange", True
        return "ring(pairwise)", "ring", False
    raise ValueError(f"SMPI's ompi allgather rules for {p} ranks are not encoded")


#: SMPI 3.32's ``ompi`` selector is its port of Open MPI 4.1's coll_tuned fixed decision
#: ("Updated 02/2022": tables over communicator size and bytes for every op); clustersim's
#: ``openmpi-4.1`` has the same allreduce and alltoall tables and 4.0 rules for the other ops.
OMPI_BCAST_NOTE = ("SMPI: Open MPI 4.1's bcast table (chain, pipeline, split/binary trees, "
                   "knomial...); clustersim's openmpi-4.1 keeps the 4.0 bcast rules")
