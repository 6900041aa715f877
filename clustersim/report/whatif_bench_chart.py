"""The what-if page's charts for a collective benchmark: bus bandwidth by message size, one
chart per rank count.

Why one chart per rank count: ``allreduce_crossbar16`` is 20 algorithms at 3 rank counts, and
one chart of 60 lines reused 20 (colour, dash) pairs and grew a legend that covered the x
axis title.  Per rank count, each chart has one line per algorithm, each in its own colour
and dash (:func:`~clustersim.report.whatif_panel.series_style` keeps the first 40 apart), and
the same algorithm keeps its style in every chart.  The legend sits right of the plot, where
it cannot meet the axis titles however many rows it has.  Sizes are powers of two, so the x
ticks are too, in binary units (64 MiB, 1 GiB), few enough not to collide.
"""

from __future__ import annotations

from typing import Any

from clustersim.report.htmlpage import escape_text as _esc
from clustersim.report.plot_axes import size_ticks
from clustersim.report.whatif_panel import series_style
from clustersim.report.white_figure import white_figure
from clustersim.units import format_size

__all__ = ["benchmark_figures"]

_LEGEND = {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top",
           "font": {"size": 11}}


def benchmark_figures(grid: dict[str, Any], combos: list[tuple[float, float]],
                      layout: dict[str, Any]) -> tuple[list[Any], list[list[int]]]:
    """One figure per rank count (in the scenario's order) and, per figure, the grid cell
    each trace belongs to (the panel shows one cell at a time)."""
    import plotly.graph_objects as go

    rows0 = grid["cells"][combos[0]]
    algs = list(dict.fromkeys(r["algorithm"] for r in rows0))
    style = {a: series_style(i) for i, a in enumerate(algs)}
    ranks = list(dict.fromkeys(r["ranks"] for r in rows0))
    sizes = sorted({r["size"] for r in rows0})
    ticks = size_ticks(sizes)
    xaxis = {"title": {"text": "message size"}, "type": "log", "tickvals": ticks,
             "ticktext": [format_size(t) for t in ticks]}
    figs, owners = [], []
    for n in ranks:
        fig, own = white_figure(), []
        for k, cell in enumerate(combos):
            rows = [r for r in grid["cells"][cell] if r["ranks"] == n]
            for alg in algs:
                sel = [r for r in rows if r["algorithm"] == alg]
                if not sel:
                    continue
                color, dash = style[alg]
                fig.add_trace(go.Scatter(
                    x=[r["size"] for r in sel], y=[r["busbw"] / 1e9 for r in sel],
                    customdata=[format_size(r["size"]) for r in sel], name=_esc(alg),
                    legendgroup=_esc(alg), mode="lines+markers",
                    line={"color": color, "dash": dash, "width": 2.5},
                    hovertemplate=f"{_esc(alg)}, %{{customdata}}: %{{y:.3f}} GB/s"
                                  "<extra></extra>"))
                own.append(k)
        shown = len({t.name for t in fig.data})
        fig.update_layout(layout, height=max(480, 140 + 30 * shown),
                          title={"text": f"Bus bandwidth by message size, {n:,} ranks"},
                          xaxis=xaxis, yaxis={"title": {"text": "busbw (GB/s)"}},
                          legend=_LEGEND, margin={"t": 60, "b": 60, "l": 70, "r": 20})
        figs.append(fig)
        owners.append(own)
    return figs, owners
