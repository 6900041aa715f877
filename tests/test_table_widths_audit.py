"""Tables of ``run --real``, ``calibrate --convergence`` and ``calibrate`` fit the terminal.

Audit L1: ``run --real`` and ``calibrate --convergence`` printed rich box tables at a fixed
160 columns when piped (85- and 89-character lines at any ``COLUMNS``), and ``run`` had no
``--wide``.  They go through predict's :func:`clustersim.report.layout.print_table` now.

Audit L2: at 80 columns ``calibrate`` cut parameter names and headers mid-word
(``device.localhost_core.jitte`` / ``r``, ``rms rel. resid`` / ``.``) - rich squeezed a
table wider than the console - and broke ``network.protocol.localhost_shm.0.`` /
``overhead`` in the moved table while its ``change`` column could have been left out.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from clustersim.cli import main
from clustersim.commands.calibrate_fittable import print_fit_table

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "tests" / "data" / "gpu_h200_pinned" / "bench"
FIT_HEADERS = ("parameter", "value", "95% interval", "points", "rms rel. resid.", "from")
MOVED_HEADERS = ("parameter", "before", "after", "change")
#: rows as a 2-rank localhost calibrate --real prints them (the audit's names)
LOCAL_FIT = [
    ("device.localhost_core.jitter", "0.02465", "0 (clipped) .. 0.03097", "12", "—", "gemm"),
    ("network.protocol.localhost_shm.0.overhead", "1.23 us", "0 (clipped) .. 12.3 us", "30",
     "12.5%", "pingpong"),
    ("device.localhost_core.reduce_bw", "12.3 GB/s", "10.1 GB/s .. 14.2 GB/s", "30", "53.4%",
     "reduce"),
]


def _table(out: str, title: str) -> tuple[list[str], list[str]]:
    """(header lines, data lines) of the compact table under the line starting ``title``."""
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(title))
    rule = next(i for i in range(start, len(lines)) if lines[i].startswith("──"))
    title_words = set(lines[start].split())
    while set(lines[start + 1].split()) <= title_words | set(_TITLE_TAIL):
        start += 1  # the title's second line
    end = next((i for i in range(rule + 1, len(lines))
                if not lines[i].strip() or lines[i].startswith(("not shown", "  "))
                and not lines[i].startswith(" " * 8)), len(lines))
    return lines[start + 1:rule], lines[rule + 1:end]


#: the words of titles that wrap onto a second line at 60 columns
_TITLE_TAIL = ("Jacobian)", "intervals)", "excluded)")


def _names(data: list[str]) -> list[str]:
    """The parameter names of a fit/moved table's data lines, a name's dotted parts on
    following lines joined back (a part cut mid-word joins nothing and shows up)."""
    names: list[str] = []
    for line in data:
        if not line or line[0] == " ":
            continue  # a line of other columns only (an interval's second half)
        token = line.split()[0]
        if names and names[-1].endswith("."):
            names[-1] += token
        else:
            names.append(token)
    return names


def _header_words(head: list[str]) -> set[str]:
    return {w for line in head for w in line.split()}


def _fit(width: int, headers: tuple[str, ...], rows: list, **kw) -> str:
    console = Console(width=width, file=io.StringIO(), highlight=False, soft_wrap=False)
    print_fit_table(console, "T", headers, rows, **kw)
    return console.file.getvalue()


# ---- L2: names and headers never cut mid-word ---------------------------------------------

@pytest.mark.parametrize("width", [40, 50, 60, 70, 80, 100])
def test_fit_table_never_cuts_a_name_a_header_or_a_cell(width):
    out = _fit(width, FIT_HEADERS, LOCAL_FIT)
    assert max(len(ln) for ln in out.splitlines()) <= width, out
    head, data = _table(out, "T")
    assert sorted(_names(data)) == sorted(r[0] for r in LOCAL_FIT), out
    assert _header_words(head) <= {w for h in FIT_HEADERS for w in h.split()}, out
    text = " ".join(out.split())
    note = re.search(r"not shown at \d+ columns: (.*) \(--wide", text)
    hidden = note[1].split(", ") if note else []
    assert "value" not in hidden
    shown = [k for k, h in enumerate(FIT_HEADERS) if k and h not in hidden]
    for r in LOCAL_FIT:  # every figure shown is whole (an interval may take two lines)
        for k in shown:
            for piece in r[k].replace(" .. ", " ..\n", 1).split("\n"):
                assert f" {piece} " in f" {text} ", (r[k], out)


def test_jitter_row_at_70_columns_is_whole_or_broken_at_a_dot():
    """The audit's own break: at 70 columns rich squeezed the 28-column name to 27."""
    out = _fit(70, FIT_HEADERS, LOCAL_FIT)
    assert "device.localhost_core.jitte\n" not in out.replace(" ", "").replace("0.02465", "")
    assert not re.search(r"^r\s", out, re.M), out
    head, _ = _table(out, "T")
    assert "resid." in _header_words(head) and "." not in _header_words(head)


