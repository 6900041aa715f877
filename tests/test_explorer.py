"""The explorer's table and the what-if grid: every cell's numbers equal a sweep of that cell
alone (one pool for all the cells, per-process memos and all), the table's columns, the
chart's slicing, and the ``explore`` command's input errors."""

from __future__ import annotations

import math

import pytest
import yaml

from clustersim.cli import main
from clustersim.report.whatif import scaled_scenario, whatif_grid
from clustersim.scenario.schema import parse_scenario
from clustersim.sim.sweep import run_sweep

SCN = {
    "platform": {"topology": "star", "hosts": 8, "device": "v100", "link": "eth10g"},
    "workload": {"model": "resnet50", "batch_per_worker": 32, "jitter": 0.05},
    "algorithm": {"name": "bsp"},
    "compare": [{"name": "sync_ps", "label": "ps"}],
    "sweep": {"workers": [1, 2, 4]},
    "run": {"iterations": 3, "warmup": 1, "fidelity": "analytic", "repeats": 2},
}
FACTORS = [(0.5, 1.0), (1.0, 1.0), (2.0, 1.0), (1.0, 10.0)]


def _alone(bw: float, lat: float) -> dict:
    """One cell simulated by itself: a fresh scenario (fresh platform and memos), here."""
    res = run_sweep(scaled_scenario(parse_scenario(SCN), bw, lat), jobs=1)
    return {t: [p.to_dict() for p in pts] for t, pts in res.points.items()}


@pytest.fixture(scope="module")
def alone() -> dict:
    return {f: _alone(*f) for f in FACTORS}


@pytest.mark.parametrize("jobs", [1, 2])
def test_grid_cells_equal_each_cell_alone(alone, jobs):
    grid = whatif_grid(parse_scenario(SCN), [0.5, 2.0], [10.0], jobs=jobs)
    assert set(grid["cells"]) == set(FACTORS)
    for f in FACTORS:
        assert grid["cells"][f] == alone[f], f
    # and the factors matter: half the bandwidth is slower for the parameter server
    assert (alone[(0.5, 1.0)]["ps"][-1]["throughput"]
            < alone[(1.0, 1.0)]["ps"][-1]["throughput"])


def test_table_columns_and_values(alone):
    from clustersim.explorer.table import compute_cells, split_columns

    df = compute_cells(parse_scenario(SCN), [(2.0, 1.0), (1.0, 10.0)], jobs=1)
    ins, mets = split_columns(df)
    assert ins == ["algorithm", "workers", "bandwidth_factor", "latency_factor"]
    for m in ("throughput", "efficiency", "iteration_time", "time_to_target", "goodput",
              "statistical_efficiency"):
        assert m in mets, m
    assert len(df) == 2 * 2 * 3  # cells x algorithms x workers
    for (bw, lat) in [(2.0, 1.0), (1.0, 10.0)]:
        for alg, pts in alone[(bw, lat)].items():
            for p in pts:
                row = df[(df.algorithm == alg) & (df.workers == p["workers"])
                         & (df.bandwidth_factor == bw) & (df.latency_factor == lat)]
                assert len(row) == 1
                assert row.throughput.item() == p["throughput"]
                lo, hi = p["interval"]["throughput"]
                assert row.throughput_lo.item() == lo and row.throughput_hi.item() == hi
                assert lo <= p["throughput"] <= hi


def test_parquet_round_trip_and_chart_slicing(tmp_path, alone):
    pytest.importorskip("dash")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from clustersim.explorer.app import NONE, Explorer, figure
    from clustersim.explorer.table import read_table, split_columns, sweep_table

    df = sweep_table(alone)
    t = pa.Table.from_pandas(df, preserve_index=False)
    t = t.replace_schema_metadata({b"clustersim.inputs": b"algorithm,workers,"
                                   b"bandwidth_factor,latency_factor"})
    pq.write_table(t, tmp_path / "r.parquet")
    back, inputs = read_table(tmp_path / "r.parquet")
    ins, mets = split_columns(back, inputs)
    assert ins == inputs and "throughput" in mets
    ex = Explorer(back, ins, mets)
    fixed = {"algorithm": "ps", "workers": "4", "bandwidth_factor": "2.0",
             "latency_factor": "1.0"}
    fig = figure(ex, "workers", "throughput", "algorithm", NONE, fixed)
    # colour by algorithm: one line each, the other axes fixed at bandwidth 2x, latency 1x
    assert sorted(tr.name for tr in fig.data) == ["bsp", "ps"]
    for tr in fig.data:
        want = [p["throughput"] for p in alone[(2.0, 1.0)][tr.name]]
        assert list(tr.y) == want
        assert tr.error_y.array is not None  # the seeds' interval
    assert len({tr.line.dash for tr in fig.data}) == 2  # dash differs, not colour alone
    fig = figure(ex, "bandwidth_factor", "throughput", NONE, NONE, fixed)
    assert list(fig.data[0].x) == [0.5, 1.0, 2.0]  # latency fixed at 1x: 10x left out
    assert [t for t in fig.layout.xaxis.ticktext] == ["0.5x", "1x", "2x"]
    assert math.isclose(fig.data[0].y[0], alone[(0.5, 1.0)]["ps"][2]["throughput"])


