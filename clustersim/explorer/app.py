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

from clustersim.errors import InputError
from clustersim.explorer import chart
from clustersim.explorer.chart import ANY, NONE, sampled_axis, sort_key, value_label
from clustersim.explorer.table import FACTORS, INPUTS, metric_choices

__all__ = ["Explorer", "make_app", "figure", "options", "default_value", "labelled", "page_factors",
           "value_label", "ANY", "NONE"]


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
    #: runs the table's sweep with the page's changes (:mod:`clustersim.explorer.extend`)
    extend: Any = None
    #: a Sobol'/LHS sweep's sampled axes (:func:`~clustersim.explorer.table.sampled_inputs`)
    sampled: frozenset[str] = frozenset()
    #: a background computation from its start to its rows joining the table (the progress
    #: bar is full a moment before: a second start in between raced it, audit L M2)
    busy: bool = False
    #: counts the changes of ``message``: a page's poll shows the message only when it has
    #: changed since that page last showed it, so a page's own answer (an invalid factor)
    #: stays until the next event instead of being overwritten by the next poll
    said: int = 0

    def computed_at(self) -> dict[str, Any] | None:
        """The values of the table's other axes (a sweep's ``workload.batch_per_worker``,
        ``seed``, ...) that computed rows take: the scenario's own (:attr:`defaults`); None
        when the table cannot grow.

        Why not the values the page has fixed: a sweep applies its axes by its own rules (an
        ``algorithm.X`` axis reaches each ``compare`` entry that takes X, variants, constraints,
        a seed per point, through its executor and cache), which the what-if simulation of
        the scenario does not; rows computed with the page's value set on the scenario would
        be labelled with a sweep's axis value without having been simulated as the sweep
        simulates it.  So new points stay at the scenario's values, and the page says so
        (:func:`~clustersim.explorer.chart.no_rows`, :meth:`start`)."""
        if self.compute is None:
            return None
        return {c: self.defaults[c] for c in self.inputs if c not in INPUTS
                and self.defaults.get(c) is not None}

    @property
    def running(self) -> bool:
        """Whether a computation is under way (read under :attr:`lock`)."""
        return self.busy  # set from a start to the rows joining: covers done < todo too

    def start(self, bw: float, lat: float) -> str:
        """Begin computing one cell in the background; a message for the page."""
        import pandas as pd

        if self.compute is None:
            return "this table has no scenario: open a scenario to compute new points"
        have = self.table
        at = self.computed_at() or {}
        if {"bandwidth_factor", "latency_factor"} <= set(have.columns):
            mask = (have["bandwidth_factor"] == bw) & (have["latency_factor"] == lat)
            for col, val in at.items():  # the rows a computation would add: at these values
                if col in have.columns:
                    key = sort_key(val)
                    mask &= have[col].map(lambda v, key=key: sort_key(v) == key).astype(bool)
            if mask.any():
                where = ", ".join(f"{c} {v}" for c, v in at.items())
                where = (f" at {where} (the scenario's own: new points are computed there)"
                         if where else "")
                return f"bandwidth {bw:g}x, latency {lat:g}x is already in the table{where}"

        def job(advance: Callable[[int], None]) -> tuple[Any, str]:
            rows = self.compute(bw, lat, advance)  # type: ignore[misc]
            for col in self.inputs:  # an axis the computed rows lack: the scenario's value
                if col not in rows.columns:  # (unknown: NaN in a numeric column, whose
                    # values a "(scenario)" text made a column of text, audit L H2)
                    numeric = self.table[col].dtype.kind in "fiu"
                    rows[col] = self.defaults.get(col, float("nan") if numeric
                                                  else "(scenario)")
            return (pd.concat([self.table, rows], ignore_index=True),
                    f"added bandwidth {bw:g}x, latency {lat:g}x ({len(rows)} rows)")

        return self.background(self.total(), f"computing bandwidth {bw:g}x, latency {lat:g}x",
                               job, "clustersim-explore-compute")

    def background(self, todo: int, message: str,
                   job: Callable[[Callable[[int], None]], tuple[Any, str]], name: str) -> str:
        """Run ``job(advance)`` in a thread of its own (one at a time); it returns the new
        table and the page's message.  Shared by the bandwidth/latency cells and a grown
        sweep (:mod:`clustersim.explorer.extend`).  The new rows, the message, the progress
        and the version change in one locked step: a poll in between would show "added"
        beside a progress bar not yet full."""
        with self.lock:
            if self.running:
                return "a computation is already running"
            self.done, self.todo, self.busy = 0, max(1, todo), True
            self.message = message
            self.said += 1

        def advance(n: int = 1) -> None:
            with self.lock:
                self.done += n

        def work() -> None:
            try:
                table, said = job(advance)
            except Exception as exc:  # shown on the page; the app keeps serving
                table, said = None, f"failed: {exc}"
            with self.lock:
                if table is not None:
                    self.table = table
                self.message = said
                self.said += 1
                self.done = self.todo
                self.version += 1
                self.busy = False

        threading.Thread(target=work, daemon=True, name=name).start()
        return message


