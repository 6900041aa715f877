"""Readable tables for people (rich), in the column conventions they already know."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from rich.console import Console
from rich.table import Table

from clustersim.units import format_size

__all__ = ["benchmark_tables", "print_benchmark"]


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


def print_benchmark(console: Console, rows: Sequence, op: str) -> None:
    for t in benchmark_tables(rows, op):
        console.print(t)
