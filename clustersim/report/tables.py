"""Readable tables for people (rich), in the column conventions they already know."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import groupby

from rich.console import Console

from clustersim.report.layout import Col, print_table
from clustersim.units import format_size

__all__ = ["BENCH_CSV_COLUMNS", "TRAINING_CSV_COLUMNS", "print_benchmark", "with_units"]


def _size(nbytes: float) -> str:
    return format_size(nbytes).replace(".0 ", " ")


def print_benchmark(console: Console, rows: Sequence, op: str, detail: bool = True,
                    wide: bool = False) -> None:
    """The per-(algorithm, ranks) tables, then the summary grids; at a narrow terminal the
    grids are stacked (a few algorithms per table, size and fastest repeated in each)."""
    if detail:
        for (alg, ranks), grp in groupby(rows, key=lambda r: (r.algorithm, r.ranks)):
            group = list(grp)
            chosen = any(getattr(r, "selected", "") for r in group)
            cells = [[_size(r.size), f"{r.time * 1e6:.2f}", f"{r.algbw / 1e9:.3f}",
                      f"{r.busbw / 1e9:.3f}"] + ([r.selected] if chosen else []) for r in group]
            cols = DETAIL_COLUMNS + ((Col("selected", justify="left"),) if chosen else ())
            print_table(console, f"{op} · {alg} · {ranks} ranks", cols, cells, wide=wide)
    for _ranks, title, algs, cells in _summary_cells(rows, op):
        cols = [Col("size", priority=0), *[Col(a) for a in algs],
                Col("fastest", justify="left", priority=0)]
        print_table(console, title, cols, cells, wide=wide, fit="stack")


DETAIL_COLUMNS = (Col("size", priority=0), Col("time (us)"), Col("algbw (GB/s)"),
                  Col("busbw (GB/s)"))


def _summary_cells(rows: Sequence, op: str) -> list[tuple[int, str, list[str], list[list[str]]]]:
    """Per rank count: (ranks, title, algorithms, cells) of the summary grid."""
    out = []
    ranks = sorted({r.ranks for r in rows})
    algs = list(dict.fromkeys(r.algorithm for r in rows))
    for p in ranks:
        sel = [r for r in rows if r.ranks == p]
        cells = []
        for s in sorted({r.size for r in sel}):
            times = {r.algorithm: r.time for r in sel if r.size == s}
            best = min(times, key=times.get)
            cells.append([_size(s), *[
                ("—" if a not in times else
                 (f"[bold]{times[a] * 1e6:.1f}[/bold]" if a == best else f"{times[a] * 1e6:.1f}"))
                for a in algs], best])
        out.append((p, f"{op} on {p} ranks: time (us); the fastest is named last", algs, cells))
    return out


# CSV column names carry their unit (SI, as the values are: seconds, bytes, B/s; fractions are
# 0..1 where the tables print percent), because a spreadsheet shows no table header saying "ms".
TRAINING_CSV_COLUMNS = {
    "batch_per_worker": "batch_per_worker_samples",
    "iteration_time": "iteration_time_s",
    "throughput": "throughput_samples_per_s",
    "compute": "compute_s",
    "comm": "comm_s",
    "wait": "wait_s",
    "comm_total": "comm_total_s",
    "comm_share": "comm_share_fraction",
    "comm_share_total": "comm_share_total_fraction",
    "worker_utilization": "worker_utilization_fraction",
    "server_utilization": "server_utilization_fraction",
    "update_rate": "update_rate_per_s",
    "staleness_mean": "staleness_mean_versions",
    "staleness_p90": "staleness_p90_versions",
    "staleness_max": "staleness_max_versions",
    "bytes_per_iteration": "bytes_per_iteration_B",
    "makespan": "makespan_s",
    "steps_to_target": "steps_to_target_steps",
    "samples_to_target": "samples_to_target_samples",
    "epochs_to_target": "epochs_to_target_epochs",
    "time_to_target": "time_to_target_s",
    "statistical_efficiency": "statistical_efficiency_fraction",
    "goodput": "goodput_samples_per_s",
    "efficiency": "efficiency_fraction",
    "service_time": "service_time_s",
    "emulated_time_to_target": "emulated_time_to_target_s",
    "emulated_steps_to_target": "emulated_steps_to_target_steps",
    "emulated_samples_to_target": "emulated_samples_to_target_samples",
    "emulated_updates_to_target": "emulated_updates_to_target_updates",
    "analytic_time_to_target": "analytic_time_to_target_s",
}
BENCH_CSV_COLUMNS = {
    "size": "size_B",
    "time": "time_s",
    "algbw": "algbw_B_per_s",
    "busbw": "busbw_B_per_s",
    "comm": "comm_s",
    "reduce": "reduce_s",
}


def with_units(rows: Sequence[dict], columns: dict[str, str]) -> list[dict]:
    """The rows with their keys renamed to the unit-carrying CSV column names."""
    return [{columns.get(k, k): v for k, v in r.items()} for r in rows]


#: the band metrics that an emulated run (``run.convergence: emulate``) measures itself
_EMULATED = {"time_to_target": "emulated_time_to_target"}


def with_bands(rows: list[dict], unc: dict | None, columns: dict[str, str]) -> list[dict]:
    """The CSV rows with ``predict --uncertainty``'s bands beside each point's own columns:
    ``<column>_median``, ``_p05`` and ``_p95`` (empty for a quantile that is "never"), the
    column being the metric's unit-carrying name (``iteration_time_s_p05``).

    Why: the bands were only in the JSON, so a spreadsheet user who asked for them with
    ``--csv`` got the nominal table alone and no word that anything was left out."""
    if not unc:
        return rows
    by_point = {(title, b["workers"]): b for title, pts in unc["algorithms"].items()
                for b in pts}
    out = []
    for r in rows:
        band = by_point.get((r.get("algorithm"), r.get("workers")), {})
        # an emulated run's band of time to target is the emulated time's: named after the
        # column that holds it, not after the analytic one, which is empty in that row
        emulated = columns.get("emulated_time_to_target", "") in r
        extra = {f"{columns.get(_EMULATED.get(k, k) if emulated else k, k)}_{q}": v[q]
                 for k, v in band.items() if isinstance(v, dict)
                 for q in ("median", "p05", "p95")}
        out.append({**r, **extra})
    return out


#: a CSV column name's suffix -> the unit of its values (the tables' SI values)
_SUFFIX_UNITS = (("_samples_per_s", "samples/s"), ("_B_per_s", "bytes/s"), ("_per_s", "1/s"),
                 ("_fraction", "fraction (0-1)"), ("_s", "s"), ("_B", "bytes"),
                 ("_versions", "versions"), ("_steps", "steps"), ("_samples", "samples"),
                 ("_epochs", "epochs"), ("_updates", "updates"))


def column_units(columns: Iterable[str]) -> dict[str, str]:
    """``{column: unit}`` for a sweep table's columns whose unit is known: a metric's, from the
    unit its ``predict --csv`` name carries (``throughput`` -> samples/s), and an axis's
    that reads a quantity (``platform.link.bandwidth`` -> bytes/s, ``network.overhead`` ->
    s).  Why: the sweep's Parquet, CSV and JSON carry bare names and SI numbers, and
    "3.868876e+09" under ``platform.link.bandwidth`` left the unit to a guess (audit K M1);
    the Parquet fields carry it in their metadata, the JSON in ``units``."""
    from clustersim.scenario.fieldkinds import si_unit

    out: dict[str, str] = {}
    for col in columns:
        if col.endswith(("_lo", "_hi")):  # an interval's end: its metric's unit (audit L)
            col, end = col[:-3], col
        else:
            end = col
        csv = TRAINING_CSV_COLUMNS.get(col)
        if csv is not None:
            unit = next((u for suffix, u in _SUFFIX_UNITS if csv.endswith(suffix)), None)
        else:
            unit = si_unit(col)
        if unit is not None:
            out[end] = unit
    return out