def page_factors(bw: Any, lat: Any) -> tuple[float, float]:
    """The page's bandwidth and latency factors (the text of its boxes), checked as the
    command line checks them (:func:`clustersim.report.factors.parse_factors`: 0.001 to 1000) - the page once
    simulated 1e308x, which the CLI refuses - or an :class:`InputError` that says what to
    give.

    Why text boxes and not number inputs: a browser's number input sends nothing for an
    empty box or ``xyz`` (the page then repeated the last value's error), and Chromium drops
    a decimal comma (``2,5`` became 25, computed without a word: QA 7a M5, L7).  So the page
    sends what was typed, and a comma is refused, naming the decimal point: ``2,5`` could
    be 2.5 or the CLI's list of 2 and 5, and a guess would be a silent wrong factor."""
    from clustersim.report.factors import FACTOR_RANGE
    from clustersim.report.factors import parse_factors as _factors

    lo, hi = FACTOR_RANGE
    out = []
    for what, val in (("bandwidth", bw), ("latency", lat)):
        text = "" if val is None or isinstance(val, bool) else str(val).strip()
        ask = f"give a {what} factor ({lo:g} to {hi:g})"
        if not text:
            raise InputError(ask)
        if "," in text:
            raise InputError(f"{what}: give one factor, written with a decimal point (2.5, "
                             f"not 2,5), not {text!r}")
        try:
            vals = _factors(text, what)
        except InputError as exc:  # the CLI names its flag; the page's box has no "--"
            if "is outside" in exc.message:
                raise InputError(exc.message.removeprefix("--")) from None
            raise InputError(f"{what}: {text!r} is not a number: {ask}") from None
        out.append(vals[0])
    return out[0], out[1]


def options(table: Any, col: str) -> list[str]:
    """A fixed control's choices: the column's values, in order, as text.

    Where the cells are not hashable (a Parquet list column), distinct by their text:
    ``unique()`` on such a column ended ``explore`` in a traceback (QA 16c H4).
    :func:`~clustersim.explorer.table.split_columns` leaves such columns out; this keeps a
    table built another way from crashing the page."""
    try:
        return [str(v) for v in sorted(table[col].dropna().unique(), key=sort_key)]
    except TypeError:  # unhashable cells: the slow way, once per page load
        pass
    seen: dict[str, Any] = {}
    for v in table[col]:
        if not _missing(v):
            seen.setdefault(str(v), v)
    return sorted(seen, key=lambda t: sort_key(seen[t]))


def _missing(v: Any) -> bool:
    """Whether a cell is empty (None, NaN, NaT) - a list cell is not."""
    import pandas as pd

    return bool(pd.api.types.is_scalar(v) and pd.isna(v))  # a list cell is a value


