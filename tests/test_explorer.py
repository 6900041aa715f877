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
