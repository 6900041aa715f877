"""Trees that hang off a graph by one node, for the router's stub collapse.

Kept apart from :mod:`clustersim.platform.routing`: what is peeled is a property of the graph
alone, the router only walks what is left.
"""

from __future__ import annotations

__all__ = ["chain", "peel_trees", "tree_route"]


def peel_trees(n: int, out: list[list[tuple[int, int, int]]]
               ) -> tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]]:
    """Per node: its attachment node (-1 in the core), and the (link, cost) of its link up
    to it and of the link down from it.

    A node with one neighbour left (linked both ways) is a stub of that neighbour, which may
    then become a stub in turn: a GPU of its NVSwitch, the switch of its NIC, the NIC of its
    edge switch - a whole machine hangs off its edge switch, and only the fabric is searched
    (a 100,000-GPU fat-tree: 2,000 switches instead of 27,000 nodes).  Exact: a path that
    leaves such a tree comes back through the same node, so every minimal path between two
    of its nodes stays in it and is the tree path, and every minimal path from it goes
    through its root.  Two nodes joined only to each other stay in the core, and so does a
    node joined to its one neighbour by parallel cables (each cable is a route choice).
    """
    nbrs: list[set[int]] = [set() for _ in range(n)]
    for u, lst in enumerate(out):
        for v, _, _ in lst:
            nbrs[u].add(v)
            nbrs[v].add(u)
    deg = [len(x) for x in nbrs]
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
        a = next(v for v in nbrs[u] if attach[v] < 0 and v != u)
        if deg[a] <= 1:  # two nodes joined only to each other
            continue
        ups = [(lk, c) for v, lk, c in out[u] if v == a]
        if len(ups) != 1:  # parallel cables to its neighbour: a real routing choice, keep it
            continue
        upl = ups[0]
        backs = first_back.get(a)
        if backs is None:
            backs = first_back[a] = {}
            for v, lk, c in out[a]:
                if v not in backs:
                    backs[v] = (lk, c)
        back = backs.get(u)
        if upl is None or back is None:
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
