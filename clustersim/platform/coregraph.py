"""The router's core graph, built once per platform: the edge list as columns, the reversed
graph with costly links expanded into unit steps (what the breadth-first searches walk), and
the classes of twin nodes (identical neighbours: one search serves them all).

Kept apart from :mod:`clustersim.platform.routing`, which decides how routes are walked and
cached: these are pure functions of the graph.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["edge_columns", "reverse_expanded", "find_twins"]


def edge_columns(edges: Sequence[tuple[int, int, int, int]] | tuple[np.ndarray, ...]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(u, v, link, cost)`` as four int64 columns; a cost must be a positive integer."""
    if isinstance(edges, tuple) and len(edges) == 4 and isinstance(edges[0], np.ndarray):
        cols = [np.asarray(c) for c in edges]
    else:
        table = np.asarray(list(edges), dtype=object).reshape(-1, 4)
        cols = [table[:, i] for i in range(4)]
    cost = cols[3]
    if cost.dtype.kind not in "iu" or (cost.size and cost.min() < 1):
        for c in cost.tolist():
            if int(c) != c or int(c) < 1:
                raise ValueError(f"link cost must be a positive integer, got {c!r}")
    return tuple(np.asarray(c, dtype=np.int64) for c in cols)  # type: ignore[return-value]


def reverse_expanded(adj_list: list[list[tuple[int, int, int]]], ncore: int
                     ) -> tuple[int, list[list[int]], int]:
    """Reversed core graph ``(nodes, adjacency lists, edges)``; a cost-c edge becomes c unit
    steps through virtual nodes (numbered from ``ncore``).

    The virtual chain hangs off the edge's head ``v`` and is shared by every costly edge
    into ``v`` (``v -> x1 -> ... -> x_{c-1} -> u``): the ``x`` are reachable only from ``v``,
    so no false shortcut appears, and a dragonfly gets 2 virtual nodes per router instead
    of 2 per global cable.
    """
    rows: list[int] = []
    cols: list[int] = []
    chain: dict[int, list[int]] = {}
    nvirt = ncore
    for cu, lst in enumerate(adj_list):
        for cv, _, c in lst:
            prev = cv
            if c > 1:
                xs = chain.setdefault(cv, [])
                while len(xs) < c - 1:
                    rows.append(xs[-1] if xs else cv)
                    cols.append(nvirt)
                    xs.append(nvirt)
                    nvirt += 1
                prev = xs[c - 2]
            rows.append(prev)
            cols.append(cu)
    radj: list[list[int]] = [[] for _ in range(nvirt)]
    for r, c in zip(rows, cols):
        radj[r].append(c)
    return nvirt, radj, len(rows)


def find_twins(adj_list: list[list[tuple[int, int, int]]], ncore: int
               ) -> tuple[list[int], dict[int, frozenset[int]]]:
    """Twin representative (smallest core id) of every core node, and the in-neighbours
    of each representative (where a twin's last hop differs from the representative's)."""
    incoming: list[list[tuple[int, int]]] = [[] for _ in range(ncore)]
    for cu, lst in enumerate(adj_list):
        for cv, _, c in lst:
            incoming[cv].append((cu, c))
    rep: dict[tuple, int] = {}
    twin = []
    for cu, lst in enumerate(adj_list):
        key = (tuple((cv, c) for cv, _, c in lst), tuple(sorted(incoming[cu])))
        twin.append(rep.setdefault(key, cu))
    counts: dict[int, int] = {}
    for r in twin:
        counts[r] = counts.get(r, 0) + 1
    twin_in = {r: frozenset(u for u, _ in incoming[r]) for r, k in counts.items() if k > 1}
    return twin, twin_in
