"""Collective fits that choose: breakpoints of their own, and the link's duplex mode.

The collective fit itself (:mod:`.collfit`) corrects each protocol segment of the ping-pong
table; this module lets it insert segments of its own where the rows say a collective changes
behaviour, and tries the measured link class full- and half-duplex.

**Breakpoints of their own** (:func:`fit_collective_splits`).  The ping-pong segments are
where *lone messages* change behaviour; a collective can change where they do not.  On a
2-core VM the MPI all-reduce's cost per byte grows between 4 and 16 MiB - its reduction's
operands leave the core's L2 - while the ping-pong has no breakpoint between 45 KiB and
11 MiB messages, so one efficiency had to cover them all (measured: 8 MiB all-reduce -18 %,
16 MiB -36 %).  A slower constant reduction rate cannot help: for a 2-rank ring the
reduction and the transfers both scale with ``n/2``, so inside one segment the efficiency
absorbs any constant rate; what is missing is a change *with size*.  The collective fit may
therefore split a protocol segment: the inserted segment starts at the split size and keeps
the split segment's overhead and efficiency (point-to-point predictions do not change at
all) but gets a ``collective_efficiency`` of its own.  Candidate split sizes lie between
consecutive distinct message sizes of the rows' schedules (a 2-rank ring all-reduce of ``n``
bytes sends ``n/2``-byte messages); a split is reported, like a ping-pong breakpoint, as the
first message size of its new segment, since nothing between two measured sizes says where
exactly the behaviour changed.  Both pieces of a split must be *determined* by at least
``min_rows`` rows (the piece's rate part at least 10 % of the row's time - the share that
frees a segment's efficiency in the fit).  The default is 2, not 3: benchmark sizes are
powers of two, and a change between 4 and 8 MiB messages leaves two rows (8 and 16 MiB
all-reduce) above it inside the ping-pong segment; with 3 the recorded rows get no split at
all (or, on one round of them, one a size too low, where 4 MiB goes to +17 %).

Splits are chosen greedily by the Bayesian information criterion on the relative residuals,
as :mod:`.alphabeta` segments ping-pong: ``BIC = m ln(RSS/m) + p ln m`` with ``m`` rows,
``RSS`` the squared relative residuals of the robust fit, ``p`` = fitted parameters + one
position per split.  BIC rather than AIC because its ``ln m`` penalty per parameter is the
stricter one on the dozen-odd rows of a calibration (AIC's is 2, BIC's 2.8 at 17 rows) and it
is consistent: with more data it stops adding segments the truth does not have.  The plain
squares, not the robust cost: the robust loss counts residuals beyond ``f_scale`` linearly,
which damps exactly the large errors a missing breakpoint leaves (on the recorded rows the
decisive split lowers the squares' BIC by 13, the robust cost's by 4.6).  What protects
against noise instead:

* a split is kept only when it lowers the criterion by more than :data:`SPLIT_EVIDENCE`
  (6, "strong" evidence on Kass & Raftery's 1995 scale): the greedy step picks the best of
  a dozen candidate positions, a multiple comparison that one ``ln m`` per position does not
  pay for;
* the two pieces' collective efficiencies must differ by at least :data:`SPLIT_MIN_CHANGE`
  (10 %): with per-row noise of 1-2 % a run of same-signed residuals can make a split worth
  more than 6 in BIC terms while the efficiencies differ by 5-6 % - a wiggle, not a change
  in how the runtime moves data (which is what a split is for);
* both pieces need ``min_rows`` rows.

Measured on synthetic rows of a machine *without* such a change (40 seeds each, library and
schedule rows): no split at 3 % noise (0 of 80), 1 of 80 at 5 % (efficiencies 10.1 %
apart); with 10 % of batches slowed by 50-200 % (mean and median rows) 1 of 160, plus 10
where the ping-pong segmentation had missed or misplaced a true breakpoint and the split
stands in for it.  With ``min_rows=1`` the noisy case gets 11 false splits of 160.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any

from clustersim.calibration.collfit import (
    CollectiveFit,
    RateParts,
    bic,
    current_efficiencies,
    finish_fit,
    fit_parts,
    message_sizes,
)
from clustersim.calibration.fit import FitResult
from clustersim.network.params import NetworkParams
from clustersim.platform.model import Platform

__all__ = ["fit_collective_splits", "fit_collectives", "DUPLEX_MODES", "SPLIT_EVIDENCE",
           "SPLIT_MIN_CHANGE"]

#: how the duplex mode of the measured link class is set (see :func:`fit_collectives`)
DUPLEX_MODES = ("keep", "auto", "full", "half")

#: how much a split must lower the BIC to be kept (module docs)
SPLIT_EVIDENCE = 6.0
#: how much the collective efficiencies of a split's two pieces must differ (relative)
SPLIT_MIN_CHANGE = 0.1


def _candidates(parts: RateParts, sizes: Sequence[tuple[float, ...]], splits: Sequence[float],
                min_rows: int) -> list[float]:
    """Split sizes to try: each distinct message size whose predecessor lies in the same
    segment of the table split at ``splits``, where both pieces are determined by at least
    ``min_rows`` rows."""
    uniq = sorted({s for row in sizes for s in row})
    ranges = parts.ranges(splits)
    starts = [rg[0] for rg in ranges if rg is not None]
    out = []
    for prev, c in zip(uniq, uniq[1:]):
        k = bisect.bisect_right(starts, c) - 1
        lo, hi = ranges[k]  # type: ignore[misc]
        if c == lo or prev < lo:
            continue  # a segment boundary already separates prev and c
        if parts.determined(lo, c) >= min_rows and parts.determined(c, hi) >= min_rows:
            out.append(c)
    return out


def fit_collective_splits(rows: Sequence[Mapping[str, Any]], platform: Platform,
                          placement: Sequence[int], params: NetworkParams,
                          link_class: str | None, *, max_splits: int = 2, min_rows: int = 2,
                          loss: str = "soft_l1", f_scale: float = 0.05,
                          offered: Sequence[float] = ()) -> CollectiveFit:
    """:func:`fit_step_overhead`, letting the fit insert up to ``max_splits`` breakpoints of
    its own into ``link_class``'s protocol table, each piece determined by at least
    ``min_rows`` rows, chosen greedily by BIC, each lowering it by more than
    :data:`SPLIT_EVIDENCE` (module docs).  ``offered`` split sizes (boundaries of ping-pong
    segments refused for an undetermined beta, :func:`.alphabeta.fit_piecewise`) are tried
    first and kept when both pieces have ``min_rows`` rows and their efficiencies differ by
    :data:`SPLIT_MIN_CHANGE`, without the BIC test: the ping-pong's own criterion chose the
    position (not a search over the collective rows), and one hopeless row can swamp the
    squares - on the recorded H200 rows a 32 KiB all-reduce at +420 % hid a 16 MiB split
    that takes the 32/64 MiB all-reduce from -45 % to within 3 % (BIC 15.1 against 13.x
    without it).  The fit's
    :attr:`~CollectiveFit.splits` say where; :meth:`CollectiveFit.apply` inserts them.
    Without a protocol table for ``link_class`` nothing is split."""
    if max_splits < 0 or min_rows < 1:
        raise ValueError("max_splits must be >= 0 and min_rows >= 1")
    rows = [r for r in rows if r.get("op") != "barrier"]
    if not rows:
        return CollectiveFit(params.step_overhead, current_efficiencies(params, link_class), None)
    parts = RateParts(rows, platform, placement, params, link_class)
    fit, step, effs = fit_parts(parts, (), loss=loss, f_scale=f_scale)
    crit = [bic(fit, 0)]
    splits: list[float] = []
    if parts.has_table and max_splits > 0:
        assert link_class is not None
        sizes = message_sizes(rows, platform, placement, link_class)
        for c in sorted(offered):
            if len(splits) >= max_splits or c not in _candidates(parts, [(c,), *sizes],
                                                                 splits, min_rows):
                continue
            trial = sorted([*splits, c])
            got = fit_parts(parts, trial, loss=loss, f_scale=f_scale)
            k = [rg[0] for rg in parts.ranges(trial)].index(c)  # type: ignore[index]
            b = bic(got[0], len(trial))
            if abs(got[2][k] / got[2][k - 1] - 1.0) >= SPLIT_MIN_CHANGE:
                crit.append(b)
                splits, (fit, step, effs) = trial, got
        while len(splits) < max_splits:
            best: tuple[float, float, tuple[FitResult, float, dict[int | None, float]]] | None
            best = None
            for c in _candidates(parts, sizes, splits, min_rows):
                trial = sorted([*splits, c])
                got = fit_parts(parts, trial, loss=loss, f_scale=f_scale)
                k = [rg[0] for rg in parts.ranges(trial)].index(c)  # type: ignore[index]
                if abs(got[2][k] / got[2][k - 1] - 1.0) < SPLIT_MIN_CHANGE:
                    continue  # the pieces move data alike: no breakpoint there
                b = bic(got[0], len(trial))
                if best is None or b < best[0]:
                    best = (b, c, got)
            if best is None:
                break
            crit.append(best[0])
            if not best[0] < crit[-2] - SPLIT_EVIDENCE:
                break
            splits = sorted([*splits, best[1]])
            fit, step, effs = best[2]
    cf = CollectiveFit(step, effs, fit, splits=tuple(splits), criterion=crit)
    return finish_fit(rows, platform, placement, params, link_class, cf, parts.measured)


def fit_collectives(rows: Sequence[Mapping[str, Any]], platform: Platform,
                    placement: Sequence[int], params: NetworkParams, link_class: str | None,
                    *, duplex: str = "keep", max_splits: int = 2, min_rows: int = 2,
                    loss: str = "soft_l1", f_scale: float = 0.05,
                    offered: Sequence[float] = ()) -> tuple[CollectiveFit, Platform]:
    """:func:`fit_collective_splits` on the platform with the link class's duplex mode
    ``duplex``: ``keep`` (as the platform says), ``full``, ``half``, or ``auto``.

    ``auto`` fits both modes and keeps the one with the lower robust cost (when the two
    kept different numbers of splits: the lower BIC).  Ping-pong
    cannot tell them apart (one message in flight at a time); a collective's steps send both
    ways at once, and a memory-copy transport shares one memory system between the two
    directions where a NIC does not.  On two ranks the choice is largely confounded with
    ``collective_efficiency`` (both scale the rate of a two-way step), which is why ``keep``
    is the default.  The platform returned carries the mode used.  ``max_splits=0`` fits
    the ping-pong segments as they are (:func:`fit_step_overhead`).
    """
    from clustersim.calibration.retune import retune_platform

    if duplex not in DUPLEX_MODES:
        raise ValueError(f"duplex must be one of {', '.join(DUPLEX_MODES)}, not {duplex!r}")

    def one(plat: Platform) -> CollectiveFit:
        return fit_collective_splits(rows, plat, placement, params, link_class,
                                     max_splits=max_splits, min_rows=min_rows, loss=loss,
                                     f_scale=f_scale, offered=offered)

    if link_class is None or not rows or duplex == "keep":
        return one(platform), platform
    modes = {"auto": (True, False), "full": (True,), "half": (False,)}[duplex]
    best: tuple[CollectiveFit, Platform] | None = None
    costs: dict[bool, float] = {}
    for mode in modes:
        plat = retune_platform(platform, links={link_class: {"duplex": mode}})
        cf = one(plat)
        costs[mode] = cf.fit.cost if cf.fit is not None else 0.0
        cf.duplex = mode
        if best is None:
            best = (cf, plat)
        elif len(cf.splits) != len(best[0].splits):
            if cf.bic < best[0].bic:
                best = (cf, plat)
        elif costs[mode] < costs[bool(best[0].duplex)]:
            best = (cf, plat)
    assert best is not None
    best[0].costs = costs
    return best