def test_moved_table_leaves_change_out_before_breaking_a_name():
    rows = [("network.protocol.localhost_shm.0.collective_efficiency", "(none)", "0.3697",
             "new"), ("device.localhost_core.jitter", "0.01", "0.02465", "+146.5%")]
    out = _fit(80, MOVED_HEADERS, rows, droppable=("change",), cramped=("before",))
    _, data = _table(out, "T")
    assert data[0].split()[0] == "network.protocol.localhost_shm.0.collective_efficiency"
    assert "not shown at 80 columns: change (--wide shows every column)" in out
    assert max(len(ln) for ln in out.splitlines()) <= 80


@pytest.fixture(scope="module")
def h200_at(tmp_path_factory):
    """stdout of calibrate on the recorded H200 benchmarks at a COLUMNS, memoised."""
    import os

    seen: dict[int, str] = {}

    def run(columns: int) -> str:
        if columns not in seen:
            out = io.StringIO()
            prof = tmp_path_factory.mktemp("h200") / "h.yaml"
            old = os.environ.get("COLUMNS")
            os.environ["COLUMNS"] = str(columns)
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                    assert main(["calibrate", str(H200), "--platform",
                                 "topologies/h200_shared.yaml", "--out", str(prof)]) == 0
            finally:
                if old is None:
                    del os.environ["COLUMNS"]
                else:
                    os.environ["COLUMNS"] = old
            seen[columns] = out.getvalue()
        return seen[columns]

    return run


@pytest.mark.parametrize("columns", [60, 80, 100])
def test_h200_refit_names_whole_or_broken_at_dots(h200_at, columns):
    out, full = h200_at(columns), h200_at(300)
    assert max(len(ln) for ln in out.splitlines()) <= columns
    for title in ("fitted parameters", "on platform h200_shared"):
        head, data = _table(out, title)
        names = _names(data)
        assert names == _names(_table(full, title)[1]), (title, out)
        assert _header_words(head) <= {w for h in FIT_HEADERS + MOVED_HEADERS
                                       for w in h.split()}, head


def test_h200_moved_table_at_80_columns_keeps_every_name_on_one_line(h200_at):
    _, data = _table(h200_at(80), "on platform h200_shared")
    assert "network.protocol.gpu_hoststaged.0.collective_efficiency" in [
        ln.split()[0] for ln in data]
    assert all(not ln.split()[0].endswith(".") for ln in data)


def test_h200_fit_table_at_60_columns_keeps_the_interval_on_two_lines(h200_at):
    out = h200_at(60)
    head, data = _table(out, "fitted parameters")
    assert "interval" in _header_words(head)
    k = next(i for i, ln in enumerate(data) if ln.startswith("link.gpu_hoststaged.bandwidth"))
    assert data[k].endswith("4.77 GB/s ..") and data[k + 1].strip() == "5.2 GB/s"