def test_explore_input_errors(tmp_path, capsys):
    assert main(["explore", str(tmp_path / "missing.parquet")]) == 2
    assert "missing.parquet" in capsys.readouterr().err
    f = tmp_path / "bench.yaml"
    f.write_text(yaml.safe_dump({
        "platform": {"topology": "star", "hosts": 4, "device": "v100", "link": "eth10g"},
        "benchmark": {"op": "allreduce", "algorithms": ["ring"], "ranks": [4],
                      "sizes": [1024]}}))
    assert main(["explore", str(f)]) == 2
    assert "training scenario" in capsys.readouterr().err
    assert main(["explore", str(f), "--bandwidth", "-1"]) == 2


def _sweep_parquet(tmp_path):
    """``clustersim sweep`` of SCN with a batch-size axis: its table (sweep.parquet, .json)."""
    scn = dict(SCN, sweep={"workers": [1, 2, 4],
                           "axes": {"workload.batch_per_worker": [16, 32]}})
    f = tmp_path / "scn.yaml"
    f.write_text(yaml.safe_dump(scn))
    assert main(["sweep", str(f), "--out", str(tmp_path / "sw"), "-j", "1", "-q",
                 "--no-cache"]) == 0
    return f, tmp_path / "sw" / "sweep.parquet"


def _added(ex, bw: float, lat: float) -> None:
    """Compute a new position in the app and wait (at most a minute) until it is added."""
    import time

    ex.start(bw, lat)
    for _ in range(600):
        if ex.version:
            break
        time.sleep(0.1)
    assert ex.message.startswith(f"added bandwidth {bw:g}x"), ex.message


def test_sweep_table_columns(tmp_path):
    """A sweep's integer counters (sim_events, flows, seeds, devices, servers) are metrics,
    from the table's schema metadata, else the sweep's JSON beside it, else by name."""
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    from clustersim.explorer.table import read_table, split_columns

    _, pq = _sweep_parquet(tmp_path)
    axes = ["algorithm", "workers", "workload.batch_per_worker", "seed"]
    (pq.parent / "sweep.json").unlink()
    df, named = read_table(pq)  # the schema's clustersim.inputs
    assert named == axes
    ins, mets = split_columns(df, named)
    bare = pq.parent / "bare.parquet"
    parquet.write_table(parquet.read_table(pq).replace_schema_metadata(None), bare)
    df, named = read_table(bare)
    assert named is None and split_columns(df, named) == (ins, mets)
    assert ins == ["algorithm", "workers", "workload.batch_per_worker", "seed"]
    for m in ("throughput", "sim_events", "flows", "seeds", "devices", "servers",
              "warmup_steps", "measured_steps"):
        assert m in mets, m
    df["empty"] = float("nan")  # a metric empty everywhere: nothing to plot
    assert split_columns(df, None) == (ins, mets)


def test_sweep_table_grows_without_mixing_rows(tmp_path):
    """explore TABLE --scenario: the file's rows are the 1x network; computed rows carry the
    scenario's batch size and seed, so a chart at fixed inputs has one row per point."""
    pytest.importorskip("dash")
    from clustersim.cli import build_parser
    from clustersim.commands.explore import load
    from clustersim.explorer.app import NONE, default_value, figure, options

    f, pq = _sweep_parquet(tmp_path)
    args = build_parser().parse_args(["explore", str(pq), "--scenario", str(f), "-j", "1",
                                      "--no-cache", "-q"])
    ex, _ = load(args)
    assert ex.inputs[-2:] == ["bandwidth_factor", "latency_factor"]
    assert default_value(ex, "workload.batch_per_worker", ["16", "32"]) == "32"
    assert ex.start(1.0, 1.0) == ("bandwidth 1x, latency 1x is already in the table at "
                                  "workload.batch_per_worker 32, seed 0 (the scenario's own: "
                                  "new points are computed there)")
    _added(ex, 2.0, 1.0)
    new = ex.table[ex.table.bandwidth_factor == 2.0]
    assert len(new) == 2 * 3 and set(new["workload.batch_per_worker"]) == {32}
    assert set(new["seed"]) == {0}
    assert options(ex.table, "bandwidth_factor") == ["1.0", "2.0"]
    fixed = {c: default_value(ex, c, options(ex.table, c)) for c in ex.inputs}
    assert fixed["bandwidth_factor"] == "1.0" and fixed["algorithm"] == "bsp"
    for bw in ("1.0", "2.0"):
        fig = figure(ex, "workers", "throughput", "algorithm", NONE,
                     dict(fixed, bandwidth_factor=bw))
        assert sorted(tr.name for tr in fig.data) == ["bsp", "ps"]
        assert all(list(tr.x) == [1, 2, 4] for tr in fig.data)  # one row per point
    # colour by a numeric input: a line per worker count, in numeric order
    fig = figure(ex, "workload.batch_per_worker", "throughput", "workers", NONE, fixed)
    assert [tr.name for tr in fig.data] == ["1", "2", "4"]
    assert all(list(tr.x) == [16, 32] for tr in fig.data)
    assert fig.layout.yaxis.title.text == "throughput (samples/s)"


