"""Breadth-first distance searches over the router's reversed, expanded core graph.

Kept apart from :mod:`clustersim.platform.routing` (which decides *when* to search and caches
the results) so that each module holds one topic.  A link of cost ``c`` is ``c`` unit steps
through ``c - 1`` virtual nodes in the expanded graph, so plain BFS levels are exact costs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["bfs_py", "bfs_c", "reverse_matrix"]


def bfs_py(radj: list[list[int]], nexp: int, ncore: int, ct: int) -> np.ndarray:
    """Distance of every core node to ``ct`` (-1: unreachable), level by level in Python:
    faster than scipy's import on small graphs (a KNL chassis, a DGX node)."""
    full = [-1] * nexp
    full[ct] = 0
    frontier = [ct]
    level = 0
    while frontier:
        level += 1
        nxt = []
        for x in frontier:
            for y in radj[x]:
                if full[y] < 0:
                    full[y] = level
                    nxt.append(y)
        frontier = nxt
    return np.array(full[:ncore], dtype=np.int32)


def bfs_c(rev: Any, ct: int, pos: np.ndarray, arange: np.ndarray, ncore: int) -> np.ndarray:
    """The same distances by :func:`scipy.sparse.csgraph.breadth_first_order` over ``rev``
    (:func:`reverse_matrix`); levels are read off the BFS order, along which predecessor
    positions never decrease.  ``pos`` and ``arange`` are scratch arrays of the expanded size.
    """
    from scipy.sparse.csgraph import breadth_first_order

    nexp = pos.size
    order, pred = breadth_first_order(rev, ct, directed=True, return_predecessors=True)
    pos[order] = arange[: order.size]
    pp = pos[pred[order[1:]]]  # non-decreasing: BFS discovers in dequeue order
    full = np.full(nexp, -1, dtype=np.int32)
    lo, hi, level = 0, 1, 0
    while lo < order.size:
        full[order[lo:hi]] = level
        lo, hi, level = hi, 1 + int(np.searchsorted(pp, hi, side="left")), level + 1
    return full[:ncore]


def reverse_matrix(radj: list[list[int]], nexp: int) -> Any:
    """The reversed expanded graph (adjacency lists ``radj``) as a scipy CSR matrix."""
    from scipy.sparse import csr_matrix

    rows = [r for r, cs in enumerate(radj) for _ in cs]
    cols = [c for cs in radj for c in cs]
    return csr_matrix((np.ones(len(rows)), (np.array(rows, dtype=np.int64),
                                            np.array(cols, dtype=np.int64))),
                      shape=(nexp, nexp))
