"""Training predictions for people (a scaling table per algorithm) and for programs (JSON/CSV)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from clustersim import __version__
from clustersim.report.layout import Col, Omitted, print_hidden, print_table
from clustersim.scenario.assumed import assumed_figures, assumed_line
from clustersim.units import format_duration

__all__ = ["print_training", "training_json", "training_rows"]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def _pct(x: float | None) -> str:
    # "+ 0.0" turns a -0.0 rounding residue (1 - utilisation at one worker) into 0.0
    return "—" if x is None else f"{round(100 * x, 1) + 0.0:.1f}%"


def _rate(x: float | None) -> str:
    return "—" if x is None else f"{x:,.1f}"


def _staleness(p: Any) -> str:
    return "—" if p.staleness_mean is None else f"{p.staleness_mean:.1f}/{p.staleness_p90:.0f}"


def _steps(x: float | None) -> str:
    return "never" if x is None else f"{x:,.0f}"


def _has_tta(result: Any) -> bool:
    """Whether the points carry time to accuracy (the workload has a convergence profile)."""
    return any(p.time_to_target is not None or p.tta_note
               for pts in result.points.values() for p in pts)


def _tta_cells(p: Any) -> list[str]:
    return [format_duration(p.time_to_target), _steps(p.steps_to_target),
            _pct(p.statistical_efficiency), "—" if p.goodput is None else f"{p.goodput:,.0f}"]


def _has_async(result: Any) -> bool:
    """Whether any point has the asynchronous metrics (staleness, servers)."""
    return any(p.staleness_mean is not None or p.server_utilization is not None
               for pts in result.points.values() for p in pts)


def _runs(scn: Any, result: Any) -> set[tuple[int, int, float]]:
    """(first seed, seeds, jitter) of every case whose points have seed intervals
    (``run.repeats`` with jitter; a variant may set its own); empty when none has."""
    shown = {t for t, pts in result.points.items() if any(p.interval for p in pts)}
    if not shown:
        return set()
    from clustersim.sim.sweep import sweep_cases

    return {(s.run.seed, s.run.repeats, s.workload.jitter)
            for t, s, _alg in sweep_cases(scn) if t in shown}


def _seeds(scn: Any, result: Any, runs: set[tuple[int, int, float]]) -> str:
    """``seed 0``; ``seeds 0-2`` for a run repeated over seeds (``runs``: :func:`_runs`);
    ``seeds per case`` when the repeated cases differ."""
    if len(runs) == 1:
        (s, n, _j), = runs
        every = all(p.interval for pts in result.points.values() for p in pts)
        return (f"seeds {s}-{s + n - 1}" if every
                else f"seed {scn.run.seed}; seeds {s}-{s + n - 1} where repeated")
    return "seeds per case (run.seed, run.repeats)" if runs else f"seed {scn.run.seed}"


def _legend(runs: set[tuple[int, int, float]]) -> str:
    """What the ``[..]`` of the tables are: over how many seeds, with which jitter."""
    if len(runs) == 1:
        (_s, n, j), = runs
        over = f"the {n} seeds (run.repeats, compute jitter {j:g})"
    else:
        over = "each case's seeds (its run.repeats and compute jitter)"
    return f"\\[..]: 5th-95th percentile over {over}, the figure before it their mean; the " \
           "inputs fixed"


def _interval(p: Any, key: str, fmt) -> str:
    base = fmt(getattr(p, key))
    iv = p.interval.get(key)
    if iv:
        return f"{base} [{fmt(iv[0])}, {fmt(iv[1])}]"
    return base


def print_training(console: Console, scn: Any, result: Any, wide: bool = False) -> None:
    """The scenario's header, one scaling table per algorithm, and the comparison; ``wide``:
    every column, whatever the terminal's width."""
    wl = scn.workload
    # scenario strings are text: a "[/bold]" in them is not rich markup (and no MarkupError)
    console.print(f"[bold]{escape(scn.name)}[/bold]"
                  + (f" — {escape(scn.about)}" if scn.about else ""))
    console.print(f"platform: {escape(scn.platform.describe())}")
    print_assumed(console, scn)
    scaling = scn.sweep.scaling if scn.sweep else "single point"
    runs = _runs(scn, result)  # the cases repeated over seeds: the header and the legend
    console.print(f"workload: {wl.model.name}, {wl.model.params:,} parameters, "
                  f"{wl.model.grad_bytes / 2**20:.1f} MiB of gradients; scaling: {scaling}; "
                  f"fidelity: {scn.run.fidelity}; {_seeds(scn, result, runs)}")
    if scn.sweep is not None:
        for w, sets in scn.sweep.at.items():
            fields = ", ".join(f"{k} = {v}" for k, v in sets.items())
            console.print(f"at {w} workers (sweep.at): {fields}")
    from clustersim.report.notes import (
        extrapolation_note,
        mean_note,
        shared_server_note,
        split_note,
        switch_note,
        target_line,
    )
    from clustersim.sim.sweep import sweep_cases

    split = split_note(scn)
    if split:
        console.print(f"[dim]{escape(split)}[/dim]")
    any_async = _has_async(result)
    tta = _has_tta(result)
    target = target_line(scn) if tta else None
    if target:
        console.print(f"[dim]{escape(target)}[/dim]")
    cols = (list(SCALING_COLUMNS) + (list(ASYNC_COLUMNS) if any_async else [])
            + (list(TTA_COLUMNS) if tta else []))
    omitted = Omitted()  # one footer for all the tables: what they left out at this width
    uneven = False  # the mean-of-paces note, said once (under the first table it holds for)
    # each table's own scenario (a variant's) and algorithm, for the notes under it
    cases = {t: (s, alg) for t, s, alg in sweep_cases(scn)}
    alone = False  # a table of one worker count: its speedup and efficiency say nothing
    for title, pts in result.points.items():
        rows = []
        # relative to the smallest point: with one, "1.00, 100.0%" stood beside 95.9% of
        # exposed communication (bsp_100k; audit L4) - shown as "—", JSON/CSV keep them
        one = len(pts) < 2
        alone = alone or one
        for p in pts:
            row = [str(p.workers), f"{p.batch_per_worker:g}", _interval(p, "iteration_time", _ms),
                   _interval(p, "throughput", lambda v: f"{v:,.0f}"),
                   "—" if one else f"{p.speedup:.2f}",
                   _pct(None if one else p.efficiency), _pct(p.comm_share), _pct(p.comm_share_total),
                   _ms(p.compute), _ms(p.comm), _ms(p.wait)]
            if any_async:
                row += [_staleness(p), _pct(p.server_utilization), _rate(p.update_rate)]
            if tta:
                row += _tta_cells(p)
            rows.append(row)
        print_table(console, f"{title}", cols, rows, wide=wide, note=False, omitted=omitted)
        case_scn, spec = cases.get(title, (scn, None))
        mean = None if uneven else mean_note(pts)
        if mean:
            uneven = True
            mean += "; the same holds in every table below whose workers run at different paces"
        for line in (saturation_line(pts), mean, extrapolation_note(case_scn, pts),
                     None if spec is None else switch_note(case_scn, spec, pts),
                     None if spec is None else shared_server_note(case_scn, spec, pts)):
            if line:
                console.print(f"[dim]{escape(line)}[/dim]")
    if alone:
        console.print("[dim]speedup, efficiency: — with one worker count (they are relative "
                      "to the sweep's smallest point; --json and --csv keep 1 and 100%)[/dim]")
    if runs:  # say what the [..] are (they had no legend without --uncertainty)
        console.print(f"[dim]{_legend(runs)}[/dim]")
    from clustersim.sim.runwindow import stretched

    for title, (warm, measured, n) in stretched(scn).items():
        console.print(f"[dim]{escape(title)} ran {warm} warm-up + {measured} measured steps "
                      f"(run: says {scn.run.warmup} + {scn.run.iterations - scn.run.warmup}): "
                      f"whole exchange periods of {n} steps[/dim]")
    above = [p for pts in result.points.values() for p in pts
             if (p.statistical_efficiency or 0.0) > 1.0]
    if above:  # read as a bug otherwise (QA 18b L8)
        top = _pct(max(p.statistical_efficiency for p in above))
        console.print(f"[dim]stat. eff. above 100% (up to {top}): an effective batch below "
                      "the profile's reference batch needs fewer samples to the target than "
                      "the reference did (docs/convergence.md)[/dim]")
    capped = [f"{t} at {p.workers:,}" for t, pts in result.points.items() for p in pts
              if "lone_worker_cap" in (p.convergence_terms or {})]
    if capped:  # every table's, a lone algorithm's too (audit L M3)
        console.print(f"as fast as one worker alone: {escape(', '.join(capped))} workers — "
                      "the exchanges are too rare to help, and the convergence model's drift "
                      "term would predict worse; averaging never hurts, so the steps are "
                      "capped at a lone worker's (docs/convergence.md)")
    if len(result.points) > 1:
        _print_comparison(console, result, wide, omitted)
    if getattr(result, "emulation", None):
        from clustersim.report.convergence import print_emulation

        print_emulation(console, result, wide, omitted, scn)
    print_hidden(console, omitted)


