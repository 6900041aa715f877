"""The what-if point cache: a page asked again gives the same bytes and simulates nothing,
more factors simulate only the new cell, an interrupted page keeps what it had finished,
and anything a point's result depends on (fields, files the scenario reads, factors, seed,
calibration, code) changes its key; a cache that cannot be used is reported, never fatal."""

from __future__ import annotations

import pytest
import yaml

import clustersim.sim.sweep as sweep_mod
from clustersim.cli import main
from clustersim.explore import load_study
from clustersim.report.whatif import whatif_grid
from clustersim.report.whatif_cells import CellCache, default_cache_path
from clustersim.scenario.yamlio import files_read

PLATFORM = {"topology": "star", "hosts": 4, "device": "v100", "link": "eth10g"}
SCN = {
    "platform": "plat.yaml",
    "workload": {"model": "resnet50", "batch_per_worker": 32, "jitter": 0.02},
    "algorithm": {"name": "bsp"},
    "compare": [{"name": "async_sgd", "label": "async"}],
    "sweep": {"workers": [2, 3]},
    "run": {"iterations": 3, "warmup": 1, "repeats": 2, "fidelity": "analytic"},
}
POINTS_PER_CELL = 2 * 2 * 2  # algorithms x worker counts x seeds


@pytest.fixture
def files(tmp_path):
    (tmp_path / "plat.yaml").write_text(yaml.safe_dump(PLATFORM))
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(SCN))
    return f


@pytest.fixture
def counted(monkeypatch):
    """How many points run_tasks simulates (its one-process path calls simulate_point)."""
    calls = []
    real = sweep_mod.simulate_point

    def spy(*a, **k):
        calls.append(a[2:4])
        return real(*a, **k)

    monkeypatch.setattr(sweep_mod, "simulate_point", spy)
    return calls


def _grid(path, cache_file, bws=(0.5,), lats=(), sets=(), advance=lambda n=1: None):
    scn, study = load_study(str(path), list(sets))
    cache = CellCache(cache_file, study)
    try:
        return whatif_grid(scn, bws, lats, advance, jobs=1, cache=cache)
    finally:
        cache.close()


def test_second_page_from_cache_same_values(files, tmp_path, counted):
    db = tmp_path / "c.sqlite"
    first = _grid(files, db)
    assert len(counted) == 2 * POINTS_PER_CELL  # cells 0.5x and 1x
    counted.clear()
    second = _grid(files, db)
    assert counted == []
    assert repr(first) == repr(second)  # floats to the last bit, tuples still tuples
    scn, _ = load_study(str(files))
    assert repr(whatif_grid(scn, (0.5,), (), jobs=1)) == repr(first)  # what no cache gives


def test_more_factors_simulate_only_the_new_cell(files, tmp_path, counted):
    db = tmp_path / "c.sqlite"
    _grid(files, db)
    counted.clear()
    _grid(files, db, bws=(0.5, 2.0), lats=(10.0,))
    assert len(counted) == 2 * POINTS_PER_CELL  # 2x and the 10x latency cell


def test_interrupted_page_keeps_finished_points(files, tmp_path, counted):
    db = tmp_path / "c.sqlite"
    done = []

    def advance(n=1):
        done.append(n)
        if len(done) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _grid(files, db, advance=advance)
    counted.clear()
    _grid(files, db)
    assert len(counted) == 2 * POINTS_PER_CELL - 5


def test_key_follows_everything_a_point_depends_on(files, tmp_path, monkeypatch):
    scn, study = load_study(str(files))
    c = CellCache(tmp_path / "c.sqlite", study)
    base = c.key(0, 2, 0, (1.0, 1.0))
    assert c.key(0, 2, 0, (1.0, 1.0)) == base
    others = {c.key(1, 2, 0, (1.0, 1.0)), c.key(0, 3, 0, (1.0, 1.0)),
              c.key(0, 2, 1, (1.0, 1.0)), c.key(0, 2, 0, (2.0, 1.0)),
              c.key(0, 2, 0, (1.0, 10.0)),
              CellCache(tmp_path / "c.sqlite", study, extra="profile").key(0, 2, 0, (1.0, 1.0)),
              CellCache(tmp_path / "c.sqlite", load_study(str(files), [
                  "workload.batch_per_worker=16"])[1]).key(0, 2, 0, (1.0, 1.0))}
    assert base not in others and len(others) == 7
    # the platform file's bytes, not its name
    (tmp_path / "plat.yaml").write_text(yaml.safe_dump({**PLATFORM, "link": "eth25g"}))
    assert CellCache(tmp_path / "c.sqlite", load_study(str(files))[1]).key(
        0, 2, 0, (1.0, 1.0)) != base
    # the code
    import clustersim.explore.cache as cache_mod

    monkeypatch.setattr(cache_mod, "code_version", lambda: "another version")
    assert c.key(0, 2, 0, (1.0, 1.0)) != base
    c.close()


def test_files_read_records_the_bytes_parsed(files, tmp_path):
    with files_read() as seen:
        load_study(str(files))
    assert set(seen) == {str(files.resolve()), str((tmp_path / "plat.yaml").resolve())}
    assert all(len(d) == 64 for d in seen.values())
    with files_read() as outer:
        with files_read() as inner:
            load_study(str(files))
        assert inner == outer == seen
        # the inner record closed, the outer one (equal to it) still records
        other = tmp_path / "other.yaml"
        other.write_text(yaml.safe_dump(PLATFORM))
        from clustersim.scenario.yamlio import load_yaml

        load_yaml(other)
    assert str(other.resolve()) in outer and str(other.resolve()) not in inner


