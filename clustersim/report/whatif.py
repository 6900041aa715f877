"""What-if charts: one standalone HTML page with interactive Plotly figures.

Why precomputed grids and one control panel rather than a live server: clusters are often
offline and people mail these files around (the live app is ``clustersim explore``).  We
simulate the scenario on a small grid of changes (network bandwidth and latency scaled by
factors; the scenario's own workers axis and algorithms) and the page's control panel switches
every chart between them at once.  plotly.js is embedded, so the file opens anywhere.

Speed: the grid's cells are whole sweeps, but their points are independent and each is seeded
by itself, so all the cells' points go to one process pool (heaviest first) instead of one
pool per cell, which waited for each cell's slowest point in turn; the scaled platforms share
the scenario's route cache (routes do not change when links get faster).  Each point is the
same :func:`~clustersim.sim.sweep.simulate_point` call that a sweep of that cell alone makes,
and goes through the per-point cache of :mod:`clustersim.report.whatif_cells`: a page asked
again, or with more factors, only simulates what it has not simulated before.

plotly is imported here only, and this module is imported only by the ``whatif`` command: the
simulator core never pulls it in.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from clustersim.report.htmlpage import escape_text as _esc
from clustersim.report.htmlpage import figure_script, script_json, standalone_page
from clustersim.report.plot_axes import log_ticks, tick_text
from clustersim.report.whatif_bench_chart import benchmark_figures
from clustersim.report.whatif_layout import TOOLBAR_REMOVE, finish_figures
from clustersim.report.whatif_panel import PANEL_JS, factor_label, panel_html, series_style
from clustersim.report.whatif_tta import progress_figure, tta_figure
from clustersim.report.white_figure import TRACES, white_figure
from clustersim.scenario.schema import Scenario

__all__ = ["scaled_platform", "scaled_scenario", "grid_points", "whatif_grid", "whatif_html"]


def scaled_platform(platform: Any, bandwidth: float = 1.0, latency: float = 1.0) -> Any:
    """The same platform with every link's bandwidth and latency multiplied (routes unchanged,
    and their cache shared: a shallow copy).

    The copy gets its own ``memo``: what runs derive from the platform and keep there
    (point-to-point message plans: latencies and drain times) depends on the links' speeds,
    so a shared memo would hand one cell the plans of another whenever two cells' points run
    in the same process.
    """
    p = copy.copy(platform)
    if hasattr(platform, "memo"):
        p.memo = {}
    p.capacity = np.asarray(platform.capacity, dtype=float) * bandwidth
    p.latency = np.asarray(platform.latency, dtype=float) * latency
    p.capacity.setflags(write=False)
    p.latency.setflags(write=False)
    return p


def scaled_scenario(scn: Scenario, bw: float, lat: float) -> Scenario:
    """The scenario, its variants too, with every link's bandwidth times ``bw`` and latency
    times ``lat``: one what-if position (a variant on another platform scales alike)."""
    return replace(scn, platform=scaled_platform(scn.platform, bw, lat),
                   variants=tuple((label, replace(v, platform=scaled_platform(v.platform, bw, lat)))
                                  for label, v in scn.variants))


def grid_points(bandwidths: Sequence[float], latencies: Sequence[float]
                ) -> list[tuple[float, float]]:
    """Bandwidth factors at the scenario's latency, then latency factors at its bandwidth
    (one axis at a time: the question is "which of the two matters", not their product)."""
    return ([(float(bw), 1.0) for bw in bandwidths]
            + [(1.0, float(lat)) for lat in latencies if lat != 1.0])


def whatif_grid(scn: Scenario, bandwidths: Sequence[float], latencies: Sequence[float],
                advance: Callable[[int], None] = lambda n=1: None,
                jobs: int | None = None, cache: Any = None,
                extend: bool = False) -> dict[str, Any]:
    """Simulate every point of :func:`grid_points` (training scenarios: through
    ``cache``, a :class:`~clustersim.report.whatif_cells.CellCache`, when given; with
    ``extend``, points past a master's saturation are extended, not simulated:
    :func:`~clustersim.report.whatif_cells.simulate_cells`).

    Returns ``{"cells": {(bw, lat): {algorithm: [point dicts]}}, ...}`` for training scenarios
    and ``{"cells": {(bw, lat): [benchmark rows]}, ...}`` for collective benchmarks.
    ``advance`` is called once per point (training) or per cell (benchmarks): see
    :func:`grid_size`.
    """
    bandwidths = sorted({1.0, *map(float, bandwidths)})
    latencies = sorted({1.0, *map(float, latencies)})
    combos = grid_points(bandwidths, latencies)
    cells: dict[tuple[float, float], Any] = {}
    if scn.benchmark is not None:
        from clustersim.sim.collective_bench import run_benchmark

        for bw, lat in combos:
            cells[(bw, lat)] = [r.to_dict() for r in run_benchmark(scaled_scenario(scn, bw, lat))]
            advance(1)
        return {"cells": cells, "bandwidths": bandwidths, "latencies": latencies}
    from clustersim.report.whatif_cells import simulate_cells

    cells = simulate_cells(scn, combos, advance, jobs, cache, extend=extend)
    return {"cells": cells, "bandwidths": bandwidths, "latencies": latencies}


def grid_size(scn: Scenario, bandwidths: Sequence[float], latencies: Sequence[float]) -> int:
    """How many times :func:`whatif_grid` calls ``advance`` (for a progress bar)."""
    combos = grid_points(sorted({1.0, *bandwidths}), sorted({1.0, *latencies}))
    if scn.benchmark is not None:
        return len(combos)
    from clustersim.sim.sweep import sweep_cases, sweep_tasks

    return len(combos) * len(sweep_tasks(sweep_cases(scn)))


_LAYOUT = {"height": 500, "hovermode": "closest",
           "margin": {"t": 60, "b": 40, "l": 70, "r": 20},
           "legend": {"orientation": "h", "yanchor": "top", "y": -0.14, "x": 0}}


def _band(go: Any, x: list[float], lo: list[float], hi: list[float], color: str,
          group: str) -> Any:
    """A shaded 90% interval (over seeds) behind a series: hi along x, then lo back."""
    return go.Scatter(x=x + x[::-1], y=hi + lo[::-1], fill="toself", fillcolor=color,
                      opacity=0.18, line={"width": 0}, hoverinfo="skip", showlegend=False,
                      legendgroup=group, mode="lines")


def _styles(grid: dict[str, Any], combos: list[tuple[float, float]]
            ) -> dict[str, tuple[str, str]]:
    """Each algorithm's (colour, dash), the same in every chart of the page."""
    return {a: series_style(i) for i, a in enumerate(grid["cells"][combos[0]])}


