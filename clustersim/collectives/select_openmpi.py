"""Open MPI's ``coll_tuned`` fixed decision rules, two generations.

``openmpi-4.0``: the rules of ``ompi/mca/coll/tuned/coll_tuned_decision_fixed.c`` from Open MPI
1.8 to 4.0 (formulas fitted on the UTK "Grig" cluster):

* allreduce: ``nbytes < 10000``: recursive doubling; else (commutative, ``count > p``)
  ring when ``p * 1 MiB >= nbytes``, else the segmented ring with 1 MiB segments; else
  (``count <= p``) "nonoverlapping" (reduce then bcast).
* alltoall: ``p == 2``: two_procs; block ``< 200`` and ``p > 12``: Bruck; block ``< 3000``:
  basic_linear (all at once); else pairwise.
* allgather: ``p == 2``: two_procs; total ``< 50000``: recursive doubling (p a power of two)
  or Bruck; else ring (odd p) or neighbour exchange (even p).
* broadcast: ``< 2048``: binomial; ``< 370728``: split binary tree (1 KiB segments); else the
  pipeline (a chain) with 128/64/16/8 KiB segments or the split binary tree, by the linear
  fits ``p < a * nbytes + b`` of the source.
* reduce_scatter: total ``<= 12 KiB``, or ``<= 256 KiB`` with p a power of two, or
  ``p >= 0.0012 * total + 8``: recursive halving; else ring.
* reduce: linear (``p < 8``, ``< 512``), binomial (``p < 8`` and ``< 20480``, or ``< 2048``),
  then by the fits ``p > a_i * nbytes + b_i``: binomial with 1 KiB segments, pipeline (1 KiB),
  binary (32 KiB), else pipeline (32 or 64 KiB).
* gather: linear_sync above 6000 B per block, binomial for ``p > 60`` or (``p > 10`` and
  ``< 1024`` B), linear otherwise; scatter: binomial for ``p > 10`` and ``< 300`` B, else linear.

``openmpi`` = ``openmpi-4.1``: Open MPI 4.1 replaced the rules by tables over communicator size
and bytes, measured by Mikhail et al. on UTK/ICL machines (``coll_tuned_decision_fixed.c`` of
4.1.x - read at v4.1.8 - and 5.0.x; allreduce and alltoall are also what SimGrid's
``smpi_openmpi_selector.cpp`` reproduces).  All eight tables are encoded here: allreduce, alltoall,
allgather (keyed by one rank's block, as the source's ``total_dsize = dsize * scount`` is) and
broadcast, gather and scatter (keyed by one rank's block) and reduce_scatter (by the total).
Reduce has 4.1's table for commutative operations (the sums of training; the
non-commutative branch is not encoded), with Open MPI's own reduce schedules
(:mod:`.ompi_reduce`: linear, unsegmented chain and pipeline, binary, binomial, in-order
binary, Rabenseifner's reduce-scatter + gather).  In 5.0 these rules describe single-node
communicators only: the HAN component (priority 35 > tuned's 30, ``coll_han_component.c``)
takes any communicator with ranks on other nodes and runs its own hierarchical collectives.

The base algorithms' own fallbacks (``coll_base_allreduce.c``) are applied: the ring and the
segmented ring hand ``count < p`` to recursive doubling; the segmented ring with segment size
0 (how 4.1's table calls it) is the plain ring; Rabenseifner hands ``count < pof2`` to the
linear allreduce.  What this project has no schedule for (split binary and binary broadcast
trees, 4.0's segmented reduce trees, "nonoverlapping" = tuned reduce + tuned bcast, the linear
allreduce) is costed as the nearest binomial schedule and labelled ``≈``.
"""

from __future__ import annotations

import math

from clustersim.collectives.selection import Choice, Context

__all__ = ["decide_40", "decide_41", "ALLREDUCE_41", "ALLTOALL_41", "ALLGATHER_41", "BCAST_41",
           "GATHER_41", "SCATTER_41", "REDUCE_SCATTER_41", "REDUCE_41"]

INF = math.inf
_NONOVERLAP = Choice("binomial_tree", "nonoverlapping≈binomial_tree")


def _ring(c: Context, label: str = "ring") -> Choice:
    if c.count < c.ranks:
        return Choice("recursive_doubling", f"{label}→recursive_doubling")
    return Choice("ring", label)


def _allreduce_40(c: Context) -> Choice:
    n, p = c.nbytes, c.ranks
    if n < 10000:
        return Choice("recursive_doubling", "recursive_doubling")
    if c.count > p:
        if p * (1 << 20) >= n:
            return _ring(c)
        return Choice("ring_segmented", "ring_segmented")
    return _NONOVERLAP


