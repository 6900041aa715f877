"""The explorer's chart: one plotly figure for the page's choices (x, metric, colour, facet,
the fixed values of the other axes).

Facets: plotly express repeats the axis titles on every facet row (and this module set the
metric's title on every facet), so a title taller than its row ran into the next row's and
over the plot to its left.  A facet grid therefore gets one y title and one x title for the
whole grid, in a margin kept for them, and each column's lowest drawn cell shows the x tick
labels (plotly express shows them on the bottom row only: a column whose bottom cell is empty
had none).
"""

from __future__ import annotations

import math
from typing import Any

from clustersim.report.white_figure import white_figure
from clustersim.scenario.fieldkinds import field_kind, si_unit

__all__ = ["ANY", "MANY", "NONE", "figure", "no_rows", "sampled_axis", "sort_key",
           "value_label"]

NONE = "(none)"
#: a fixed control's "every value": a sampled (Sobol', LHS) design has about one row per value
#: of each continuous axis, so fixing it to one value left one point or none (audit K H1)
ANY = "(any)"
#: an input with more distinct values than this reads as sampled: its control starts at
#: :data:`ANY`, its points are drawn as a scatter, and as a colour it is a continuous scale
MANY = 12
HEIGHT = 560  # the chart without facets, and a facet grid of up to two rows (px)
ROW = 230  # px per facet row past two
WRAP = 3  # facets per row
#: px: a shared title's distance from the grid's edge (room for the tick labels: "0.0012",
#: "100%", "1.2k"), and the margins that hold it
Y_TITLE_SHIFT, X_TITLE_SHIFT = 62, 34
MARGIN = {"t": 40, "b": 40}
FACET_MARGIN = {"t": 50, "b": 70, "l": 100, "r": 20}


def sort_key(v: Any) -> tuple[int, Any]:
    """Sort key of a column's values: numbers by value, then text (a column may mix both)."""
    try:
        return (0, float(v))
    except (TypeError, ValueError):
        return (1, str(v))


def _slice(table: Any, fixed: dict[str, Any], free: set[str]) -> Any:
    df = table
    for col, val in fixed.items():
        if col not in free and val is not None and val != ANY and col in df.columns:
            df = df[df[col].astype(str) == str(val)]
    return df


def sampled_axis(df: Any, col: str) -> bool:
    """Whether the input ``col`` reads as a sampled (Sobol', LHS) axis: numbers only, with more
    than :data:`MANY` distinct values, or at least 4 and more than half as many as the table
    has rows (a 12-point design: a value per row; a grid repeats each value across the other
    axes' combinations)."""
    try:
        vals = df[col].dropna().unique()
    except TypeError:  # unhashable cells (a list column): not an axis of numbers
        return False
    if not all(sort_key(v)[0] == 0 for v in vals):
        return False
    return len(vals) > MANY or (len(vals) >= 4 and 2 * len(vals) > len(df))


def _named(col: str, val: Any) -> str:
    if col in ("bandwidth_factor", "latency_factor"):
        num = sort_key(val)
        return f"{col.split('_')[0]} {num[1]:g}x" if num[0] == 0 else f"{col} {val}"
    return f"{col} {val}"


def _legend_name(col: str) -> Any:
    """A colour value's legend entry: a network factor as the controls write it (``1x``, not
    ``1.0``: audit K L2), anything else as its text."""
    if col not in ("bandwidth_factor", "latency_factor"):
        return str
    from clustersim.report.whatif_panel import factor_label

    return lambda v: factor_label(n[1]) if (n := sort_key(v))[0] == 0 else str(v)


def value_label(col: str, num: float) -> str:
    """A number of the column ``col`` as a person reads it: with its unit where the field
    reads a time, a size, a bandwidth or a compute rate (``1.17 GB/s``, not the table's SI
    ``1168219009.2090118``, audit K H1), else in at most 6 significant digits."""
    from clustersim.units import format_bandwidth, format_size, format_time

    kind = field_kind(col)
    if kind == "bandwidth":
        return format_bandwidth(num)
    if kind == "time":
        return format_time(num)
    if kind == "size":
        return format_size(num)
    if kind == "compute rate":
        return f"{num / 1e12:.4g} TFLOP/s"
    return f"{int(num):,}" if num.is_integer() and abs(num) < 1e15 else f"{num:.6g}"


