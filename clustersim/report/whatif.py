"""What-if charts: one standalone HTML page with interactive Plotly figures.

Why precomputed grids and sliders rather than a live server: clusters are often offline and
people mail these files around.  We simulate the scenario on a small grid of changes (network
bandwidth and latency scaled by factors; the scenario's own workers axis and algorithms) and
let the page switch between them instantly.  plotly.js is embedded, so the file opens anywhere.

plotly is imported here only, and this module is imported only by the ``whatif`` command: the
simulator core never pulls it in.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from clustersim.report.htmlpage import escape_text as _esc
from clustersim.report.htmlpage import figure_script, standalone_page
from clustersim.scenario.schema import Scenario

__all__ = ["scaled_platform", "whatif_grid", "whatif_html"]


def scaled_platform(platform: Any, bandwidth: float = 1.0, latency: float = 1.0) -> Any:
    """The same platform with every link's bandwidth and latency multiplied (routes unchanged)."""
    p = copy.copy(platform)
    p.capacity = np.asarray(platform.capacity, dtype=float) * bandwidth
    p.latency = np.asarray(platform.latency, dtype=float) * latency
    p.capacity.setflags(write=False)
    p.latency.setflags(write=False)
    return p


def _variant(scn: Scenario, bw: float, lat: float) -> Scenario:
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
                advance: Callable[[int], None] = lambda n=1: None) -> dict[str, Any]:
    """Simulate every point of :func:`grid_points`.

    Returns ``{"cells": {(bw, lat): {algorithm: [point dicts]}}, ...}`` for training scenarios
    and ``{"cells": {(bw, lat): [benchmark rows]}, ...}`` for collective benchmarks.
    """
    bandwidths = sorted({1.0, *map(float, bandwidths)})
    latencies = sorted({1.0, *map(float, latencies)})
    cells: dict[tuple[float, float], Any] = {}
    for bw, lat in grid_points(bandwidths, latencies):
        v = _variant(scn, bw, lat)
        if scn.benchmark is not None:
            from clustersim.sim.collective_bench import run_benchmark

            cells[(bw, lat)] = [r.to_dict() for r in run_benchmark(v)]
        else:
            from clustersim.sim.sweep import run_sweep

            res = run_sweep(v)
            cells[(bw, lat)] = {t: [p.to_dict() for p in pts] for t, pts in res.points.items()}
        advance(1)
    return {"cells": cells, "bandwidths": bandwidths, "latencies": latencies}


def _slider(figure: Any, labels: list[str], per_step: int, prefix: str, active: int) -> None:
    steps = []
    n = len(labels) * per_step
    for k, label in enumerate(labels):
        vis = [False] * n
        for j in range(per_step):
            vis[k * per_step + j] = True
        steps.append({"method": "update", "label": label, "args": [{"visible": vis}]})
    figure.update_layout(sliders=[{"active": active, "currentvalue": {"prefix": prefix},
                                   "steps": steps, "pad": {"t": 40}}])


