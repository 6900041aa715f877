"""Deterministic minimal-cost routing with ECMP, fast enough for thousands of ranks.

Semantics (what a route *is*):

* A route from ``s`` to ``t`` is a minimal-cost path; every link costs its integer ``cost``
  (1 unless a builder says otherwise - dragonfly global links cost more so that minimal routes
  take one global hop, as Aries minimal routing does).  With unit costs this is shortest-hop.
* When several next hops lie on minimal paths (ECMP), the one taken at node ``u`` is
  ``candidates[mix(mix(s, t), u) % len(candidates)]`` with candidates in node order.  The
  ``(s, t)`` part is the flow hash a switch computes from a packet's 5-tuple; mixing in ``u``
  gives every switch its own hash seed.  Without it every switch would use the same residue and
  the choices would correlate ("hash polarisation"): in a k-ary fat-tree only k/2 of the
  (k/2)^2 core switches would ever carry traffic.
* Everything is integer arithmetic on node indices, so routes are identical across processes
  (Python's salted ``hash()`` is never used).  Other policies (a seeded hash, d-mod-k,
  Valiant, UGAL) live in :mod:`clustersim.platform.policies`; they reuse this walk.

How it is fast (a walk needs, at each node, which neighbours are one step nearer to ``t``):

* *Stub collapse.*  A node with exactly one neighbour (a device on its switch, a GPU under its
  PCIe switch) can never be in the middle of a minimal path, so a route from a stub is its
  uplink followed by a route from its attachment node; peeled again and again, whole trees
  (a machine hanging off its edge switch) collapse.  Only the *core* graph (switches,
  routers, ...) is searched.
* *Local balls.*  Distances to ``t`` are first grown breadth-first from ``t`` in Python, one
  level at a time, only until the source is reached and only within a small work budget.  A
  ball of radius ``r = dist(s, t)`` holds every node nearer than ``s``, which is all a minimal
  walk from ``s`` can visit, so neighbour traffic (rings, tori, NVLink peers) never searches
  the whole graph.
* *Full searches in C.*  Past the budget, distances from every core node to ``t`` come from a
  breadth-first search of the reversed core graph, a cost-``c`` link expanded into ``c`` unit
  steps (:mod:`clustersim.platform.searches`: scipy on large graphs, plain Python up to
  ``PY_SEARCH_EDGES`` edges - a KNL chassis, DGX nodes - where scipy's import costs more,
  and on larger ones until their searches have cost about that import, ``PY_SEARCH_WORK``).
* *Candidate cache.*  The minimal next hops of ``(node, destination)`` are computed once (a
  vectorised comparison over the node's neighbours) and reused by every route through it.
  (A full next-hop table per destination was tried: it only pays off for all-to-all traffic
  and costs ten times the memory.)
* *Twins.*  Nodes with identical neighbours and costs (the edge switches of a fat-tree pod, the
  leaves of a leaf-spine, the PCIe switches of one socket) are equally far from every other
  node, so one search and one set of cached candidates serve the whole class.  Only a hop next
  to the pair itself differs, and that one is computed from the representative's distances.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import numpy as np

from clustersim.platform.coregraph import edge_columns, find_twins, reverse_expanded
from clustersim.platform.searches import bfs_c, bfs_py, reverse_matrix
from clustersim.platform.stubs import chain, neighbours, out_edges, peel_trees, tree_route

__all__ = ["Router", "NoRoute", "mix"]

Route = tuple[int, ...]
#: a routing policy's choice of next hop: ``pick(node, ((core id, link), ...)) -> index``
Pick = Callable[[int, tuple[tuple[int, int], ...]], int]

#: Neighbour scans allowed when growing a local ball before falling back to a full search in
#: C (which costs about as much as this many Python steps on a ~1,000-switch core).
BALL_BUDGET = 256

#: Expanded graphs up to this many (reversed) edges are searched in plain Python: a search
#: costs well under a millisecond there, and scipy (imported on the first search of a larger
#: graph) costs ~0.2 s to import - more than all searches of a KNL or DGX platform together.
PY_SEARCH_EDGES = 4096

#: Larger graphs are searched in Python too until this many edges have been scanned (~0.2 s,
#: what importing scipy costs) unless scipy is loaded already: a 100,000-GPU fat-tree's ring
#: needs 32 searches of 64,000 edges (~0.06 s in Python), and its command would otherwise
#: spend more on the import than on every search; past the budget the searches pay for it.
PY_SEARCH_WORK = 5_000_000

#: Cache caps: distance vectors (int32 entries) are evicted oldest first past this, and the
#: per-node candidate cache is dropped wholesale past its cap, so all-pairs traffic on a large
#: direct network cannot exhaust memory (it gets slower instead).
DIST_CACHE_ENTRIES = 1 << 25
CAND_CACHE_ENTRIES = 1 << 21
BALL_CACHE_COUNT = 1 << 16


def _scipy_loaded() -> bool:
    """Whether scipy's graph searches are imported already (then they cost nothing more)."""
    return "scipy.sparse.csgraph" in sys.modules