def _training_figures(scn: Scenario, grid: dict[str, Any], combos: list[tuple[float, float]]
                      ) -> tuple[list[Any], list[list[int]]]:
    """The figures and, per figure, the grid cell each trace belongs to (-1: every cell)."""
    go = TRACES  # traces as dicts, validated once, by the figure (white_figure.py)

    style = _styles(grid, combos)
    algs = list(style)
    names = {a: _esc(a) for a in algs}  # labels come from the scenario: text, not markup
    thr, eff, brk = white_figure(), white_figure(), white_figure()
    owners: list[list[int]] = [[], [], []]
    banded = False
    for k, cell in enumerate(combos):
        data = grid["cells"][cell]
        for a in algs:
            pts = data[a]
            color, dash = style[a]
            w = [p["workers"] for p in pts]
            line = {"color": color, "dash": dash, "width": 2.5}
            band = [p["interval"].get("throughput") for p in pts]
            if all(band) and any(lo != hi for lo, hi in band):
                # throughput only: an efficiency band from the throughput's interval and the
                # smallest point's mean went above 100 % at that point, which is 100 % by
                # definition (the ratio's spread over seeds is not the marginals')
                thr.add_trace(_band(go, w, [b[0] for b in band], [b[1] for b in band],
                                    color, a))
                owners[0].append(k)
                banded = True
            marks = _extension_marks(pts)
            suffix = marks.pop("suffix", "")
            thr.add_trace(go.Scatter(x=w, y=[p["throughput"] for p in pts], name=names[a],
                                     mode="lines+markers", line=line, legendgroup=a,
                                     hovertemplate="%{x} workers: %{y:,.0f} samples/s"
                                     + suffix, **marks))
            eff.add_trace(go.Scatter(x=w, y=[100 * p["efficiency"] for p in pts], name=names[a],
                                     mode="lines+markers", line=line, legendgroup=a,
                                     hovertemplate="%{x} workers: %{y:.1f}%" + suffix,
                                     **marks))
            owners[0].append(k)
            owners[1].append(k)
        marks = _extension_marks([data[a][-1] for a in algs])
        for part, color in (("compute", "#4C78A8"), ("comm", "#F58518"), ("wait", "#9D9D9D")):
            brk.add_trace(go.Bar(y=[names[a] for a in algs], x=[1e3 * data[a][-1][part] for a in algs],
                                 name=part, orientation="h", marker_color=color,
                                 hovertemplate="%{y}: %{x:.2f} ms" + marks.get("suffix", ""),
                                 customdata=marks.get("customdata")))
            owners[2].append(k)
    counts = sorted({p["workers"] for a in algs for p in grid["cells"][combos[0]][a]})
    xw = {"title": {"text": "workers"}, "type": "log", "tickvals": counts,
          "ticktext": [f"{t:,}" for t in counts]}
    # a log axis when the series span more than two decades: on a linear one the seven
    # saturated masters of knl_4253 lay on top of each other along the floor
    ys = [y for tr in thr.data if tr.fill is None for y in tr.y if y]
    if ys and max(ys) > 100 * min(ys):
        yticks = log_ticks(ys)
        yt = {"type": "log", "tickvals": yticks, "ticktext": tick_text(yticks)}
    else:
        yt = {"tickformat": "~s", "rangemode": "tozero"}
    shade = (f" (shaded: 5th-95th percentile over {scn.run.repeats} seeds)" if banded
             else "")
    thr.update_layout(_LAYOUT, title={"text": f"Throughput vs workers{shade}"}, xaxis=xw,
                      yaxis={"title": {"text": "samples/s"}, **yt})
    eff.update_layout(_LAYOUT, title={"text": "Parallel efficiency vs workers"}, xaxis=xw,
                      yaxis={"title": {"text": "efficiency (%)"}, "rangemode": "tozero"})
    largest = grid["cells"][combos[0]][algs[0]][-1]["workers"]
    brk.update_layout(_LAYOUT, barmode="stack",
                      height=max(320, 110 + 34 * len(algs)),
                      title={"text": f"One iteration at {largest:,} workers: where time goes"},
                      xaxis={"title": {"text": "ms per iteration"}},
                      yaxis={"automargin": True, "autorange": "reversed"},
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 1,
                              "xanchor": "right"})

    figs = [thr, eff, brk]
    # one worker count: efficiency is 100 % by definition (flat lines at 100): no efficiency
    # chart, and the factor charts show throughput
    single = len(counts) == 1
    if single:
        figs, owners = [thr, brk], [owners[0], owners[2]]
    for axis, values in (("bandwidth", grid["bandwidths"]), ("latency", grid["latencies"])):
        if len(values) > 1:  # one factor: a chart of one dot per series says nothing
            fig, own = _factor_figure(go, grid, combos, axis, style, names, largest,
                                      "throughput" if single else "efficiency")
            figs.append(fig)
            owners.append(own)
    tta = tta_figure(go, grid, combos, algs, names, style, xw, _LAYOUT)
    if tta is not None:
        figs.append(tta[0])
        owners.append(tta[1])
    return figs, owners


