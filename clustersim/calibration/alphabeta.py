"""Piecewise alpha-beta from ping-pong: segments by message size, breakpoints detected.

A one-way message of ``s`` bytes takes ``alpha + beta * s`` - but not with one alpha and one
beta for all sizes: MPI switches from the eager to the rendezvous protocol above a threshold
(a handshake more, a copy less), shared-memory transports change strategy again for large
messages, and caches make mid-sized copies faster than big ones.  SimGrid's calibration
tutorial therefore segments ping-pong data by size and fits each segment on its own; so do
we (the idea, not their code).

Breakpoint detection: every way of cutting the sorted sizes into 1..``max_segments``
contiguous segments of at least ``min_points`` sizes is scored by dynamic programming on the
squared relative residuals of a non-negative least-squares line per segment; the number of
segments is chosen by the Bayesian information criterion (``m ln(RSS/m) + p ln m`` with
``p = 3K - 1``: two line parameters per segment and one position per breakpoint), plus
:data:`BREAK_EVIDENCE` (3) per breakpoint, so a segment is added only when it explains
clearly more than it costs.  Why the extra 3: the programme takes the *best* of every cut -
some 45 positions for one breakpoint on the 50 sizes of ``calibrate --real`` - a multiple
comparison that one ``ln m`` per position does not pay for; with plain BIC a one-segment
link at 3 % noise got a breakpoint in 13 of 200 fits, with segments at 36 % above the link
or at 1 % of it.  Measured (docs/calibration.md): 3 cuts that to 3 of 200 (efficiencies
0.77-1.0), 6 (the collective splits' "strong" evidence, :mod:`.collsplits`) to 2 - but 6
also drops the true 4 MiB switch of the round-trip machine under 10 % outlier batches and
the mean statistic (3 of 20 fits exact against 8 of 20 with 3), so 3 ("positive" evidence on
Kass & Raftery's 1995 scale) is the better trade.  The chosen segments are then
refitted with the robust loss, with confidence intervals (:mod:`.fit`); a segmentation one
of whose segments does not determine its time per byte (:func:`undetermined_beta`) is
refused and the best one with a segment fewer taken instead - a segment of three sizes whose
beta fits at 0 claims infinite bandwidth (seen: efficiency 1.3e20), which no measurement
showed.  A breakpoint is reported as the first measured size of its segment: nothing between
two measured sizes tells where exactly the protocol switched.

The conversion to the network model (:func:`link_model`) is a convention, because a single
pair cannot separate hop latency from software overhead nor link bandwidth from protocol
efficiency: the link's latency is the smallest fitted alpha split over the route's hops,
each segment's overhead is its alpha above that; the link's bandwidth is the fastest
segment's ``1/beta`` among segments whose bandwidth term is visible, each segment's
efficiency is its bandwidth over that.  A lone message on that route then costs the fitted
``alpha_k + beta_k * s`` in both the flow and the analytic model - exactly, except that a
segment whose intercept is lost in its bandwidth term (under 5 % of its shortest time) does
not set the latency and pays at least the hop latencies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from clustersim.calibration.fit import FitResult, robust_fit
from clustersim.network.params import Segment

__all__ = ["Piece", "PiecewiseFit", "fit_line", "detect_breakpoints", "fit_piecewise",
           "LinkModel", "link_model", "undetermined_beta", "BREAK_EVIDENCE",
           "MAX_RELATIVE_EFFICIENCY"]

#: floor of the mean squared relative residual in the BIC (exact synthetic data has RSS ~ 0)
_RSS_FLOOR = 1e-12
#: a segment's bandwidth term is "visible" when it is at least this share of its largest time
_VISIBLE = 0.2
#: a segment's alpha is "determined" when it is at least this share of its smallest time
_DETERMINED = 0.05
#: how much each detected breakpoint must lower the BIC beyond its ``3 ln m`` (module docs)
BREAK_EVIDENCE = 3.0
#: a detected segment draining faster than this many times the fastest visible segment has
#: no determined time per byte (its bandwidth term is lost in its intercept)
MAX_RELATIVE_EFFICIENCY = 10.0


@dataclass
class Piece:
    """One segment: sizes from ``start`` (first measured size) to ``end`` (last one)."""

    start: float
    end: float
    alpha: float
    beta: float
    fit: FitResult

    @property
    def bandwidth(self) -> float:
        return 1.0 / self.beta if self.beta > 0 else math.inf

    @property
    def visible(self) -> bool:
        """Whether the bandwidth term shapes this segment (so ``beta`` means something)."""
        t_end = self.alpha + self.beta * self.end
        return t_end > 0 and self.beta * self.end >= _VISIBLE * t_end

    def time(self, size: float) -> float:
        return self.alpha + self.beta * size


@dataclass
class PiecewiseFit:
    """A link's ping-pong fitted segment by segment (:func:`fit_piecewise`): one-way time in
    seconds of a message of ``size`` bytes is its :class:`Piece`'s ``alpha + beta * size``,
    sizes below the first segment's start taking the first segment."""

    pieces: list[Piece]
    detected: bool  # breakpoints found by the BIC search (False: given by the caller)
    #: segmentations refused because a segment's beta was not determined (for the notes)
    refused: tuple[str, ...] = ()
    #: the refused segments' boundaries that the kept segmentation does not have: where the
    #: ping-pong saw a change without determining its rate (offered to the collective fit)
    refused_starts: tuple[float, ...] = ()

    @property
    def breakpoints(self) -> tuple[float, ...]:
        return tuple(p.start for p in self.pieces[1:])

    def piece(self, size: float) -> Piece:
        chosen = self.pieces[0]
        for p in self.pieces:
            if size >= p.start:
                chosen = p
        return chosen

    def predict(self, sizes: Sequence[float]) -> np.ndarray:
        return np.array([self.piece(s).time(s) for s in sizes])


