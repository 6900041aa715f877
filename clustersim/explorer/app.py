"""The Dash app: pick x, metric, colour and facet; fix the other axes; compute new cells.

Why Dash: its callbacks keep the state on the server (the table, the jobs computing new
points), so the page needs no hand-written JavaScript, and it serves plotly figures, which the
what-if pages already use.  The app binds to 127.0.0.1 unless told otherwise: it runs
simulations on request, so it is a local tool, not a public service.

New points: a scenario's (bandwidth, latency) factors not yet in the table are simulated in a
background thread (one at a time; :func:`~clustersim.explorer.table.compute_cells`, the
sweep's process pool) while a ``dcc.Interval`` polls its progress; finished rows join the
table and every control sees them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Explorer", "make_app", "figure", "options", "default_value"]

NONE = "(none)"


@dataclass
class Explorer:
    """The app's state: the table, and the job computing new points (if any).

    ``defaults`` are the scenario's own values of the inputs (1.0 for the network factors):
    the value a fixed control starts at, and the value of an input column that computed rows
    lack (a sweep table's axis, ``seed``), so that they stay selectable and a chart never mixes
    rows of different fixed inputs."""

    table: Any
    inputs: list[str]
    metrics: list[str]
    #: (bandwidth, latency, advance) -> rows; None: the table cannot grow (a bare Parquet file)
    compute: Callable[[float, float, Callable[[int], None]], Any] | None = None
    total: Callable[[], int] = lambda: 0
    defaults: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: int = 0
    todo: int = 0
    message: str = ""
    version: int = 0

    def start(self, bw: float, lat: float) -> str:
        """Begin computing one cell in the background; a message for the page."""
        import pandas as pd

        if self.compute is None:
            return "this table has no scenario: open a scenario to compute new points"
        have = self.table
        if {"bandwidth_factor", "latency_factor"} <= set(have.columns) and (
                (have["bandwidth_factor"] == bw) & (have["latency_factor"] == lat)).any():
            return f"bandwidth {bw:g}x, latency {lat:g}x is already in the table"
        with self.lock:
            if self.todo and self.done < self.todo:
                return "a computation is already running"
            self.done, self.todo = 0, max(1, self.total())
            self.message = f"computing bandwidth {bw:g}x, latency {lat:g}x"

        def advance(n: int = 1) -> None:
            with self.lock:
                self.done += n

        def work() -> None:
            # the new rows, the message, the progress and the version change in one locked
            # step: a poll in between would show "added" beside a progress bar not yet full
            try:
                rows = self.compute(bw, lat, advance)
                for col in self.inputs:  # an axis the computed rows lack: the scenario's value
                    if col not in rows.columns:
                        rows[col] = self.defaults.get(col, "(scenario)")
                table = pd.concat([self.table, rows], ignore_index=True)
                message = f"added bandwidth {bw:g}x, latency {lat:g}x ({len(rows)} rows)"
            except Exception as exc:  # shown on the page; the app keeps serving
                table, message = None, f"failed: {exc}"
            with self.lock:
                if table is not None:
                    self.table = table
                self.message = message
                self.done = self.todo
                self.version += 1

        threading.Thread(target=work, daemon=True, name="clustersim-explore-compute").start()
        return self.message


def _key(v: Any) -> tuple[int, Any]:
    """Sort key of a column's values: numbers by value, then text (a column may mix both)."""
    try:
        return (0, float(v))
    except (TypeError, ValueError):
        return (1, str(v))


def options(table: Any, col: str) -> list[str]:
    """A fixed control's choices: the column's values, in order, as text."""
    return [str(v) for v in sorted(table[col].dropna().unique(), key=_key)]


def default_value(ex: Explorer, col: str, opts: list[str]) -> str | None:
    """A fixed control's start: the scenario's own value where the table has it (1x for the
    network factors: not the largest, which would show a changed network unannounced), else
    the largest worker count (where the network matters), else the first value."""
    want = ex.defaults.get(col)
    if want is not None:
        for o in opts:
            if o == str(want) or _key(o) == _key(want):
                return o
    if not opts:
        return None
    return opts[-1] if col == "workers" else opts[0]


def _slice(ex: Explorer, fixed: dict[str, Any], free: set[str]) -> Any:
    df = ex.table
    for col, val in fixed.items():
        if col not in free and val is not None and col in df.columns:
            df = df[df[col].astype(str) == str(val)]
    return df


def _named(col: str, val: Any) -> str:
    if col in ("bandwidth_factor", "latency_factor"):
        return f"{col.split('_')[0]} {_key(val)[1]:g}x" if _key(val)[0] == 0 else f"{col} {val}"
    return f"{col} {val}"


def figure(ex: Explorer, x: str, y: str, color: str, facet: str, fixed: dict[str, Any]) -> Any:
    """The chart for the current choices (a plotly figure); a message in place of the chart
    when the fixed values select no rows (a combination not computed, an empty table)."""
    import plotly.express as px
    import plotly.graph_objects as go

    from clustersim.explorer.table import metric_title

    free = {x, color, facet} - {NONE}
    df = _slice(ex, fixed, free)
    df = df[df[y].notna()] if y in df.columns else df.iloc[:0]
    if not len(df):
        held = [_named(c, v) for c, v in fixed.items() if c not in free and v is not None]
        fig = go.Figure(layout={"template": "plotly_white", "height": 560,
                                "xaxis": {"visible": False}, "yaxis": {"visible": False}})
        fig.add_annotation(text=(f"no rows for {', '.join(held) or 'this choice'}: compute it "
                                 "or pick another value"), showarrow=False, font={"size": 16},
                           x=0.5, y=0.5, xref="paper", yref="paper")
        return fig
    order = [c for c in (color, facet, x) if c != NONE]
    df = df.iloc[sorted(range(len(df)), key=lambda i: [_key(df[c].iat[i]) for c in order])]
    kw: dict[str, Any] = {"x": x, "y": y, "markers": True, "template": "plotly_white"}
    if color != NONE:  # as text: a discrete colour (and dash) per value, numbers included
        df = df.assign(_colour=df[color].astype(str))
        kw.update(color="_colour", line_dash="_colour", labels={"_colour": color})
    if facet != NONE:
        kw["facet_col"] = facet
        kw["facet_col_wrap"] = 3
    if f"{y}_lo" in df.columns and f"{y}_hi" in df.columns:
        kw["error_y"] = df[f"{y}_hi"] - df[y]
        kw["error_y_minus"] = df[y] - df[f"{y}_lo"]
    fig = px.line(df, **kw)
    title, fmt = metric_title(y)
    fig.update_yaxes(title_text=title, tickformat=fmt, rangemode="tozero")
    if x in ex.metrics:
        xtitle, xfmt = metric_title(x)
        fig.update_xaxes(title_text=xtitle, tickformat=xfmt)
    vals = sorted(df[x].unique(), key=_key) if x in ex.inputs else []
    if x in ("workers", "bandwidth_factor", "latency_factor"):
        text = ([f"{v:,}" for v in vals] if x == "workers" else [f"{v:g}x" for v in vals])
        fig.update_xaxes(type="log", tickvals=vals, ticktext=text)
    elif 1 < len(vals) <= 12 and all(_key(v)[0] == 0 for v in vals):  # a numeric axis: its
        fig.update_xaxes(tickvals=vals)  # values, not ticks between them (64, 128; not 70)
    fig.update_layout(height=560, legend={"orientation": "h", "y": -0.15},
                      margin={"t": 40, "b": 40})
    return fig


def make_app(ex: Explorer, title: str) -> Any:
    """The Dash app over ``ex`` (callbacks close over it).  The layout is built per page load,
    from the table as it is then: a reload shows the computed rows' values too."""
    from dash import ALL, Dash, Input, Output, State, dcc, html, no_update

    app = Dash(__name__, title=f"clustersim explore: {title}")
    first = lambda cols, name: name if name in cols else cols[0]  # noqa: E731
    axis_opts = [*ex.inputs, *ex.metrics]

    def pick(ident: str, label: str, opts: list[str], value: str) -> Any:
        return html.Div([html.Label(label, htmlFor=ident),
                         dcc.Dropdown(id=ident, options=opts, value=value, clearable=False)],
                        style={"width": "14em", "display": "inline-block", "marginRight": "1em"})

    def page() -> Any:
        with ex.lock:
            table, version = ex.table, ex.version
        controls = []
        for col in ex.inputs:
            opts = options(table, col)
            controls.append(html.Div([
                html.Label(col, htmlFor={"type": "fix", "axis": col}),
                dcc.Dropdown(id={"type": "fix", "axis": col}, options=opts,
                             value=default_value(ex, col, opts), clearable=False),
            ], style={"width": "12em", "display": "inline-block", "marginRight": "1em"}))
        return html.Div([
            html.H2(f"clustersim explore: {title}"),
            html.Div([pick("x", "x axis", axis_opts, first(ex.inputs, "workers")),
                      pick("y", "metric", ex.metrics, first(ex.metrics, "throughput")),
                      pick("color", "colour", [NONE, *ex.inputs], first(ex.inputs, "algorithm")),
                      pick("facet", "facet", [NONE, *ex.inputs], NONE)]),
            html.Div([html.B("other axes (fixed at): ")], style={"marginTop": "0.6em"}),
            html.Div(controls, id="fixed"),
            dcc.Graph(id="chart"),
            html.Div([
                html.B("compute new points: "), "bandwidth x ",
                dcc.Input(id="bw", type="number", value=1.5, min=0.001, step="any",
                          style={"width": "6em"}),
                " latency x ",
                dcc.Input(id="lat", type="number", value=1, min=0.001, step="any",
                          style={"width": "6em"}),
                html.Button("compute", id="go", n_clicks=0, style={"marginLeft": "1em"}),
                html.Progress(id="progress", value="0", max="1", style={"marginLeft": "1em"}),
                html.Span(id="status", style={"marginLeft": "1em"}),
            ], style={"display": "block" if ex.compute else "none"}),
            dcc.Interval(id="tick", interval=500),
            dcc.Store(id="version", data=version),
        ], style={"fontFamily": "sans-serif", "maxWidth": "1200px", "margin": "auto"})

    app.layout = page

    @app.callback(Output("chart", "figure"),
                  Input("x", "value"), Input("y", "value"), Input("color", "value"),
                  Input("facet", "value"), Input({"type": "fix", "axis": ALL}, "value"),
                  Input("version", "data"))
    def _chart(x, y, color, facet, fixed, _version):
        return figure(ex, x, y, color, facet, dict(zip(ex.inputs, fixed)))

    @app.callback(Output({"type": "fix", "axis": ALL}, "disabled"),
                  Input("x", "value"), Input("color", "value"), Input("facet", "value"))
    def _linked(x, color, facet):
        return [c in (x, color, facet) for c in ex.inputs]

    @app.callback(Output("status", "children", allow_duplicate=True),
                  Input("go", "n_clicks"), State("bw", "value"), State("lat", "value"),
                  prevent_initial_call=True)
    def _go(_n, bw, lat):
        if not bw or not lat or bw <= 0 or lat <= 0:
            return "factors must be positive numbers"
        return ex.start(float(bw), float(lat))

    @app.callback(Output("progress", "value"), Output("progress", "max"),
                  Output("status", "children"), Output("version", "data"),
                  Output({"type": "fix", "axis": ALL}, "options"),
                  Input("tick", "n_intervals"), State("version", "data"))
    def _tick(_n, seen):
        with ex.lock:
            done, todo, msg, ver = ex.done, ex.todo, ex.message, ex.version
            table = ex.table
        if ver == seen:  # nothing new: leave the chart (and the user's zoom) alone; an ALL
            # output takes one no_update per control (a bare one fails the whole callback)
            return str(done), str(max(todo, 1)), msg, no_update, [no_update] * len(ex.inputs)
        return str(done), str(max(todo, 1)), msg, ver, [options(table, c) for c in ex.inputs]

    return app
