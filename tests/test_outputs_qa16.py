"""QA 16c: bad input to explore's tables, calibration profiles and the outputs' paths.

Each test names the report's item.  The standard: one clear message naming the file and the
field, exit 2, no traceback, nothing half-written."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _list_table(tmp_path, col: str = "workers", value=(1, 2)):
    """A small results table whose ``col`` holds ``value`` (a list; a dict is a Parquet
    struct) in every row (H4)."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    df = pd.DataFrame({"algorithm": ["a", "a", "b", "b"], "workers": [2, 4, 2, 4],
                       "throughput": [1.0, 2.0, 1.5, 2.5]})
    df[col] = [list(value) if isinstance(value, tuple) else value] * len(df)
    path = tmp_path / "list.parquet"
    df.to_parquet(path)
    return path


@pytest.mark.parametrize("value", [(1, 2), {"lo": 1, "hi": 2}])
def test_h4_list_column_is_left_out_of_the_controls(tmp_path, capsys, value):
    """H4: a list-valued column crashed the page's options (unhashable numpy array); it is
    left out of the axes and metrics with a one-line note, and every control builds; a
    dict-valued (struct) column alike."""
    from clustersim.explorer.app import options
    from clustersim.explorer.table import read_table, split_columns

    df, named = read_table(_list_table(tmp_path, value=value))
    err = capsys.readouterr().err
    assert "'workers'" in err and "lists" in err and len(err.strip().splitlines()) == 1
    ins, mets = split_columns(df, named, "list.parquet")
    assert ins == ["algorithm"] and mets == ["throughput"]
    for col in ins:
        assert options(df, col) == ["a", "b"]


def test_h4_options_of_a_list_column_do_not_crash(tmp_path):
    """H4: options() itself takes a list column (a table built another way) without a
    traceback: distinct by text."""
    from clustersim.explorer.app import options
    from clustersim.explorer.table import read_table

    df, _ = read_table(_list_table(tmp_path))
    assert options(df, "workers") == ["[1 2]"]


def test_h4_named_input_that_holds_lists(tmp_path):
    """H4: a list column named as an input in the schema metadata is left out too; with no
    input left, the table is refused with the usual exit-2 error, not a traceback."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from clustersim.errors import InputError
    from clustersim.explorer.table import read_table, split_columns

    t = pa.table({"workers": [[1, 2], [3]], "throughput": [1.0, 2.0]})
    t = t.replace_schema_metadata({b"clustersim.inputs": b"workers"})
    path = tmp_path / "named.parquet"
    pq.write_table(t, path)
    df, named = read_table(path)
    with pytest.raises(InputError, match="needs input columns"):
        split_columns(df, named, str(path))


def test_h4_page_builds(tmp_path):
    """H4: the page's layout (where the traceback came from) builds for such a table."""
    pytest.importorskip("dash")
    from clustersim.explorer.app import Explorer, make_app
    from clustersim.explorer.table import read_table, split_columns

    df, named = read_table(_list_table(tmp_path))
    ins, mets = split_columns(df, named)
    make_app(Explorer(df, ins, mets), "t").layout()


def _profile(tmp_path, body: str):
    path = tmp_path / "prof.yaml"
    path.write_text("format: clustersim-calibration/1\n" + body)
    return path


def _refused(capsys, argv: list[str]) -> str:
    from clustersim.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


REAL = str(ROOT / "scenarios" / "real_bsp_mlp.yaml")


def test_m1_bare_profile_bandwidth_below_a_link(tmp_path, capsys):
    """M1: a hand-made profile's bare ``bandwidth: 1.4`` was applied as 1.4 B/s (exit 0);
    a rate below 1 kB/s is refused at its line, saying bare numbers are B/s."""
    prof = _profile(tmp_path, "links: {localhost_shm: {bandwidth: 1.4, latency: 4.4 us}}\n")
    err = _refused(capsys, ["predict", REAL, "--calibration", str(prof), "-q"])
    assert f"{prof}:2, links.localhost_shm.bandwidth: 1.4 B/s is below 1 kB/s" in err
    assert "bare number" in err and "GB/s" in err


