"""Axis ticks and units for the Plotly charts (what-if page, ``predict --plot``).

Why our own ticks instead of Plotly's: on a log axis Plotly labels the minor ticks with their
leading digit only ("2 3 4 ... 9 100 2 3"), so "2" meant both 20 and 200 and the labels ran
into each other; on a log axis of byte sizes it wrote decimal prefixes ("600M700M800M") for
sizes that are powers of two.  Every chart that has a log axis takes its ticks from here, so
the labels are full values, few enough not to collide, and in the unit the data has.

Pure functions, no plotly import: the tests check the ticks without a browser.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from clustersim.units import DURATION_UNITS

__all__ = ["log_ticks", "tick_text", "time_unit", "size_ticks", "wide_span"]


def log_ticks(values: Iterable[float | None]) -> list[float]:
    """Ticks for a log axis over ``values``: 1-2-5 per decade, or the powers of ten alone
    when that would be more than eight (plotly's own minor labels collided: "6 7 8 9 10")."""
    vals = [float(v) for v in values if v is not None and math.isfinite(v) and v > 0]
    if not vals:
        return []
    lo, hi = math.floor(math.log10(min(vals))), math.ceil(math.log10(max(vals)))
    decades = [10.0 ** e for e in range(int(lo), int(hi) + 1)]
    ticks = [m * d for d in decades for m in (1, 2, 5)]
    ticks = [t for t in ticks if min(vals) / 1.5 <= t <= max(vals) * 1.5]
    if len(ticks) > 8:
        ticks = [d for d in decades if min(vals) / 10 < d < max(vals) * 10]
    return ticks


def tick_text(ticks: Sequence[float]) -> list[str]:
    """Full values, thousands separated ("0.05", "200", "1,000"): never a bare leading digit."""
    return [f"{t:,.6g}" for t in ticks]


def wide_span(values: Iterable[float | None], ratio: float = 100.0) -> bool:
    """Whether the positive values span more than ``ratio`` (then a linear axis hides the
    small ones along its floor: knl_4253's Sync EASGD at 10 h under a 2,800 h axis)."""
    vals = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    return bool(vals) and max(vals) > ratio * min(vals)


_WORDS = {"d": "days", "h": "hours", "min": "minutes", "s": "seconds"}
#: (divisor in seconds, axis word, short word) from the longest unit down: the units the
#: tables write durations in (clustersim.units.format_duration)
_UNITS = tuple((size, _WORDS[short], short) for short, size in DURATION_UNITS)


def time_unit(seconds: Iterable[float | None]) -> tuple[float, str, str]:
    """The unit an axis of durations reads in: the largest of days, hours, minutes, seconds
    that the longest duration reaches twice (a run of 1-7 minutes in minutes, not in
    "0.01-0.09 h"; the tables print the same durations with
    :func:`clustersim.units.format_duration`)."""
    vals = [v for v in seconds if v is not None and math.isfinite(v) and v > 0]
    top = max(vals, default=3600.0)
    return next((u for u in _UNITS if top >= 2 * u[0]), _UNITS[-1])


def size_ticks(sizes: Iterable[float], most: int = 8) -> list[float]:
    """Powers of two over ``sizes`` (labelled by :func:`clustersim.units.format_size`, in
    binary units as the scenarios give message sizes): every 1st, 2nd, 5th, 10th, ... exponent (steps that
    divide 10, so 1 KiB, 1 MiB and 1 GiB are ticks wherever they fall in the range) so that
    at most ``most`` remain."""
    vals = [float(s) for s in sizes if s and s > 0]
    if not vals:
        return []
    lo, hi = math.floor(math.log2(min(vals))), math.ceil(math.log2(max(vals)))
    step = next(s for s in (1, 2, 5, 10, 20, 40, 80) if (hi - lo) // s + 1 <= most
                or s == 80)
    start = -(-lo // step) * step
    return [2.0 ** e for e in range(start, hi + 1, step)] or [2.0 ** lo]
