"""The what-if page's last pass over its figures: titles that fit at 800 px, the toolbar off
the title line, and axes that keep their range whichever position the panel shows.

Why a pass of its own: these rules hold for every figure of the page - training charts, time
to target, progress, collective benchmarks - whoever built them.

* **Titles** are wrapped at :data:`TITLE_CHARS` characters (Plotly does not wrap): at 800 px a
  title of 110 characters ran off the figure, and the progress chart lost the worker count it
  was about.
* **The toolbar** (Plotly's modebar, shown all the time) stands upright at the right edge,
  where the right margin makes room for it, instead of over the title's end.
* **Fixed ranges**: an axis left to autorange rescaled at every change of the panel, so the
  throughput curves of 1x and 0.25x had the same height on the screen and flipping between
  them hid the change.  Each panel-driven axis now spans every position's data (bands
  included), so moving the panel moves the lines, not the axis.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["TITLE_CHARS", "TOOLBAR_REMOVE", "wrap_title", "finish_figures"]

#: characters per title line: ~480 px of 15 px text, left of the upright toolbar at 800 px
TITLE_CHARS = 62
_LINE_PX = 20  # height of one more title line in the top margin
#: characters per line of a y axis title (upright, along a plot of ~400 px)
AXIS_CHARS = 40
#: the toolbar's height with the page's buttons (:data:`TOOLBAR_REMOVE` taken off)
TOOLBAR_PX = 130
#: toolbar buttons the page leaves out: selections mean nothing on these charts, and the
#: zoom steps and hover modes are there by mouse anyway; kept: save as PNG, zoom, pan, reset
TOOLBAR_REMOVE = ("select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d",
                  "hoverClosestCartesian", "hoverCompareCartesian", "toggleSpikelines")


def wrap_title(text: str, width: int = TITLE_CHARS) -> tuple[str, int]:
    """``text`` broken at spaces into lines of at most ``width`` characters (a longer word
    keeps its line), joined by ``<br>``; and the number of lines."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines), len(lines)


def _numbers(values: Iterable[Any] | None) -> list[float]:
    if values is None:
        return []
    return [float(v) for v in values
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]


def _span(values: list[float], log: bool, zero: bool) -> list[float] | None:
    """An axis range (log10 units on a log axis) holding ``values`` with 5 % to spare."""
    if log:
        values = [v for v in values if v > 0]
    if not values:
        return None
    if log:
        lo, hi = math.log10(min(values)), math.log10(max(values))
        pad = 0.05 * max(hi - lo, 0.3)
        return [lo - pad, hi + pad]
    lo, hi = (min(0.0, min(values)) if zero else min(values)), max(values)
    pad = 0.05 * (hi - lo) if hi > lo else max(abs(hi), 1.0) * 0.05
    return [lo if zero and lo == 0 else lo - pad, hi + pad]


def _stacked_totals(fig: Any, owners: Sequence[int]) -> list[float]:
    """Per position and bar, the stacked total of a horizontal bar chart."""
    totals: dict[tuple[int, Any], float] = defaultdict(float)
    for trace, k in zip(fig.data, owners):
        for y, x in zip(trace.y or (), trace.x or ()):
            if isinstance(x, (int, float)) and math.isfinite(x):
                totals[(k, y)] += float(x)
    return list(totals.values())


def _fix_axis(axis: Any, values: list[float], zero: bool = False) -> None:
    """Fix ``axis`` to ``values`` (from 0 with ``zero`` or the axis's ``rangemode``)."""
    if axis.range is not None or axis.type == "category":
        return  # a range its figure chose
    span = _span(values, axis.type == "log", zero or axis.rangemode == "tozero")
    if span is not None:
        axis.range = span
        axis.autorange = False


def finish_figures(figs: Sequence[Any], owners: Sequence[Sequence[int]]) -> None:
    """Wrap every title, stand the toolbar upright on the right, and fix the range of every
    axis of a figure the panel drives (one whose traces belong to positions: ``owners``
    not all -1) to the data of all positions."""
    for fig, own in zip(figs, owners):
        title = fig.layout.title.text
        extra = 0
        if title:
            text, lines = wrap_title(title)
            fig.layout.title.text = text
            extra = _LINE_PX * (lines - 1)
        ytitle = fig.layout.yaxis.title.text
        if ytitle and len(ytitle) > AXIS_CHARS:  # it ran up into the title at 800 px
            fig.layout.yaxis.title.text = wrap_title(ytitle, AXIS_CHARS)[0]
            fig.layout.yaxis.automargin = True
        margin = fig.layout.margin
        fig.update_layout(modebar={"orientation": "v"},
                          margin={"t": (margin.t or 60) + extra, "r": max(margin.r or 0, 45)})
        legend = fig.layout.legend
        if (legend.x is not None and legend.x >= 1 and legend.xanchor != "right"
                and fig.layout.height):
            # a legend right of the plot starts below the upright toolbar, not under it, in
            # a figure taller by as much (its height was made for the legend's entries)
            fig.layout.height += TOOLBAR_PX
            plot = fig.layout.height - fig.layout.margin.t - (fig.layout.margin.b or 40)
            legend.y, legend.yanchor = 1 - TOOLBAR_PX / max(plot, 2 * TOOLBAR_PX), "top"
        if all(k < 0 for k in own):
            continue
        bars = [t for t in fig.data if t.type == "bar"]
        if bars and bars[0].orientation == "h" and fig.layout.barmode == "stack":
            _fix_axis(fig.layout.xaxis, _stacked_totals(fig, own), zero=True)  # bars start at 0
            continue
        xs = [v for t in fig.data for v in _numbers(t.x)]
        ys = [v for t in fig.data for v in _numbers(t.y)]
        _fix_axis(fig.layout.xaxis, xs)
        _fix_axis(fig.layout.yaxis, ys)