@pytest.mark.parametrize("body, field", [
    ("devices: {localhost_core: {peak: 50}}\n", "devices.localhost_core.peak"),
    ("devices: {localhost_core: {mem_bw: 12}}\n", "devices.localhost_core.mem_bw"),
    ("links: {localhost_shm: {bandwidth: 10 B/s}}\n", "links.localhost_shm.bandwidth"),
])
def test_m1_profile_rates_below_their_floor(tmp_path, capsys, body, field):
    """M1: every rate field of a profile has its floor (with a unit too: 10 B/s)."""
    prof = _profile(tmp_path, body)
    err = _refused(capsys, ["predict", REAL, "--calibration", str(prof), "-q"])
    assert f"{prof}:2, {field}: " in err and "is below" in err


def test_m1_profile_si_numbers_still_read(tmp_path):
    """M1: a bare SI number (the documented form for profiles) still loads."""
    from clustersim.calibration.profilecheck import load_checked

    prof = _profile(tmp_path, "links: {localhost_shm: {bandwidth: 4000000000.0, "
                              "latency: 2.0e-06}}\n")
    assert load_checked(prof).links["localhost_shm"]["bandwidth"] == 4e9


@pytest.mark.parametrize("body, field", [
    ("links: {localhost_shm: {bandwidth: 2 GB/s}}\nnetwork: {protocols: {localhost_shm: "
     "[{start: 0 B, overhead: 1 us, efficiency: 1, collective_efficiency: 1e9}]}}\n",
     "network.protocols.localhost_shm[0].collective_efficiency"),
    ("links: {localhost_shm: {bandwidth: 2 GB/s}}\nnetwork: {collective_efficiency: 0.001}\n",
     "network.collective_efficiency"),
])
def test_m1_collective_efficiency_beyond_the_fitter(tmp_path, capsys, body, field):
    """M1: ``collective_efficiency: 1e9`` was accepted; the fitter keeps 0.01..100."""
    prof = _profile(tmp_path, body)
    err = _refused(capsys, ["predict", REAL, "--calibration", str(prof), "-q"])
    assert f"{field}: must be in [0.01, 100]" in err and f"{prof}:3" in err


def test_m1_sensitivity_checks_the_profile_too(tmp_path, capsys):
    """M1: ``sensitivity --calibration`` reads the profile through the same checks."""
    from clustersim.calibration.applyprofile import load_applicable
    from clustersim.errors import InputError
    from clustersim.scenario.schema import load_scenario

    prof = _profile(tmp_path, "links: {localhost_shm: {bandwidth: 1.4}}\n")

    with pytest.raises(InputError, match="below 1 kB/s"):
        load_applicable(load_scenario(REAL), prof)


ALEXNET = str(ROOT / "scenarios" / "theano_mpi_alexnet.yaml")
SMALL = ["--set", "sweep.workers=[1, 2]"]
needs_full = pytest.mark.skipif(not __import__("os").path.exists("/dev/full"),
                                reason="needs /dev/full")


@needs_full
@pytest.mark.parametrize("argv", [
    ["predict", ALEXNET, *SMALL, "-q", "--csv", "/dev/full"],
    ["predict", ALEXNET, *SMALL, "-q", "--trace", "/dev/full"],
    ["whatif", ALEXNET, *SMALL, "-q", "--bandwidth", "1,2", "-o", "/dev/full"],
])
def test_also_full_device_output_exits_2(capsys, argv):
    """Also seen: an output option on a full device exited 1; it is the user's to change,
    as every other unwritable output is: exit 2, one line that begins "error:" as every
    input error's does (audit E L5: it began "failed:", the prefix of exit 1)."""
    from clustersim.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == "error: cannot write /dev/full: No space left on device\n"


