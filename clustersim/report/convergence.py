"""Time to accuracy for people and programs: the emulation's table, chart data, the --plot page.

The analytic figures (steps and time to target, statistical efficiency, goodput) sit in the
scaling and comparison tables (:mod:`clustersim.report.training`).  This module adds what only
an emulated run has - a measured curve of a real small task trained in simulated-time order -
and the data both kinds of chart are drawn from (:mod:`clustersim.report.convergence_chart`).
"""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.markup import escape

from clustersim.report.layout import Col, Omitted, print_table
from clustersim.units import format_duration

__all__ = ["print_emulation", "emulation_json", "chart_data", "plot_html"]

EMULATION_COLUMNS = (
    Col("algorithm", justify="left", priority=0), Col("workers", priority=0),
    Col("time to target"), Col("updates", priority=2), Col("worker steps", priority=3),
    Col("samples", priority=3), Col("final metric", priority=2), Col("stopped", priority=2),
    Col("analytic time", priority=1),
)


def _count(x: float) -> str:
    return "—" if not math.isfinite(x) else f"{x:,.0f}"


def print_emulation(console: Console, result: Any, wide: bool = False,
                    omitted: Omitted | None = None, scn: Any = None) -> list[str]:
    """One row per algorithm and point: what reaching the task's target took in simulated
    time, beside the analytic model's prediction for the same run (``analytic time``) where
    the convergence layer could make one.  Returns the columns left out; ``omitted``: also
    recorded there, for the footer the caller prints under all its tables."""
    emu = getattr(result, "emulation", None) or {}
    if not emu:
        return []
    first = next(r for rs in emu.values() for r in rs)
    rows = []
    for title, results in emu.items():
        analytic = getattr(result, "emulation_analytic", {}).get(title, [])
        for k, r in enumerate(results):
            a = analytic[k] if k < len(analytic) else None
            rows.append([escape(title), str(r.workers), format_duration(r.time_to_target),
                         _count(r.updates_to_target), _count(r.steps_to_target),
                         _count(r.samples_to_target),
                         f"{r.metric[-1]:.3f}" if r.metric else "—", r.stopped,
                         "—" if a is None else format_duration(a)])  # inf: "never"
    title = (f"convergence emulation: task {first.task}, target {first.metric_name} "
             f">= {first.target:g} (real math in simulated time)")
    hidden = print_table(console, title, list(EMULATION_COLUMNS), rows, wide=wide,
                         note=False, omitted=omitted)
    spec = getattr(getattr(scn, "run", None), "emulation", None)
    if spec is not None:
        from clustersim.sim.convfit import twin_mismatch

        diff = twin_mismatch(spec)
        if diff:
            console.print(f"[dim]no analytic time: the {escape(spec.task)} profile holds at "
                          f"the settings it was measured at; this run has "
                          f"{escape(diff)}[/dim]")
    return hidden


def emulation_json(result: Any) -> dict[str, Any]:
    """The emulated curves and figures per algorithm (``None`` where never reached)."""
    from clustersim.sim.tta import finite

    out: dict[str, Any] = {}
    for title, results in (getattr(result, "emulation", None) or {}).items():
        analytic = getattr(result, "emulation_analytic", {}).get(title, [])
        rows = []
        for k, r in enumerate(results):
            d = r.to_dict()
            a = analytic[k] if k < len(analytic) else None
            d["analytic_time_to_target"] = finite(a)
            d["analytic_never"] = a is not None and not math.isfinite(a)
            rows.append(d)
        out[title] = rows
    return out


def chart_data(scn: Any, result: Any) -> tuple[dict[str, Any], dict[str, list]]:
    """``(curves, tta)`` for :func:`~clustersim.report.convergence_chart.convergence_figures`.

    Curves: the emulated metric against simulated time at each algorithm's largest point, or,
    without emulation, the analytic model's progress to target at the largest point every
    algorithm has.  ``tta``: time to target per worker count (emulated where emulated)."""
    curves: dict[str, Any] = {}
    tta: dict[str, list] = {}
    emu = getattr(result, "emulation", None) or {}
    if emu:
        for title, results in emu.items():
            r = results[-1]
            curves[title] = {"time": list(r.time), "value": list(r.metric),
                             "metric": r.metric_name, "kind": "emulated",
                             "target": r.target}
            tta[title] = [(x.workers, x.time_to_target if math.isfinite(x.time_to_target)
                           else None) for x in results]
        return curves, tta
    profile = getattr(scn.workload, "convergence", None)
    if profile is None:
        return curves, tta
    from clustersim.convergence import progress_curve
    from clustersim.convergence.predict import ConvergenceResult

    largest = min(pts[-1].workers for pts in result.points.values())
    for title, pts in result.points.items():
        tta[title] = [(p.workers, p.time_to_target) for p in pts]
        p = next((q for q in pts if q.workers == largest), None)
        if p is None or p.time_to_target is None or not p.convergence_terms:
            continue
        terms = p.convergence_terms
        res = ConvergenceResult(p.steps_to_target, 0.0, None, p.time_to_target, 0.0, 0.0,
                                batch_eff=terms["batch_eff"], extra=terms["extra"],
                                lag_steps=terms["lag_steps"])
        frac, prog = progress_curve(profile, res)
        curves[title] = {"time": [f * p.time_to_target for f in frac], "value": prog,
                         "metric": "progress to target", "kind": "model", "target": 1.0}
    return curves, tta


def plot_html(scn: Any, result: Any) -> str:
    """``predict --plot FILE``: a standalone, mailable page (plotly.js inline, CSP by script
    hashes, every scenario string escaped: :mod:`clustersim.report.htmlpage`)."""
    from clustersim.report.convergence_chart import convergence_figures
    from clustersim.report.htmlpage import escape_text, figure_script, standalone_page
    from clustersim.sim.tta import finite

    curves, tta = chart_data(scn, result)
    emulated = getattr(result, "emulation", {}) or {}
    analytic = getattr(result, "emulation_analytic", {}) or {}
    # the analytic model's prediction for each emulated run, drawn beside it
    model_tta = {t: [(r.workers, finite(a))
                     for r, a in zip(runs, analytic.get(t, []))]
                 for t, runs in emulated.items()} or None
    figs = convergence_figures(scn.name, curves, tta, model_tta=model_tta)
    config = {"displaylogo": False, "responsive": True}
    parts = [figure_script(f, f"clustersim-tta-{k}", config) for k, f in enumerate(figs)]
    if figs and emulated:
        note = ("Lines marked <em>(emulated)</em> are a real small task trained with each "
                "algorithm's own arithmetic in simulated-time order; the open circles are "
                "the analytic convergence model's time to target for the same runs "
                "(docs/convergence.md).")
    elif figs:
        note = ("Lines marked <em>(model)</em> are the analytic convergence model's "
                "progress, from the workload's convergence profile and each algorithm's "
                "simulated throughput and staleness (docs/convergence.md).")
    else:
        note = ("No time to accuracy: the workload has no convergence profile "
                "(give workload.convergence, or run.convergence: emulate).")
    before = (f"<h1>Time to accuracy: {escape_text(scn.name)}</h1>"
              + (f"<p>{escape_text(scn.about)}</p>" if scn.about else "")
              + f"<p>{note}</p>")
    return standalone_page(f"clustersim time to accuracy: {scn.name}", before, parts)
