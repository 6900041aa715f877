"""``clustersim sweep`` defects found by QA pass 6a: an ``algorithm`` axis's column, points
with no machine left for a server, the point cache among the outputs, the design counts in
the summary, and labels an axis repeats (tests/test_sweep_qa6_a_axes.py: what the axes and
constraints accept)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.cli import main

SCN = ("name: s\nplatform: crossbar16\n"
       "workload: {model: resnet50, batch_per_worker: 32, bucket: 25 MiB}\n"
       "algorithm: {name: bsp, strategy: ring, label: ring}\n"
       "compare: [{name: bsp, strategy: ar, label: ar}]\n"
       "run: {iterations: 3, warmup: 1, seed: 0}\n")


def _scenario(tmp_path: Path, sweep: str, base: str = SCN) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(base + "sweep:\n" + sweep)
    return path


def _sweep(path: Path, out: Path, *extra: str) -> int:
    return main(["sweep", str(path), "--out", str(out), "--no-cache", "-j", "1", *extra])


def _refused(capsys: pytest.CaptureFixture, code: int) -> str:
    """The one-line message of a refusal (exit 2, no traceback)."""
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


# --------------------------------------------------------------------------- H1
def test_an_algorithm_axis_has_a_column_of_its_own(tmp_path: Path, capsys) -> None:
    """The case column ``algorithm`` holds each row's title; the axis of whole algorithm
    mappings is ``algorithm (axis)``, empty for the compare case (the axis changes the main
    algorithm only).  Two columns named ``algorithm`` made the Parquet file unreadable."""
    pq = pytest.importorskip("pyarrow.parquet")
    path = _scenario(tmp_path, "  workers: [2]\n  axes:\n    algorithm:\n"
                               "      - {name: bsp, strategy: ring, label: x}\n"
                               "      - {name: bsp, strategy: nccl32, label: y}\n")
    out = tmp_path / "o"
    assert _sweep(path, out, "-q") == 0
    table = pq.read_table(out / "sweep.parquet")
    assert table.column_names[:4] == ["algorithm", "workers", "algorithm (axis)", "seed"]
    assert table.column("algorithm").to_pylist() == ["x", "y", "ar"]
    axis = table.column("algorithm (axis)").to_pylist()
    assert axis[0] == '{"label": "x", "name": "bsp", "strategy": "ring"}'
    assert axis[1] == '{"label": "y", "name": "bsp", "strategy": "nccl32"}'
    assert axis[2] is None
    header = (out / "sweep.csv").read_text().splitlines()[0].split(",")
    assert header.count("algorithm") == 1


# --------------------------------------------------------------------------- H2
KNL = ("name: pl\nplatform: cori_knl_cores\n"
       "workload: {model: googlenet, batch_per_worker: 8, optimizer: sgd}\n"
       "algorithm: {name: async_easgd, tau: 1, label: A}\n"
       "run: {iterations: 4, warmup: 1, seed: 0}\n")


def test_a_point_with_no_machine_left_for_the_server_is_skipped(tmp_path: Path,
                                                                 capsys) -> None:
    """64 workers of 68 cores each fill all 64 KNL nodes: ``placement.server: machine``
    finds none for the master.  That point is skipped and counted, with the reason, like a
    point with more workers than devices; the others run (it failed the whole sweep, after
    the other points had run, with a message naming no point)."""
    path = _scenario(tmp_path, "  workers: [17, 64]\n  axes:\n"
                               "    placement.devices_per_worker: [1, 68]\n"
                               "    placement.server: [machine]\n", KNL)
    out = tmp_path / "o"
    assert _sweep(path, out) == 0
    text = capsys.readouterr().out
    assert "4 points - 0 from the cache, 3 run" in text and "1 skipped" in text
    assert ("skipped: 64 workers leave 0 machine(s) free for the 1 server(s) of A "
            "(placement.server: machine; platform 'cori_knl_cores (68 devices per worker)')"
            ) in text
    rows = [r.split(",")[:3] for r in (out / "sweep.csv").read_text().splitlines()[1:]]
    assert rows == [["A", "17", "1"], ["A", "17", "68"], ["A", "64", "1"]]


def test_a_design_whose_every_point_has_no_machine_is_refused(tmp_path: Path,
                                                             capsys) -> None:
    path = _scenario(tmp_path, "  workers: [64]\n  axes:\n"
                               "    placement.devices_per_worker: [68]\n"
                               "    placement.server: [machine]\n", KNL)
    out = tmp_path / "o"
    err = _refused(capsys, _sweep(path, out))
    assert f"{path}:" in err and "every point is skipped (64 workers leave 0 machine(s)" in err
    assert "placement.server: device" in err
    assert not out.exists()


# --------------------------------------------------------------------------- M2
@pytest.mark.parametrize("cache, says", [
    ("o", "--cache {o} is the --out folder"),
    ("o/sweep.csv", "--cache {o}/sweep.csv is where --csv writes"),
    ("o/sweep.json/x", "--cache {o}/sweep.json/x is where --json writes"),
    ("", "--csv {o}/points.sqlite is the point cache's file"),
])
def test_a_point_cache_among_the_outputs_is_refused_before_anything_runs(
        tmp_path: Path, capsys, cache: str, says: str) -> None:
    """``--out X --cache X`` ran every point, then failed with a traceback; a cache named
    like an output file was overwritten by the table."""
    path = _scenario(tmp_path, "  workers: [1, 2]\n")
    o = tmp_path / "o"
    extra = ["--cache", str(tmp_path / cache)] if cache else ["--csv", str(o / "points.sqlite")]
    code = main(["sweep", str(path), "--out", str(o), "-j", "1", *extra])
    err = _refused(capsys, code)
    assert says.format(o=o) in err, err
    assert not o.exists()


def test_a_point_cache_linked_to_an_output_file_is_refused(tmp_path: Path, capsys) -> None:
    """A --cache that is a symbolic link to where --csv writes is that file (QA 6c L6: the
    paths had been compared unresolved; the table then overwrote what the link points at)."""
    path = _scenario(tmp_path, "  workers: [1, 2]\n")
    o = tmp_path / "o"
    link = tmp_path / "cache.sqlite"
    link.symlink_to(o / "sweep.csv")
    code = main(["sweep", str(path), "--out", str(o), "-j", "1", "--cache", str(link)])
    err = _refused(capsys, code)
    assert f"--cache {link} is where --csv writes" in err, err
    assert not o.exists()


# --------------------------------------------------------------------------- L1, L7
def test_the_summary_counts_the_points_the_design_lost(tmp_path: Path, capsys) -> None:
    path = _scenario(tmp_path, "  workers: [1, 2, 4]\n  axes:\n"
                               "    workload.batch_per_worker: [32, 64, 128]\n"
                               "  constraints: ['workers * workload.batch_per_worker <= 128']\n")
    assert _sweep(path, tmp_path / "o") == 0
    text = capsys.readouterr().out
    assert "12 points" in text and "design points: 3 excluded by the constraints" in text
    path = _scenario(tmp_path, "  workers: [2]\n  axes:\n"
                               "    workload.batch_per_worker: [32, 64]\n"
                               "  sample: {method: sobol, n: 64, seed: 3}\n")
    assert _sweep(path, tmp_path / "o") == 0
    text = capsys.readouterr().out
    assert "4 points" in text and "design points: 62 duplicate samples dropped" in text


def test_one_point_is_one_point(tmp_path: Path, capsys) -> None:
    path = _scenario(tmp_path, "  workers: [2]\n", SCN.replace(
        "compare: [{name: bsp, strategy: ar, label: ar}]\n", ""))
    assert _sweep(path, tmp_path / "o") == 0
    text = capsys.readouterr().out
    assert "s: 1 point - " in text and "design points" not in text


@pytest.mark.parametrize("axis", ["algorithm.label: [ar, z]",
                                  "algorithm: [{name: bsp, strategy: nccl32, label: ar}]"])
def test_an_axis_label_repeating_another_cases_is_refused(tmp_path: Path, capsys,
                                                          axis: str) -> None:
    """As predict refuses two algorithms reported under one title: the rows ``ar`` (the
    main algorithm, relabelled) and ``ar`` (the compare case) had the same workers and
    seed."""
    path = _scenario(tmp_path, f"  workers: [2]\n  axes:\n    {axis}\n")
    err = _refused(capsys, _sweep(path, tmp_path / "o"))
    assert f"{path}:10" in err and "two algorithms would both be reported as 'ar'" in err, err
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- L2
def test_the_cap_is_on_the_points_that_run_not_on_n(tmp_path: Path, capsys,
                                                     monkeypatch) -> None:
    """MAX_POINTS capped n, not n x cases: a 10^6-point sample of a 6-algorithm scenario
    sat silent for minutes building 6 x 10^6 points.  The cap now counts what runs."""
    import clustersim.explore.points as points

    path = _scenario(tmp_path, "  workers: [1, 2]\n  axes:\n"
                               "    workload.batch_per_worker: [16, 32, 64]\n")
    monkeypatch.setattr(points, "MAX_POINTS", 10)  # 6 design points x 2 cases = 12 > 10
    built = []
    real = points.Point
    monkeypatch.setattr(points, "Point", lambda *a: built.append(a) or real(*a))
    err = _refused(capsys, _sweep(path, tmp_path / "o"))
    assert "more than 10 points (6 design points x 2 cases" in err, err
    assert built == []  # every axis reaches every case: refused before a point is built
    monkeypatch.setattr(points, "Point", real)
    monkeypatch.setattr(points, "MAX_POINTS", 12)
    assert _sweep(path, tmp_path / "o", "-q") == 0


def test_the_check_of_the_points_reports_progress(tmp_path: Path) -> None:
    """A large design's check (every point's scenario parsed) reports its progress: every
    point counted once, in steps of TICK."""
    from clustersim.explore import load_study
    from clustersim.explore.checks import TICK, check_points
    from clustersim.explore.points import study_points

    path = _scenario(tmp_path, "  workers: [1, 2]\n  axes:\n    workload.jitter: {from: 0, "
                               "to: 0.05}\n  sample: {method: lhs, n: 700}\n")
    _, study = load_study(str(path), [])
    pts = study_points(study)
    ticks: list[int] = []
    check_points(study, pts, ticks.append)
    assert sum(ticks) == len(pts) > TICK and ticks[0] == TICK


# --------------------------------------------------------------------------- L3
def test_text_fields_keep_the_cache_and_are_not_axes(tmp_path: Path, capsys) -> None:
    """Rewording ``about`` or ``assumptions`` (no simulation reads them) had re-run every
    point; an ``about`` axis doubled the table with equal rows."""
    path = _scenario(tmp_path, "  workers: [1, 2]\n")
    args = ["sweep", str(path), "--out", str(tmp_path / "o"), "-j", "1"]
    assert main(args) == 0
    assert "0 from the cache, 4 run" in capsys.readouterr().out
    path.write_text(path.read_text().replace("name: s\n", "name: s\nabout: reworded\n"
                                             "assumptions: [a new one]\n"))
    assert main(args) == 0
    assert "4 from the cache, 0 run" in capsys.readouterr().out
    path.write_text(path.read_text().replace("seed: 0", "seed: 1"))  # a real change
    assert main(args) == 0
    assert "0 from the cache, 4 run" in capsys.readouterr().out
    for axis in ("about", "assumptions"):
        err = _refused(capsys, _sweep(_scenario(tmp_path, f"  axes: {{{axis}: [a, b]}}\n"),
                                      tmp_path / "p"))
        assert f"an axis cannot change '{axis}'" in err


# --------------------------------------------------------------------------- L6
@pytest.mark.parametrize("cleared", ["null", "[]"])
def test_the_workers_axis_can_replace_a_files_worker_list(tmp_path: Path, capsys,
                                                           cleared: str) -> None:
    """``--set sweep.workers=null`` over a file that lists them lets the 'workers' axis take
    over (it had failed with "give the worker counts once" whatever was set)."""
    path = _scenario(tmp_path, "  workers: [1, 2, 4]\n")
    both = ["--set", "sweep.axes={workers: [2, 8]}"]
    err = _refused(capsys, _sweep(path, tmp_path / "o", *both))
    assert "give the worker counts once" in err and "--set sweep.workers=null" in err
    assert _sweep(path, tmp_path / "o", "--set", f"sweep.workers={cleared}", *both) == 0
    text = (tmp_path / "o" / "sweep.csv").read_text().splitlines()
    assert [r.split(",")[1] for r in text[1:]] == ["2", "8", "2", "8"]


# --------------------------------------------------------------------------- QA 19 L14
@pytest.mark.parametrize("values, item, title", [
    ("[{name: bsp, strategy: ring, label: x}, {name: bsp, strategy: nccl32, label: x}]",
     "[1].label", "x"),
    ("[{name: bsp, strategy: ring}, {name: bsp, strategy: nccl32}]", "[1]", "bsp"),
    ("[async_sgd, {name: async_sgd, tau: 2}]", "[1]", "async_sgd"),
])
def test_two_values_of_an_algorithm_axis_under_one_title_are_refused(
        tmp_path: Path, capsys, values: str, item: str, title: str) -> None:
    """As predict refuses two compare entries reported under one title: rows that only the
    ``algorithm (axis)`` column told apart, one series in every chart grouped by
    ``algorithm``."""
    path = _scenario(tmp_path, f"  workers: [2]\n  axes:\n    algorithm: {values}\n")
    err = _refused(capsys, _sweep(path, tmp_path / "o"))
    assert f"{path}:10, sweep.axes.algorithm{item}: items 0 and 1 would both be reported " \
           f"as {title!r}" in err, err
    assert not (tmp_path / "o").exists()


def test_labels_alike_but_for_blanks_are_one_title(tmp_path: Path, capsys) -> None:
    """The reader drops a label's blanks, so ``x`` and ``'x '`` are both reported as ``x``
    (audit C M2)."""
    path = _scenario(tmp_path, "  workers: [2]\n  axes:\n    algorithm: [{name: bsp, "
                               "strategy: ring, label: x}, {name: bsp, strategy: ar, "
                               "label: 'x '}]\n")
    err = _refused(capsys, _sweep(path, tmp_path / "o"))
    assert "items 0 and 1 would both be reported as 'x'" in err, err
