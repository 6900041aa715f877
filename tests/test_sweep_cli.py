"""``clustersim sweep`` as a command: scenarios it refuses as predict does, where its point
cache lives (``--cache``), and the progress it reports when nobody watches a terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.cli import main


def test_two_algorithms_with_one_title_are_refused_as_in_predict(tmp_path: Path, capsys) -> None:
    """The README's own training example shape (bsp nccl32 + compare bsp ar, no labels):
    predict refused it, sweep wrote rows with the same inputs and different numbers."""
    path = tmp_path / "dup.yaml"
    path.write_text("name: dup\nplatform: crossbar16\n"
                    "workload: {model: resnet50, batch_per_worker: 32, bucket: 25 MiB}\n"
                    "algorithm: {name: bsp, strategy: nccl32, overlap: true}\n"
                    "compare: [ {name: bsp, strategy: ar} ]\n"
                    "sweep:\n  workers: [2, 4]\nrun: {iterations: 3, warmup: 1, seed: 0}\n")
    out = tmp_path / "out"
    for argv in (["sweep", str(path), "--out", str(out), "-q"], ["predict", str(path), "-q"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"{path}" in err and "would both be reported as 'bsp'" in err, err
        assert err.count("\n") == 1
    assert not out.exists()
    path.write_text(path.read_text().replace("strategy: ar}", "strategy: ar, label: ar}"))
    assert main(["sweep", str(path), "--out", str(out), "-q", "--no-cache", "-j", "1"]) == 0


def test_sweeps_with_other_outputs_share_a_cache_file(tmp_path: Path, capsys,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``--cache FILE``: the second sweep, writing elsewhere, runs nothing (every point from
    the first one's file); with all three tables given, no folder is made for the cache."""
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nplatform: crossbar16\n"
                    "workload: {model: resnet50, batch_per_worker: 32, bucket: 25 MiB}\n"
                    "algorithm: {name: bsp, strategy: ring}\n"
                    "sweep:\n  workers: [2, 4]\nrun: {iterations: 3, warmup: 1, seed: 0}\n")
    db = tmp_path / "shared.sqlite"
    assert main(["sweep", str(path), "--out", str(tmp_path / "a"), "--cache", str(db),
                 "-j", "1"]) == 0
    assert f"point cache: {db}" in capsys.readouterr().out
    assert not (tmp_path / "a" / "points.sqlite").exists() and db.exists()
    files = [f"--{k}={tmp_path / ('b.' + k)}" for k in ("csv", "json", "parquet")]
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", str(path), "--cache", str(db), "-j", "1", *files]) == 0
    assert "2 from the cache, 0 run" in capsys.readouterr().out
    assert not (tmp_path / "s.sweep").exists()
    assert (tmp_path / "a" / "sweep.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert main(["sweep", str(path), "--cache", ""]) == 2


def test_a_sweep_logged_to_a_file_says_how_far_it_is(tmp_path: Path, capsys,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """stderr not a terminal (mpiexec's pipe, a batch log): plain progress lines, as often as
    PROGRESS_EVERY allows (0 here: after every point but the last); nothing with -q."""
    import clustersim.commands.sweep as sweep_cmd

    monkeypatch.setattr(sweep_cmd, "PROGRESS_EVERY", 0.0)
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nplatform: crossbar16\n"
                    "workload: {model: resnet50, batch_per_worker: 32, bucket: 25 MiB}\n"
                    "algorithm: {name: bsp, strategy: ring}\n"
                    "sweep:\n  workers: [2, 4, 8]\nrun: {iterations: 3, warmup: 1, seed: 0}\n")
    assert main(["sweep", str(path), "--out", str(tmp_path / "a"), "-j", "1",
                 "--no-cache"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert [ln.split(" (")[0] for ln in lines] == ["sweep: 1/3 points", "sweep: 2/3 points"]
    assert "points/s" in lines[0] and "s left" in lines[0]
    assert main(["sweep", str(path), "--out", str(tmp_path / "b"), "-j", "1", "--no-cache",
                 "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_the_summary_names_no_cache_it_could_not_use(tmp_path: Path, capsys) -> None:
    import sqlite3

    path = tmp_path / "s.yaml"
    path.write_text("name: s\nplatform: crossbar16\n"
                    "workload: {model: resnet50, batch_per_worker: 32, bucket: 25 MiB}\n"
                    "algorithm: {name: bsp, strategy: ring}\n"
                    "sweep:\n  workers: [2, 4]\nrun: {iterations: 3, warmup: 1, seed: 0}\n")
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:  # another program's table
        db.execute("create table points (a integer)")
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--cache", str(other),
                 "-j", "1"]) == 0
    out, err = capsys.readouterr()
    assert "cannot be read" in err and "point cache:" not in out
