"""A point cache that cannot be used never stops a sweep (docs/exploration.md, "The cache"):
a foreign ``points.sqlite`` is reported once and the sweep runs without it; a damaged row, or
one without the table's columns, is a miss - run again and overwritten - never a traceback
(was: ``json.JSONDecodeError`` / ``sqlite3.OperationalError`` from the first read) nor a
table row with empty cells."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_sweep_executors import SMALL

from clustersim.cli import main


def _sweep(tmp_path: Path, out: Path, capsys) -> tuple[str, str]:
    (tmp_path / "s.yaml").write_text(SMALL)
    assert main(["sweep", str(tmp_path / "s.yaml"), "-j", "1", "--out", str(out)]) == 0
    got = capsys.readouterr()
    assert "Traceback" not in got.err
    return got.out, got.err


def _sql(db: Path, statement: str) -> list:
    con = sqlite3.connect(str(db))
    try:
        with con:
            return con.execute(statement).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("row", ["not json{", '{"throughput": 1}', "[1, 2]", "null"],
                         ids=["damaged", "no-columns", "not-an-object", "null"])
def test_an_unusable_row_is_run_again(tmp_path: Path, capsys, row: str) -> None:
    ref = tmp_path / "ref"
    _sweep(tmp_path, ref, capsys)
    out = tmp_path / "o"
    _sweep(tmp_path, out, capsys)
    _sql(out / "points.sqlite", f"UPDATE points SET row = '{row}'")
    text, err = _sweep(tmp_path, out, capsys)
    assert "4 points - 0 from the cache, 4 run" in text and err == ""
    assert (out / "sweep.csv").read_bytes() == (ref / "sweep.csv").read_bytes()
    text, _err = _sweep(tmp_path, out, capsys)  # the rows were overwritten with good ones
    assert "4 points - 4 from the cache, 0 run" in text


def test_a_foreign_points_file_is_reported_once_and_left_alone(tmp_path: Path,
                                                               capsys) -> None:
    ref = tmp_path / "ref"
    _sweep(tmp_path, ref, capsys)
    out = tmp_path / "o"
    out.mkdir()
    _sql(out / "points.sqlite", "CREATE TABLE points (a INTEGER)")
    _sql(out / "points.sqlite", "INSERT INTO points VALUES (7)")
    text, err = _sweep(tmp_path, out, capsys)
    assert err.count("\n") == 1 and err.startswith(
        f"clustersim: the point cache {out / 'points.sqlite'} cannot be read ("), err
    assert "no such column" in err and "going on without it" in err
    assert "4 points - 0 from the cache, 4 run" in text
    assert (out / "sweep.csv").read_bytes() == (ref / "sweep.csv").read_bytes()
    assert _sql(out / "points.sqlite", "SELECT * FROM points") == [(7,)]
