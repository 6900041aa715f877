"""The what-if page's time-to-accuracy charts: time to target against workers, and progress
(or emulated accuracy) against simulated time, one line per algorithm and grid position.

Why a module of its own: a scenario can reach its target two ways - the analytic
convergence model (``workload.convergence``: each point's ``time_to_target``) or an emulated
run (``run.convergence: emulate``: the point's ``emulation``, kept by
:mod:`clustersim.report.whatif_cells`) - and the page charts whichever it has, with the
analytic twin of an emulated run beside it as open markers, the way ``predict`` prints them
side by side.  Every grid position's lines share one axis (one unit, one scale), because the
panel switches between them in place.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from clustersim.report.plot_axes import log_ticks, tick_text, time_unit
from clustersim.report.white_figure import white_figure

__all__ = ["tta_figure", "progress_figure", "point_tta"]

Cells = list[tuple[float, float]]


def point_tta(p: dict[str, Any]) -> float | None:
    """A point's time to target in seconds: emulated where the point was emulated, else the
    analytic model's (None: never reached, or no convergence at all)."""
    emu = p.get("emulation")
    return emu.get("time_to_target") if emu else p.get("time_to_target")


def tta_figure(go: Any, grid: dict[str, Any], combos: Cells, algs: list[str],
               names: dict[str, str], style: dict[str, Any], xw: dict[str, Any],
               layout: dict[str, Any]) -> tuple[Any, list[int]] | None:
    """Time to target vs workers, one line per algorithm and cell (the panel switches cells),
    when the scenario has a convergence profile or emulates; gaps: never."""
    pts_all = [p for c in combos for a in algs for p in grid["cells"][c][a]]
    if not any(point_tta(p) is not None for p in pts_all):
        return None
    emulated = any(p.get("emulation") for p in pts_all)
    twins = [p["emulation"].get("analytic_time_to_target") for p in pts_all
             if p.get("emulation")]
    size, unit, short = time_unit([point_tta(p) for p in pts_all] + twins)
    tag = "emulated" if emulated else "model"
    fig, own = white_figure(), []
    for k, cell in enumerate(combos):
        for a in algs:
            pts = grid["cells"][cell][a]
            color, dash = style[a]
            w = [p["workers"] for p in pts]
            t = [None if point_tta(p) is None else point_tta(p) / size for p in pts]
            fig.add_trace(go.Scatter(x=w, y=t, name=f"{names[a]} ({tag})",
                                     mode="lines+markers", legendgroup=a, connectgaps=False,
                                     line={"color": color, "dash": dash, "width": 2.5},
                                     hovertemplate=f"%{{x}} workers: %{{y:.3g}} {short} "
                                                   f"to target ({tag})"))
            own.append(k)
            model = [(p.get("emulation") or {}).get("analytic_time_to_target") for p in pts]
            if emulated and any(v is not None for v in model):
                fig.add_trace(go.Scatter(
                    x=w, y=[None if v is None else v / size for v in model],
                    name=f"{names[a]} (model)", mode="markers", legendgroup=a,
                    marker={"color": color, "symbol": "circle-open", "size": 11,
                            "line": {"width": 2}},
                    hovertemplate=f"%{{x}} workers: %{{y:.3g}} {short} to target (model)"))
                own.append(k)
    ticks = log_ticks(y for tr in fig.data for y in tr.y)
    what = ("lines: emulated; circles: the analytic model for the same run" if emulated
            else "analytic convergence model")
    fig.update_layout(layout, title={"text": f"Time to target vs workers ({what}; gaps: never)"},
                      xaxis=xw, yaxis={"title": {"text": f"time to target ({unit})"},
                                       "type": "log", "tickvals": ticks,
                                       "ticktext": tick_text(ticks)})
    return fig, own


def _result(cell: dict[str, list[dict[str, Any]]]) -> Any:
    """A stand-in for a SweepResult, what chart_data reads: points, and emulated runs."""
    emulation = {}
    for a, pts in cell.items():
        runs = [SimpleNamespace(
            workers=p["workers"], time=p["emulation"]["time"], metric=p["emulation"]["metric"],
            metric_name=p["emulation"]["metric_name"], target=p["emulation"]["target"],
            time_to_target=(math.inf if p["emulation"]["time_to_target"] is None
                            else p["emulation"]["time_to_target"]))
            for p in pts if p.get("emulation")]
        if runs:
            emulation[a] = runs
    return SimpleNamespace(points={a: [SimpleNamespace(**p) for p in pts]
                                   for a, pts in cell.items()}, emulation=emulation)


def progress_figure(scn: Any, grid: dict[str, Any], combos: Cells,
                    style: dict[str, tuple[str, str]]) -> tuple[Any, list[int]] | None:
    """Modelled progress to the target (or the emulated metric) against simulated time at the
    largest point, one line per algorithm (clustersim.report.convergence's chart) and cell, in
    the other charts' colours and dashes: the panel switches it with them.  One time axis for
    every cell's lines (unit and log/linear chosen over all of them)."""
    from clustersim.report.convergence import chart_data
    from clustersim.report.convergence_chart import convergence_figures, progress_traces

    data = [chart_data(scn, _result(grid["cells"][cell])) for cell in combos]
    ends = [max(c["time"]) for curves, _ in data for c in curves.values() if c["time"]]
    def restyle(title: str) -> dict[str, Any]:
        """The page's colour and dash for a line (a trace update: its line replaced whole)."""
        props: dict[str, Any] = {"legendgroup": title}
        if title in style:
            props["line"] = {"color": style[title][0], "dash": style[title][1], "width": 2.5}
        return props

    fig, own = None, []
    for k, (curves, tta) in enumerate(data):
        if not curves:
            continue
        if fig is None:  # the first position's figure: title, axes, target line
            fig = convergence_figures(scn.name, curves, tta, axis_ends=ends, tta_chart=False)[0]
            for title, trace in zip(curves, fig.data):
                trace.update(restyle(title))
        else:  # the other positions' lines, on it
            traces = progress_traces(curves, tta, ends)
            for title, trace in zip(curves, traces):
                trace.update(restyle(title))
            fig.add_traces(traces)
        own += [k] * len(curves)
    if fig is not None:  # the legend under the plot, as in the page's other charts
        fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.16, "x": 0,
                                  "title": None}, margin={"b": 40})
    return None if fig is None else (fig, own)
