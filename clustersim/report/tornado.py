"""Charts of uncertainty: tornado charts of sensitivity indices and band charts of the
propagated metrics (offline HTML pages, :mod:`.htmlpage`).

A tornado chart puts the input with the largest index on top, so that the eye reads the
drivers first; Sobol's total index (ST) and first-order index (S1) are two bars side by
side, each with its 95 % interval (ST - S1 is what the input does through interactions).  A band chart shows the median
over the input samples as a line and the 5th-95th percentile as a shaded band, per algorithm
against workers.  plotly is imported here only, lazily by the commands that write a chart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clustersim.report.convergence_chart import COLOURS, DASHES
from clustersim.report.htmlpage import escape_text as _esc
from clustersim.report.htmlpage import figure_script, standalone_page
from clustersim.report.white_figure import white_figure

__all__ = ["tornado_figures", "tornado_html", "band_figures", "band_html"]

_CONFIG = {"displaylogo": False, "responsive": True}


def _whisker(m: Mapping[str, Any], key: str, order: list[int]) -> dict[str, Any]:
    """An index's 95 % interval, a dark line on its own bar, not below 0 (an index is a
    share of variance; the symmetric bootstrap interval ran below zero: audit L)."""
    conf = [m[f"{key}_conf"][i] for i in order]
    return {"type": "data", "array": conf, "symmetric": False, "color": "#333333",
            "arrayminus": [min(c, max(0.0, m[key][i])) for c, i in zip(conf, order)]}


def tornado_figures(res: Mapping[str, Any]) -> list[Any]:
    """One horizontal bar chart per metric, inputs sorted by their total index (or mu*)."""
    import plotly.graph_objects as go

    from clustersim.report.uncertainty import band_title

    sobol = res["method"] == "sobol"
    figs = []
    for key, m in res["metrics"].items():
        order = sorted(range(len(m["names"])), key=lambda i: m["rank_by"][i])  # largest on top
        names = [_esc(m["names"][i]) for i in order]
        fig = white_figure()
        if sobol:
            fig.add_trace(go.Bar(y=names, x=[m["ST"][i] for i in order], orientation="h",
                                 name="ST (total, with interactions)",
                                 marker={"color": COLOURS[0]},
                                 error_x=_whisker(m, "ST", order)))
            fig.add_trace(go.Bar(y=names, x=[m["S1"][i] for i in order], orientation="h",
                                 name="S1 (first order, alone)",
                                 marker={"color": COLOURS[1]},
                                 error_x=_whisker(m, "S1", order)))
            axis = "Sobol index (share of the metric's variance)"
        else:
            fig.add_trace(go.Bar(y=names, x=[m["mu_star"][i] for i in order],
                                 orientation="h", name="mu* (mean |elementary effect|)",
                                 marker={"color": COLOURS[0]},
                                 error_x={"type": "data", "array": [m["mu_star_conf"][i]
                                                                    for i in order]}))
            axis = f"Morris mu* ({_esc(m['what'])})"
        # the legend sits above the bars, under the title: below them it covered the
        # x axis's tick labels and its title
        fig.update_layout(
            title={"text": (f"{_esc(res['algorithm'])} at {res['workers']:,} workers, "
                            f"{_esc(band_title(key, m['what'], m['band']))}"),
                   "y": 0.97, "yanchor": "top"},
            # side by side, each with its 95 % interval: S1 drawn inside ST had covered ST's
            # whisker, and S1 had none, though the notes quote S1 +- (audit K M3)
            barmode="group", xaxis={"title": axis}, yaxis={"automargin": True},
            height=220 + 40 * len(names),
            margin={"t": 110, "b": 60}, legend={"orientation": "h", "yanchor": "bottom",
                                                "y": 1.02, "x": 0})
        figs.append(fig)
    return figs


def tornado_html(res: Mapping[str, Any]) -> str:
    """The sensitivity result as one standalone page (same result, same bytes)."""
    parts = [figure_script(f, f"clustersim-tornado-{k}", _CONFIG)
             for k, f in enumerate(tornado_figures(res))]
    inputs = "".join(f"<li>{_esc(i['field'])}: {_esc(i['distribution'])}</li>"
                     for i in res.get("inputs", []))
    from clustersim.uncertainty.sobol_check import check_text

    notes = "".join(f"<p>{_esc(check_text(m['what'], m['too_few_samples'], res['base_samples']))}"
                    f"</p>" for m in res["metrics"].values() if m.get("too_few_samples"))
    before = (f"<h1>Sensitivity: {_esc(res['scenario'])}</h1><p>{_esc(res['method'])} "
              f"indices from {res['evaluations']} simulations (SALib).</p><ul>{inputs}</ul>"
              f"{notes}")
    return standalone_page(f"clustersim sensitivity: {res['scenario']}", before, parts)


def band_figures(name: str, unc: Mapping[str, Any],
                 metrics: tuple[str, ...] = ("efficiency", "throughput")) -> list[Any]:
    """Median line and 90 % band against workers, one colour per algorithm, per metric."""
    import plotly.graph_objects as go

    figs = []
    for key in metrics:
        fig = white_figure()
        ticks: set[int] = set()
        for k, (title, rows) in enumerate(unc["algorithms"].items()):
            rows = [r for r in rows if key in r and r[key]["median"] is not None]
            if not rows:
                continue
            c = COLOURS[k % len(COLOURS)]
            w = [r["workers"] for r in rows]
            ticks.update(w)
            hi = [r[key]["p95"] for r in rows]
            lo = [r[key]["p05"] for r in rows]
            fig.add_trace(go.Scatter(x=w + w[::-1], y=hi + lo[::-1], fill="toself",
                                     fillcolor=c, opacity=0.2, line={"width": 0}, mode="lines",
                                     name=f"{_esc(title)} 90% band", hoverinfo="skip",
                                     legendgroup=title))
            fig.add_trace(go.Scatter(x=w, y=[r[key]["median"] for r in rows],
                                     mode="lines+markers", legendgroup=title,
                                     line={"color": c, "dash": DASHES[k % len(DASHES)]},
                                     name=f"{_esc(title)} median"))
        if not fig.data:  # no algorithm has this band (efficiency of one worker count)
            continue
        axis_title, fmt = _BAND_AXES.get(key, (key, ""))
        # the worker counts themselves as ticks: a bare log axis read "9 1 2 3 ... 9"
        xaxis = {"title": "workers", "type": "log", "tickvals": sorted(ticks),
                 "ticktext": [f"{t:,}" for t in sorted(ticks)]}
        fig.update_layout(title=f"{_esc(name)}: {axis_title} (input uncertainty: median, "
                                f"5th-95th percentile over {unc['samples']} samples)",
                          xaxis=xaxis, yaxis={"title": axis_title, "tickformat": fmt},
                          height=480)
        figs.append(fig)
    return figs


#: a band chart's y axis: title with its unit, and plotly's tick format
_BAND_AXES = {"efficiency": ("scaling efficiency", ".0%"),
              "throughput": ("throughput (samples/s)", "~s"),
              "iteration_time": ("iteration time (s)", "~s")}


def band_html(name: str, unc: Mapping[str, Any]) -> str:
    """``predict --uncertainty``'s standalone page: the band charts, the uncertain inputs and
    any note that the nominal prediction lies outside its band."""
    parts = [figure_script(f, f"clustersim-band-{k}", _CONFIG)
             for k, f in enumerate(band_figures(name, unc))]
    inputs = "".join(f"<li>{_esc(i.get('field') or ', '.join(i['calibration']))}</li>"
                     for i in unc["inputs"])
    notes = "".join(f"<p>{_esc(n['text'])}</p>" for n in unc.get("nominal_outside") or ())
    before = (f"<h1>Uncertainty: {_esc(name)}</h1><p>{_esc(unc['interval'])}</p>"
              f"<ul>{inputs}</ul>{notes}")
    return standalone_page(f"clustersim uncertainty: {name}", before, parts)
