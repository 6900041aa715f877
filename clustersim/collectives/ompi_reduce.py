"""Open MPI's reduce algorithms as its ``tuned`` component runs them from the fixed decision.

Why these exist: Open MPI 4.1's reduce table (``coll_tuned_decision_fixed.c``) picks among
seven algorithms, and only the binomial tree had a schedule here; the others were costed as
binomial and labelled ``≈``.  Each is written here from the structure of ``coll_base_reduce.c``
and ``coll_base_topo.c`` (Open MPI v4.1.8), as the fixed decision calls it: with segment size
0 (``reduce_intra_do_this(..., alg, 0, 0, 0)``), so the generic tree reduce moves the whole
buffer per edge - a node receives from all its children, adds, and sends to its parent.

* ``ompi_linear`` (basic_linear): the root receives every other rank's buffer, one blocking
  receive after another from rank p-1 down to 0, and adds each.
* ``ompi_chain`` (chain with fan-out 0, which ``build_chain`` raises to 1, and the pipeline -
  the same chain): ``root <- root+1 <- ... <- root+p-1``, p-1 hops of the whole buffer.
* ``ompi_binary``: ``build_tree(2)``, a level-order binary tree over ranks shifted by the root
  (shifted rank s on level L - levels of 1, 2, 4, ... ranks - has children s+2^L, s+2^(L+1)).
* ``ompi_in_order_binary``: ``build_in_order_bintree``, rooted at rank p-1 (right subtree the
  ranks ``[0, p//2)``, left ``[p//2, p-1)``, recursively); rank p-1 then sends the result to
  the root when they differ.
* ``ompi_rabenseifner`` (redscat_gather): the first ``2*rem`` ranks fold by swapping halves,
  recursive-halving reduce-scatter with distances 1, 2, 4, ... (the lower rank keeps the lower
  half), then a binomial gather of the growing windows to the root.  With fewer elements than
  ``p'`` (the largest power of two <= p) Open MPI falls back to basic_linear, and so does this.
* ``mpich_reduce_scatter_gather``: MPICH's ``reduce_intra_reduce_scatter_gather.c`` - the same
  halving and gather, but the odd rank of a folded pair sends its whole buffer to the even one.

A tree edge runs when its sender's whole subtree is reduced: round ``h`` holds the edges out of
the nodes of height ``h``, so the schedule has the tree's height in rounds.
"""

from __future__ import annotations

from collections.abc import Sequence

from clustersim.collectives.dbt import tree_from_parents
from clustersim.collectives.plan import Plan, pow2_floor
from clustersim.collectives.request import Algo, Request, fill

__all__ = ["binary_tree_parents", "in_order_bintree_parents", "tree_reduce",
           "OMPI_REDUCE_ALGOS"]


def binary_tree_parents(p: int, root: int) -> list[int | None]:
    """Parent of every rank in Open MPI's ``build_tree(fanout=2)`` rooted at ``root``."""
    parent: list[int | None] = [None] * p
    level_start, width = 0, 1       # shifted ranks of a level: [level_start, +width)
    while level_start < p:
        for s in range(level_start, min(p, level_start + width)):
            for i in (1, 2):
                child = s + width * i
                if child < p:
                    parent[(child + root) % p] = (s + root) % p
        level_start += width
        width *= 2
    return parent


def in_order_bintree_parents(p: int) -> list[int | None]:
    """Parent of every rank in Open MPI's in-order binary tree (rooted at rank ``p-1``)."""
    parent: list[int | None] = [None] * p
    todo = [(0, p, None)]           # (first rank, size, parent of the subtree's root)
    while todo:
        lo, size, up = todo.pop()
        if size <= 0:
            continue
        top = lo + size - 1
        parent[top] = up
        right = size >> 1
        todo.append((lo, right, top))                       # ranks [lo, lo + right)
        todo.append((lo + right, size - right - 1, top))    # ranks [lo + right, top)
    return parent


def tree_reduce(plan: Plan, parent: Sequence[int | None], label: str) -> None:
    """Whole-buffer reduce up a tree: round h = the edges out of the nodes of height h."""
    height = tree_from_parents([-1 if u is None else u for u in parent]).height
    rounds: dict[int, list[int]] = {}
    for v, u in enumerate(parent):
        if u is not None:
            rounds.setdefault(height[v], []).append(v)
    for h in sorted(rounds):
        plan.add([plan.xfer(v, parent[v], reduce=True) for v in rounds[h]],
                 label=f"{label} (height {h})")


def _linear(plan: Plan, root: int) -> None:
    # the root's receives are blocking and in rank order p-1, p-2, ..., 0: one at a time
    for r in range(plan.ranks - 1, -1, -1):
        if r != root:
            plan.add([plan.xfer(r, root, reduce=True)], label=f"basic_linear reduce (from {r})")


def _chain(plan: Plan, root: int) -> None:
    p = plan.ranks
    for v in range(p - 1, 0, -1):
        plan.add([plan.xfer((root + v) % p, (root + v - 1) % p, reduce=True)],
                 label=f"chain reduce (hop {p - v})")


def _in_order(plan: Plan, root: int) -> None:
    p = plan.ranks
    tree_reduce(plan, in_order_bintree_parents(p), "in-order binary reduce")
    if root != p - 1:
        plan.add([plan.xfer(p - 1, root)], label="in-order root sends the result to the root")


