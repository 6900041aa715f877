"""MPICH's default algorithm selection, three generations (read in github pmodels/mpich).

``mpich-3.2``: ``MPIR_<Coll>_intra`` of MPICH 3.2 (``src/mpi/coll/<coll>.c``), every size
compared with the CVAR defaults of each file's ``MPI_T_CVAR_INFO_BLOCK`` (e.g. ``allreduce.c``
lines 14-17; ``src/mpi/coll/cvars.txt`` exists only from 4.x on, same values).  These are the
*flat* rules; a node-aware communicator takes the SMP path first (below):

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

*SMP (3.2 and 3.3).*  Allreduce, broadcast and reduce take their SMP algorithm on a
*node-aware* communicator (a host list with some host holding two or more ranks: MPICH's
``hierarchy_kind`` PARENT, ``commutil.c``) whenever the byte count is at most
``MPIR_CVAR_MAX_SMP_<COLL>_MSG_SIZE``, whose default 0 means every size (3.2:
``allreduce.c`` lines 35-38 and 211-215, the same gate in ``bcast.c`` and ``reduce.c``).  In
3.2 the SMP allreduce's leaders (one rank per host, a flat communicator) then take the flat
rule with the real byte count: recursive doubling to 2048 B or ``count < pof2``, else
Rabenseifner.  Only a communicator without a host list, or with one rank per host, takes
the flat rules above.

``mpich-3.3``: ``MPIR_<Coll>_intra_auto`` of 3.3.x (``src/mpi/coll/<coll>/<coll>.c``).  Same
thresholds and the same SMP gate, but the zeroed byte count of that gate leaks into the flat
comparison (``allreduce.c:159``): a flat allreduce compares 0 with 2048 at
``allreduce.c:186`` - recursive doubling at every size, the leaders' allreduce of the SMP
algorithm included.  The SMP allreduce is ``hierarchical`` here (reduce in each host,
allreduce among the host leaders - a flat communicator, so recursive doubling - broadcast in
each host); the SMP broadcast (below 12288 B or p < 8, or a power of two below 524288 B) and
reduce have no schedule here: the flat choice is costed and the label says ``smp≈``.

``mpich`` = ``mpich-4``: MPICH 3.4 to 5.0 with the ch4 device and the collective selection
(csel) defaults.  ``maint/tuning/coll/ch4/generic.json`` is decided first, and what it hands
to the network module runs ``maint/tuning/coll/mpir/generic.json`` (identical for these ops
from v3.4 to the 5.0.x branch).  Flat communicators: allreduce ``nbytes <= 8`` or ``count <
pof2``: recursive doubling, else Rabenseifner (no 2048 B threshold); broadcast boundaries are
``<=`` 12288 and ``<=`` 524288; the other ops as above.  Node-aware communicators spanning
several hosts: allreduce (commutative) is ``MPIDI_Allreduce_intra_composition_alpha`` =
``hierarchical`` with the leaders' allreduce chosen by the flat rule on the leaders; on a
single host it is the shared-memory ``release_gather`` allreduce (``ch4/posix_generic.json``),
not modelled (flat choice, ``release_gather≈``).  Broadcast below 12288 B or p < 8
(composition alpha), or p a power of two below 524288 B (beta), and every commutative reduce
(beta up to 2048 B, alpha above) are leader-based compositions with no schedule here:
flat choice, labelled ``composition_alpha≈`` / ``composition_beta≈``.  The intra-host stages
of ``hierarchical`` are binomial trees; MPICH 4 runs them as shared-memory release/gather
trees and MPICH 3.3 with its own reduce/broadcast rules.

Commutative operations (sums) are assumed throughout, as for gradients.  The reduce-scatter +
gather reduce is ``mpich_reduce_scatter_gather`` (:mod:`.ompi_reduce`).
Bruck's all-to-all is the ``bruck`` schedule (one packed message per step, :mod:`.bruck`).
"""

from __future__ import annotations

import operator

from clustersim.collectives.selection import Choice, Context

__all__ = ["decide", "decide_32", "decide_33", "decide_4", "THRESHOLDS"]

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
#: MPICH 4's csel tree sends allreduces of at most this many bytes to recursive doubling
ALLREDUCE_TINY_4 = 8

_RD = Choice("recursive_doubling", "recursive_doubling")
_RAB = Choice("rabenseifner_mpich", "rabenseifner")
_BINOMIAL = Choice("binomial", "binomial")
_SCATTER_RD = Choice("scatter_rd_allgather", "scatter_recursive_doubling_allgather")
_SCATTER_RING = Choice("scatter_allgather", "scatter_ring_allgather")


def _pow2(p: int) -> bool:
    return p & (p - 1) == 0


def node_aware(c: Context) -> bool:
    """Whether MPICH builds a node hierarchy for the communicator: a host list was given and
    some host holds two or more ranks (``commutil.c``: not when every rank is on its own
    node).  Without a host list clustersim cannot tell, and takes the flat rules."""
    return c.placed and c.nodes < c.ranks


