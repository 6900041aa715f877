"""Double binary tree allreduce, pipelined, as NCCL does it across nodes.

Idea (Sanders, Speck, Träff 2009, "Two-tree algorithms for full bandwidth broadcast, reduction
and scan", Parallel Computing 35(12); adopted by NCCL 2.4): two binary trees over the same
ranks, each carrying half of the buffer, built so that a rank that is an inner node in one
tree is a leaf in the other.  Every rank then sends and receives about the same amount in both
halves together and the pair reaches full bandwidth, while the depth stays ``log2 p``.

Tree shape (our own construction of the layout NCCL uses): rank 0 is the root and has one
child; ranks ``1..p-1`` form an in-order binary tree in which the root of any contiguous range
is the member with the most trailing zero bits.  Odd ranks are then exactly the leaves.  The
second tree is the mirror image ``r -> p-1-r`` when p is even (odd <-> even, so leaves and
inner nodes swap) and the shift ``r -> r+1 mod p`` when p is odd (NCCL's choice, since the
mirror would map odd to odd).

Pipelining: each tree's half is cut into ``C`` chunks.  Chunk ``c`` leaves a node of height
``h`` (leaves 0) towards its parent at step ``c + h`` - after all its children's parts have
arrived and been added - and the broadcast back down leaves a node at depth ``d`` at step
``c + H + d`` (``H`` the tree height).  Both trees, up and down, run at the same time on
opposite link directions.  Time on a crossbar, steady state: four flows share each rank's
link (parent, two children and the other tree) so a step takes ``alpha + 4 (n/2C)/B``; the
whole takes about ``(C + 2H - 1)`` steps, i.e. ``2n/B`` plus ``2H-1`` pipeline fill steps -
bandwidth-optimal like the ring but with ``log p`` instead of ``p`` latency terms.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustersim.collectives.pipeline import Stream, pipeline
from clustersim.collectives.plan import Plan

__all__ = ["BinaryTree", "inorder_tree", "double_binary_tree", "dbt_allreduce",
           "tree_from_parents"]


@dataclass(frozen=True)
class BinaryTree:
    """``parent[r]`` (-1 for the root), per-rank ``height`` (leaves 0) and ``depth``."""

    parent: tuple[int, ...]
    height: tuple[int, ...]
    depth: tuple[int, ...]

    @property
    def root(self) -> int:
        return self.parent.index(-1)

    def children(self, r: int) -> list[int]:
        return [c for c, par in enumerate(self.parent) if par == r]


def _range_root(lo: int, hi: int) -> int:
    """Member of ``[lo, hi]`` with the most trailing zeros (largest power-of-two multiple)."""
    for b in range(hi.bit_length(), -1, -1):
        x = (hi >> b) << b
        if x >= lo:
            return x
    return lo


def inorder_tree(p: int) -> list[int]:
    """Parent of each position 0..p-1 in the tree layout described in the module docstring."""
    parent = [-1] * p
    if p < 2:
        return parent
    stack = [(1, p - 1, 0)]                    # (lo, hi, parent position)
    while stack:
        lo, hi, par = stack.pop()
        if lo > hi:
            continue
        r = _range_root(lo, hi)
        parent[r] = par
        stack.append((lo, r - 1, r))
        stack.append((r + 1, hi, r))
    return parent


def tree_from_parents(parent: list[int]) -> BinaryTree:
    """The tree of ``parent`` (-1 for the root) with every rank's height and depth."""
    p = len(parent)
    depth = [0] * p
    # depth by walking up (depth <= log2 p, so this is cheap)
    for r in range(p):
        d, x = 0, r
        while parent[x] >= 0:
            x = parent[x]
            d += 1
        depth[r] = d
    height = [0] * p
    order = sorted(range(p), key=lambda r: -depth[r])
    for r in order:
        par = parent[r]
        if par >= 0:
            height[par] = max(height[par], height[r] + 1)
    return BinaryTree(tuple(parent), tuple(height), tuple(depth))


def double_binary_tree(p: int) -> tuple[BinaryTree, BinaryTree]:
    """The two complementary trees over ranks ``0..p-1``."""
    pos_parent = inorder_tree(p)
    t0 = list(pos_parent)
    rank_of = [(p - 1 - x) if p % 2 == 0 else (x + 1) % p for x in range(p)]
    t1 = [-1] * p
    for x, par in enumerate(pos_parent):
        t1[rank_of[x]] = rank_of[par] if par >= 0 else -1
    return tree_from_parents(t0), tree_from_parents(t1)


def dbt_allreduce(plan: Plan, chunks: int) -> None:
    """Pipelined double-binary-tree allreduce (segments = 2 * chunks: tree t owns
    segments ``[t*C, (t+1)*C)``)."""
    p = plan.ranks
    if p < 2:
        return
    streams: list[Stream] = []
    for t, tree in enumerate(double_binary_tree(p)):
        base = t * chunks
        top = tree.height[tree.root]
        for r in range(p):
            par = tree.parent[r]
            if par >= 0:
                streams.append(Stream(r, par, tree.height[r], base, True))
        for r in range(p):
            par = tree.parent[r]
            if par >= 0:
                streams.append(Stream(par, r, top + tree.depth[par], base, False))
    pipeline(plan, streams, chunks, "double binary tree")