def no_rows(fixed: dict[str, Any], free: set[str],
            computed_at: dict[str, Any] | None) -> str:
    """What the chart says when the fixed values select no rows: the combination, and what
    can be done about it.

    ``computed_at``: the values of the table's other axes that new points are computed at
    (the scenario's own; None: the table cannot grow).  Why not simply "compute it": with a
    sweep's table, the page computes new network factors at the scenario's values of the
    sweep's other axes only, so at another value (``workload.batch_per_worker 64`` where the
    scenario has 128) computing answered "already in the table" and the chart stayed empty
    (QA 7a M4).  The hint then names the values where computing helps."""
    held = [_named(c, v) for c, v in fixed.items()
            if c not in free and v is not None and v != ANY]
    head = f"no rows for {', '.join(held) or 'this choice'}"
    if computed_at is None:
        return f"{head}: pick another value"
    off = [(c, v) for c, v in computed_at.items() if c in fixed and c not in free
           and fixed[c] is not None and sort_key(fixed[c]) != sort_key(v)]
    if not off:
        return f"{head}: compute it or pick another value"
    at = ", ".join(_named(c, v) for c, v in off)
    return (f"{head}:<br>new points are computed at the scenario's own {at} only"
            f"<br>(the sweep's other values come from 'clustersim sweep'):"
            f"<br>fix {'them' if len(off) > 1 else 'it'} there and compute, "
            "or pick another value")


def figure(table: Any, inputs: list[str], metrics: list[str], x: str, y: str, color: str,
           facet: str, fixed: dict[str, Any], computed_at: dict[str, Any] | None = None,
           sampled: frozenset[str] = frozenset()) -> Any:
    """The chart for the current choices (a plotly figure); a message in place of the chart
    when the fixed values select no rows (a combination not computed, an empty table;
    :func:`no_rows`).  A duration metric is drawn in the unit it reads in (hours, days:
    :func:`~clustersim.explorer.table.time_scale`)."""
    import plotly.express as px

    from clustersim.explorer.table import metric_title, time_scale
    from clustersim.report.whatif_panel import series_style

    free = {x, color, facet} - {NONE}
    df = _slice(table, fixed, free)
    df = df[df[y].notna()] if y in df.columns else df.iloc[:0]
    if not len(df):
        fig = white_figure(layout={"height": HEIGHT,
                                "xaxis": {"visible": False}, "yaxis": {"visible": False}})
        fig.add_annotation(text=no_rows(fixed, free, computed_at), showarrow=False,
                           font={"size": 16}, x=0.5, y=0.5, xref="paper", yref="paper")
        return fig
    order = [c for c in (color, facet, x) if c != NONE]
    df = df.iloc[sorted(range(len(df)), key=lambda i: [sort_key(df[c].iat[i]) for c in order])]
    titles: dict[str, tuple[str, str | None]] = {}
    for col in dict.fromkeys(c for c in (x, y) if c in metrics or c == y):
        scale = time_scale(col, df[col])
        if scale is not None:  # the column and its interval, in that unit
            size, word = scale
            df = df.assign(**{c: df[c] / size for c in (col, f"{col}_lo", f"{col}_hi")
                              if c in df.columns})
        titles[col] = metric_title(col, scale[1] if scale else None)
    kw: dict[str, Any] = {"x": x, "y": y, "template": "plotly_white",
                          "labels": {c: t for c, (t, _f) in titles.items()}}
    # a line joins the points of one series along x; where the choices leave several rows per
    # (x, colour, facet) - an axis left at "(any)", a sampled design - a line would zigzag
    # between unrelated points: a scatter then (audit K H1)
    keys = [c for c in (x, color, facet) if c != NONE]
    scatter = bool(df.duplicated(subset=keys).any()) or any(
        v == ANY and c in df.columns and c not in free and df[c].nunique() > 1
        for c, v in fixed.items())
    if color != NONE and (color in sampled or sampled_axis(table, color)):  # a colour scale
        scatter = True
        kw.update(color=color, color_continuous_scale="Viridis")
        kw["labels"][color] = color
    elif color != NONE:  # as text: a discrete colour (and dash) per value, numbers included
        name = _legend_name(color)
        df = df.assign(_colour=df[color].map(name))
        # each value keeps its style whatever the chart shows: taken from the whole table's
        # values (a metric that one algorithm lacks had shifted the others' colours), in
        # the what-if page's palette and dashes
        every = [name(v) for v in sorted(table[color].dropna().unique(), key=sort_key)]
        style = {v: series_style(i) for i, v in enumerate(every)}
        kw.update(color="_colour", color_discrete_map={v: c for v, (c, _d) in style.items()},
                  category_orders={"_colour": every})
        if not scatter:
            kw.update(line_dash="_colour", line_dash_map={v: d for v, (_c, d) in style.items()})
        kw["labels"]["_colour"] = color
    rows = 0
    if facet != NONE:
        rows = math.ceil(df[facet].nunique() / WRAP)
        kw.update(facet_col=facet, facet_col_wrap=WRAP, facet_col_spacing=0.06,
                  facet_row_spacing=min(0.12, 0.3 / rows) if rows > 1 else 0.0)
    if f"{y}_lo" in df.columns and f"{y}_hi" in df.columns:
        kw["error_y"] = df[f"{y}_hi"] - df[y]
        kw["error_y_minus"] = df[y] - df[f"{y}_lo"]
    fig = px.scatter(df, **kw) if scatter else px.line(df, markers=True, **kw)
    title, fmt = titles[y]
    fig.update_yaxes(title_text=title, tickformat=fmt, rangemode="tozero")
    xtitle = x
    if x in metrics:
        xtitle, xfmt = titles[x]
        fig.update_xaxes(title_text=xtitle, tickformat=xfmt)
    vals = sorted(df[x].unique(), key=sort_key) if x in inputs else []
    unit = si_unit(x) if x in inputs else None
    if unit is not None:  # an axis read in SI: its unit, ticks 5G not 5B (audit L)
        xtitle = f"{x} ({unit})"
        fig.update_xaxes(title_text=xtitle, tickformat="~s")
    if x in ("workers", "bandwidth_factor", "latency_factor") and len(vals) > MANY:
        fig.update_xaxes(type="log")  # a sampled count: the axis's own ticks, not each value
    elif x in ("workers", "bandwidth_factor", "latency_factor"):
        text = ([f"{v:,}" for v in vals] if x == "workers" else [f"{v:g}x" for v in vals])
        fig.update_xaxes(type="log", tickvals=vals, ticktext=text)
    elif (1 < len(vals) <= MANY and all(sort_key(v)[0] == 0 for v in vals)
          and x not in sampled and not sampled_axis(table, x)):  # a numeric grid axis:
        fig.update_xaxes(tickvals=vals)  # its values, not ticks between them (64, 128; not 70)
    elif vals and all(sort_key(v)[0] == 0 and float(v).is_integer() for v in vals):
        fig.update_xaxes(tickformat=",d")  # a count: no 140.5 between 140 and 141
    if rows:
        _facet_grid(fig, xtitle, title, rows)
    else:
        fig.update_layout(height=HEIGHT, legend={"orientation": "h", "y": -0.15},
                          margin=MARGIN)
    return fig