def labelled(col: str, opts: list[str]) -> list[Any]:
    """A fixed control's options as the dropdown shows them: a network factor's as the
    what-if page writes it (``0.25x``, ``1x``; :func:`~clustersim.report.whatif_panel.
    factor_label`), its value still the column's text (:func:`options`), which the chart's
    slicing and :func:`default_value` compare; any other column's as they are.

    Why: the controls showed ``1.0`` and ``0.25`` for factors the page's own messages, the
    chart's ticks and the what-if page call ``1x`` and ``0.25x`` (QA 10)."""
    from clustersim.report.whatif_panel import factor_label

    out = []
    for o in opts:
        kind, num = sort_key(o)  # a number: its factor label, or with its unit; text: as it is
        if o == ANY or kind != 0:
            label = o
        elif col in FACTORS:
            label = factor_label(num)
        else:
            label = value_label(col, num)
        out.append({"label": label, "value": o})
    return out


def default_value(ex: Explorer, col: str, opts: list[str]) -> str | None:
    """A fixed control's start: the scenario's own value where the table has it (1x for the
    network factors: not the largest, which would show a changed network unannounced), else
    the largest worker count (where the network matters), else the first value."""
    if ANY in opts and (col in ex.sampled or sampled_axis(ex.table, col)):  # audit K H1
        return ANY
    opts = [o for o in opts if o != ANY]
    want = ex.defaults.get(col)
    if want is not None:
        for o in opts:
            if o == str(want) or sort_key(o) == sort_key(want):
                return o
    if not opts:
        return None
    return opts[-1] if col == "workers" else opts[0]


def figure(ex: Explorer, x: str, y: str, color: str, facet: str, fixed: dict[str, Any]) -> Any:
    """The chart for the current choices over the explorer's table
    (:func:`clustersim.explorer.chart.figure`)."""
    return chart.figure(ex.table, ex.inputs, ex.metrics, x, y, color, facet, fixed,
                        ex.computed_at(), ex.sampled)


