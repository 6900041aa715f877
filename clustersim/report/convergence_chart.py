"""Time-to-accuracy charts: accuracy (or loss, or modelled progress) against simulated time.

Why two kinds of line: an *emulated* run (``run.convergence: emulate``) trained a real small
task in simulated-time order, so its line is a measured accuracy or loss; an *analytic* point
has no accuracy curve, only the convergence layer's progress towards the target (McCandlish's
progress: fraction of the ideal run's steps, :func:`clustersim.convergence.progress_curve`).
The chart says which is which in the legend and the axis title; it never mixes the two on one
axis.  A second chart gives time to target against workers, one line per algorithm.

plotly is imported here only, lazily by the commands that write a chart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clustersim.report.plot_axes import log_ticks, tick_text, time_unit, wide_span
from clustersim.report.white_figure import TRACES, white_figure

__all__ = ["convergence_figures", "progress_traces", "DASHES", "COLOURS"]

#: one distinct colour and dash per series (Okabe-Ito colours: distinguishable by colour-blind
#: readers; dashes tell lines apart in grey print too)
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
           "#000000")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def _style(k: int) -> dict[str, Any]:
    return {"color": COLOURS[k % len(COLOURS)], "dash": DASHES[(k // len(COLOURS) + k)
                                                              % len(DASHES)]}


def _esc(text: str) -> str:
    # plotly reads a subset of HTML in titles and legends: scenario strings are text
    from clustersim.report.htmlpage import escape_text

    return escape_text(text)


def _workers(title: str, c: Mapping[str, Any],
             tta: Mapping[str, Sequence[tuple[int, float | None]]]) -> int | None:
    """The worker count a curve was run at: its own ``workers``, else what
    :func:`clustersim.report.convergence.chart_data` picks (an emulated curve: its algorithm's
    largest point; a modelled one: the largest point every algorithm has)."""
    if c.get("workers") is not None:
        return int(c["workers"])
    if c.get("kind") == "emulated" and tta.get(title):
        return int(tta[title][-1][0])
    ends = [pts[-1][0] for pts in tta.values() if pts]
    return int(min(ends)) if ends else None


def _tag(kind: str) -> str:
    return "model" if kind == "model" else "emulated"


def progress_traces(curves: Mapping[str, Mapping[str, Any]],
                    tta: Mapping[str, Sequence[tuple[int, float | None]]],
                    axis_ends: Sequence[float]) -> list[dict[str, Any]]:
    """The progress chart's lines (:func:`convergence_figures`' first figure), one per curve,
    as trace dicts in the unit ``axis_ends`` call for: the what-if page adds those of every
    grid position to one figure instead of building a figure per position to copy from."""
    size, _unit, short = time_unit(list(axis_ends))
    workers = {title: _workers(title, c, tta) for title, c in curves.items()}
    same = len(set(workers.values())) == 1
    traces = []
    for k, (title, c) in enumerate(curves.items()):
        tag = _tag(c["kind"]) + ("" if same or workers[title] is None
                                 else f", {workers[title]:,} workers")
        traces.append(TRACES.Scatter(
            x=[t / size for t in c["time"]], y=c["value"], name=_esc(f"{title} ({tag})"),
            mode="lines", line=_style(k),
            hovertemplate=f"{_esc(title)}: %{{x:.3g}} {short}, {_esc(c['metric'])} "
                          "%{y:.3g}<extra></extra>"))
    return traces


def convergence_figures(name: str, curves: Mapping[str, Mapping[str, Any]],
                        tta: Mapping[str, Sequence[tuple[int, float | None]]],
                        axis_ends: Sequence[float] | None = None,
                        model_tta: Mapping[str, Sequence[tuple[int, float | None]]] | None = None,
                        tta_chart: bool = True) -> list[Any]:
    """Figures for a scenario: ``curves[title] = {"time": [s], "value": [...], "metric": str,
    "kind": "emulated" | "model", "target": float | None, "workers": int (optional)}`` and
    ``tta[title] = [(workers, seconds or None), ...]`` (None: never reaches the target).

    Every legend entry says "(emulated)" or "(model)", as the page's text promises; the
    progress chart says the worker count it shows; times read in minutes, hours or days as
    the run is long (:func:`~clustersim.report.plot_axes.time_unit`); the time axis goes log
    when the lines end more than 100x apart, so that a short one is not hidden along the
    axis.  ``axis_ends``: the last time of every line the axis must fit (the what-if page
    switches several grid positions' lines on one axis), by default the curves' own.
    ``model_tta``: the analytic model's time to target for the same emulated runs (as
    ``tta``), drawn as open circles in each algorithm's colour beside the emulated lines.
    ``tta_chart``: False leaves the time-to-target chart out (the what-if page draws its
    own from every cell, and built six of these only to drop them: 0.15 s of its time)."""
    figs = []
    if curves:
        fig = white_figure()
        kinds = {c["kind"] for c in curves.values()}
        metric = next(iter(curves.values()))["metric"]
        ends = [max(c["time"]) for c in curves.values() if c["time"]]
        ends = list(axis_ends) if axis_ends is not None else ends
        size, unit, _short = time_unit(ends)
        workers = {title: _workers(title, c, tta) for title, c in curves.items()}
        same = len(set(workers.values())) == 1
        fig.add_traces(progress_traces(curves, tta, ends))
        target = next((c.get("target") for c in curves.values() if c.get("target") is not None),
                      None)
        if target is not None:
            fig.add_hline(y=target, line={"color": "#888888", "dash": "dot"},
                          annotation_text=f"target {target:g}", annotation_position="top left")
        what = ("modelled progress to target (fraction of the ideal run's steps)"
                if kinds == {"model"} else metric)
        at = (f" at {next(iter(workers.values())):,} workers"
              if same and None not in workers.values() else " at each algorithm's largest point")
        xaxis: dict[str, Any] = {"title": f"simulated wall-clock time ({unit})"}
        if wide_span(ends):
            ticks = log_ticks([t / size for c in curves.values() for t in c["time"]]
                              + [t / size for t in ends])
            xaxis.update(type="log", tickvals=ticks, ticktext=tick_text(ticks))
        fig.update_layout(title=_esc(f"{name}: {what} vs simulated time{at}"),
                          xaxis=xaxis, yaxis={"title": _esc(what)}, height=520,
                          legend={"title": "algorithm"})
        figs.append(fig)
    if tta_chart and any(any(t is not None for _, t in pts) for pts in tta.values()):
        figs.append(_tta_chart(TRACES, name, curves, tta, model_tta or {}))
    return figs


def _tta_chart(go: Any, name: str, curves: Mapping[str, Mapping[str, Any]],
               tta: Mapping[str, Sequence[tuple[int, float | None]]],
               model_tta: Mapping[str, Sequence[tuple[int, float | None]]]) -> Any:
    """Time to target against workers on log axes with full-value ticks (1-2-5: "20, 50,
    100", not plotly's "2 3 ... 9 100 2 3"), in the unit the durations call for."""
    fig = white_figure()
    kind = "emulated" if any(c["kind"] == "emulated" for c in curves.values()) else "model"
    size, unit, short = time_unit([t for pts in tta.values() for _, t in pts]
                                  + [t for pts in model_tta.values() for _, t in pts])
    ticks = sorted({w for pts in tta.values() for w, _ in pts})
    for k, (title, pts) in enumerate(tta.items()):
        fig.add_trace(go.Scatter(
            x=[w for w, _ in pts], y=[None if t is None else t / size for _, t in pts],
            name=_esc(f"{title} ({kind})"), mode="lines+markers", line=_style(k),
            connectgaps=False,
            hovertemplate=f"{_esc(title)}: %{{x}} workers, %{{y:.3g}} {short}<extra></extra>"))
        twin = model_tta.get(title) if kind == "emulated" else None
        if twin and any(t is not None for _, t in twin):
            fig.add_trace(go.Scatter(
                x=[w for w, _ in twin], y=[None if t is None else t / size for _, t in twin],
                name=_esc(f"{title} (model)"), mode="markers",
                marker={"color": _style(k)["color"], "symbol": "circle-open", "size": 11},
                hovertemplate=f"{_esc(title)} (model): %{{x}} workers, %{{y:.3g}} {short}"
                              "<extra></extra>"))
    yt = log_ticks(y for tr in fig.data for y in tr.y)
    fig.update_layout(title=_esc(f"{name}: time to target vs workers ({_WHAT[kind]}; gaps: "
                                 "never reaches it)"),
                      xaxis={"title": "workers", "type": "log", "tickvals": ticks,
                             "ticktext": [f"{w:,}" for w in ticks]},
                      yaxis={"title": f"time to target ({unit})", "type": "log",
                             "tickvals": yt, "ticktext": tick_text(yt)},
                      height=480, legend={"title": "algorithm"})
    return fig


_WHAT = {"emulated": "emulated", "model": "analytic convergence model"}
