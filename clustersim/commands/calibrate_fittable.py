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
  (:mod:`clustersim.report.layout`), but its key - a parameter name of up to ~55
  characters - wraps at its dots instead of the interval being left out: at 80 columns
  the interval is the figure people came for.  Only when a name would get under
  :data:`_MIN_NAME` columns (two lines for most names) are ``points`` and then ``from``
  left out (and said).
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
#: the narrowest the parameter column gets before detail columns are left out
_MIN_NAME = 28


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
    for part in re.findall(r"[^.]+\.?|\.", name):
        if lines and len(lines[-1]) + len(part) <= width:
            lines[-1] += part
            continue
        lines += [part[i:i + width] for i in range(0, len(part), width)]
    return "\n".join(lines)


def _min_width(header: str, cells: Sequence[str]) -> int:
    word = max((len(w) for w in header.split()), default=0)
    return max([word, *(len(c) for c in cells)])


def print_fit_table(console: Any, title: str, headers: Sequence[str],
                    rows: Sequence[Sequence[str]], wide: bool = False,
                    droppable: Sequence[str] = ("points", "from")) -> None:
    """A table keyed by a parameter name: ``rows`` (the name first) under ``headers``,
    fitted to the console (module docs): the name wraps at its dots, and the ``droppable``
    columns, in that order, are left out (and said) while the name would get fewer than
    :data:`_MIN_NAME` columns.  Text columns (the name, ``from``) are left-aligned."""
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
    drop = [headers.index(h) for h in droppable if h in headers]
    keep = list(range(len(headers)))
    mins = [_min_width(h, [r[k] for r in rows]) for k, h in enumerate(headers)]
    longest = max((len(r[0]) for r in rows), default=len(headers[0]))
    while True:
        room = width - sum(mins[k] for k in keep[1:]) - _GAP * (len(keep) - 1)
        if room >= min(_MIN_NAME, longest) or not drop:
            break
        keep.remove(drop.pop(0))
    name_w = max(min(longest, room), min(_MIN_NAME, longest), len("parameter"))
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
        t.add_row(wrap_name(r[0], name_w), *[r[k] for k in keep[1:]])
    console.print(t)
    hidden = [headers[k] for k in range(len(headers)) if k not in keep]
    if hidden:
        console.print(Text(f"not shown at {width} columns: {', '.join(hidden)} (--wide "
                           f"shows every column)", style="dim"))
