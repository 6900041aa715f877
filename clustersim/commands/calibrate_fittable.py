"""The cells of ``clustersim calibrate``'s tables, and the fit table fitted to the terminal.

Apart from :mod:`clustersim.commands.calibrate_report` (which orders what is printed)
because these are rules about *figures*, each with its reason:

* an undefined figure (NaN: a residual of a fit with no degrees of freedom, the jitter's)
  prints as :data:`UNDEFINED`, never ``nan%``; an interval the data cannot bound above
  prints ``unbounded``, never ``inf``;
* the lower end of a 95 % interval below 0 prints as ``0 (clipped)``.  Every fitted number
  is a time, a size, a rate or an efficiency, none of which can be negative, yet the
  interval is the linearised one (value +- t * stderr from the Jacobian), symmetric about
  the value, so a loose fit reaches below 0 (``reduce_bw = 20.3 GB/s [-102 GB/s .. 142
  GB/s]``, QA).  The profile's ``ci95`` keeps the raw interval: it is what the covariance
  the profile stores means (docs/calibration.md, "The profile and applying it");
* the fit table fits the console's width as the rest of the tool's tables do
  (:mod:`clustersim.report.layout`), and its key - a parameter name of up to ~55
  characters - wins: the detail columns (``points``, ``from``; ``change`` of the moved
  table) are left out (and said) before a name is wrapped.  A name that still does not fit
  wraps at its dots, never inside a part (``device.localhost_core.jitte`` / ``r`` read as
  another parameter); only when even a name's longest part would not fit are the
  secondary figures left out too: the residual, then the interval - which is first put on
  two lines, broken after its ``..``, and goes last: it is the figure people came for.
  Every column is given at least its widest cell and its longest header word, so rich
  never squeezes the table (it folds cells and headers mid-word, ``resid`` / ``.``, to
  make a table fit); a table that cannot fit even so is printed wider than the console,
  whole.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["UNDEFINED", "CLIPPED_NOTE", "cell", "percent", "interval", "wrap_name",
           "print_fit_table"]

#: what a figure that is not defined (NaN) prints as
UNDEFINED = "—"
#: said under a table whose intervals were clipped at 0
CLIPPED_NOTE = ("0 (clipped): the linearised 95% interval reaches below 0, which no time, "
                "size, rate or efficiency can; the profile's ci95 keeps the raw interval")
#: every unit of a fitted number: times, times per byte, sizes, rates and dimensionless
#: efficiencies or coefficients of variation - none of them can be negative
_NON_NEGATIVE = frozenset({"s", "s/B", "B", "B/s", "FLOP/s", "1"})
#: compact style: columns separated by " " + padding 1 each side (as report.layout)
_GAP = 3
#: the parts :func:`wrap_name` keeps on one line: a name's dotted parts, each with its dot
_PARTS = re.compile(r"[^.]+\.?|\.")


def cell(value: float | None, unit: str) -> str:
    """``value`` in ``unit``, readable; :data:`UNDEFINED` for None or NaN, ``unbounded``
    for +inf (an interval's end the data cannot bound)."""
    from clustersim.calibration.params import format_unit

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return UNDEFINED
    if isinstance(value, float) and math.isinf(value):
        return "unbounded" if value > 0 else "-unbounded"
    return format_unit(value, unit)


def percent(value: float | None, signed: bool = False) -> str:
    """A ratio as a percentage (``+12.3%``), :data:`UNDEFINED` when it is not finite."""
    if value is None or not math.isfinite(value):
        return UNDEFINED
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def interval(low: float, high: float, unit: str) -> tuple[str, bool]:
    """``"low .. high"`` and whether its lower end was clipped at 0 (module docs)."""
    clipped = unit in _NON_NEGATIVE and math.isfinite(low) and low < 0
    lo = "0 (clipped)" if clipped else cell(low, unit)
    return f"{lo} .. {cell(high, unit)}", clipped


def wrap_name(name: str, width: int) -> str:
    """``name`` on lines of at most ``width`` characters, broken after its dots (a part
    longer than a line starts a line of its own and is cut), so that a wrapped name still
    reads as its parts."""
    lines: list[str] = []
    for part in _PARTS.findall(name):
        if lines and len(lines[-1]) + len(part) <= width:
            lines[-1] += part
            continue
        lines += [part[i:i + width] for i in range(0, len(part), width)]
    return "\n".join(lines)


def _min_width(header: str, cells: Sequence[str]) -> int:
    word = max((len(w) for w in header.split()), default=0)
    return max([word, *(len(c) for c in cells)])


def _longest_part(names: Sequence[str]) -> int:
    """The width at which :func:`wrap_name` breaks none of ``names`` inside a part."""
    return max((len(p) for n in names for p in _PARTS.findall(n)), default=0)


def _split_interval(text: str) -> str:
    """``"low .. high"`` on two lines, broken after the ``..`` (any other text as it is)."""
    return text.replace(" .. ", " ..\n", 1)


def print_fit_table(console: Any, title: str, headers: Sequence[str],
                    rows: Sequence[Sequence[str]], wide: bool = False,
                    droppable: Sequence[str] = ("points", "from"),
                    cramped: Sequence[str] = ("rms rel. resid.", "95% interval")) -> None:
    """A table keyed by a parameter name: ``rows`` (the name first) under ``headers``,
    fitted to the console (module docs).  The ``droppable`` columns, in that order, are
    left out (and said) while the longest name does not fit whole; the names then wrap at
    their dots; the ``cramped`` ones are left out only while a name's longest dotted part
    would not fit on a line, an interval among them first put on two lines (``low ..`` /
    ``high``).  Text columns (the name, ``from``) are left-aligned."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    left = {0} | {k for k, h in enumerate(headers) if h == "from"}
    if wide:
        t = Table(title=Text(title), title_justify="left")
        for k, h in enumerate(headers):
            t.add_column(h, justify="left" if k in left else "right")
        for r in rows:
            t.add_row(*r)
        console.print(t)
        return
    width = console.width
    keep = list(range(len(headers)))
    mins = [_min_width(h, [r[k] for r in rows]) for k, h in enumerate(headers)]
    # an interval may take two lines, broken after its "..", before it is left out
    halves = [_min_width(h, [p for r in rows for p in _split_interval(r[k]).split("\n")])
              for k, h in enumerate(headers)]
    names = [r[0] for r in rows]
    longest = max((len(n) for n in names), default=len(headers[0]))
    part = max(_longest_part(names), len(headers[0]))

    def room() -> int:
        return width - sum(mins[k] for k in keep[1:]) - _GAP * (len(keep) - 1)

    for k in (headers.index(h) for h in droppable if h in headers):
        if room() >= longest:
            break
        keep.remove(k)
    for k in (headers.index(h) for h in cramped if h in headers):
        if room() >= part:
            break
        if halves[k] < mins[k]:
            mins[k] = halves[k]
            if room() >= part:
                break
        keep.remove(k)
    name_w = max(min(longest, room()), part)
    widths = [name_w] + [mins[k] for k in keep[1:]]
    spare = width - sum(widths) - _GAP * (len(keep) - 1)
    for i, k in enumerate(keep[1:], start=1):  # spare room un-wraps headers, left to right
        extra = min(max(spare, 0), len(headers[k]) - widths[i])
        if extra > 0:
            widths[i] += extra
            spare -= extra
    console.print(Text(title, style="table.title"))
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for i, k in enumerate(keep):
        t.add_column(headers[k], justify="left" if k in left else "right",
                     width=widths[i], overflow="fold")
    for r in rows:
        t.add_row(wrap_name(r[0], name_w),
                  *[r[k] if len(r[k]) <= w else _split_interval(r[k])
                    for k, w in zip(keep[1:], widths[1:])])
    # wider than the console only when even the name's parts and the value do not fit:
    # printed whole, past the edge, rather than squeezed by rich into cut words and numbers
    console.print(t, width=max(width, sum(widths) + _GAP * (len(keep) - 1)))
    hidden = [headers[k] for k in range(len(headers)) if k not in keep]
    if hidden:
        console.print(Text(f"not shown at {width} columns: {', '.join(hidden)} (--wide "
                           f"shows every column)", style="dim"))