def _alltoall_40(c: Context) -> Choice:
    p, block = c.ranks, c.nbytes / c.ranks
    if p == 2:
        return Choice("pairwise", "two_procs")
    if block < 200 and p > 12:
        return Choice("bruck", "bruck")
    if block < 3000:
        return Choice("direct", "basic_linear")
    return Choice("pairwise", "pairwise")


def _allgather_40(c: Context) -> Choice:
    p = c.ranks
    if p == 2:
        return Choice("ring", "two_procs")
    if c.nbytes < 50000:
        if p & (p - 1) == 0:
            return Choice("recursive_doubling", "recursive_doubling")
        return Choice("bruck", "bruck")
    return Choice("ring", "ring") if p % 2 else Choice("neighbor_exchange", "neighbor_exchange")


def _pipeline(c: Context, seg: int) -> Choice:
    chunks = max(1, min(4096, math.ceil(c.nbytes / seg)))
    return Choice("pipelined_chain", f"pipeline({seg // 1024}KiB)", {"chunks": chunks})


def _bcast_40(c: Context) -> Choice:
    n, p = c.nbytes, c.ranks
    if n < 2048:
        return Choice("binomial", "binomial")
    if n < 370728:
        return Choice("binomial", "split_bintree≈binomial")
    if p < 1.6134e-6 * n + 2.1102:
        return _pipeline(c, 128 * 1024)
    if p < 13:
        return Choice("binomial", "split_bintree≈binomial")
    if p < 2.3679e-6 * n + 1.1787:
        return _pipeline(c, 64 * 1024)
    if p < 3.2118e-6 * n + 8.7936:
        return _pipeline(c, 16 * 1024)
    return _pipeline(c, 8 * 1024)


def _reduce_scatter_40(c: Context) -> Choice:
    n, p = c.nbytes, c.ranks
    if n <= 12 * 1024 or (n <= 256 * 1024 and p & (p - 1) == 0) or p >= 0.0012 * n + 8.0:
        return Choice("recursive_halving", "recursive_halving")
    return Choice("ring", "ring")


def _reduce_40(c: Context) -> Choice:
    """4.0's commutative reduce.  Every branch is costed as the binomial tree; the label names
    the tree the source calls (Binomial_0K, Binomial_1K, Pipeline_1K, Binary_32K, Pipeline_32K
    or _64K), so that a table says which one ran."""
    n, p = c.nbytes, c.ranks
    if p < 8 and n < 512:
        return Choice("binomial", "linear≈binomial")
    if (p < 8 and n < 20480) or n < 2048 or c.count <= 1:
        return Choice("binomial", "binomial")
    if p > 0.6016 / 1024 * n + 1.3496:
        return Choice("binomial", "binomial(1KiB)≈binomial")
    if p > 0.0410 / 1024 * n + 9.7128:
        return Choice("binomial", "pipeline≈binomial")
    if p > 0.0422 / 1024 * n + 1.1614:
        return Choice("binomial", "binary≈binomial")
    return Choice("binomial", "pipeline≈binomial")


def _gather_40(c: Context) -> Choice:
    p, block = c.ranks, c.nbytes / c.ranks
    if block > 6000:
        return Choice("linear", "linear_sync≈linear")
    if p > 60 or (p > 10 and block < 1024):
        return Choice("binomial", "binomial")
    return Choice("linear", "basic_linear")


def _scatter_40(c: Context) -> Choice:
    if c.ranks > 10 and c.nbytes / c.ranks < 300:
        return Choice("binomial", "binomial")
    return Choice("linear", "basic_linear")


_RULES_40 = {"allreduce": _allreduce_40, "alltoall": _alltoall_40, "allgather": _allgather_40,
             "broadcast": _bcast_40, "reduce_scatter": _reduce_scatter_40, "reduce": _reduce_40,
             "gather": _gather_40, "scatter": _scatter_40}


def decide_40(c: Context) -> Choice:
    """Open MPI 1.8-4.0's choice for ``c`` (module docstring)."""
    rule = _RULES_40.get(c.op)
    return rule(c) if rule else Choice("direct", "direct")


