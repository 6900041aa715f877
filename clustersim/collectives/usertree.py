"""User-given allreduce trees, and Theano-MPI's ``copper`` tree.

A tree is a list of *stages*, each a list of ``(src, dst)`` pairs that run concurrently; every
pair moves the whole buffer.  The user does not say which pairs add and which copy: that is
inferred from what each rank holds.  Each rank starts with its own contribution; a pair whose
sender and receiver hold disjoint sets of contributions is a *reduce* (the receiver adds), a
pair whose sender holds a strict superset of the receiver's is a *copy*; anything else would
count a contribution twice and is refused, as is a tree that leaves some rank without the full
sum.  So ``[[(1, 0), (3, 2)], [(0, 2), (2, 0)], [(0, 1), (2, 3)]]`` is recognised as reduce,
exchange-and-reduce, copy - Theano-MPI's copper tree for 4 GPUs.

Copper (Ma, Mao, Taylor 2016, arXiv 1605.08325; ``Exch_copper`` in uoguelph-mlrg/Theano-MPI)
was fitted by hand to a two-socket K80 node: GPUs pair up on a PCIe switch (1->0, 3->2, ...),
the pairs of one socket reduce towards one GPU, the two sockets' GPUs exchange once across
QPI, and the result flows back the same way.  :func:`copper_tree` generates it for 2, 4, 8
(and any power of two) GPUs; for 2, 4 and 8 it equals the published code's steps.
"""

from __future__ import annotations

from clustersim.collectives.plan import Plan
from clustersim.errors import InputError

__all__ = ["Tree", "copper_tree", "tree_allreduce", "parse_tree"]

Tree = list[list[tuple[int, int]]]


def copper_tree(p: int) -> Tree:
    """Theano-MPI's copper tree for ``p`` (a power of two >= 2) GPUs split over two sockets."""
    if p < 2 or p & (p - 1):
        raise InputError(f"the copper tree is defined for 2, 4, 8, ... GPUs, not {p}; "
                         "pass your own tree (algorithm 'user_tree')", path=("ranks",))
    if p == 2:
        return [[(0, 1), (1, 0)]]
    half = p // 2
    evens = half // 2                            # even GPUs per socket
    pairs_in = [(r + 1, r) for r in range(0, p, 2)]
    socket_up: Tree = []
    d = 1
    while d < evens:                             # binomial reduce towards the last even GPU
        stage = []
        for base in (0, half):
            for i in range(evens):
                if (i + 1) % (2 * d) == d:
                    stage.append((base + 2 * i, base + 2 * (i + d)))
        socket_up.append(stage)
        d *= 2
    a, b = half - 2, p - 2                       # the two sockets' leaders
    tree: Tree = [pairs_in, *socket_up, [(a, b), (b, a)]]
    tree += [[(dst, src) for src, dst in stage] for stage in reversed(socket_up)]
    tree.append([(r, r + 1) for r in range(0, p, 2)])
    return tree


def parse_tree(raw: object, ranks: int) -> Tree:
    """Check the shape of a user tree: stages of ``(src, dst)`` rank pairs."""
    if not isinstance(raw, (list, tuple)) or not raw:
        raise InputError("tree must be a non-empty list of stages, each a list of "
                         "[src, dst] pairs", path=("tree",))
    out: Tree = []
    for si, stage in enumerate(raw):
        if not isinstance(stage, (list, tuple)) or not stage:
            raise InputError("each stage must be a non-empty list of [src, dst] pairs",
                             path=("tree", si))
        pairs = []
        for k, pair in enumerate(stage):
            ok = (isinstance(pair, (list, tuple)) and len(pair) == 2
                  and all(isinstance(x, int) and not isinstance(x, bool) for x in pair))
            if not ok:
                raise InputError(f"expected a [src, dst] pair of ranks, got {pair!r}",
                                 path=("tree", si, k))
            s, d = pair
            if not (0 <= s < ranks and 0 <= d < ranks) or s == d:
                raise InputError(f"pair {[s, d]} must name two different ranks in "
                                 f"0..{ranks - 1}", path=("tree", si, k))
            pairs.append((s, d))
        out.append(pairs)
    return out


def tree_allreduce(plan: Plan, tree: Tree) -> None:
    """Turn stages into steps, inferring reduce/copy and checking the tree sums correctly."""
    p = plan.ranks
    have = [1 << r for r in range(p)]
    full = (1 << p) - 1
    for si, stage in enumerate(tree):
        new = list(have)
        copied: set[int] = set()
        reduced: set[int] = set()
        trs = []
        for k, (s, d) in enumerate(stage):
            src, dst = have[s], have[d]
            if src & dst == 0:
                if d in copied:
                    raise InputError(f"rank {d} is overwritten and also receives other data in "
                                     "the same stage", path=("tree", si, k))
                if src & (new[d] & ~dst):
                    raise InputError(f"rank {d} would receive overlapping contributions in "
                                     "one stage", path=("tree", si, k))
                new[d] |= src
                reduced.add(d)
                trs.append(plan.xfer(s, d, reduce=True))
            elif dst & ~src == 0 and src != dst:
                if d in copied or d in reduced:
                    raise InputError(f"rank {d} is overwritten and also receives other data in "
                                     "the same stage", path=("tree", si, k))
                new[d] = src
                copied.add(d)
                trs.append(plan.xfer(s, d))
            else:
                raise InputError(
                    f"pair {[s, d]} would count contributions twice (rank {s} holds "
                    f"{_ranks(src)}, rank {d} holds {_ranks(dst)}): a pair must either add "
                    "disjoint parts or copy a strict superset", path=("tree", si, k))
        have = new
        plan.add(trs, label=f"tree stage {si + 1}")
    for r, h in enumerate(have):
        if h != full:
            missing = _ranks(full & ~h)
            raise InputError(f"the tree does not complete the allreduce: rank {r} lacks the "
                             f"contributions of ranks {missing}", path=("tree",))


def _ranks(mask: int) -> list[int]:
    return [r for r in range(mask.bit_length()) if mask >> r & 1]

