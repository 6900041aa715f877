"""Readable tables for people (rich), in the column conventions they already know."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from rich.console import Console
from rich.table import Table

from clustersim.units import format_size

__all__ = ["benchmark_tables", "benchmark_summary", "print_benchmark"]


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
