"""Recursive doubling and halving: allreduce, Rabenseifner's allreduce, reduce-scatter, allgather.

All four run their core on a power of two of ranks, ``p' = pow2_floor(p)``.  Other rank counts
use MPICH's fold (:func:`~clustersim.collectives.plan.fold`): the first ``2*rem`` ranks pair
up, the even rank of each pair sends its data to the odd one (reducing) before the core and
receives its result after it.  That costs one extra step before and one after - for
allreduce ``alpha + n/B (+ n/R)`` and ``alpha + n/B`` - exactly MPICH's behaviour
(Thakur, Rabenseifner, Gropp 2005, "Optimization of collective communication operations in
MPICH", IJHPCA 19(1)).

Recursive halving follows the paper's order: the first exchange is with the partner ``p'/2``
away and moves half of the data; each later step halves the distance and the data.  Core rank
``i`` ends with the block range :func:`~clustersim.collectives.plan.fold_targets` gives it
(for reduce-scatter: its own block(s), so no permutation is needed).  Recursive doubling for
allgather runs the same masks in the opposite order.
"""

from __future__ import annotations

from collections.abc import Sequence

from clustersim.collectives.plan import Plan, fold, fold_targets, group_range

__all__ = ["halving_core", "doubling_core", "recursive_doubling_allreduce",
           "rabenseifner_allreduce", "halving_reduce_scatter", "doubling_allgather"]


def _masks_down(p2: int) -> list[int]:
    out, m = [], p2 // 2
    while m >= 1:
        out.append(m)
        m //= 2
    return out


def halving_core(plan: Plan, core: Sequence[int], targets: Sequence[tuple[int, int]]) -> None:
    """Recursive-halving reduce-scatter among ``core`` (power of two) towards ``targets``."""
    n = len(core)
    for m in _masks_down(n):
        trs = []
        for i in range(n):
            j = i ^ m
            lo, hi = group_range(targets, j & ~(m - 1), m)   # what the partner keeps
            trs.append(plan.xfer(core[i], core[j], lo, hi - lo, reduce=True))
        plan.add(trs, label=f"halving reduce-scatter (distance {m})")


def doubling_core(plan: Plan, core: Sequence[int], targets: Sequence[tuple[int, int]]) -> None:
    """Recursive-doubling allgather among ``core``; core rank i starts with ``targets[i]``."""
    n = len(core)
    for m in reversed(_masks_down(n)):
        trs = []
        for i in range(n):
            lo, hi = group_range(targets, i & ~(m - 1), m)   # what i holds so far
            trs.append(plan.xfer(core[i], core[i ^ m], lo, hi - lo))
        plan.add(trs, label=f"doubling allgather (distance {m})")


def _fold_in(plan: Plan, pairs: Sequence[tuple[int, int]]) -> None:
    """Each folded (even) rank adds its whole buffer into its odd partner's."""
    plan.add([plan.xfer(e, o, reduce=True) for e, o in pairs], label="fold extra ranks in")


def _fold_out(plan: Plan, pairs: Sequence[tuple[int, int]], block: bool = False) -> None:
    """The odd partner hands the result back: the whole buffer, or only block ``e``."""
    plan.add([plan.xfer(o, e, e, 1) if block else plan.xfer(o, e) for e, o in pairs],
             label="hand results to folded ranks")


def recursive_doubling_allreduce(plan: Plan, members: Sequence[int] | None = None) -> None:
    """Whole-buffer exchange with partner ``i XOR 2^k``: ``log2 p'`` steps of ``n`` bytes."""
    members = list(range(plan.ranks) if members is None else members)
    core, pairs = fold(members)
    _fold_in(plan, pairs)
    n = len(core)
    m = 1
    while m < n:
        plan.add([plan.xfer(core[i], core[i ^ m], reduce=True) for i in range(n)],
                 label=f"recursive doubling (distance {m})")
        m *= 2
    _fold_out(plan, pairs)


def rabenseifner_allreduce(plan: Plan, members: Sequence[int] | None = None) -> None:
    """Recursive-halving reduce-scatter + recursive-doubling allgather (segments = p').

    ``2 log2 p'`` steps moving ``2 (p'-1)/p' n`` bytes per rank.
    """
    members = list(range(plan.ranks) if members is None else members)
    core, pairs = fold(members)
    if plan.segments != len(core):
        raise ValueError("rabenseifner needs one segment per core rank")
    targets = [(i, i + 1) for i in range(len(core))]
    _fold_in(plan, pairs)
    halving_core(plan, core, targets)
    doubling_core(plan, core, targets)
    _fold_out(plan, pairs)


def halving_reduce_scatter(plan: Plan) -> None:
    """Reduce-scatter by recursive halving; rank r ends with block r (segments = p)."""
    members = list(range(plan.ranks))
    core, pairs = fold(members)
    _fold_in(plan, pairs)                                   # whole buffer, reduced
    halving_core(plan, core, fold_targets(plan.ranks))
    _fold_out(plan, pairs, block=True)                      # block e back to e


def doubling_allgather(plan: Plan) -> None:
    """Allgather by recursive doubling; rank r starts with block r (segments = p)."""
    members = list(range(plan.ranks))
    core, pairs = fold(members)
    plan.add([plan.xfer(e, o, e, 1) for e, o in pairs], label="fold extra ranks in")
    doubling_core(plan, core, fold_targets(plan.ranks))
    _fold_out(plan, pairs)                                  # the whole result back
