"""The fit report of a calibration: one :class:`FitLine` per reported number (value, 95 %
interval, unit, points, residual), built from each fit's results.

Kept apart from the pipeline (:mod:`.pipeline`), which orders the fits: these functions only
*describe* fitted numbers for people (the profile's ``fit:`` list and the printed table), and
carry a fitted parameter's interval through the formula that derives a model parameter from
it (a segment's efficiency from its beta, the hop latency from an alpha).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from clustersim.calibration.alphabeta import LinkModel, PiecewiseFit
from clustersim.calibration.collfit import (
    CollectiveFit,
    split_table,
)
from clustersim.calibration.computefit import ComputeFit

__all__ = ["FitLine", "pingpong_lines", "compute_lines", "split_lines", "split_note",
           "undetermined", "loose_reason", "above_link", "covariance_name"]


@dataclass(frozen=True)
class FitLine:
    """One reported number: what it is, its value and 95 % interval, from how many points."""

    parameter: str
    value: float
    low: float
    high: float
    unit: str
    points: int
    rms_rel: float
    bench: str

    def as_dict(self) -> dict[str, Any]:
        def g(x: float) -> Any:
            # an interval the data cannot bound (inf) or a number it cannot give (nan) is
            # written as null: profiles are read back with finite numbers only
            return None if x is None or not math.isfinite(x) else float(f"{x:.6g}")

        return {"parameter": self.parameter, "value": g(self.value),
                "ci95": [g(self.low), g(self.high)], "unit": self.unit,
                "points": self.points, "rms_rel": g(self.rms_rel), "from": self.bench}


def undetermined(lines: Sequence[FitLine]) -> list[FitLine]:
    """The fitted model parameters that are not sampled as uncertain (:func:`loose_reason`
    says why each): those the measurements did not determine - a 95 % interval that reaches
    infinity or is wider than twice the value (its half-width above the value: the interval
    takes in 0 or twice the fit), a collective efficiency on the fit's bound (0.01 or 100) -
    and those fitted on a physical limit: a device efficiency of 1 (the fit found the device
    at or above its nominal peak), a time of 0.

    Why name them: a fit on the optimiser's bound is its resting place, not a measurement
    (a collective efficiency of 100 with a 95 % interval of +-187,000 means the sizes
    measured never showed that segment's rate term), yet it was listed among the moved
    parameters like any other.  Why not sample a fit on a physical limit: the data put the
    parameter *at* the limit, and every draw of its Gaussian could only move it one way -
    with three such parameters in one block (two efficiencies at 1, an overhead at 0 +-52
    us) the band of a calibrated CPU run lay wholly above its nominal (11.47 ms against
    12.12 [11.54, 13.14] ms), although each parameter's own median was its fit.  The limit
    is the fit; the profile keeps all of them, leaves them out of its covariance, and the
    report says which, so that a user can measure what would determine them.  Why the
    half-width and not the standard error: the report, docs/calibration.md and this rule
    had said three different things (audit: "wider than the value", "wider than twice the
    value", standard error above the value); one rule, the one the report states."""
    return [ln for ln in lines if loose_reason(ln)]


def loose_reason(ln: FitLine) -> str:
    """Why :func:`undetermined` names ``ln`` (its reasons, joined), or ``""`` when it does
    not: printed beside each name, so that a user sees which measurement to add."""
    from clustersim.calibration.collfit import at_efficiency_bound

    if ln.parameter.startswith("pingpong.") or ln.unit == "B":
        return ""  # raw alpha/beta (reported through what they derive) and segment starts
    half = (ln.high - ln.low) / 2
    why = []
    bound = at_efficiency_bound(ln.value) if "collective_efficiency" in ln.parameter else None
    if bound is not None:
        why.append(f"on the fit's bound ({bound:g})")
    device_eff = "efficiency" in ln.parameter and not ln.parameter.startswith("network.")
    if device_eff and ln.value >= 1.0 - 1e-9:
        why.append("efficiency 1 (at the device's nominal peak)")
    if ln.unit == "s" and abs(ln.value) < 1e-15:
        why.append("time 0")
    if not math.isfinite(half):
        why.append("95% interval reaches infinity")
    elif half > abs(ln.value):
        why.append("95% interval wider than twice the value")
    return "; ".join(why)


#: a protocol segment's efficiency above this is faster than its link (rounding aside)
ABOVE_LINK = 1.0 + 1e-6


def above_link(lines: Sequence[FitLine]) -> list[FitLine]:
    """The protocol segments whose fitted lone-message efficiency is above 1: they move
    bytes faster than the link they run on.  The link's bandwidth is the fastest segment
    whose bandwidth term shows (:func:`clustersim.calibration.alphabeta.link_model`), so
    such a segment's time per byte is hidden under its per-message cost at the sizes
    measured - not a rate the link has (seen: ``localhost_shm.0.efficiency 1.915 [1.158 ..
    5.532]`` on a 2-rank CPU run).  Named by the report, not clamped: the fit gives back
    the measured times, and a clamp would change them without saying so."""
    return [ln for ln in lines if ln.parameter.startswith("network.protocol.")
            and ln.parameter.endswith(".efficiency") and ln.value > ABOVE_LINK]


def covariance_name(parameter: str, device: str) -> str:
    """The covariance's (and profile path's) name of a fit line's ``parameter``."""
    head, _, rest = parameter.partition(".")
    if head == "compute" and rest.startswith("efficiency."):
        return f"devices.{device}.efficiency_by_class.{rest[len('efficiency.'):]}"
    if head == "device":
        name, _, fld = rest.rpartition(".")
        return f"devices.{name}.{'reduce_rate' if fld == 'reduce_bw' else fld}"
    if head == "link":
        return f"links.{rest}"
    if head == "network" and rest.startswith("protocol."):
        return f"network.protocols.{rest[len('protocol.'):]}"
    return parameter


def pingpong_lines(pw: PiecewiseFit, lm: LinkModel, cls: str) -> list[FitLine]:
    """The lines of link class ``cls``'s ping-pong: each segment's raw alpha (s) and beta
    (s/B), the segment's start, overhead and efficiency derived from them, then the link's
    bandwidth (B/s) and hop latency (s) - each interval carried through its formula."""
    lines = []
    for k, (p, seg) in enumerate(zip(pw.pieces, lm.segments)):
        f = p.fit
        (alo, ahi), (blo, bhi) = f.interval("alpha"), f.interval("beta")
        pre = f"network.protocol.{cls}.{k}"
        lines.append(FitLine(f"pingpong.{cls}.{k}.alpha", p.alpha, alo, ahi, "s", f.points,
                             f.rms_rel, "pingpong"))
        lines.append(FitLine(f"pingpong.{cls}.{k}.beta", p.beta, blo, bhi, "s/B", f.points,
                             f.rms_rel, "pingpong"))
        shift = p.alpha - seg.overhead  # hops * latency, held fixed
        lines.append(FitLine(f"{pre}.start", seg.start, seg.start, seg.start, "B", f.points,
                             f.rms_rel, "pingpong"))
        lines.append(FitLine(f"{pre}.overhead", seg.overhead, max(alo - shift, 0.0),
                             ahi - shift, "s", f.points, f.rms_rel, "pingpong"))

        def eff(beta: float) -> float:
            return 1.0 / (beta * lm.bandwidth) if beta > 0 else math.inf

        lines.append(FitLine(f"{pre}.efficiency", seg.efficiency, eff(bhi), eff(blo), "1",
                             f.points, f.rms_rel, "pingpong"))
    # the link's own numbers come from the fastest visible segment and the smallest alpha
    fastest = max((p for p in pw.pieces if p.beta > 0), key=lambda p: 1 / p.beta, default=None)
    if fastest is not None and math.isclose(1 / fastest.beta, lm.bandwidth, rel_tol=1e-12):
        blo, bhi = fastest.fit.interval("beta")
        lines.append(FitLine(f"link.{cls}.bandwidth", lm.bandwidth,
                             1 / bhi if bhi > 0 else math.nan, 1 / blo if blo > 0 else math.inf,
                             "B/s", fastest.fit.points, fastest.fit.rms_rel, "pingpong"))
    lat_piece = min(pw.pieces, key=lambda p: abs(p.alpha - lm.hops * lm.latency))
    alo, ahi = lat_piece.fit.interval("alpha")
    lines.append(FitLine(f"link.{cls}.latency", lm.latency, max(alo, 0.0) / lm.hops,
                         ahi / lm.hops, "s", lat_piece.fit.points, lat_piece.fit.rms_rel,
                         "pingpong"))
    return lines


def compute_lines(cf: ComputeFit, device: str) -> list[FitLine]:
    """The lines of ``device``'s compute fit, each only when it was fitted: the efficiency of
    every GEMM class with rows of its own (an inherited one is another's number), memory
    efficiency, packing rate (B/s), kernel overhead (s), share efficiency, reduction rate (B/s)."""
    lines = []
    f = cf.fit
    pre = f"device.{device}"
    if f is not None:
        for cls in ("conv", "fc", "fc_wgrad"):
            if cls in cf.inherited or cls not in cf.rates:
                continue
            lo, hi = f.interval(f"rate_{cls}")
            lines.append(FitLine(f"compute.efficiency.{cls}", cf.efficiency[cls],
                                 lo / cf.peak, hi / cf.peak, "1", f.points, f.rms_rel, "gemm"))
        if "mem" in f.names:
            lo, hi = f.interval("mem")
            lines.append(FitLine(f"{pre}.mem_efficiency", cf.mem_efficiency, lo / cf.mem_bw,
                                 hi / cf.mem_bw, "1", f.points, f.rms_rel, "memory"))
        if "pack" in f.names and cf.pack_rate is not None:
            lo, hi = f.interval("pack")  # seconds per byte: the rate's interval is inverted
            lines.append(FitLine(f"{pre}.pack_rate", cf.pack_rate,
                                 1.0 / hi if hi > 0 else math.nan,
                                 1.0 / lo if lo > 0 else math.inf, "B/s", f.points, f.rms_rel,
                                 "gemm"))
        lo, hi = f.interval("overhead")
        lines.append(FitLine(f"{pre}.overhead", cf.overhead, max(lo, 0.0), hi, "s", f.points,
                             f.rms_rel, "gemm+memory"))
    if cf.share is not None:  # the range of the per-kernel values stands in for an interval
        sh = cf.share
        lines.append(FitLine(f"{pre}.share_efficiency", sh.value, sh.low, sh.high, "1",
                             sh.points, math.nan, "gemm+memory"))
    if cf.reduce_fit is not None and cf.reduce_rate is not None:
        lo, hi = cf.reduce_fit.interval("rate")
        lines.append(FitLine(f"{pre}.reduce_bw", cf.reduce_rate, lo, hi, "B/s",
                             cf.reduce_fit.points, cf.reduce_fit.rms_rel, "reduce"))
    return lines


def split_lines(lines: list[FitLine], cls: str, segments: Sequence[Any],
                 cfit: CollectiveFit) -> list[FitLine]:
    """The ping-pong segments' ``network.protocol.{cls}.{k}.*`` lines renumbered to the table
    with the collective fit's splits inserted, each inserted segment's lines (start from the
    collective fit; overhead and efficiency those of the segment it splits) after its
    parent's."""
    new = split_table(segments, cfit.splits)
    index = {s.start: i for i, s in enumerate(new)}
    old_to_new = [index[s.start] for s in segments]
    children: dict[int, list[int]] = {}
    for j, seg in enumerate(new):
        if seg.start in cfit.splits:
            parent = max(k for k, s in enumerate(segments) if s.start < seg.start)
            children.setdefault(parent, []).append(j)
    pre = f"network.protocol.{cls}."
    by_old: dict[tuple[int, str], FitLine] = {}
    for ln in lines:
        if ln.parameter.startswith(pre):
            k, fld = ln.parameter[len(pre):].split(".", 1)
            by_old[(int(k), fld)] = ln
    f = cfit.fit
    out = []
    for ln in lines:
        if not ln.parameter.startswith(pre):
            out.append(ln)
            continue
        k, fld = ln.parameter[len(pre):].split(".", 1)
        kk = int(k)
        out.append(replace(ln, parameter=f"{pre}{old_to_new[kk]}.{fld}"))
        if fld != "efficiency":
            continue
        for j in children.get(kk, []):
            start = new[j].start
            out.append(FitLine(f"{pre}{j}.start", start, start, start, "B",
                               f.points if f else 0, f.rms_rel if f else math.nan,
                               "collective"))
            for fld2 in ("overhead", "efficiency"):
                if (kk, fld2) in by_old:
                    out.append(replace(by_old[(kk, fld2)], parameter=f"{pre}{j}.{fld2}"))
    return out


def split_note(cfit: CollectiveFit, segments: Sequence[Any]) -> str:
    """What the collective fit split, for the notes."""
    from clustersim.units import format_size

    parts = []
    for c in cfit.splits:
        k = max(i for i, s in enumerate(segments) if s.start < c)
        end = format_size(segments[k + 1].start) if k + 1 < len(segments) else "up"
        parts.append(f"{c:.0f} B = {format_size(c)} (inside ping-pong segment {k}, "
                     f"{format_size(segments[k].start)} .. {end})")
    crit = " -> ".join(f"{b:.1f}" for b in cfit.criterion[:len(cfit.splits) + 1])
    return (f"collectives: {len(cfit.splits)} breakpoint(s) of their own, at messages of "
            f"{', '.join(parts)}; BIC {crit}")


