"""Readable tables for people (rich), in the column conventions they already know."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from rich.console import Console

from clustersim.report.layout import Col, print_table
from clustersim.units import format_size

__all__ = ["print_benchmark"]


def _size(nbytes: float) -> str:
    return format_size(nbytes).replace(".0 ", " ")


def print_benchmark(console: Console, rows: Sequence, op: str, detail: bool = True,
                    wide: bool = False) -> None:
    """The per-(algorithm, ranks) tables, then the summary grids; at a narrow terminal the
    grids are stacked (a few algorithms per table, size and fastest repeated in each)."""
    if detail:
        for (alg, ranks), group in groupby(rows, key=lambda r: (r.algorithm, r.ranks)):
            cells = [[_size(r.size), f"{r.time * 1e6:.2f}", f"{r.algbw / 1e9:.3f}",
                      f"{r.busbw / 1e9:.3f}"] for r in group]
            print_table(console, f"{op} · {alg} · {ranks} ranks", DETAIL_COLUMNS, cells,
                        wide=wide)
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
        out.append((p, f"{op} on {p} ranks: time (us), fastest in bold", algs, cells))
    return out