def test_also_full_disk_names_the_regular_file(tmp_path, capsys, monkeypatch):
    """Also seen: a regular output file on a full disk raised an OSError naming no file,
    reported as "cannot write the standard output", exit 1; it names the file, exit 2, and
    nothing is left."""
    import errno
    import os

    from clustersim.cli import main
    from clustersim.report import output

    real = os.fdopen

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def fileno(self):
            return self.fh.fileno()

        def write(self, _data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(output.os, "fdopen", lambda fd, mode: Full(real(fd, mode)))
    csv = tmp_path / "o.csv"
    assert main(["predict", ALEXNET, *SMALL, "-q", "--csv", str(csv)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: cannot write {csv}: No space left on device\n"
    assert list(tmp_path.iterdir()) == []


@needs_full
def test_also_sweep_failed_write_says_the_cache_stays(tmp_path, capsys):
    """Also seen: a sweep whose table could not be written left its --out folder with
    points.sqlite, unannounced; the cache is kept by design (a rerun reads the points), and
    the one-line message says so; no table is written."""
    from clustersim.cli import main

    out = tmp_path / "o"
    assert main(["sweep", ALEXNET, *SMALL, "-q", "-j", "1", "--out", str(out),
                 "--csv", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cannot write /dev/full" in err
    assert f"point cache {out / 'points.sqlite'}" in err and "rerun" in err
    assert sorted(p.name for p in out.iterdir()) == ["points.sqlite"]


def test_also_sweep_follows_an_output_link_as_predict_does(tmp_path, capsys):
    """Also seen: sweep wrote through a symlinked DIR/sweep.json.  The project's rule for
    outputs (clustersim/report/output.py) is that a link is followed - its target replaced,
    the link kept - for every command; sweep's tables go through the same check_outputs and
    write_outputs as predict's --json, so both behave alike (pinned here)."""
    import json

    from clustersim.cli import main

    out = tmp_path / "o"
    out.mkdir()
    for cmd, link, argv in (
            ("sweep", out / "sweep.json", ["--out", str(out), "--no-cache", "-j", "1"]),
            ("predict", tmp_path / "p.json", ["--json", str(tmp_path / "p.json")])):
        target = tmp_path / f"{cmd}-target.json"
        target.write_text("{}")
        link.symlink_to(target)
        assert main([cmd, ALEXNET, *SMALL, "-q", *argv]) == 0, capsys.readouterr().err
        assert link.is_symlink() and json.loads(target.read_text()), cmd


@pytest.mark.parametrize("fill", [float("nan"), float("inf")])
def test_a_metric_without_a_finite_value_is_not_offered(tmp_path, capsys, fill):
    """QA 19 M6: an all-inf metric was charted without a word; it is left out of the
    metrics with a note.  An empty one (all NaN: a metric the sweep has none of, such as
    saturation_workers without a master) is left out as before, quietly."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from clustersim.explorer.table import read_table, split_columns

    df = pd.DataFrame({"algorithm": ["a", "b"], "workers": [2, 4],
                       "throughput": [fill, fill], "iteration_time": [0.1, 0.2]})
    path = tmp_path / "t.parquet"
    df.to_parquet(path)
    table, named = read_table(path)
    err = capsys.readouterr().err
    if fill == float("inf"):
        assert "'throughput' holds no finite value" in err
        assert len(err.strip().splitlines()) == 1
    else:
        assert err == ""
    ins, mets = split_columns(table, named, "t.parquet")
    assert mets == ["iteration_time"] and "throughput" not in ins


def test_metadata_naming_a_missing_input_is_said(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from clustersim.explorer.table import read_table

    t = pa.table({"workers": [2, 4], "throughput": [1.0, 2.0]})
    t = t.replace_schema_metadata({b"clustersim.inputs": b"workers,nosuchcol"})
    path = tmp_path / "m.parquet"
    pq.write_table(t, path)
    read_table(path)
    assert "names 'nosuchcol', which the table does not have" in capsys.readouterr().err
