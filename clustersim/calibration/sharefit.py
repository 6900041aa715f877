"""How much of a time-shared GPU its ranks get together: ``share_efficiency``.

Why a fit of its own: on a device the platform marks ``time_shared`` (several ranks on one
GPU, :mod:`clustersim.sim.sharing`) the two contexts the compute benchmarks run in are two
different machines.  With every rank computing at once (``realrun``'s GEMM and copy
benchmarks) each rank gets a slice of the GPU; with the other ranks waiting in MPI
(:mod:`.contention`, ``context = peer_polling``) rank 0 has it alone - on a CPU the polling
neighbours slow it, on a GPU they do not touch it.  One roofline over both (what
:mod:`.computefit` does for CPU cores) fitted neither: 35% RMS on the H200, and BSP's
compute predicted at half what it measured.  So for a time-shared device the roofline is
fitted on the rows timed alone - the whole GPU - and the simulator charges ``k`` workers
computing at once ``k / share_efficiency`` each, with

    share_efficiency = median over kernels of  k * t_alone / t_together

taken over the kernels that ran in both contexts and took at least :data:`SHARE_MIN_TIME`
alone (shorter ones are dominated by the per-call cost on the host, which the ranks do not
share: two ranks launching 10 us kernels overlap their launches).  The range of the
per-kernel values stands in for an interval.  Measured on an H200 with two ranks:
0.87-0.95 for GEMMs of 8-550 GFLOP and copies of 16 MiB-1 GiB.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clustersim.sim.sharing import share_group

__all__ = ["ShareFit", "ALONE", "SHARE_MIN_TIME", "fit_share", "split_contexts",
           "ranks_sharing"]

#: the context of rows timed on one rank while the others wait (:mod:`.contention`)
ALONE = "peer_polling"
#: kernels shorter than this alone are left out of the share (module docs)
SHARE_MIN_TIME = 200e-6

Row = Mapping[str, Any]


@dataclass(frozen=True)
class ShareFit:
    """``value`` = the share efficiency (clamped to (0, 1]), ``low``/``high`` the range of the
    per-kernel values, ``points`` how many kernels, ``ranks`` how many computed together."""

    value: float
    low: float
    high: float
    points: int
    ranks: int
    note: str


def split_contexts(rows: Sequence[Row]) -> tuple[list[Row], list[Row]]:
    """(rows timed with every rank computing, rows timed on one rank alone)."""
    together = [r for r in rows if r.get("context") is None]
    alone = [r for r in rows if r.get("context") == ALONE]
    return together, alone


def _key(r: Row) -> tuple:
    if r.get("bench") == "gemm":
        return ("gemm", int(r["m"]), int(r["n"]), int(r["k"]), r.get("dtype"))
    return ("memory", r.get("kernel", "copy"), float(r["size"]))


def fit_share(together: Sequence[Row], alone: Sequence[Row], ranks: int) -> ShareFit | None:
    """The share efficiency from kernels timed in both contexts (module docs); ``None`` when
    no kernel ran in both, or ``ranks`` < 2 (nothing was shared)."""
    if ranks < 2:
        return None
    by_key = {_key(r): float(r["time"]) for r in alone}
    pairs = [(by_key[_key(r)], float(r["time"])) for r in together if _key(r) in by_key]
    if not pairs:
        return None
    long = [(a, t) for a, t in pairs if a >= SHARE_MIN_TIME]
    used = long or pairs
    vals = np.array([ranks * a / t for a, t in used])
    value = float(np.median(vals))
    note = (f"time-shared device: {ranks} ranks computing at once got {value:.3g} of it "
            f"together (median of {len(used)} kernels timed both ways, {vals.min():.3g} .. "
            f"{vals.max():.3g}); rates fitted on the kernels timed on one rank alone")
    if not long:
        note += (f" (no kernel took {SHARE_MIN_TIME * 1e6:g} us alone: the short ones used "
                 f"measure launches as much as the GPU)")
    if value > 1.0:
        note += f"; {value:.3g} is above 1, kept at 1"
    return ShareFit(min(value, 1.0), float(vals.min()), float(vals.max()), len(used), ranks,
                    note)


def ranks_sharing(platform: Any, placement: Sequence[int]) -> int:
    """How many of the benchmark's ranks sit on rank 0's physical device: those in its
    :func:`~clustersim.sim.sharing.share_group` when its kind is ``time_shared``, else 1."""
    group = share_group(platform, placement[0])
    if group is None:
        return 1
    return sum(1 for d in placement if share_group(platform, d) == group)