def test_chart_without_rows_says_so(alone):
    pytest.importorskip("dash")
    from clustersim.explorer.app import NONE, Explorer, figure
    from clustersim.explorer.table import split_columns, sweep_table

    df = sweep_table(alone)
    ex = Explorer(df, *split_columns(df), compute=lambda bw, lat, adv: df.iloc[:0])
    fixed = {"algorithm": "ps", "workers": "4", "bandwidth_factor": "2.0",
             "latency_factor": "10.0"}
    fig = figure(ex, "workers", "throughput", "algorithm", NONE, fixed)
    assert not fig.data
    assert fig.layout.annotations[0].text == ("no rows for bandwidth 2x, latency 10x: compute "
                                              "it or pick another value")
    # a table that cannot grow (no --scenario) offers no computing
    ex.compute = None
    fig = figure(ex, "workers", "throughput", "algorithm", NONE, fixed)
    assert fig.layout.annotations[0].text == ("no rows for bandwidth 2x, latency 10x: pick "
                                              "another value")


def test_explore_table_and_port_errors(tmp_path, capsys, monkeypatch):
    """One message naming the file (or port) and what is expected, exit 2, before any
    simulation."""
    pytest.importorskip("dash")
    import socket

    import pandas as pd

    import clustersim.commands.explore as explore

    assert main(["explore", str(tmp_path / "missing.parquet")]) == 2
    assert "missing.parquet: file not found" in capsys.readouterr().err
    pd.DataFrame({"a": ["x"], "b": ["y"]}).to_parquet(tmp_path / "ab.parquet")
    assert main(["explore", str(tmp_path / "ab.parquet")]) == 2
    err = capsys.readouterr().err
    assert "ab.parquet: the table needs input columns" in err and "metric" in err
    pd.DataFrame({"workers": [1], "throughput": [1.0]}).iloc[:0].to_parquet(tmp_path / "z.parquet")
    assert main(["explore", str(tmp_path / "z.parquet")]) == 2
    assert "z.parquet: the table has no rows" in capsys.readouterr().err
    (tmp_path / "sweep.json").write_text('{"columns": ["a"], "rows": []}')
    assert main(["explore", str(tmp_path / "sweep.json")]) == 2
    assert ".parquet results table" in capsys.readouterr().err
    for bad in ("-1", "99999", "http"):
        assert main(["explore", "x.yaml", f"--port={bad}"]) == 2
        assert "0 to 65535" in capsys.readouterr().err
    monkeypatch.setattr(explore, "load", lambda args: pytest.fail("simulated before binding"))
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        # a bad input is named first, even on a port in use (it was "port ... in use": the
        # default 8050 taken by another program failed every input check that way)
        assert main(["explore", str(tmp_path / "missing.parquet"), "--port", str(port)]) == 2
        assert "missing.parquet: file not found" in capsys.readouterr().err
        assert main(["explore", "knl_unsaturated", "--port", str(port)]) == 2
    assert f"--port {port}: port {port} on 127.0.0.1 is in use" in capsys.readouterr().err


def test_every_sweep_metric_is_a_metric_by_name():
    """The explorer's by-name list holds every column the sweep writes as a metric (a copy,
    so that reading a table does not import the sweep; this keeps the two from drifting:
    the run window's step counts had been taken for input axes)."""
    from clustersim.explore.points import METRICS
    from clustersim.explorer.table import METRIC_NAMES

    assert set(METRICS) <= METRIC_NAMES, sorted(set(METRICS) - METRIC_NAMES)