def _training_figures(scn: Scenario, grid: dict[str, Any]) -> list[Any]:
    import plotly.graph_objects as go

    bws = grid["bandwidths"]
    base_lat = 1.0
    combos = grid_points(bws, grid["latencies"])
    labels = [f"bandwidth x{bw:g}, latency x{lat:g}" for bw, lat in combos]
    algs = list(grid["cells"][combos[0]].keys())
    names = {a: _esc(a) for a in algs}  # labels come from the scenario: text, not markup
    name = _esc(scn.name)
    active = combos.index((1.0, 1.0))

    thr = go.Figure()
    eff = go.Figure()
    brk = go.Figure()
    for k, cell in enumerate(combos):
        data = grid["cells"][cell]
        for a in algs:
            pts = data[a]
            w = [p["workers"] for p in pts]
            thr.add_trace(go.Scatter(x=w, y=[p["throughput"] for p in pts], name=names[a],
                                     mode="lines+markers", visible=(k == active),
                                     hovertemplate="%{x} workers: %{y:,.0f} samples/s"))
            eff.add_trace(go.Scatter(x=w, y=[100 * p["efficiency"] for p in pts], name=names[a],
                                     mode="lines+markers", visible=(k == active),
                                     hovertemplate="%{x} workers: %{y:.1f}%"))
        for part, color in (("compute", "#4C78A8"), ("comm", "#F58518"), ("wait", "#B0B0B0")):
            brk.add_trace(go.Bar(x=[names[a] for a in algs], y=[1e3 * data[a][-1][part] for a in algs], name=part,
                                 marker_color=color, visible=(k == active),
                                 hovertemplate="%{x}: %{y:.2f} ms"))
    ticks = sorted({p["workers"] for a in algs for p in grid["cells"][combos[0]][a]})
    for fig, title, ytitle, log in (
        (thr, "Throughput vs workers", "samples/s", True),
        (eff, "Parallel efficiency vs workers", "efficiency (%)", False),
    ):
        fig.update_layout(title=f"{name}: {title}",
                          xaxis={"title": "workers", "type": "log", "tickvals": ticks},
                          yaxis={"title": ytitle, "type": "log" if log else "linear"},
                          template="plotly_white", height=520)
        _slider(fig, labels, len(algs), "", active)
    brk.update_layout(barmode="stack", template="plotly_white", height=520,
                      title=f"{name}: one iteration at the largest point, where time goes",
                      yaxis={"title": "ms per iteration"})
    _slider(brk, labels, 3, "", active)

    # efficiency at the largest point as bandwidth changes: "does the network matter?"
    sens = go.Figure()
    for a in algs:
        xs = list(bws)
        ys = [100 * grid["cells"][(bw, base_lat)][a][-1]["efficiency"] for bw in bws]
        sens.add_trace(go.Scatter(x=xs, y=ys, name=names[a], mode="lines+markers",
                                  hovertemplate="bandwidth x%{x}: %{y:.1f}%"))
    largest = grid["cells"][combos[0]][algs[0]][-1]["workers"]
    sens.update_layout(title=f"{name}: efficiency at {largest} workers vs network bandwidth",
                       xaxis={"title": "link bandwidth (x scenario)", "type": "log"},
                       yaxis={"title": "efficiency (%)"}, template="plotly_white", height=480)
    return [thr, eff, brk, sens]


def _benchmark_figures(scn: Scenario, grid: dict[str, Any]) -> list[Any]:
    import plotly.graph_objects as go

    combos = grid_points(grid["bandwidths"], grid["latencies"])
    labels = [f"bandwidth x{bw:g}, latency x{lat:g}" for bw, lat in combos]
    rows0 = grid["cells"][combos[0]]
    keys = list(dict.fromkeys((r["algorithm"], r["ranks"]) for r in rows0))
    active = combos.index((1.0, 1.0))
    fig = go.Figure()
    for k, cell in enumerate(combos):
        rows = grid["cells"][cell]
        for alg, ranks in keys:
            sel = [r for r in rows if r["algorithm"] == alg and r["ranks"] == ranks]
            fig.add_trace(go.Scatter(x=[r["size"] for r in sel], y=[r["busbw"] / 1e9 for r in sel],
                                     name=_esc(f"{alg}, {ranks} ranks"), mode="lines+markers",
                                     visible=(k == active),
                                     hovertemplate="%{x:.3s}B: %{y:.3f} GB/s"))
    fig.update_layout(title=f"{_esc(scn.name)}: bus bandwidth by message size",
                      xaxis={"title": "message size (bytes)", "type": "log"},
                      yaxis={"title": "busbw (GB/s)"}, template="plotly_white", height=600)
    _slider(fig, labels, len(keys), "", active)
    return [fig]


def whatif_html(scn: Scenario, grid: dict[str, Any]) -> str:
    """A standalone page (plotly.js embedded) that is safe to open whoever wrote the scenario
    (see :mod:`clustersim.report.htmlpage`); deterministic div ids so that the same scenario
    and seed give the same bytes."""
    figs = (_benchmark_figures(scn, grid) if scn.benchmark is not None
            else _training_figures(scn, grid))
    config = {"displaylogo": False, "responsive": True}
    parts = [figure_script(fig, f"clustersim-fig-{k}", config) for k, fig in enumerate(figs)]
    about = f"<p>{_esc(scn.about)}</p>" if scn.about else ""
    assumptions = "".join(f"<li>{_esc(a)}</li>" for a in scn.assumptions)
    before = (
        f"<h1>What if: {_esc(scn.name)}</h1>{about}"
        f"<p>Platform: {_esc(scn.platform.describe())}. Move the sliders: every position is a "
        "full simulation with all link bandwidths / latencies scaled by that factor.</p>"
    )
    after = f"<h3>Assumptions</h3><ul>{assumptions}</ul>" if assumptions else ""
    return standalone_page(f"clustersim what-if: {scn.name}", before, parts, after)
