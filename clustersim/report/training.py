"""Training predictions for people (a scaling table per algorithm) and for programs (JSON/CSV)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from clustersim import __version__
from clustersim.report.layout import Col, print_hidden, print_table

__all__ = ["print_training", "training_json", "training_rows"]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _rate(x: float | None) -> str:
    return "—" if x is None else f"{x:,.1f}"


def _staleness(p: Any) -> str:
    return "—" if p.staleness_mean is None else f"{p.staleness_mean:.1f}/{p.staleness_p90:.0f}"


def _has_async(result: Any) -> bool:
    """Whether any point has the asynchronous metrics (staleness, servers)."""
    return any(p.staleness_mean is not None or p.server_utilization is not None
               for pts in result.points.values() for p in pts)


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
    scaling = scn.sweep.scaling if scn.sweep else "single point"
    console.print(f"workload: {wl.model.name}, {wl.model.params:,} parameters, "
                  f"{wl.model.grad_bytes / 2**20:.1f} MiB of gradients; scaling: {scaling}; "
                  f"fidelity: {scn.run.fidelity}; seed {scn.run.seed}")
    if scn.sweep is not None:
        for w, sets in scn.sweep.at.items():
            fields = ", ".join(f"{k} = {v}" for k, v in sets.items())
            console.print(f"at {w} workers (sweep.at): {fields}")
    any_async = _has_async(result)
    cols = list(SCALING_COLUMNS) + (list(ASYNC_COLUMNS) if any_async else [])
    hidden: list[str] = []
    for title, pts in result.points.items():
        rows = []
        for p in pts:
            row = [str(p.workers), f"{p.batch_per_worker:g}", _interval(p, "iteration_time", _ms),
                   _interval(p, "throughput", lambda v: f"{v:,.0f}"), f"{p.speedup:.2f}",
                   _pct(p.efficiency), _pct(p.comm_share), _pct(p.comm_share_total),
                   _ms(p.compute), _ms(p.comm), _ms(p.wait)]
            if any_async:
                row += [_staleness(p), _pct(p.server_utilization), _rate(p.update_rate)]
            rows.append(row)
        hidden += print_table(console, f"{title}", cols, rows, wide=wide, note=False)
    if len(result.points) > 1:
        hidden += _print_comparison(console, result, wide)
    print_hidden(console, hidden)


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
COMPARISON_COLUMNS = (
    Col("algorithm", justify="left", priority=0), Col("samples/s"), Col("vs fastest"),
    Col("efficiency"), Col("comm exposed", priority=2), Col("not computing", priority=2),
)


def _print_comparison(console: Console, result: Any, wide: bool = False) -> list[str]:
    """One line per algorithm at the largest common point, fastest first."""
    largest = min(pts[-1].workers for pts in result.points.values())
    rows = []
    for title, pts in result.points.items():
        p = next((q for q in pts if q.workers == largest), None)
        if p is not None:
            rows.append((title, p))
    rows.sort(key=lambda r: -r[1].throughput)
    best = rows[0][1].throughput if rows else 1.0
    # "not computing" = 1 - worker utilisation: exposed communication plus waiting for peers or
    # a master - the time breakdown papers report as "communication share"; with asynchronous
    # algorithms, what tells them apart: staleness, the servers' load and update rate
    any_async = _has_async(result)
    cols = list(COMPARISON_COLUMNS) + (list(ASYNC_COLUMNS) if any_async else [])
    cells = []
    for title, p in rows:
        row = [escape(title), f"{p.throughput:,.0f}", f"{p.throughput / best:.2f}x",
               _pct(p.efficiency), _pct(p.comm_share), _pct(1 - p.worker_utilization)]
        if any_async:
            row += [_staleness(p), _pct(p.server_utilization), _rate(p.update_rate)]
        cells.append(row)
    return print_table(console, f"comparison at {largest} workers (fastest first)", cols, cells,
                       wide=wide, note=False)


def training_rows(scn: Any, result: Any) -> list[dict[str, Any]]:
    rows = []
    for pts in result.points.values():
        for p in pts:
            d = p.to_dict()
            d.pop("interval", None)
            rows.append(d)
    return rows


def training_json(scn: Any, result: Any) -> dict[str, Any]:
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
                "repeats": scn.run.repeats},
        "assumptions": list(scn.assumptions),
        "algorithms": {title: [p.to_dict() for p in pts]
                       for title, pts in result.points.items()},
    }