def _extension_marks(pts: list[dict[str, Any]]) -> dict[str, Any]:
    """A series' hollow markers and hover line for its points extended past the master's
    saturation (``extended_from``), nothing for a series simulated throughout (its trace
    is the same bytes as before there were extended points)."""
    ext = [p.get("extended_from") for p in pts]
    if not any(ext):
        return {}
    return {"marker": {"symbol": ["circle-open" if e else "circle" for e in ext],
                       "size": [9 if e else 6 for e in ext]},
            "customdata": [f"extended from {e:,} workers, not simulated (master saturated)"
                           if e else "simulated" for e in ext],
            "suffix": "<br>%{customdata}"}


def extended_count(grid: dict[str, Any]) -> tuple[int, int]:
    """(points extended past their master's saturation, all points) of a training grid."""
    pts = [p for cell in grid["cells"].values() for series in cell.values() for p in series]
    return sum(1 for p in pts if p.get("extended_from")), len(pts)


def _factor_ticks(values: Sequence[float]) -> list[float]:
    """The factors labelled on a factor axis: 1x, then powers of ten, then 2 and 5 times
    them, then the others, nearest to 1x first, each at least a tenth of the axis's log span
    from every label kept (clustered factors - 1, 2, 3, 4 between 0.001 and 1000 - had run
    their labels together); the others are points with the factor in their hover."""
    logs = {f: math.log10(f) for f in values}
    gap = max(max(logs.values()) - min(logs.values()), 0.3) / 10

    def round_first(f: float) -> tuple[int, float, float]:  # 10^k, then 2 and 5 x 10^k
        mant = round(f / 10.0 ** math.floor(logs[f] + 1e-9), 9)
        return (0 if mant == 1 else 1 if mant in (2, 5) else 2), abs(logs[f]), f

    kept = [1.0] if 1.0 in logs else []
    for f in sorted(values, key=round_first):
        if all(abs(logs[f] - logs[k]) >= gap for k in kept):
            kept.append(f)
    return sorted(kept)