# Columns and their priority at a narrow terminal (0 = always; larger numbers are left out
# first, see clustersim.report.layout): the scaling figures a reader compares first, then
# the time breakdown that explains them.
SCALING_COLUMNS = (
    Col("workers", priority=0), Col("batch/w", priority=5), Col("iter (ms)"),
    Col("samples/s"), Col("speedup", priority=2), Col("efficiency"),
    Col("comm exposed", priority=2), Col("comm total", priority=5),
    Col("compute ms", priority=4), Col("comm ms", priority=4), Col("wait ms", priority=4),
)
ASYNC_COLUMNS = (Col("staleness mean/p90", priority=3), Col("server util", priority=3),
                 Col("updates/s", priority=4))
# time to accuracy: the headline when a profile exists (priority 1), its parts after it
TTA_COLUMNS = (Col("time to target", priority=1), Col("steps to target", priority=3),
               Col("stat. eff.", priority=2), Col("goodput", priority=3))
COMPARISON_COLUMNS = (
    Col("algorithm", justify="left", priority=0), Col("samples/s"),
    Col("samples/s vs best"), Col("efficiency"), Col("comm exposed", priority=2),
    Col("not computing", priority=2),
)


def _print_comparison(console: Console, result: Any, wide: bool = False,
                      omitted: Omitted | None = None) -> list[str]:
    """One line per algorithm at the largest common point, fastest first; returns the
    columns left out (also recorded in ``omitted``)."""
    largest = min(pts[-1].workers for pts in result.points.values())
    rows = []
    for title, pts in result.points.items():
        p = next((q for q in pts if q.workers == largest), None)
        if p is not None:
            rows.append((title, p))
    tta = _has_tta(result)
    if tta:  # the question users ask: which gets to the target first (never: last)
        rows.sort(key=lambda r: (r[1].time_to_target is None, r[1].time_to_target or 0.0,
                                 -r[1].throughput))
    else:
        rows.sort(key=lambda r: -r[1].throughput)
    best = max((p.throughput for _, p in rows), default=1.0)
    # "not computing" = 1 - worker utilisation: exposed communication plus waiting for peers or
    # a master - the time breakdown papers report as "communication share"; with asynchronous
    # algorithms, what tells them apart: staleness, the servers' load and update rate
    any_async = _has_async(result)
    # one point per algorithm: each is its own baseline, 100 % every row says nothing
    single = all(len(pts) < 2 for pts in result.points.values())
    cols = (list(COMPARISON_COLUMNS[:1]) + (list(TTA_COLUMNS) if tta else [])
            + [c for c in COMPARISON_COLUMNS[1:] if not (single and c.header == "efficiency")]
            + (list(ASYNC_COLUMNS) if any_async else []))
    cells = []
    for title, p in rows:
        row = ([escape(title)] + (_tta_cells(p) if tta else [])
               + [f"{p.throughput:,.0f}", f"{p.throughput / best:.2f}x"]
               + ([] if single else [_pct(p.efficiency)])
               + [_pct(p.comm_share), _pct(1 - p.worker_utilization)])
        if any_async:
            row += [_staleness(p), _pct(p.server_utilization), _rate(p.update_rate)]
        cells.append(row)
    order = "first to the target first" if tta else "fastest first"
    hidden = print_table(console, f"comparison at {largest} workers ({order})", cols, cells,
                         wide=wide, note=False, omitted=omitted)
    never: dict[str, list[str]] = {}  # one line per reason, naming every algorithm it holds for
    for title, p in rows:
        if p.tta_note:
            never.setdefault(p.tta_note, []).append(title)
    for note, titles in never.items():
        console.print(f"never reaches the target: {escape(', '.join(titles))} — {escape(note)}")
    return hidden