#: Open MPI 4.1/5.0 commutative allreduce: (communicator size below, [(bytes below, alg)])
#: algs: 1 basic_linear, 2 nonoverlapping, 3 recursive_doubling, 4 ring, 5 segmented_ring,
#: 6 rabenseifner
ALLREDUCE_41 = [
    (4, [(8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262144, 5), (INF, 6)]),
    (8, [(16, 4), (8192, 3), (INF, 6)]),
    (16, [(8192, 3), (INF, 6)]),
    (32, [(64, 5), (4096, 3), (INF, 6)]),
    (64, [(128, 5), (INF, 6)]),
    (128, [(262144, 3), (INF, 6)]),
    (256, [(131072, 2), (262144, 3), (INF, 6)]),
    (512, [(4096, 2), (INF, 6)]),
    (2048, [(2048, 2), (16384, 3), (INF, 6)]),
    (4096, [(2048, 2), (4096, 5), (16384, 3), (INF, 6)]),
    (INF, [(2048, 2), (16384, 5), (32768, 3), (INF, 6)]),
]
#: Open MPI 4.1/5.0 alltoall by block bytes: 1 linear, 2 pairwise, 3 modified_bruck,
#: 4 linear_sync, 5 two_proc
ALLTOALL_41 = [
    (3, [(2, 2), (4, 5), (16, 2), (64, 5), (256, 2), (4096, 5), (32768, 2), (262144, 4),
         (1048576, 5), (INF, 2)]),
    (8, [(8192, 4), (16384, 1), (65536, 4), (524288, 1), (1048576, 2), (INF, 1)]),
    (16, [(262144, 4), (INF, 1)]),
    (32, [(4, 4), (512, 3), (8192, 4), (32768, 1), (262144, 4), (524288, 1), (INF, 4)]),
    (64, [(512, 3), (524288, 1), (INF, 4)]),
    (128, [(1024, 3), (2048, 1), (4096, 4), (262144, 1), (INF, 2)]),
    (256, [(1024, 3), (2048, 4), (262144, 1), (INF, 2)]),
    (512, [(1024, 3), (8192, 4), (32768, 1), (INF, 2)]),
    (1024, [(512, 3), (8192, 4), (16384, 1), (131072, 4), (262144, 1), (INF, 2)]),
    (2048, [(512, 3), (1024, 4), (2048, 1), (16384, 4), (262144, 1), (INF, 4)]),
    (4096, [(1024, 3), (4096, 4), (8192, 1), (131072, 4), (INF, 1)]),
    (INF, [(2048, 3), (8192, 4), (16384, 1), (32768, 4), (65536, 1), (INF, 4)]),
]


#: Open MPI 4.1/5.0 allgather by *block* bytes (``dsize * scount``, one rank's share): 1 linear,
#: 2 bruck, 3 recursive_doubling, 4 ring, 5 neighbor; p == 2 is two_proc before the table
ALLGATHER_41 = [
    (32, [(INF, 3)]),
    (64, [(1024, 3), (65536, 5), (INF, 4)]),
    (128, [(512, 3), (65536, 5), (INF, 4)]),
    (256, [(512, 3), (131072, 5), (524288, 4), (1048576, 5), (INF, 4)]),
    (512, [(32, 3), (128, 2), (1024, 3), (131072, 5), (524288, 4), (1048576, 5), (INF, 4)]),
    (1024, [(64, 3), (256, 2), (2048, 3), (INF, 5)]),
    (2048, [(4, 3), (8, 2), (16, 3), (32, 2), (256, 3), (512, 2), (4096, 3), (INF, 5)]),
    (4096, [(32, 2), (128, 3), (512, 2), (4096, 3), (INF, 5)]),
    (INF, [(2, 3), (8, 2), (16, 3), (512, 2), (4096, 3), (INF, 5)]),
]
#: Open MPI 4.1/5.0 broadcast by message bytes: 1 basic_linear, 2 chain, 3 pipeline,
#: 4 split_binary_tree, 5 binary_tree, 6 binomial, 7 knomial, 8 scatter_allgather
#: (segment size 0 throughout: the fixed rules pass none)
BCAST_41 = [
    (4, [(32, 3), (256, 5), (512, 3), (1024, 7), (32768, 1), (131072, 5), (262144, 2),
         (524288, 1), (1048576, 6), (INF, 5)]),
    (8, [(64, 5), (128, 6), (2048, 5), (8192, 6), (1048576, 1), (INF, 2)]),
    (16, [(8, 7), (64, 5), (4096, 7), (16384, 5), (32768, 6), (INF, 1)]),
    (32, [(4096, 7), (1048576, 6), (INF, 8)]),
    (64, [(2048, 6), (INF, 7)]),
    (128, [(INF, 7)]),
    (256, [(2, 6), (16384, 5), (32768, 1), (65536, 5), (INF, 7)]),
    (1024, [(16384, 7), (32768, 4), (INF, 7)]),
    (2048, [(524288, 7), (INF, 8)]),
    (4096, [(262144, 7), (INF, 8)]),
    (INF, [(8192, 7), (16384, 5), (262144, 7), (INF, 8)]),
]


