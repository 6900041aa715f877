"""Max-min fair bandwidth sharing by progressive filling.

Why max-min: it is the flow-level model SimGrid validated against packet simulators and real
TCP/MPI traffic for two decades; it captures contention (incast, oversubscribed uplinks,
shared NICs) at a tiny fraction of packet-level cost.

Progressive filling: raise every unfrozen flow's rate together; when a link fills, freeze the
flows crossing it at their current rate; repeat with what capacity is left.  Equivalently: the
link with the smallest fair share ``remaining / unfrozen_flows`` is the next bottleneck, and its
flows get exactly that share.  Each round freezes at least one link's flows, so the loop runs at
most once per distinct bottleneck level.

Implementation: the link/flow incidence is kept as two flat integer arrays (one entry per
(flow, link) crossing) over *locally renumbered* links, so one round is a handful of
``bincount``s over the crossings of the flows involved - no sparse-matrix construction and no
work proportional to the platform's total link count.  The flow engine
(:mod:`clustersim.network.flow`) calls :func:`progressive_fill` directly on one connected
component of flows at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # scipy is imported where a matrix is built: importing it costs ~0.2 s
    import scipy.sparse as sp

__all__ = ["maxmin_rates", "incidence", "progressive_fill", "flat_incidence"]

# two links whose fair shares differ by less than this (relative) saturate in the same round
_REL_TOL = 1e-12


def incidence(routes: Sequence[Sequence[int]], num_links: int) -> sp.csr_matrix:
    """Links x flows 0/1 matrix (a flow crossing a link twice counts twice)."""
    import scipy.sparse as sp

    rows = [lk for r in routes for lk in r]
    cols = [f for f, r in enumerate(routes) for _ in r]
    data = np.ones(len(rows), dtype=float)
    return sp.csr_matrix((data, (rows, cols)), shape=(num_links, len(routes)))


def flat_incidence(routes: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(link id, flow index) of every crossing, flattened in route order."""
    lengths = np.fromiter((len(r) for r in routes), dtype=np.int64, count=len(routes))
    total = int(lengths.sum())
    links = np.fromiter((lk for r in routes for lk in r), dtype=np.int64, count=total)
    flows = np.repeat(np.arange(len(routes), dtype=np.int64), lengths)
    return links, flows


def progressive_fill(
    inc_link: np.ndarray,
    inc_flow: np.ndarray,
    capacity: np.ndarray,
    nflows: int,
) -> np.ndarray:
    """Max-min rates of ``nflows`` flows given their crossings.

    ``inc_link[i]`` / ``inc_flow[i]`` say that flow ``inc_flow[i]`` crosses link ``inc_link[i]``
    (links numbered ``0..len(capacity)-1``; a repeated pair means the flow crosses that link
    twice and uses twice its rate there).  Every flow must have at least one crossing; a flow
    without one keeps rate ``inf``.
    """
    rates = np.full(nflows, np.inf)
    nlinks = len(capacity)
    remaining = np.array(capacity, dtype=float, copy=True)
    lk = np.asarray(inc_link, dtype=np.int64)
    fl = np.asarray(inc_flow, dtype=np.int64)
    frozen = np.zeros(nflows, dtype=bool)
    while lk.size:
        counts = np.bincount(lk, minlength=nlinks)
        used = counts > 0
        share = np.full(nlinks, np.inf)
        share[used] = np.maximum(remaining[used], 0.0) / counts[used]
        s = share.min()
        bottleneck = share <= s * (1 + _REL_TOL) + 1e-300
        # every flow crossing a bottleneck link freezes at the fair share
        frozen[:] = False
        frozen[fl[bottleneck[lk]]] = True
        rates[frozen] = s
        leaving = frozen[fl]
        remaining -= s * np.bincount(lk[leaving], minlength=nlinks)
        keep = ~leaving
        lk = lk[keep]
        fl = fl[keep]
    return rates


def maxmin_rates(
    routes: Sequence[Sequence[int]],
    capacity: np.ndarray,
    matrix: sp.csr_matrix | None = None,
) -> np.ndarray:
    """Max-min fair rate (bytes/s) of each flow; a flow with an empty route gets ``inf``.

    ``matrix`` may pass a precomputed :func:`incidence` (links x flows) to save rebuilding it.
    """
    nflows = len(routes)
    if nflows == 0:
        return np.full(0, np.inf)
    if matrix is not None:
        coo = matrix.tocoo()
        reps = np.rint(coo.data).astype(np.int64)
        links = np.repeat(coo.row.astype(np.int64), reps)
        flows = np.repeat(coo.col.astype(np.int64), reps)
    else:
        links, flows = flat_incidence(routes)
    # renumber the links actually used so the work scales with the flows, not the platform
    used, local = np.unique(links, return_inverse=True)
    cap = np.asarray(capacity, dtype=float)[used]
    return progressive_fill(local, flows, cap, nflows)
