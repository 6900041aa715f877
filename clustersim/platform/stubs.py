"""Trees that hang off a graph by one node, for the router's stub collapse.

Kept apart from :mod:`clustersim.platform.routing`: what is peeled is a property of the graph
alone, the router only walks what is left.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["OutEdges", "chain", "neighbours", "out_edges", "peel_trees", "tree_route"]


class OutEdges(NamedTuple):
    """Directed edges grouped by tail node, in edge order within a node (CSR as lists):
    node ``u``'s edges are ``head[k], link[k], cost[k]`` for ``k`` in ``ptr[u]:ptr[u+1]``."""

    ptr: list[int]
    head: list[int]
    link: list[int]
    cost: list[int]


def out_edges(n: int, src: np.ndarray, dst: np.ndarray, link: np.ndarray,
              cost: np.ndarray) -> OutEdges:
    """:class:`OutEdges` of the directed edges ``src[i] -> dst[i]`` (a stable sort by tail)."""
    order = np.argsort(src, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    return OutEdges(ptr.tolist(), dst[order].tolist(), link[order].tolist(),
                    cost[order].tolist())


def neighbours(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct neighbours of every node, ignoring direction, as CSR arrays ``(ptr, idx)``
    (neighbours of ``u`` in increasing order)."""
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    pairs = np.unique(lo * n + hi)
    a, b = pairs // n, pairs % n
    other = a != b  # a self-loop makes its node its own neighbour once
    tail = np.concatenate((a, b[other]))
    head = np.concatenate((b, a[other]))
    order = np.lexsort((head, tail))
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(tail, minlength=n), out=ptr[1:])
    return ptr, head[order]


def peel_trees(n: int, out: OutEdges, nbr: tuple[np.ndarray, np.ndarray]
               ) -> tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]]:
    """Per node: its attachment node (-1 in the core), and the (link, cost) of its link up
    to it and of the link down from it.  ``out``: the directed edges; ``nbr``: the distinct
    undirected neighbours (:func:`neighbours`).

    A node with one neighbour left (linked both ways) is a stub of that neighbour, which may
    then become a stub in turn: a GPU of its NVSwitch, the switch of its NIC, the NIC of its
    edge switch - a whole machine hangs off its edge switch, and only the fabric is searched
    (a 100,000-GPU fat-tree: 2,000 switches instead of 27,000 nodes).  Exact: a path that
    leaves such a tree comes back through the same node, so every minimal path between two
    of its nodes stays in it and is the tree path, and every minimal path from it goes
    through its root.  Two nodes joined only to each other stay in the core, and so does a
    node joined to its one neighbour by parallel cables (each cable is a route choice).

    Nodes are peeled one at a time from a stack (node order first), so the result does not
    depend on how the neighbour lists are ordered: an unpeeled node's peeled neighbours all
    hang off it, so a node with one neighbour left has exactly one unpeeled neighbour.
    """
    nptr_a, nidx_a = nbr
    deg = np.diff(nptr_a).tolist()
    nptr = nptr_a.tolist()
    nidx = nidx_a.tolist()
    optr, ohead, olink, ocost = out
    attach = [-1] * n
    up = [(-1, 0)] * n
    down = [(-1, 0)] * n
    # the first link a -> v of each attachment node a, built once per a: scanning a's
    # links again for each of its stubs is quadratic (a KNL node holds 68 cores)
    first_back: dict[int, dict[int, tuple[int, int]]] = {}
    todo = [u for u in range(n) if deg[u] == 1]
    todo.reverse()  # node order first (a stack)
    while todo:
        u = todo.pop()
        if deg[u] != 1 or attach[u] >= 0:
            continue
        first = nptr[u]
        a = nidx[first]  # most stubs (devices, NICs) never had another neighbour
        if nptr[u + 1] - first != 1 or a == u or attach[a] >= 0:
            a = next(v for v in nidx[first:nptr[u + 1]] if attach[v] < 0 and v != u)
        if deg[a] <= 1:  # two nodes joined only to each other
            continue
        k = optr[u]
        if optr[u + 1] - k == 1:  # one link out (the common case), to its neighbour or not
            if ohead[k] != a:
                continue
            upl = (olink[k], ocost[k])
        else:
            ups = [(olink[k], ocost[k]) for k in range(k, optr[u + 1]) if ohead[k] == a]
            if len(ups) != 1:  # parallel cables to its neighbour: a real routing choice
                continue
            upl = ups[0]
        backs = first_back.get(a)
        if backs is None:
            backs = first_back[a] = {}
            for k in range(optr[a], optr[a + 1]):
                v = ohead[k]
                if v not in backs:
                    backs[v] = (olink[k], ocost[k])
        back = backs.get(u)
        if back is None:
            continue
        attach[u] = a
        up[u] = upl
        down[u] = back
        deg[a] -= 1
        if deg[a] == 1:
            todo.append(a)
    return attach, up, down


def tree_route(chains: dict[int, tuple[int, ...]], attach: list[int],
               up: list[tuple[int, int]], down: list[tuple[int, int]], s: int, t: int
               ) -> tuple[int, ...] | None:
    """The route between ``s`` and ``t`` when both hang in one tree (up to their lowest
    common node, then down), else None; ``chains`` memoises each node's chain to its core
    node.  Why apart from :meth:`Router.route`: a 100,000-rank ring asks for 87,500 such
    routes inside machines at once, and the walk without per-call set-up is twice as fast."""
    cs = chains.get(s) or chain(chains, attach, s)
    ct = chains.get(t) or chain(chains, attach, t)
    if s == t or cs[-1] != ct[-1] or (len(cs) == 1 and len(ct) == 1):
        return () if s == t else None
    i, j = len(cs) - 1, len(ct) - 1
    while i > 0 and j > 0 and cs[i - 1] == ct[j - 1]:
        i -= 1
        j -= 1
    return tuple([up[x][0] for x in cs[:i]] + [down[ct[y]][0] for y in range(j - 1, -1, -1)])


def chain(chains: dict[int, tuple[int, ...]], attach: list[int], u: int) -> tuple[int, ...]:
    """``u`` and its attachment nodes up to its core node, memoised in ``chains``."""
    got = chains.get(u)
    if got is None:
        out = [u]
        v = u
        while attach[v] >= 0:
            v = attach[v]
            out.append(v)
        got = chains[u] = tuple(out)
    return got