#: Open MPI 4.1/5.0 gather by block bytes: 1 basic_linear, 2 binomial, 3 linear_sync
GATHER_41 = [
    (4, [(2, 3), (4, 1), (32768, 2), (65536, 1), (131072, 2), (INF, 3)]),
    (8, [(1024, 2), (8192, 1), (32768, 2), (262144, 1), (INF, 3)]),
    (256, [(INF, 2)]),
    (512, [(2048, 2), (8192, 1), (INF, 2)]),
    (INF, [(INF, 2)]),
]
#: Open MPI 4.1/5.0 scatter by block bytes: 1 basic_linear, 2 binomial, 3 linear_nb
SCATTER_41 = [
    (4, [(2, 3), (131072, 1), (262144, 3), (INF, 1)]),
    (8, [(2048, 2), (4096, 1), (8192, 2), (32768, 1), (1048576, 3), (INF, 1)]),
    (16, [(16384, 2), (1048576, 3), (INF, 1)]),
    (32, [(16384, 2), (32768, 1), (INF, 3)]),
    (64, [(512, 2), (8192, 3), (16384, 2), (INF, 3)]),
    (INF, [(512, 2), (INF, 3)]),
]
#: Open MPI 4.1/5.0 commutative reduce_scatter by total bytes: 1 non-overlapping,
#: 2 recursive_halving, 3 ring, 4 butterfly
REDUCE_SCATTER_41 = [
    (4, [(65536, 3), (131072, 4), (INF, 3)]),
    (8, [(8, 1), (262144, 2), (INF, 3)]),
    (32, [(262144, 2), (INF, 3)]),
    (64, [(64, 1), (2048, 2), (524288, 4), (INF, 3)]),
    (128, [(256, 1), (512, 2), (2048, 4), (4096, 2), (INF, 4)]),
    (256, [(256, 1), (512, 2), (INF, 4)]),
    (512, [(256, 1), (1024, 2), (INF, 4)]),
    (1024, [(512, 1), (2048, 2), (8192, 4), (16384, 2), (INF, 4)]),
    (2048, [(512, 1), (4096, 2), (16384, 4), (32768, 2), (INF, 4)]),
    (4096, [(512, 1), (4096, 2), (INF, 4)]),
    (INF, [(1024, 1), (8192, 2), (INF, 4)]),
]


#: Open MPI 4.1/5.0 commutative reduce by total bytes: 1 linear, 2 chain, 3 pipeline, 4 binary,
#: 5 binomial, 6 in-order binary, 7 rabenseifner (redscat_gather)
REDUCE_41 = [
    (4, [(8, 7), (16, 4), (32, 3), (262144, 1), (524288, 3), (1048576, 2), (INF, 3)]),
    (8, [(4096, 4), (65536, 2), (262144, 5), (524288, 1), (1048576, 5), (INF, 1)]),
    (16, [(8192, 4), (INF, 5)]),
    (32, [(4096, 4), (INF, 5)]),
    (256, [(INF, 5)]),
    (512, [(8192, 5), (16384, 6), (INF, 5)]),
    (2048, [(INF, 5)]),
    (4096, [(512, 5), (1024, 6), (8192, 5), (16384, 6), (INF, 5)]),
    (INF, [(16, 5), (32, 6), (1024, 5), (2048, 6), (8192, 5), (16384, 6), (INF, 5)]),
]


def _table(table: list, p: int, nbytes: float) -> int:
    for comm_below, rows in table:
        if p < comm_below:
            for size_below, alg in rows:
                if nbytes < size_below:
                    return alg
    raise AssertionError("tables end in infinity")


def _allreduce_41(c: Context) -> Choice:
    alg = _table(ALLREDUCE_41, c.ranks, c.nbytes)
    if alg == 1:
        return Choice("binomial_tree", "basic_linear≈binomial_tree")
    if alg == 2:
        return _NONOVERLAP
    if alg == 3:
        return Choice("recursive_doubling", "recursive_doubling")
    if alg in (4, 5):
        return _ring(c, "ring" if alg == 4 else "segmented_ring")
    if c.count < c.pof2:
        return Choice("binomial_tree", "rabenseifner→basic_linear≈binomial_tree")
    return Choice("rabenseifner_mpich", "rabenseifner")