def _factor_figure(go: Any, grid: dict[str, Any], combos: list[tuple[float, float]],
                   axis: str, style: dict[str, tuple[str, str]], names: dict[str, str],
                   largest: int, metric: str = "efficiency") -> tuple[Any, list[int]]:
    """Efficiency (``metric``: throughput, for a sweep of one worker count) at the largest
    point against one factor (the other at 1x): "does the network matter?".  The lines
    show every factor at once; a ring marks the position the panel shows (one trace per
    position), so the chart follows the panel like the others."""
    values = grid["bandwidths" if axis == "bandwidth" else "latencies"]
    at = {f: ((f, 1.0) if axis == "bandwidth" else (1.0, f)) for f in values}
    scale, unit, fmt = ((100.0, "efficiency (%)", ".1f}%") if metric == "efficiency"
                        else (1.0, "samples/s", ",.0f} samples/s"))
    fig, own = white_figure(), []
    for a in style:
        color, dash = style[a]
        ys = [scale * grid["cells"][at[f]][a][-1][metric] for f in values]
        fig.add_trace(go.Scatter(x=list(values), y=ys, name=names[a], mode="lines+markers",
                                 line={"color": color, "dash": dash, "width": 2.5},
                                 legendgroup=a,
                                 hovertemplate=f"{axis} %{{x}}x: %{{y:{fmt}<extra></extra>"))
        own.append(-1)
        for k, cell in enumerate(combos):
            f = cell[0] if axis == "bandwidth" else cell[1]
            if at.get(f) != cell:
                continue  # a position of the other factor: not on this chart
            fig.add_trace(go.Scatter(
                x=[f], y=[scale * grid["cells"][cell][a][-1][metric]], mode="markers",
                marker={"color": color, "symbol": "circle-open", "size": 14,
                        "line": {"width": 2}},
                showlegend=False, legendgroup=a, hoverinfo="skip"))
            own.append(k)
    other = "latency" if axis == "bandwidth" else "bandwidth"
    what = "Efficiency" if metric == "efficiency" else "Throughput"
    ticks = _factor_ticks(values)
    fig.update_layout(_LAYOUT, title={"text": f"{what} at {largest:,} workers vs link "
                                              f"{axis} ({other} 1x; ring: the panel's)"},
                      xaxis={"title": {"text": f"link {axis} (x scenario)"}, "type": "log",
                             "tickvals": ticks, "ticktext": [factor_label(b) for b in ticks],
                             "tickangle": 0},
                      yaxis={"title": {"text": unit}, "rangemode": "tozero"})
    return fig, own