def _facet_grid(fig: Any, xtitle: str, ytitle: str, rows: int) -> None:
    """One y and one x title for the whole grid (annotations beside and below it), the x tick
    labels on each column's lowest drawn cell, empty cells hidden, and a height that gives
    every row room for its plot, its tick labels and the next row's facet label."""
    height = HEIGHT + ROW * max(0, rows - 2)
    fig.update_xaxes(title_text=None)
    fig.update_yaxes(title_text=None)
    layout = fig.layout
    drawn = {t.xaxis for t in fig.data}
    lowest: dict[tuple[float, float], tuple[float, str]] = {}
    for name in [k for k in layout.to_plotly_json() if k.startswith("xaxis")]:
        ref = "x" + name[len("xaxis"):]
        axis = layout[name]
        yaxis = layout["yaxis" + name[len("xaxis"):]]
        if ref not in drawn:  # an empty cell of the last row: no frame, no ticks
            axis.visible = False
            yaxis.visible = False
            continue
        col = tuple(axis.domain)
        bottom = yaxis.domain[0]
        if col not in lowest or bottom < lowest[col][0]:
            lowest[col] = (bottom, name)
    for _bottom, name in lowest.values():
        layout[name].showticklabels = True
    plot_h = height - FACET_MARGIN["t"] - FACET_MARGIN["b"]
    fig.add_annotation(text=ytitle, textangle=-90, showarrow=False, xref="paper", x=0,
                       xanchor="right", xshift=-Y_TITLE_SHIFT, yref="paper", y=0.5,
                       yanchor="middle", font={"size": 14})
    fig.add_annotation(text=xtitle, showarrow=False, xref="paper", x=0.5, xanchor="center",
                       yref="paper", y=0, yanchor="top", yshift=-X_TITLE_SHIFT,
                       font={"size": 14})
    fig.update_layout(height=height, margin=FACET_MARGIN,
                      legend={"orientation": "h", "yanchor": "top",
                              "y": -(X_TITLE_SHIFT + 30) / plot_h})