def make_app(ex: Explorer, title: str) -> Any:
    """The Dash app over ``ex`` (callbacks close over it).  The layout is built per page load,
    from the table as it is then: a reload shows the computed rows' values too."""
    from dash import ALL, Dash, Input, Output, State, dcc, html, no_update

    app = Dash(__name__, title=f"clustersim explore: {title}")
    first = lambda cols, name: name if name in cols else cols[0]  # noqa: E731
    shown = metric_choices(ex.metrics)  # without the simulation's counters
    axis_opts = [*ex.inputs, *shown]

    def pick(ident: str, label: str, opts: list[str], value: str) -> Any:
        return html.Div([html.Label(label, htmlFor=ident),
                         dcc.Dropdown(id=ident, options=opts, value=value, clearable=False)],
                        style={"width": "14em", "display": "inline-block", "marginRight": "1em"})

    def page() -> Any:
        with ex.lock:  # a computation under way shows; a finished one's news is old news
            table, version, said = ex.table, ex.version, ex.said
            running, done, todo = ex.running, ex.done, ex.todo
            message = ex.message if running else ""
        controls = []
        for col in ex.inputs:
            opts = [ANY, *options(table, col)]
            controls.append(html.Div([
                html.Label(col, htmlFor={"type": "fix", "axis": col}),
                dcc.Dropdown(id={"type": "fix", "axis": col}, options=labelled(col, opts),
                             value=default_value(ex, col, opts), clearable=False),
            ], style={"width": "12em", "display": "inline-block", "marginRight": "1em"}))
        return html.Div([
            html.H2(f"clustersim explore: {title}"),
            html.Div([pick("x", "x axis", axis_opts, first(ex.inputs, "workers")),
                      pick("y", "metric", shown, first(shown, "throughput")),
                      pick("color", "colour", [NONE, *ex.inputs], first(ex.inputs, "algorithm")),
                      pick("facet", "facet", [NONE, *ex.inputs], NONE)]),
            html.Div([html.B("other axes (fixed at): ")], style={"marginTop": "0.6em"}),
            html.Div(controls, id="fixed"),
            dcc.Graph(id="chart"),
            html.Div([
                html.B("compute new points: "), "bandwidth x ",
                # text, not type=number: the page_factors docstring says why
                dcc.Input(id="bw", type="text", inputMode="decimal", value="1.5",
                          autoComplete="off", style={"width": "6em"}),
                " latency x ",
                dcc.Input(id="lat", type="text", inputMode="decimal", value="1",
                          autoComplete="off", style={"width": "6em"}),
                html.Button("compute", id="go", n_clicks=0, style={"marginLeft": "1em"}),
                html.Progress(id="progress", value=str(done) if running else "0",
                              max=str(todo) if running else "1",
                              style={"marginLeft": "1em"}),
                html.Span(message, id="status", style={"marginLeft": "1em"}),
            ], style={"display": "block" if ex.compute else "none"}),
            html.Div([
                html.B("grow the sweep (as --set): "),
                dcc.Input(id="grow", type="text", autoComplete="off", value="",
                          placeholder="sweep.sample.n=32; sweep.axes.workers=[4, 8, 16]",
                          style={"width": "28em"}),
                html.Button("run", id="run", n_clicks=0, style={"marginLeft": "1em"}),
            ], style={"display": "block" if ex.extend else "none", "marginTop": "0.4em"}),
            dcc.Interval(id="tick", interval=500),
            dcc.Store(id="version", data=version),
            dcc.Store(id="said", data=said),
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
                  Output("progress", "value", allow_duplicate=True),
                  Output("progress", "max", allow_duplicate=True),
                  Input("go", "n_clicks"), State("bw", "value"), State("lat", "value"),
                  prevent_initial_call=True)
    def _go(_n, bw, lat):
        # the bar restarts with the answer: it showed the last computation's full bar while
        # "computing" until the next poll, and all along when that one was quick (QA 7a L6)
        try:
            said = ex.start(*page_factors(bw, lat))
        except InputError as exc:
            return str(exc), no_update, no_update
        if not said.startswith("computing "):  # refused: the bar stays as it was
            return said, no_update, no_update
        with ex.lock:
            return said, str(ex.done), str(max(ex.todo, 1))

    @app.callback(Output("status", "children", allow_duplicate=True),
                  Input("run", "n_clicks"), State("grow", "value"), prevent_initial_call=True)
    def _grow(_n, text):
        from clustersim.explorer.extend import start_extend

        return start_extend(ex, text)

    @app.callback(Output("progress", "value"), Output("progress", "max"),
                  Output("status", "children"), Output("said", "data"),
                  Output("version", "data"), Output({"type": "fix", "axis": ALL}, "options"),
                  Input("tick", "n_intervals"), State("version", "data"),
                  State("said", "data"))
    def _tick(_n, seen, heard):
        with ex.lock:
            done, todo, msg, ver, said = ex.done, ex.todo, ex.message, ex.version, ex.said
            table = ex.table
        # the message only when it changed since this page showed it: an answer of _go's
        # (an invalid factor) stays until the next event
        status = (msg, said) if said != heard else (no_update, no_update)
        # the bar moves while a computation runs, and fills when it ends (with its rows);
        # otherwise it is left as this page last set it
        running = bool(todo) and done < todo
        progress = ((str(done), str(max(todo, 1))) if running or ver != seen
                    else (no_update, no_update))
        if ver == seen:  # nothing new: leave the chart (and the user's zoom) alone; an ALL
            # output takes one no_update per control (a bare one fails the whole callback)
            return (*progress, *status, no_update, [no_update] * len(ex.inputs))
        return (*progress, *status, ver, [labelled(c, [ANY, *options(table, c)]) for c in ex.inputs])

    return app