def whatif_html(scn: Scenario, grid: dict[str, Any]) -> str:
    """A standalone page (plotly.js embedded) that is safe to open whoever wrote the scenario
    (see :mod:`clustersim.report.htmlpage`); deterministic div ids so that the same scenario
    and seed give the same bytes.  Traces of the grid cell not shown start hidden; the panel's
    script (hashed by the page's CSP like every other) toggles them in every chart at once."""
    combos = grid_points(grid["bandwidths"], grid["latencies"])
    active = combos.index((1.0, 1.0))
    figs, owners = (benchmark_figures(grid, combos, _LAYOUT) if scn.benchmark is not None
                    else _training_figures(scn, grid, combos))
    if scn.benchmark is None:
        prog = progress_figure(scn, grid, combos, _styles(grid, combos))
        if prog is not None:
            figs.append(prog[0])
            owners.append(prog[1])
    finish_figures(figs, owners)
    for fig, own in zip(figs, owners):
        for trace, k in zip(fig.data, own):
            trace.visible = k < 0 or k == active
    config = {"displaylogo": False, "responsive": True,
              "modeBarButtonsToRemove": list(TOOLBAR_REMOVE)}
    ids = [f"clustersim-fig-{k}" for k in range(len(figs))]
    parts = [figure_script(fig, i, config) for fig, i in zip(figs, ids)]
    state = {"cells": combos, "active": active,
             "figures": [{"id": i, "owners": own} for i, own in zip(ids, owners)]}
    panel_script = f"var CLUSTERSIM_WHATIF = {script_json(state)};\n{PANEL_JS}"
    about = f"<p>{_esc(scn.about)}</p>" if scn.about else ""
    from clustersim.scenario.assumed import assumed_figures, assumed_line

    line = assumed_line(assumed_figures(scn))
    assumptions = "".join(f"<li>{_esc(a)}</li>" for a in (*scn.assumptions,
                                                           *([line] if line else [])))
    ext, total = (0, 0) if scn.benchmark is not None else extended_count(grid)
    extended = (
        f" {ext} of its {total} points, hollow markers, are not simulated: a master-based "
        "method's points past the worker count where its master is already busy all the "
        "time are extended from that point (the master's rate stays; iteration time and "
        "staleness grow with the workers). <code>clustersim whatif --exact</code> simulates "
        "them." if ext else "")
    before = (
        f"<h1>What if: {_esc(scn.name)}</h1>{about}"
        f"<p>Platform: {_esc(scn.platform.describe())}. Every position of the panel is a "
        "full simulation with all link bandwidths / latencies scaled by that factor; the "
        f"panel drives every chart.{extended}</p>"
        + panel_html(grid["bandwidths"], grid["latencies"])
    )
    after = f"<h3>Assumptions</h3><ul>{assumptions}</ul>" if assumptions else ""
    return standalone_page(f"clustersim what-if: {scn.name}", before, parts, after,
                           scripts_after=[panel_script])
