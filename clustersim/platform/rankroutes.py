"""The routes of many rank pairs at once, for a collective step's transfers.

Why beside :meth:`Platform.routes <clustersim.platform.model.Platform.routes>`: the pairs of
one step are mostly ranks on one machine that hang off the same node (7 of 8 ring neighbours
with 8 GPUs behind one NVSwitch), whose route is that node's up link of the one and down link
of the other - the tree walk's answer for two siblings, under every policy but Valiant.
Those are found and built with array operations and only the others are walked: a
100,000-rank ring step in ~0.1 s instead of ~0.5 s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from clustersim.platform.model import Platform

__all__ = ["rank_routes", "sibling_columns"]

Route = tuple[int, ...]


def rank_routes(platform: Platform, src: np.ndarray, dst: np.ndarray) -> list[Route]:
    """``platform.routes`` of the rank pairs ``(src[i], dst[i])`` (integer arrays)."""
    n = len(src)
    if platform.routing.policy == "valiant" or n == 0:
        return platform.routes(zip(src.tolist(), dst.tolist()))
    parent, up, down = sibling_columns(platform)
    ps, pt = parent[src], parent[dst]
    sib = (ps == pt) & (ps >= 0) & (src != dst)
    if not sib.any():
        return platform.routes(zip(src.tolist(), dst.tolist()))
    out: list[Route] = [()] * n
    idx = np.flatnonzero(sib)
    for k, a, b in zip(idx.tolist(), up[src[idx]].tolist(), down[dst[idx]].tolist()):
        out[k] = (a, b)
    rest = np.flatnonzero(~sib)
    if rest.size:
        got = platform.routes(zip(src[rest].tolist(), dst[rest].tolist()))
        for k, r in zip(rest.tolist(), got):
            out[k] = r
    return out


def sibling_columns(platform: Platform) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per rank: the node its device hangs off (-1: the device is in the router's core)
    and the link ids up to it and down from it (memoised on the platform)."""
    got = platform.memo.get("sibling_columns")
    if got is None:
        r = platform._router
        devs = platform._dev_index
        parent = np.fromiter((r._attach[d] for d in devs), dtype=np.int64, count=len(devs))
        up = np.fromiter((r._up[d][0] for d in devs), dtype=np.int64, count=len(devs))
        down = np.fromiter((r._down[d][0] for d in devs), dtype=np.int64, count=len(devs))
        got = platform.memo["sibling_columns"] = (parent, up, down)
    return got
