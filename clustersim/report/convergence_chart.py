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

__all__ = ["convergence_figures", "DASHES", "COLOURS"]

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


def convergence_figures(name: str, curves: Mapping[str, Mapping[str, Any]],
                        tta: Mapping[str, Sequence[tuple[int, float | None]]]) -> list[Any]:
    """Figures for a scenario: ``curves[title] = {"time": [s], "value": [...], "metric": str,
    "kind": "emulated" | "model", "target": float | None}`` and ``tta[title] = [(workers,
    seconds or None), ...]`` (None: never reaches the target)."""
    import plotly.graph_objects as go

    figs = []
    if curves:
        fig = go.Figure()
        kinds = {c["kind"] for c in curves.values()}
        metric = next(iter(curves.values()))["metric"]
        for k, (title, c) in enumerate(curves.items()):
            tag = "" if len(kinds) == 1 else f" ({c['kind']})"
            fig.add_trace(go.Scatter(
                x=[t / 3600.0 for t in c["time"]], y=c["value"], name=_esc(f"{title}{tag}"),
                mode="lines", line=_style(k),
                hovertemplate=f"{_esc(title)}: %{{x:.3g}} h, {_esc(c['metric'])} "
                              "%{y:.3g}<extra></extra>"))
        target = next((c.get("target") for c in curves.values() if c.get("target") is not None),
                      None)
        if target is not None:
            fig.add_hline(y=target, line={"color": "#888888", "dash": "dot"},
                          annotation_text=f"target {target:g}", annotation_position="top left")
        what = ("modelled progress to target (fraction of the ideal run's steps)"
                if kinds == {"model"} else metric)
        fig.update_layout(title=_esc(f"{name}: {what} vs simulated time"),
                          xaxis={"title": "simulated wall-clock time (hours)"},
                          yaxis={"title": _esc(what)}, template="plotly_white", height=520,
                          legend={"title": "algorithm"})
        figs.append(fig)
    if any(any(t is not None for _, t in pts) for pts in tta.values()):
        fig = go.Figure()
        ticks = sorted({w for pts in tta.values() for w, _ in pts})
        for k, (title, pts) in enumerate(tta.items()):
            fig.add_trace(go.Scatter(
                x=[w for w, _ in pts], y=[None if t is None else t / 3600.0 for _, t in pts],
                name=_esc(title), mode="lines+markers", line=_style(k), connectgaps=False,
                hovertemplate=f"{_esc(title)}: %{{x}} workers, %{{y:.3g}} h<extra></extra>"))
        fig.update_layout(title=_esc(f"{name}: time to target vs workers (gaps: never "
                                     f"reaches it)"),
                          xaxis={"title": "workers", "type": "log", "tickvals": ticks},
                          yaxis={"title": "time to target (hours)", "type": "log"},
                          template="plotly_white", height=480, legend={"title": "algorithm"})
        figs.append(fig)
    return figs