def _arrays(sizes: Sequence[float], times: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if s.shape != t.shape or s.ndim != 1:
        raise ValueError("sizes and times must be equal-length 1-D sequences")
    if not np.all(t > 0):
        raise ValueError("ping-pong times must be positive")
    order = np.argsort(s, kind="stable")
    return s[order], t[order]


def _nnls_rss(s: np.ndarray, t: np.ndarray) -> float:
    """Squared relative residuals of the best non-negative line ``alpha + beta * s``."""
    a = np.column_stack([1.0 / t, s / t])
    # columns scaled to unit norm so that nnls is well conditioned
    norms = np.linalg.norm(a, axis=0)
    norms[norms == 0] = 1.0
    _, rnorm = nnls(a / norms, np.ones_like(t))
    return float(rnorm ** 2)


def fit_line(sizes: Sequence[float], times: Sequence[float], *, loss: str = "soft_l1",
             f_scale: float = 0.05) -> FitResult:
    """Robust fit of ``time = alpha + beta * size`` with ``alpha, beta >= 0``."""
    s, t = _arrays(sizes, times)
    a = np.column_stack([1.0 / t, s / t])
    norms = np.linalg.norm(a, axis=0)
    norms[norms == 0] = 1.0
    coef, _ = nnls(a / norms, np.ones_like(t))
    alpha0, beta0 = coef / norms
    a_scale = max(alpha0, float(t.min()) * 0.1, 1e-12)
    b_scale = max(beta0, float(np.max(t / np.maximum(s, 1.0))) * 0.01, 1e-18)

    def model(x: np.ndarray) -> np.ndarray:
        return x[0] + x[1] * s

    return robust_fit(model, t, [alpha0, beta0], ("alpha", "beta"),
                      scale=[a_scale, b_scale], lower=[0.0, 0.0], loss=loss, f_scale=f_scale)


def detect_breakpoints(sizes: Sequence[float], times: Sequence[float], *,
                       max_segments: int = 4, min_points: int = 3) -> tuple[float, ...]:
    """Segment starts (after the first) chosen by dynamic programming + BIC (module docs)."""
    s, t = _arrays(sizes, times)
    uniq = np.unique(s)
    u = len(uniq)
    # index range of each distinct size in the sorted arrays
    lo_idx = np.searchsorted(s, uniq, side="left")
    hi_idx = np.searchsorted(s, uniq, side="right")
    kmax = max(1, min(max_segments, u // max(min_points, 1)))
    inf = math.inf
    cost = [[inf] * (u + 1) for _ in range(u + 1)]
    for i in range(u):
        for j in range(i + min_points, u + 1):
            a, b = lo_idx[i], hi_idx[j - 1]
            cost[i][j] = _nnls_rss(s[a:b], t[a:b])
    # best[k][j]: least RSS of the first j distinct sizes cut into k segments
    best = [[inf] * (u + 1) for _ in range(kmax + 1)]
    prev = [[-1] * (u + 1) for _ in range(kmax + 1)]
    best[0][0] = 0.0
    for k in range(1, kmax + 1):
        for j in range(k * min_points, u + 1):
            for i in range((k - 1) * min_points, j - min_points + 1):
                if best[k - 1][i] == inf or cost[i][j] == inf:
                    continue
                v = best[k - 1][i] + cost[i][j]
                if v < best[k][j]:
                    best[k][j] = v
                    prev[k][j] = i
    m = s.size
    scores = []
    for k in range(1, kmax + 1):
        if best[k][u] == inf:
            continue
        rss = max(best[k][u] / m, _RSS_FLOOR)
        scores.append((m * math.log(rss) + (3 * k - 1) * math.log(m)
                       + BREAK_EVIDENCE * (k - 1), k))
    if not scores:
        return ()
    _, k = min(scores)
    cuts = []
    j = u
    for kk in range(k, 0, -1):
        i = prev[kk][j]
        cuts.append(i)
        j = i
    return tuple(float(uniq[i]) for i in sorted(cuts) if i > 0)


def undetermined_beta(piece: Piece, fastest: float | None) -> str | None:
    """Why ``piece``'s time per byte is not determined by its sizes, or None when it is.

    Not determined: beta fitted at 0, a 95 % interval of beta that reaches 0 (its bandwidth
    is unbounded above), or a bandwidth over :data:`MAX_RELATIVE_EFFICIENCY` times
    ``fastest`` (the fastest visible segment's).  Such a segment's efficiency in the profile
    would be a number the measurements did not give."""
    if not piece.beta > 0:
        return "its time per byte fits at 0 (infinite bandwidth)"
    lo, _ = piece.fit.interval("beta")
    if not lo > 0:
        return "the 95 % interval of its time per byte reaches 0 (bandwidth unbounded)"
    if fastest is not None and piece.bandwidth > MAX_RELATIVE_EFFICIENCY * fastest:
        return (f"its bandwidth is {piece.bandwidth / fastest:.3g}x the fastest visible "
                f"segment's (more than {MAX_RELATIVE_EFFICIENCY:g}x)")
    return None


def _pieces(s: np.ndarray, t: np.ndarray, breakpoints: Sequence[float], detected: bool,
            loss: str, f_scale: float) -> list[Piece]:
    edges = [0.0, *sorted(float(b) for b in breakpoints if b > 0), math.inf]
    pieces: list[Piece] = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        mask = (s >= lo) & (s < hi)
        if not mask.any():
            continue
        fit = fit_line(s[mask], t[mask], loss=loss, f_scale=f_scale)
        start = float(s[mask].min()) if pieces else 0.0
        if not detected and pieces:
            start = lo  # a given breakpoint is where the user says it is
        pieces.append(Piece(start, float(s[mask].max()), fit["alpha"], fit["beta"], fit))
    return pieces


def fit_piecewise(sizes: Sequence[float], times: Sequence[float], *,
                  breakpoints: Sequence[float] | None = None, max_segments: int = 4,
                  min_points: int = 3, loss: str = "soft_l1",
                  f_scale: float = 0.05) -> PiecewiseFit:
    """Segment (detected unless ``breakpoints`` are given) and fit each segment robustly.

    Given breakpoints are segment starts in bytes; a segment left without measured sizes is
    dropped (``calibrate`` refuses such breakpoints before, :mod:`.ppcheck`).  Detected
    segmentations with a segment whose beta is not determined (:func:`undetermined_beta`)
    are refused in favour of the best one with fewer segments (module docs).
    """
    s, t = _arrays(sizes, times)
    if breakpoints is not None:
        pieces = _pieces(s, t, breakpoints, False, loss, f_scale)
        if not pieces:
            raise ValueError("no ping-pong sizes to fit")
        return PiecewiseFit(pieces, False)
    refused: list[str] = []
    starts: set[float] = set()
    kmax = max_segments
    while True:
        found = detect_breakpoints(s, t, max_segments=kmax, min_points=min_points)
        pieces = _pieces(s, t, found, True, loss, f_scale)
        if len(pieces) <= 1:
            break
        seen = [p.bandwidth for p in pieces if p.visible and p.beta > 0]
        fastest = max(seen) if seen else None
        bad = [(p, why) for p in pieces if (why := undetermined_beta(p, fastest))]
        if not bad:
            break
        p, why = bad[0]
        k = pieces.index(p)
        starts.update(q.start for q in pieces[k:k + 2] if q.start > 0)
        refused.append(f"{len(pieces)} segments refused: segment {p.start:.0f} .. {p.end:.0f} B "
                       f"({p.fit.points} points): {why}")
        kmax = len(pieces) - 1
    if not pieces:
        raise ValueError("no ping-pong sizes to fit")
    kept = {p.start for p in pieces}
    return PiecewiseFit(pieces, True, tuple(refused), tuple(sorted(starts - kept)))


@dataclass
class LinkModel:
    """A link class as the network model sees it, reproducing a piecewise fit (module docs)."""

    bandwidth: float
    latency: float
    segments: tuple[Segment, ...]
    hops: int


def link_model(pw: PiecewiseFit, hops: int, fallback_bandwidth: float) -> LinkModel:
    """Link bandwidth/latency and a protocol table that give back ``pw`` on a route of
    ``hops`` links of this class (its narrowest link among them).

    ``fallback_bandwidth`` is used when no segment shows its bandwidth term (only tiny
    messages were measured).
    """
    if hops < 1:
        raise ValueError("a route between two ranks has at least one hop")
    visible = [p.bandwidth for p in pw.pieces if p.visible and p.beta > 0]
    bw = max(visible) if visible else fallback_bandwidth
    # the hop latency comes from segments whose intercept is measurable (>= 5 % of their
    # shortest time); a large-message segment's alpha is lost in its bandwidth term
    alphas = [p.alpha for p in pw.pieces if p.alpha >= _DETERMINED * p.time(p.start)]
    lat = min(alphas or [p.alpha for p in pw.pieces]) / hops
    segs = []
    for p in pw.pieces:
        if p.beta > 0:
            eff = 1.0 / (p.beta * bw)  # > 1 only where the bandwidth term is invisible
        else:  # no measurable bandwidth term: make it negligible (0.1 % of alpha)
            eff = max(1.0, p.end / (bw * max(p.alpha, 1e-12) * 1e-3))
        segs.append(Segment(p.start, max(p.alpha - hops * lat, 0.0), eff))
    return LinkModel(bw, lat, tuple(segs), hops)