def _alltoall_41(c: Context) -> Choice:
    # Open MPI 4.1 tests "communicator_size == 2" first; the table's first row is p < 3
    alg = _table(ALLTOALL_41, c.ranks, c.nbytes / c.ranks)
    return {1: Choice("direct", "linear"), 2: Choice("pairwise", "pairwise"),
            3: Choice("bruck", "modified_bruck"),
            4: Choice("direct", "linear_sync≈direct"), 5: Choice("pairwise", "two_proc")}[alg]


def _allgather_41(c: Context) -> Choice:
    p = c.ranks
    if p == 2:
        return Choice("ring", "two_proc")
    alg = _table(ALLGATHER_41, p, c.nbytes / p)
    # coll_base_allgather.c: recursive doubling needs a power of two (else Bruck), the
    # neighbour exchange an even size (else the ring)
    if alg == 3:
        if p & (p - 1):
            return Choice("bruck", "recursive_doubling→bruck")
        return Choice("recursive_doubling", "recursive_doubling")
    if alg == 5:
        if p % 2:
            return Choice("ring", "neighbor→ring")
        return Choice("neighbor_exchange", "neighbor")
    return {1: Choice("bruck", "linear≈bruck"), 2: Choice("bruck", "bruck"),
            4: Choice("ring", "ring")}[alg]


def _bcast_41(c: Context) -> Choice:
    alg = _table(BCAST_41, c.ranks, c.nbytes)
    if alg == 8:  # coll_base_bcast.c: count < p falls back to the linear broadcast
        if c.count < c.ranks:
            return Choice("binomial", "scatter_allgather→basic_linear≈binomial")
        return Choice("scatter_rd_allgather", "scatter_allgather")
    if alg in (2, 3):  # unsegmented: the whole message hop by hop down the chain
        name = "chain" if alg == 2 else "pipeline"
        return Choice("pipelined_chain", f"{name}(unsegmented)", {"chunks": 1})
    return {1: Choice("binomial", "basic_linear≈binomial"),
            4: Choice("binomial", "split_bintree≈binomial"),
            5: Choice("binomial", "binary≈binomial"), 6: Choice("binomial", "binomial"),
            7: Choice("binomial", "knomial≈binomial")}[alg]


def _gather_41(c: Context) -> Choice:
    alg = _table(GATHER_41, c.ranks, c.nbytes / c.ranks)
    return {1: Choice("linear", "basic_linear"), 2: Choice("binomial", "binomial"),
            3: Choice("linear", "linear_sync≈linear")}[alg]


def _scatter_41(c: Context) -> Choice:
    alg = _table(SCATTER_41, c.ranks, c.nbytes / c.ranks)
    return {1: Choice("linear", "basic_linear"), 2: Choice("binomial", "binomial"),
            3: Choice("linear", "linear_nb≈linear")}[alg]


def _reduce_scatter_41(c: Context) -> Choice:
    alg = _table(REDUCE_SCATTER_41, c.ranks, c.nbytes)
    return {1: Choice("recursive_halving", "non-overlapping≈recursive_halving"),
            2: Choice("recursive_halving", "recursive_halving"), 3: Choice("ring", "ring"),
            4: Choice("recursive_halving", "butterfly≈recursive_halving")}[alg]


def _reduce_41(c: Context) -> Choice:
    alg = _table(REDUCE_41, c.ranks, c.nbytes)
    if alg == 7 and (c.pof2 < 2 or c.count < c.pof2):
        # coll_base_reduce.c redscat_gather: basic_linear below one element per pof2 rank;
        # the label shows it, as the allreduce/bcast fallbacks do
        return Choice("ompi_linear", "rabenseifner→basic_linear")
    return {1: Choice("ompi_linear", "basic_linear"), 2: Choice("ompi_chain", "chain"),
            3: Choice("ompi_chain", "pipeline(=chain, unsegmented)"),
            4: Choice("ompi_binary", "binary"), 5: Choice("binomial", "binomial"),
            6: Choice("ompi_in_order_binary", "in-order_binary"),
            7: Choice("ompi_rabenseifner", "rabenseifner")}[alg]


_RULES_41 = {"allreduce": _allreduce_41, "alltoall": _alltoall_41,
             "allgather": _allgather_41, "broadcast": _bcast_41, "gather": _gather_41,
             "scatter": _scatter_41, "reduce_scatter": _reduce_scatter_41,
             "reduce": _reduce_41}


def decide_41(c: Context) -> Choice:
    """Open MPI 4.1/5.0's choice for ``c`` (module docstring)."""
    rule = _RULES_41.get(c.op)
    return rule(c) if rule else decide_40(c)