def training_rows(scn: Any, result: Any) -> list[dict[str, Any]]:
    """The CSV's rows: one per point; with ``run.convergence: emulate`` also the emulated
    time, steps, samples and updates to the target and the analytic model's time for the
    same run (empty where the target was not reached) - the figures a spreadsheet user came
    for, which were only in the JSON's ``emulation``."""
    from clustersim.sim.tta import finite

    rows = []
    emulated = getattr(result, "emulation", {}) or {}
    analytic = getattr(result, "emulation_analytic", {}) or {}
    for title, pts in result.points.items():
        ems, ans = emulated.get(title, []), analytic.get(title, [])
        for i, p in enumerate(pts):
            d = p.to_dict()
            d.pop("interval", None)
            d.pop("convergence_terms", None)
            if i < len(ems):
                em = ems[i]
                for key in ("time", "steps", "samples", "updates"):
                    v = getattr(em, f"{key}_to_target")
                    d[f"emulated_{key}_to_target"] = finite(v)
                # inf (never): empty, as emulated
                d["analytic_time_to_target"] = finite(ans[i]) if i < len(ans) else None
            rows.append(d)
    return rows


def saturation_line(pts: Any) -> str | None:
    """Where a master-based method's master is busy all the time (W* = the step without
    queueing / the master's time per step, clustersim.explore.saturation.master_knee),
    taken at the smallest point as ``clustersim sweep`` does, so that both print the same
    figure: the reason its samples/s stop growing.  None for methods without a master."""
    from clustersim.explore.saturation import creep, master_knee, saturation_text

    knee = master_knee(pts[0])
    return None if knee is None else saturation_text(*knee, creep(pts, knee))