def test_unusable_cache_is_reported_not_fatal(files, tmp_path, capsys, counted):
    bad = tmp_path / "not_a_db.sqlite"
    bad.write_bytes(b"this is not SQLite" * 100)
    grid = _grid(files, bad)
    err = capsys.readouterr().err
    assert "could not" in err and "going on without it" in err
    assert len(counted) == 2 * POINTS_PER_CELL and set(grid["cells"]) == {(0.5, 1.0),
                                                                          (1.0, 1.0)}


def test_rows_that_are_not_metrics_are_misses(files, tmp_path, counted):
    """A decodable row without the metrics' fields (another version's, another program's)
    is simulated again, not a TypeError: the page equals the uncached one."""
    import sqlite3

    db = tmp_path / "c.sqlite"
    _grid(files, db)
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE points SET row = ?", ('{"throughput": 1.0, "bogus": 2}',))
    con.close()
    counted.clear()
    grid = _grid(files, db)
    assert len(counted) == 2 * POINTS_PER_CELL
    scn, _ = load_study(str(files))
    assert repr(whatif_grid(scn, (0.5,), (), jobs=1)) == repr(grid)


def test_cli_says_how_many_points_came_from_the_cache(files, tmp_path, capsys):
    db = tmp_path / "say.sqlite"
    args = ["whatif", str(files), "--bandwidth", "0.5", "--latency", "1", "--cache", str(db),
            "-o", str(tmp_path / "p.html")]
    assert main(args) == 0
    assert "from the cache" not in capsys.readouterr().out
    assert main([*args[:3], "0.5,2", *args[4:]]) == 0
    out = capsys.readouterr().out
    assert f"{2 * POINTS_PER_CELL} of {3 * POINTS_PER_CELL} points from the cache" in out


def test_cli_page_bytes_cold_warm_and_no_cache(files, tmp_path):
    pages = [tmp_path / f"{k}.html" for k in "abc"]
    db = tmp_path / "cli.sqlite"
    args = [str(files), "--bandwidth", "0.5", "--latency", "1", "-q"]
    assert main(["whatif", *args, "-o", str(pages[0]), "--cache", str(db)]) == 0
    assert db.exists()
    assert main(["whatif", *args, "-o", str(pages[1]), "--cache", str(db)]) == 0
    assert main(["whatif", *args, "-o", str(pages[2]), "--no-cache"]) == 0
    assert pages[0].read_bytes() == pages[1].read_bytes() == pages[2].read_bytes()


def test_default_cache_path(monkeypatch, tmp_path):
    monkeypatch.setenv("CLUSTERSIM_CACHE_DIR", str(tmp_path / "own"))
    assert default_cache_path() == tmp_path / "own" / "points.sqlite"
    monkeypatch.delenv("CLUSTERSIM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "clustersim" / "points.sqlite"


def test_emulated_runs_come_from_the_cache_too(tmp_path, monkeypatch):
    """A page of run.convergence: emulate read every point from the cache and then ran every
    emulation again (13 of its 14 s), saying "20 of 20 points from the cache".  Now the
    second page runs no emulation and is the same as one without a cache."""
    calls = []
    real = sweep_mod._emulate_case

    def spy(s, alg, title):
        calls.append(title)
        return real(s, alg, title)

    monkeypatch.setattr(sweep_mod, "_emulate_case", spy)
    sets = ["compare=[]", "sweep.workers=[2]", "run.emulation.max_iterations=60"]
    db = tmp_path / "c.sqlite"
    first = _grid("scenarios/emulate_digits.yaml", db, sets=sets)
    assert len(calls) == 2  # one case, cells 0.5x and 1x
    calls.clear()
    second = _grid("scenarios/emulate_digits.yaml", db, sets=sets)
    assert calls == [] and repr(first) == repr(second)
    cell = first["cells"][(0.5, 1.0)]
    assert all("emulation" in p for pts in cell.values() for p in pts)
    scn, _ = load_study("scenarios/emulate_digits.yaml", sets)
    assert repr(whatif_grid(scn, (0.5,), (), jobs=1)) == repr(first)


@pytest.mark.parametrize("change", ["sweep.workers=[3]",
                                    "sweep.at={2: {workload.batch_per_worker: 4}}"])
def test_emulated_runs_of_other_worker_counts_are_not_served(tmp_path, change):
    """The cached row holds the runs of every worker count of the case's sweep, in order;
    its key had left out the counts and sweep.at, so a page with ``sweep.workers=[16]``
    after one with [4, 16] drew the 4-worker runs at 16 (audit B H1)."""
    sets = ["compare=[]", "sweep.workers=[2]", "run.emulation.max_iterations=60"]
    db = tmp_path / "c.sqlite"
    _grid("scenarios/emulate_digits.yaml", db, bws=(), sets=sets)
    other = [*sets, change]
    cached = _grid("scenarios/emulate_digits.yaml", db, bws=(), sets=other)
    scn, _ = load_study("scenarios/emulate_digits.yaml", other)
    assert repr(cached) == repr(whatif_grid(scn, (), (), jobs=1))