def _windows(v: int, steps: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Per halving step of core rank ``v``: (the blocks it keeps, the blocks it gives)."""
    lo, hi = 0, 1 << steps
    out = []
    for s in range(steps):
        mid = (lo + hi) // 2
        if v < v ^ (1 << s):        # the lower rank of the pair keeps the lower half
            keep, give = (lo, mid), (mid, hi)
        else:
            keep, give = (mid, hi), (lo, mid)
        out.append((keep, give))
        lo, hi = keep
    return out


def _rabenseifner(plan: Plan, root: int, whole_fold: bool = False) -> None:
    p = plan.ranks
    p2 = plan.segments
    steps = p2.bit_length() - 1
    rem = p - p2
    half = p2 // 2

    def actual(v: int) -> int:
        return 2 * v if v < rem else v + rem

    if whole_fold:                  # MPICH: the odd rank sends its whole buffer
        plan.add([plan.xfer(2 * i + 1, 2 * i, reduce=True) for i in range(rem)],
                 label="fold: odd rank sends its buffer")
    else:                           # Open MPI: swap halves, then the odd half comes back
        plan.add([t for i in range(rem) for t in
                  (plan.xfer(2 * i + 1, 2 * i, 0, half, reduce=True),
                   plan.xfer(2 * i, 2 * i + 1, half, p2 - half, reduce=True))],
                 label="fold: swap halves")
        plan.add([plan.xfer(2 * i + 1, 2 * i, half, p2 - half) for i in range(rem)],
                 label="fold: odd rank returns its reduced half")
    win = [_windows(v, steps) for v in range(p2)]
    for s in range(steps):
        plan.add([plan.xfer(actual(v), actual(v ^ (1 << s)), win[v][s][1][0],
                            win[v][s][1][1] - win[v][s][1][0], reduce=True)
                  for v in range(p2)], label=f"halving reduce-scatter (distance {1 << s})")
    stand_in = {}                   # core rank -> the rank that gathers in its place
    if root < 2 * rem and root % 2:
        vroot = 0
        k0 = win[0][steps - 1][0]
        plan.add([plan.xfer(actual(0), root, k0[0], k0[1] - k0[0])],
                 label="core rank 0 hands its block to the root")
        stand_in[0] = root
    else:
        vroot = root // 2 if root < 2 * rem else root - rem
    active = list(range(p2))        # core ranks that have not sent their window yet
    for s in range(steps - 1, -1, -1):
        trs, stay = [], []
        for v in active:
            u = v ^ (1 << s)
            if u >> s == vroot >> s:    # the partner is in the root's half: send, then done
                k = win[v][s][0]
                trs.append(plan.xfer(stand_in.get(v, actual(v)), stand_in.get(u, actual(u)),
                                     k[0], k[1] - k[0]))
            else:
                stay.append(v)
        active = stay
        plan.add(trs, label=f"binomial gather (distance {1 << s})")


def _rabenseifner_build(req: Request) -> Plan:
    p2 = pow2_floor(req.ranks)
    elem = 2 if req.fp16 else 4
    if p2 < 2 or req.nbytes / elem < p2:     # coll_base_reduce.c: basic_linear then
        plan = fill(req, 1, lambda pl: _linear(pl, req.root))
        plan.meta["fallback"] = "basic_linear"
        return plan
    return fill(req, p2, lambda pl: _rabenseifner(pl, req.root))


def _mpich_rsg_build(req: Request) -> Plan:
    # MPICH's selector only picks it with count >= pof2 (reduce_intra_reduce_scatter_gather.c)
    return fill(req, pow2_floor(req.ranks),
                lambda pl: _rabenseifner(pl, req.root, whole_fold=True))


OMPI_REDUCE_ALGOS: dict[str, Algo] = {
    "ompi_linear": Algo(lambda r: fill(r, 1, lambda pl: _linear(pl, r.root)),
                        "Open MPI basic_linear: the root receives the buffers one by one",
                        uses_root=True),
    "ompi_chain": Algo(lambda r: fill(r, 1, lambda pl: _chain(pl, r.root)),
                       "Open MPI chain/pipeline, unsegmented: p-1 hops of the whole buffer",
                       uses_root=True),
    "ompi_binary": Algo(
        lambda r: fill(r, 1, lambda pl: tree_reduce(
            pl, binary_tree_parents(r.ranks, r.root), "binary reduce")),
        "Open MPI binary tree (level order, shifted by the root), unsegmented",
        uses_root=True),
    "ompi_in_order_binary": Algo(lambda r: fill(r, 1, lambda pl: _in_order(pl, r.root)),
                                 "Open MPI in-order binary tree rooted at p-1, then the "
                                 "result to the root", uses_root=True),
    "ompi_rabenseifner": Algo(_rabenseifner_build,
                              "Open MPI redscat_gather: fold, recursive-halving "
                              "reduce-scatter, binomial gather to the root", uses_root=True),
    "mpich_reduce_scatter_gather": Algo(
        _mpich_rsg_build, "MPICH reduce_scatter_gather: odd ranks fold their whole buffer in, "
        "recursive-halving reduce-scatter, binomial gather to the root", uses_root=True),
}