def print_assumed(console: Console, scn: Any) -> None:
    """The assumed catalog figures the scenario uses, in one line (nothing if none)."""
    line = assumed_line(assumed_figures(scn))
    if line:
        console.print(f"[dim]{escape(line)}[/dim]")


def training_json(scn: Any, result: Any) -> dict[str, Any]:
    """``predict --json``'s document for a training sweep: what was simulated (scenario,
    platform, model, run, assumptions) and every algorithm's points, SI units throughout."""
    wl = scn.workload
    return {
        "clustersim": __version__,
        "scenario": scn.name,
        "kind": "training_sweep",
        "platform": scn.platform.describe(),
        "model": {"name": wl.model.name, "params": wl.model.params,
                  "grad_bytes": wl.model.grad_bytes},
        "scaling": scn.sweep.scaling if scn.sweep else None,
        "run": {"iterations": scn.run.iterations, "warmup": scn.run.warmup,
                "seed": scn.run.seed, "fidelity": scn.run.fidelity,
                "repeats": scn.run.repeats, **_stretched_json(scn)},
        "assumptions": list(scn.assumptions),
        "assumed_figures": [f.to_dict() for f in assumed_figures(scn)],
        "algorithms": {title: [p.to_dict() for p in pts]
                       for title, pts in result.points.items()},
        **_convergence_json(scn, result),
    }


def _stretched_json(scn: Any) -> dict[str, Any]:
    """``{"stretched": {title: run}}`` for the algorithms whose run was lengthened to whole
    exchange periods (nothing when none was)."""
    from clustersim.sim.runwindow import stretched

    runs = {t: {"warmup": w, "iterations": w + m, "period": n}
            for t, (w, m, n) in stretched(scn).items()}
    return {"stretched": runs} if runs else {}


def _convergence_json(scn: Any, result: Any) -> dict[str, Any]:
    """The convergence profile used (its sources and assumptions: the numbers hang on them)
    and the emulated curves, when there are any."""
    out: dict[str, Any] = {}
    prof = getattr(scn.workload, "convergence", None)
    if prof is not None and scn.run.convergence in ("auto", "analytic"):
        out["convergence_profile"] = prof.to_dict()
    if getattr(result, "emulation", None):
        from clustersim.report.convergence import emulation_json

        out["emulation"] = emulation_json(result)
    return out