def mix(a: int, b: int) -> int:
    """A small deterministic integer hash of two integers (a 32-bit finaliser)."""
    x = (a * 0x9E3779B1 + b * 0x85EBCA77 + 0x165667B1) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
    x ^= x >> 12
    return x


class NoRoute(Exception):
    """Raised when the destination cannot be reached from the source."""


class _Ball:
    """Exact distances to one destination for every node within ``radius`` (expanded graph)."""

    __slots__ = ("dist", "frontier", "radius", "work")

    def __init__(self, t: int) -> None:
        self.dist: dict[int, int] = {t: 0}
        self.frontier: list[int] = [t]
        self.radius = 0
        self.work = 0


class Router:
    """Routes between integer node ids of a directed graph with integer link costs.

    ``edges`` holds ``(u, v, link_id, cost)`` for each directed edge; link ids are opaque
    (half-duplex links repeat an id).  Node ids order the ECMP candidates.
    """

    def __init__(self, num_nodes: int,
                 edges: Sequence[tuple[int, int, int, int]] | tuple[np.ndarray, ...]) -> None:
        """``edges``: ``(u, v, link, cost)`` tuples, or the four columns as integer arrays
        (what a platform passes: 628,000 edges of a 100,000-GPU fat-tree are grouped by node
        with array operations, not appended one by one)."""
        n = num_nodes
        src, dst, link, cost = edge_columns(edges)
        # stubs: trees hanging off the rest of the graph by one node (peel_trees)
        out = out_edges(n, src, dst, link, cost)
        self._nbr = neighbours(n, src, dst)
        self._attach, self._up, self._down = peel_trees(n, out, self._nbr)
        attach = self._attach
        core = [u for u in range(n) if attach[u] < 0]
        self._core = core
        cid = [-1] * n
        for i, u in enumerate(core):
            cid[u] = i
        self._cid = cid
        self._ncore = len(core)
        # core adjacency in node order, as lists (balls, twins) and arrays (candidates)
        optr, ohead, olink, ocost = out
        self._adj_list: list[list[tuple[int, int, int]]] = [
            sorted((cid[ohead[k]], olink[k], ocost[k]) for k in range(optr[u], optr[u + 1])
                   if attach[ohead[k]] < 0) for u in core]
        self._adj = [tuple(np.array([e[i] for e in lst], dtype=np.int64) for i in range(3))
                     for lst in self._adj_list]
        self._nexp, self._radj, self._nredges = reverse_expanded(self._adj_list, self._ncore)
        self._rev = None  # the same graph as a scipy matrix, built on the first C search
        self._py_work = 0  # edges scanned by Python searches of this graph (PY_SEARCH_WORK)
        self._twin, self._twin_in = find_twins(self._adj_list, self._ncore)
        self._dists: dict[int, np.ndarray] = {}
        self._dist_entries = 0
        self._balls: dict[int, _Ball] = {}
        self._cand: dict[int, tuple[tuple[int, int], ...]] = {}
        self._pair_dist: dict[int, int] = {}
        self._chains: dict[int, tuple[int, ...]] = {}
        self._pos = np.empty(self._nexp, dtype=np.int64)
        self._arange = np.arange(self._nexp, dtype=np.int64)
        self.searches = 0  # full breadth-first searches run (benchmarks and tests read it)

    # -- construction ------------------------------------------------------------------
    def _chain(self, u: int) -> tuple[int, ...]:
        """``u`` and its attachment nodes up to its core node (``u`` alone when in the core)."""
        return chain(self._chains, self._attach, u)

    # -- public ------------------------------------------------------------------------
    @property
    def num_core(self) -> int:
        """Nodes left after collapsing stubs (the graph that is actually searched)."""
        return self._ncore

    def route(self, s: int, t: int, seed: int = 0, pick: Pick | None = None) -> Route:
        """Link ids of the deterministic ECMP route from node ``s`` to node ``t``.

        ``seed`` is mixed into the flow hash (0: the hash as it always was); ``pick``, when
        given, replaces the hash: ``pick(node, candidates)`` returns the index of the next hop
        among the ``(core id, link)`` candidates (:mod:`clustersim.platform.policies`)."""
        if s == t:
            return ()
        attach = self._attach
        h = mix(s, t)
        if seed:
            h = mix(h, seed)
        if attach[s] < 0 and attach[t] < 0:
            return tuple(self._core_walk(self._cid[s], self._cid[t], h, pick))
        cs, ct = self._chain(s), self._chain(t)
        up = self._up
        down = self._down
        if cs[-1] == ct[-1]:  # one tree: up to the lowest common node, then down
            i, j = len(cs) - 1, len(ct) - 1
            while i > 0 and j > 0 and cs[i - 1] == ct[j - 1]:
                i -= 1
                j -= 1
            return (*(up[x][0] for x in cs[:i]), *(down[x][0] for x in reversed(ct[:j])))
        return (*(up[x][0] for x in cs[:-1]),
                *self._core_walk(self._cid[cs[-1]], self._cid[ct[-1]], h, pick),
                *(down[x][0] for x in reversed(ct[:-1])))

    def tree_route(self, s: int, t: int) -> Route | None:
        """:meth:`route` when ``s`` and ``t`` hang in one stub tree, else None (any policy)."""
        return tree_route(self._chains, self._attach, self._up, self._down, s, t)

    def distance(self, s: int, t: int) -> int:
        """Minimal route cost from ``s`` to ``t`` (``-1`` when unreachable)."""
        if s == t:
            return 0
        cs, ct = self._chain(s), self._chain(t)
        up = self._up
        down = self._down
        if cs[-1] == ct[-1]:
            i, j = len(cs) - 1, len(ct) - 1
            while i > 0 and j > 0 and cs[i - 1] == ct[j - 1]:
                i -= 1
                j -= 1
            return sum(up[x][1] for x in cs[:i]) + sum(down[x][1] for x in ct[:j])
        extra = sum(up[x][1] for x in cs[:-1]) + sum(down[x][1] for x in ct[:-1])
        c = self._cid[ct[-1]]
        d = self._dist(self._dist_vec(self._twin[c]), self._cid[cs[-1]], c)
        return d + extra if d >= 0 else -1

    # -- distances ---------------------------------------------------------------------
    def _bfs(self, ct: int) -> np.ndarray:
        """Distance of every core node to ``ct`` (-1: unreachable): in plain Python on small
        graphs and for a large one's first searches (:data:`PY_SEARCH_WORK`), by a BFS in C
        (scipy) after that - the same distances either way."""
        self.searches += 1
        if self._nredges <= PY_SEARCH_EDGES or (
                self._rev is None and not _scipy_loaded() and self._py_work < PY_SEARCH_WORK):
            self._py_work += self._nredges
            return bfs_py(self._radj, self._nexp, self._ncore, ct)
        if self._rev is None:
            self._rev = reverse_matrix(self._radj, self._nexp)
        return bfs_c(self._rev, ct, self._pos, self._arange, self._ncore)

    def _dist_vec(self, rep: int) -> np.ndarray:
        """Distances to ``rep`` (a twin representative), searched once and cached."""
        d = self._dists.get(rep)
        if d is None:
            d = self._bfs(rep)
            while self._dists and self._dist_entries + d.size > DIST_CACHE_ENTRIES:
                self._dist_entries -= self._dists.pop(next(iter(self._dists))).size
            self._dists[rep] = d
            self._dist_entries += d.size
            self._balls.pop(rep, None)
        return d

    def _dist(self, d: np.ndarray, u: int, ct: int) -> int:
        """Distance of ``u`` to ``ct`` given ``d``, the distances to ``ct``'s representative."""
        if u == ct:
            return 0
        rep = self._twin[ct]
        if u != rep or rep == ct:
            return int(d[u])
        # the representative's own distance to its twin: leave through a shared neighbour
        pd = self._pair_dist.get(ct)
        if pd is None:
            best = [int(d[v]) + c for v, _, c in self._adj_list[rep] if d[v] >= 0]
            pd = self._pair_dist[ct] = min(best) if best else -1
        return pd

    def _ball(self, ct: int, cs: int) -> _Ball | None:
        """A ball around ``ct`` reaching ``cs``, or None when that exceeds the budget."""
        ball = self._balls.get(ct)
        if ball is None:
            if len(self._balls) >= BALL_CACHE_COUNT:
                self._balls.clear()
            ball = self._balls[ct] = _Ball(ct)
        dist = ball.dist
        radj = self._radj
        while cs not in dist:
            if not ball.frontier:
                raise NoRoute
            work = sum(len(radj[x]) for x in ball.frontier)
            if ball.work + work > BALL_BUDGET:
                return None
            ball.work += work
            ball.radius += 1
            r = ball.radius
            nxt = []
            for x in ball.frontier:
                for y in radj[x]:
                    if y not in dist:
                        dist[y] = r
                        nxt.append(y)
            ball.frontier = nxt
        return ball

    # -- the walk ----------------------------------------------------------------------
    def _core_walk(self, cs: int, ct: int, h: int, pick: Pick | None) -> list[int]:
        rep = self._twin[ct]
        d = self._dists.get(rep)
        if d is None:
            ball = self._ball(ct, cs)
            if ball is not None:
                return self._ball_walk(ball, cs, ct, h, pick)
            d = self._dist_vec(rep)
            self._balls.pop(ct, None)
        if self._dist(d, cs, ct) < 0:
            raise NoRoute
        near = self._twin_in.get(rep, ()) if rep != ct else ()
        n = self._ncore
        core, cache, adj = self._core, self._cand, self._adj
        links: list[int] = []
        u = cs
        while u != ct:
            if u == rep or u in near:  # next to a twin pair: rep's distances need a patch
                cands = self._twin_candidates(d, u, ct)
            else:
                cands = cache.get(rep * n + u)
                if cands is None:
                    nb, lk, cost = adj[u]
                    dn = d[nb]
                    m = (dn >= 0) & (dn + cost == d[u])
                    cands = tuple(zip(nb[m].tolist(), lk[m].tolist()))
                    self._remember(rep * n + u, cands)
            if len(cands) == 1:
                u, lk_id = cands[0]
            elif pick is None:
                u, lk_id = cands[mix(h, core[u]) % len(cands)]
            else:
                u, lk_id = cands[pick(core[u], cands)]
            links.append(lk_id)
        return links

    def _twin_candidates(self, d: np.ndarray, u: int, ct: int) -> tuple[tuple[int, int], ...]:
        key = ct * self._ncore + u
        cands = self._cand.get(key)
        if cands is None:
            rep = self._twin[ct]
            nb, lk, cost = self._adj[u]
            dn = d[nb]
            dn[nb == ct] = 0  # fancy indexing copied: patching is safe
            if rep != ct:
                dn[nb == rep] = self._dist(d, rep, ct)
            m = (dn >= 0) & (dn + cost == self._dist(d, u, ct))
            cands = tuple(zip(nb[m].tolist(), lk[m].tolist()))
            self._remember(key, cands)
        return cands

    def _ball_walk(self, ball: _Ball, cs: int, ct: int, h: int, pick: Pick | None
                   ) -> list[int]:
        bd = ball.dist
        core = self._core
        links: list[int] = []
        u = cs
        while u != ct:
            key = ct * self._ncore + u
            cands = self._cand.get(key)
            if cands is None:
                du = bd[u]
                cands = tuple((v, lk) for v, lk, c in self._adj_list[u]
                              if (dv := bd.get(v, -1)) >= 0 and dv + c == du)
                self._remember(key, cands)
            if len(cands) == 1:
                u, lk = cands[0]
            elif pick is None:
                u, lk = cands[mix(h, core[u]) % len(cands)]
            else:
                u, lk = cands[pick(core[u], cands)]
            links.append(lk)
        return links

    def _remember(self, key: int, cands: tuple[tuple[int, int], ...]) -> None:
        if len(self._cand) >= CAND_CACHE_ENTRIES:
            self._cand.clear()
        self._cand[key] = cands