def _approx(what: str, flat: Choice) -> Choice:
    """An MPICH algorithm with no schedule here, costed as the flat choice ``flat``."""
    return Choice(flat.algorithm, f"{what}≈{flat.label}", flat.options)


def _bcast_flat(c: Context, inclusive: bool) -> Choice:
    """3.x compares ``nbytes < threshold``; 4.x's csel tree ``avg_msg_size <= threshold``."""
    p, n = c.ranks, c.nbytes
    below = operator.le if inclusive else operator.lt
    if below(n, T["BCAST_SHORT_MSG_SIZE"]) or p < T["BCAST_MIN_PROCS"]:
        return _BINOMIAL
    if below(n, T["BCAST_LONG_MSG_SIZE"]) and _pow2(p):
        return _SCATTER_RD
    return _SCATTER_RING


def _reduce_flat(c: Context) -> Choice:
    if c.nbytes > T["REDUCE_SHORT_MSG_SIZE"] and c.count >= c.pof2:
        return Choice("mpich_reduce_scatter_gather", "reduce_scatter_gather")
    return _BINOMIAL


def _other(c: Context) -> Choice:
    """allgather, alltoall, reduce_scatter, gather, scatter: one rule in 3.2, 3.3 and 4."""
    p, n = c.ranks, c.nbytes
    if c.op == "allgather":
        if n < T["ALLGATHER_LONG_MSG_SIZE"] and _pow2(p):
            return _RD
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
    if c.op in ("gather", "scatter"):
        return _BINOMIAL
    return Choice("direct", "direct")                      # p2p


def _allreduce_flat_32(c: Context, ranks: int) -> Choice:
    """MPICH 3.2's flat allreduce rule on ``ranks`` ranks (``allreduce.c`` line 398)."""
    pof2 = 1 << (ranks.bit_length() - 1)
    if c.nbytes <= T["ALLREDUCE_SHORT_MSG_SIZE"] or c.count < pof2:
        return _RD
    return _RAB


def decide_32(c: Context) -> Choice:
    """MPICH 3.2 (module docstring): the SMP path on a node-aware communicator, else the
    byte thresholds as written."""
    if c.op == "allreduce" and node_aware(c):
        inter = _allreduce_flat_32(c, c.nodes)  # the leaders: the real byte count
        return Choice("hierarchical", f"smp({inter.label})", {"inter": inter.algorithm})
    if c.op == "allreduce":
        return _allreduce_flat_32(c, c.ranks)
    return _smp_or_flat(c)


def decide_33(c: Context) -> Choice:
    """MPICH 3.3.x with default CVARs: the zeroed byte count (module docstring)."""
    if c.op == "allreduce":
        if node_aware(c):
            return Choice("hierarchical", "smp(recursive_doubling)",
                          {"inter": "recursive_doubling"})
        return _RD
    return _smp_or_flat(c)


def _smp_or_flat(c: Context) -> Choice:
    """Broadcast, reduce and the rest in 3.2 and 3.3 (the SMP gate is the same in both)."""
    smp = node_aware(c)
    if c.op == "broadcast":
        flat = _bcast_flat(c, inclusive=False)
        # bcast_intra_smp.c: large or non-power-of-two messages run the flat ring version
        return _approx("smp", flat) if smp and flat is not _SCATTER_RING else flat
    if c.op == "reduce":
        return _approx("smp", _reduce_flat(c)) if smp else _reduce_flat(c)
    return _other(c)


def _allreduce_flat_4(c: Context, ranks: int) -> Choice:
    """mpir/generic.json allreduce on ``ranks`` ranks (a built-in, commutative op)."""
    pof2 = 1 << (ranks.bit_length() - 1)
    if c.nbytes <= ALLREDUCE_TINY_4 or c.count < pof2:
        return _RD
    return _RAB


def decide_4(c: Context) -> Choice:
    """MPICH 3.4 to 5.0, ch4 device, csel defaults (module docstring)."""
    aware, p, n = node_aware(c), c.ranks, c.nbytes
    if c.op == "allreduce":
        if not aware:
            return _allreduce_flat_4(c, p)
        if c.nodes == 1:                    # comm_size == node_comm_size: composition gamma
            return _approx("release_gather", _allreduce_flat_4(c, p))
        inter = _allreduce_flat_4(c, c.nodes)
        return Choice("hierarchical", f"composition_alpha({inter.label})",
                      {"inter": inter.algorithm})
    if c.op == "broadcast":
        flat = _bcast_flat(c, inclusive=True)
        if aware and (p < 8 or n < T["BCAST_SHORT_MSG_SIZE"]):
            return _approx("composition_alpha", flat)
        if aware and _pow2(p) and n < T["BCAST_LONG_MSG_SIZE"]:
            return _approx("composition_beta", flat)
        return flat                                           # composition gamma: flat
    if c.op == "reduce":
        flat = _reduce_flat(c)
        if aware:
            small = n <= T["REDUCE_SHORT_MSG_SIZE"]
            return _approx("composition_beta" if small else "composition_alpha", flat)
        return flat
    return _other(c)


#: ``mpich`` is what a user installs today
decide = decide_4