# ---- L1: run --real and calibrate --convergence fit the terminal ---------------------------

def _metrics(it: float, share: float) -> SimpleNamespace:
    return SimpleNamespace(iteration_time=it, compute=it * 0.7, comm=it * 0.2, wait=it * 0.1,
                           comm_share=share, throughput=3200 / it, staleness_mean=None,
                           staleness_max=None, server_utilization=None)


def _run_print(tmp_path: Path, monkeypatch, columns: int, wide: bool = False) -> str:
    from clustersim.commands.run_real import _print

    monkeypatch.setenv("COLUMNS", str(columns))
    res = SimpleNamespace(metrics=_metrics(0.01987, 0.193), scenario="real_bsp_mlp",
                          algorithm="bsp", workers=2, np=2, launch=SimpleNamespace(elapsed=5.2),
                          math=[], out_dir=tmp_path)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        _print(res, _metrics(0.05141, 0.168), *([True] if wide else []))
    return buf.getvalue()


def test_run_table_fits_80_columns(tmp_path, monkeypatch):
    out = _run_print(tmp_path, monkeypatch, 80)
    assert max(len(ln) for ln in out.splitlines()) <= 80, out  # was 85
    row = next(ln for ln in out.splitlines() if re.match(r"measured\s+\d", ln))
    assert row.split() == ["measured", "19.87", "13.91", "3.97", "1.99", "19.3%", "161,047"]
    assert "prediction error +158.7%" in " ".join(out.split())


def test_run_table_at_60_columns_leaves_out_the_time_split_and_says_so(tmp_path, monkeypatch):
    out = _run_print(tmp_path, monkeypatch, 60)
    assert max(len(ln) for ln in out.splitlines()) <= 60, out
    assert "not shown at 60 columns: wait ms" in " ".join(out.split())
    row = next(ln for ln in out.splitlines() if ln.startswith("predicted"))
    assert "51.41" in row and "16.8%" in row and "62,245" in row


def test_run_wide_prints_every_column(tmp_path, monkeypatch):
    from clustersim.cli import build_parser

    assert build_parser().parse_args(["run", "--real", "x.yaml", "--wide"]).wide
    out = _run_print(tmp_path, monkeypatch, 60, wide=True)
    assert "wait ms" in out and "not shown" not in out


def _log(path: Path) -> Path:
    """A norm log whose noise scale is ~100 (|G|^2 = 1, tr(Sigma) = 100), a little noise."""
    lines = ["step,batch_small,batch_big,sq_norm_small,sq_norm_big"]
    for s in range(200):
        wob = 1 + 0.05 * ((s * 7919) % 13 - 6) / 6
        lines.append(f"{s},32,64,{(1 + 100 / 32) * wob:.6f},{(1 + 100 / 64) / wob:.6f}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("columns", [60, 80])
def test_convergence_table_fits_the_terminal(tmp_path, monkeypatch, capsys, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["calibrate", "--convergence", str(_log(tmp_path / "g.csv"))]) == 0
    err = capsys.readouterr().err  # the table; the snippet is on stdout
    assert max(len(ln) for ln in err.splitlines()) <= columns, err  # was 89
    head, data = _table(err, "gradient noise scale")
    assert [ln.split()[0] for ln in data] == ["whole", "1", "2", "3", "4"]
    assert "B_simple" in _header_words(head) and "interval" in _header_words(head)
    assert "(--wide shows every column)" in " ".join(err.split())


def test_convergence_wide_prints_every_column(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "60")
    assert main(["calibrate", "--convergence", str(_log(tmp_path / "g.csv")), "--wide"]) == 0
    err = capsys.readouterr().err
    for h in ("progress", "steps", "|G|^2", "tr(Sigma)"):
        assert h in err
    assert "not shown" not in err
