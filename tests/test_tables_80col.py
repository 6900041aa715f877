"""Tables readable in an 80-column terminal and when piped; ``--wide`` shows every column.

At 80 columns (COLUMNS=80, stdout a pipe): no line longer than 80 characters, no cell cut with
an ellipsis, and every number printed is one of the full (``--wide``) table's numbers, whole.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from clustersim.report.layout import Col, Omitted, print_hidden, print_table

ROOT = Path(__file__).resolve().parents[1]


def _predict(*args: str, columns: int | None = 80) -> str:
    env = dict(os.environ, CLUSTERSIM_JOBS="1", PYTHONPATH=str(ROOT))
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    r = subprocess.run([sys.executable, "-m", "clustersim", "predict", *args],
                       capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _check_narrow(out: str, width: int = 80) -> None:
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width
    assert "…" not in out and "..." not in out


def _rows(out: str) -> dict[str, list[str]]:
    """Data rows of every table, keyed by their first cell, as lists of cells (either style)."""
    rows: dict[str, list[str]] = {}
    for line in out.splitlines():
        cells = [c.strip() for c in re.split(r"\s{2,}|│|┃", line.strip(" │")) if c.strip()]
        if cells and re.fullmatch(r"\d+", cells[0]):
            rows.setdefault(cells[0], []).extend(cells[1:])
    return rows


@pytest.fixture(scope="module")
def knl() -> tuple[str, str]:
    scn = "scenarios/knl_4253.yaml"
    return _predict(scn, "-j", "1"), _predict(scn, "-j", "1", "--wide")


def test_knl_4253_at_80_columns(knl):
    narrow, wide = knl
    _check_narrow(narrow)
    # the headline figures survive at 80 columns
    for header in ("workers", "iter (ms)", "samples/s", "speedup", "efficiency"):
        assert header in narrow
    assert "91.6%" in narrow  # Sync EASGD at 4,253 cores
    assert "--wide shows every column" in narrow
    # every number shown is one of the full table's, whole
    full = " ".join(wide.split())
    for key, cells in _rows(narrow).items():
        for c in cells:
            assert f" {c} " in f" {full} ", (key, c)


def test_knl_4253_wide_shows_every_column(knl):
    _, wide = knl
    headers = ("workers", "batch/w", "iter (ms)", "samples/s", "speedup", "efficiency",
               "comm exposed", "comm total", "compute ms", "comm ms", "wait ms",
               "staleness mean/p90", "server util", "updates/s", "not computing", "samples/s vs best")
    for h in headers:
        assert h in wide, h
    assert "not shown" not in wide and "…" not in wide


def test_piped_without_columns_is_not_padded():
    out = _predict("scenarios/allreduce_crossbar16.yaml", "--set", "benchmark.ranks=[4]",
                   columns=None)
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80


def test_benchmark_grid_is_stacked_not_cut():
    narrow = _predict("scenarios/allreduce_crossbar16.yaml", "--set", "benchmark.ranks=[16]")
    _check_narrow(narrow)
    wide = _predict("scenarios/allreduce_crossbar16.yaml", "--set", "benchmark.ranks=[16]",
                    "--wide")
    # every algorithm of the summary grid is a column of one of the stacked tables
    grid = wide[wide.index("allreduce on 16 ranks: time"):]
    header = next(line for line in grid.splitlines() if "size" in line)
    algs = [c.strip() for c in header.strip("┃ ").split("┃")][1:-1]
    assert len(algs) > 5
    stacked = narrow[narrow.index("allreduce on 16 ranks: time"):]
    heads = [line.split() for line in stacked.splitlines() if line.strip().startswith("size")]
    assert sorted(a for h in heads for a in h[1:-1]) == sorted(algs)
    assert all(h[0] == "size" and h[-1] == "fastest" for h in heads)


def _render(cols, rows, width: int, **kw) -> tuple[str, list[str]]:
    con = Console(width=width, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    hidden = print_table(con, "t", cols, rows, **kw)
    return con.export_text(), hidden


def test_priorities_decide_what_is_left_out():
    cols = [Col("key", priority=0), Col("a"), Col("b", priority=3), Col("c", priority=2),
            Col("time to target", priority=1)]  # a column added later with its priority
    rows = [["k1", "1" * 15, "2" * 15, "3" * 15, "4" * 15]]
    text, hidden = _render(cols, rows, 56)
    # 5 columns of 15 + 2 + 4 gaps of 3 > 56: the priority-3 column goes first, then c
    assert hidden == ["b", "c"]
    assert "1" * 15 in text and "4" * 15 in text and "2" * 15 not in text
    assert max(len(line) for line in text.splitlines()) <= 56
    text, hidden = _render(cols, rows, 200)
    assert hidden == [] and "3" * 15 in text
    # wide (the command gives it an unbounded console): never leaves anything out
    text, hidden = _render(cols, rows, 1000, wide=True)
    assert hidden == [] and all(d * 15 in text for d in "1234")


def _footer(tables, width: int) -> tuple[str, list[list[str]]]:
    """Print ``tables`` ((cols, rows) pairs) under one footer; the footer and each table's
    hidden columns.  soft_wrap: the footer on one line whatever its length."""
    con = Console(width=width, record=True, soft_wrap=True,
                  file=open(os.devnull, "w"))  # noqa: SIM115
    omitted = Omitted()
    hidden = [print_table(con, f"t{i}", cols, rows, note=False, omitted=omitted)
              for i, (cols, rows) in enumerate(tables)]
    print_hidden(con, omitted)
    lines = con.export_text().splitlines()
    return (lines[-1] if "--wide" in lines[-1] else ""), hidden


def test_footer_names_only_what_no_table_shows_then_what_some_left_out():
    """Each table fits on its own: at 40 columns the first keeps 'b' and the second drops
    it, both drop 'c'; 'only here' is in the last table alone, and dropped there.  The
    footer under them said "not shown: c, b, only here" - 'b' was on the screen above."""
    cols = [Col("key", priority=0), Col("a"), Col("b", priority=2), Col("c", priority=3)]
    narrow = [["k", "1" * 5, "2" * 5, "3" * 30]]    # 52 wide: only c must go
    wide = [["k", "1" * 20, "2" * 15, "3" * 5]]     # 52, then 44 wide: c, then b go
    extra = [Col("key", priority=0), Col("only here", priority=2)]
    footer, hidden = _footer([(cols, narrow), (cols, wide), (extra, [["k", "4" * 40]])], 40)
    assert hidden == [["c"], ["b", "c"], ["only here"]]
    assert footer == ("not shown at 40 columns: c, only here; left out of some tables: b "
                      "(--wide shows every column)")
    # nothing left out everywhere: the footer says only where some tables left columns out
    footer, hidden = _footer([(cols, [["k", "1", "2", "3"]]), (cols, wide)], 40)
    assert hidden == [[], ["b", "c"]]
    assert footer == ("left out of some tables at 40 columns: b, c (--wide shows every "
                      "column)")
    # every table shows every column: no footer
    assert _footer([(cols, [["k", "1", "2", "3"]])] * 2, 40) == ("", [[], []])
    # one table (a plain list, as print_table returns it): unchanged wording
    con = Console(width=40, record=True, soft_wrap=True,
                  file=open(os.devnull, "w"))  # noqa: SIM115
    print_hidden(con, ["c", "b", "c"])
    assert con.export_text().strip() == "not shown at 40 columns: c, b (--wide shows every column)"


def test_predict_footer_does_not_name_a_column_a_table_shows():
    """knl_4253 at 80 columns: Sync EASGD's table shows 'stat. eff.', original EASGD's leaves
    it out (its iteration times are wider); the footer said it was not shown."""
    out = _predict("knl_4253", "--no-band")
    footer = " ".join(out[out.index("not shown at 80 columns"):].split())
    sync = out[:out.index("original EASGD")]
    assert "stat." in sync and "eff." in sync and "steps" not in sync
    assert footer.endswith("; left out of some tables: stat. eff. (--wide shows every column)")
    assert "steps to target" in footer.split(";")[0]
    _check_narrow(out)


def test_headers_wrap_cells_never_do():
    cols = [Col("workers", priority=0), Col("staleness mean/p90")]
    text, hidden = _render(cols, [["4253", "3189.0/4253"]], 24)
    assert hidden == [] and "3189.0/4253" in text and "staleness" in text
    assert max(len(line) for line in text.splitlines()) <= 24


def test_markup_in_labels_is_text(tmp_path):
    """A label like '[/bold]' is printed as written, not read as rich markup (no crash)."""
    f = tmp_path / "s.yaml"
    f.write_text(
        "name: '[bold]x[/bold] [/i]'\nabout: '[link=javascript:x]y[/link] [/]'\n"
        "platform: {topology: star, hosts: 2, device: v100, link: eth10g}\n"
        "workload: {model: resnet50, batch_per_worker: 8}\nalgorithm: {name: bsp}\n"
        "compare: [{name: bsp, strategy: ar, label: '[/red]'}]\n"
        "sweep: {workers: [1, 2]}\nrun: {iterations: 2, warmup: 0, fidelity: analytic}\n")
    out = _predict(str(f))
    assert "[bold]x[/bold] [/i]" in out and "[/red]" in out and "[/]" in out
    _check_narrow(out)
