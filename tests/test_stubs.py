"""Stub peeling (clustersim/platform/stubs.py) against a plain reference: one node at a time
from a stack, neighbours as Python sets, every link scanned - on random graphs with the
cases that make peeling order-sensitive (whole trees, pairs joined only to each other),
parallel cables, one-way links and self-loops."""

from __future__ import annotations

import random

import numpy as np
import pytest

from clustersim.platform.stubs import neighbours, out_edges, peel_trees


def reference_peel(n: int, edges: list[tuple[int, int, int, int]]):
    out: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
    for u, v, lk, c in edges:
        out[u].append((v, lk, c))
    nbrs: list[set[int]] = [set() for _ in range(n)]
    for u, lst in enumerate(out):
        for v, _, _ in lst:
            nbrs[u].add(v)
            nbrs[v].add(u)
    deg = [len(x) for x in nbrs]
    attach, up, down = [-1] * n, [(-1, 0)] * n, [(-1, 0)] * n
    todo = [u for u in range(n) if deg[u] == 1][::-1]
    while todo:
        u = todo.pop()
        if deg[u] != 1 or attach[u] >= 0:
            continue
        a = next(v for v in nbrs[u] if attach[v] < 0 and v != u)
        if deg[a] <= 1:
            continue
        ups = [(lk, c) for v, lk, c in out[u] if v == a]
        backs = [(lk, c) for v, lk, c in out[a] if v == u]
        if len(ups) != 1 or not backs:
            continue
        attach[u], up[u], down[u] = a, ups[0], backs[0]
        deg[a] -= 1
        if deg[a] == 1:
            todo.append(a)
    return attach, up, down


def random_graph(rng: random.Random) -> tuple[int, list[tuple[int, int, int, int]]]:
    """A small core with cycles, trees hanging off it, a separate tree, a lone pair, and
    now and then a parallel cable or a one-way link; link ids in order of creation."""
    n = rng.randint(6, 40)
    edges: list[tuple[int, int, int, int]] = []

    def link(u: int, v: int, both: bool = True) -> None:
        lk = len(edges)
        c = rng.randint(1, 3)
        edges.append((u, v, lk, c))
        if both:
            edges.append((v, u, lk + 1, c))

    core = max(3, n // 4)
    for u in range(core):  # a ring: every core node on a cycle
        link(u, (u + 1) % core)
    for u in range(core, n):
        parent = rng.randrange(u) if rng.random() < 0.8 else rng.randrange(core)
        if rng.random() < 0.1:  # a one-way link, either way
            link(*((u, parent) if rng.random() < 0.5 else (parent, u)), both=False)
        else:
            link(u, parent)
        if rng.random() < 0.08:
            link(u, parent)  # a parallel cable
    m = n
    for _ in range(rng.randint(0, 2)):  # a separate star, then a pair
        hub = m
        m += 1
        for _ in range(rng.randint(1, 4)):
            link(m, hub)
            m += 1
    link(m, m + 1)
    m += 2
    return m, edges


def shuffled(rng: random.Random, edges: list[tuple[int, int, int, int]]
             ) -> list[tuple[int, int, int, int]]:
    """The same edges in another order, parallel cables of one pair kept in their order
    (the order a builder's adjacency and its edge list may differ in)."""
    keys = {i: rng.random() for i in range(len(edges))}
    first: dict[tuple[int, int], float] = {}
    for i, (u, v, _, _) in enumerate(edges):
        first.setdefault((u, v), keys[i])
    return [edges[i] for i in sorted(range(len(edges)),
                                     key=lambda i: (first[edges[i][:2]], i))]


@pytest.mark.parametrize("seed", range(100))
def test_peel_matches_the_reference(seed):
    rng = random.Random(seed)
    n, edges = random_graph(rng)
    want = reference_peel(n, edges)
    for order in (edges, shuffled(rng, edges)):
        cols = [np.array(c, dtype=np.int64) for c in zip(*order)]
        assert peel_trees(n, out_edges(n, *cols), neighbours(n, cols[0], cols[1])) == want


def test_peel_keeps_the_pair_and_the_last_leaf_of_a_lone_star():
    # a star on its own (no cycle anywhere): all leaves but the last hang off the hub;
    # the hub and its last leaf are then two nodes joined only to each other
    edges = []
    for leaf in (1, 2, 3):
        edges += [(0, leaf, len(edges), 1), (leaf, 0, len(edges) + 1, 1)]
    cols = [np.array(c, dtype=np.int64) for c in zip(*edges)]
    attach, _, _ = peel_trees(4, out_edges(4, *cols), neighbours(4, cols[0], cols[1]))
    assert attach == [-1, 0, 0, -1]
    assert attach == reference_peel(4, edges)[0]
