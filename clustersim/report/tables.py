"""Readable tables for people (rich), in the column conventions they already know."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from rich.console import Console
from rich.table import Table

from clustersim.units import format_size

__all__ = ["BENCH_CSV_COLUMNS", "TRAINING_CSV_COLUMNS", "benchmark_tables",
           "benchmark_summary", "print_benchmark", "with_units"]


def _size(nbytes: float) -> str:
    return format_size(nbytes).replace(".0 ", " ")


def benchmark_tables(rows: Sequence, op: str) -> list[Table]:
    """One nccl-tests/OSU style table per (algorithm, ranks): size, time, algbw, busbw."""
    tables = []
    for (alg, ranks), group in groupby(rows, key=lambda r: (r.algorithm, r.ranks)):
        t = Table(title=f"{op} · {alg} · {ranks} ranks", title_justify="left")
        t.add_column("size", justify="right")
        t.add_column("time (us)", justify="right")
        t.add_column("algbw (GB/s)", justify="right")
        t.add_column("busbw (GB/s)", justify="right")
        for r in group:
            t.add_row(_size(r.size), f"{r.time * 1e6:.2f}", f"{r.algbw / 1e9:.3f}",
                      f"{r.busbw / 1e9:.3f}")
        tables.append(t)
    return tables


def print_benchmark(console: Console, rows: Sequence, op: str, detail: bool = True) -> None:
    if detail:
        for t in benchmark_tables(rows, op):
            console.print(t)
    for t in benchmark_summary(rows, op):
        console.print(t)


def benchmark_summary(rows: Sequence, op: str) -> list[Table]:
    """Per rank count: time (us) of every algorithm by size, the fastest marked — the table a
    person choosing an algorithm reads first."""
    tables = []
    ranks = sorted({r.ranks for r in rows})
    algs = list(dict.fromkeys(r.algorithm for r in rows))
    for p in ranks:
        sel = [r for r in rows if r.ranks == p]
        sizes = sorted({r.size for r in sel})
        t = Table(title=f"{op} on {p} ranks: time (us), fastest in bold", title_justify="left")
        t.add_column("size", justify="right")
        for a in algs:
            t.add_column(a, justify="right")
        t.add_column("fastest")
        for s in sizes:
            cells = {r.algorithm: r.time for r in sel if r.size == s}
            best = min(cells, key=cells.get)
            t.add_row(_size(s), *[
                ("—" if a not in cells else
                 (f"[bold]{cells[a] * 1e6:.1f}[/bold]" if a == best else f"{cells[a] * 1e6:.1f}"))
                for a in algs], best)
        tables.append(t)
    return tables


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
