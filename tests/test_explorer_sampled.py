"""The explorer on a sampled design (audit K H1): a Sobol' or LHS table has about one row per
value of each continuous axis, so fixing every other axis to one value left one point or none
("no rows ... compute it"), with the fixed bandwidth shown as 1168219009.2090118.  Sampled
axes now start at "(any)", the rows are drawn as a scatter, a many-valued numeric colour is a
continuous scale, and fixed values read with their unit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from clustersim.explorer.app import ANY, Explorer, default_value, figure, labelled, options
from clustersim.explorer.chart import NONE

INPUTS = ["algorithm", "workers", "workload.batch_per_worker", "platform.link.bandwidth", "seed"]


@pytest.fixture()
def sampled() -> Explorer:
    rng = np.random.default_rng(3)  # a stand-in for a sweep's 16 Sobol' points
    n = 16
    df = pd.DataFrame({
        "algorithm": ["BSP"] * n,
        "workers": rng.choice(np.arange(2, 200), n, replace=False),
        "workload.batch_per_worker": rng.choice(np.arange(8, 257), n, replace=False),
        "platform.link.bandwidth": np.exp(rng.uniform(np.log(1e9), np.log(25e9), n)),
        "seed": [0] * n})
    df["throughput"] = df["workers"] * df["workload.batch_per_worker"] / 3.0
    return Explorer(df, INPUTS, ["throughput"])


def test_sampled_axes_start_at_any_and_every_row_is_drawn(sampled: Explorer) -> None:
    fixed = {c: default_value(sampled, c, [ANY, *options(sampled.table, c)]) for c in INPUTS}
    for col in ("workers", "workload.batch_per_worker", "platform.link.bandwidth"):
        assert fixed[col] == ANY
    assert fixed["algorithm"] == "BSP" and fixed["seed"] == "0"  # one value: as before
    fig = figure(sampled, "workload.batch_per_worker", "throughput", NONE, NONE, fixed)
    assert sum(len(t.x) for t in fig.data) == 16
    assert all(t.mode == "markers" for t in fig.data)  # a scatter, no zigzag line
    assert fig.layout.xaxis.tickformat == ",d"  # an integer axis: no 140.5 tick


def test_a_many_valued_numeric_colour_is_a_continuous_scale(sampled: Explorer) -> None:
    fixed = {c: ANY for c in INPUTS}
    fig = figure(sampled, "workload.batch_per_worker", "throughput", "workers", NONE, fixed)
    assert len(fig.data) == 1 and len(fig.data[0].x) == 16
    assert list(fig.data[0].marker.color) == list(
        sampled.table.sort_values("workers", kind="stable")["workers"])
    assert fig.layout.coloraxis.colorscale  # a scale, not 16 legend entries


def test_fixed_values_read_with_their_unit(sampled: Explorer) -> None:
    got = labelled("platform.link.bandwidth", [ANY, "1168219009.2090118", "3868876000.0"])
    assert [g["label"] for g in got] == [ANY, "1.17 GB/s", "3.87 GB/s"]
    assert [g["label"] for g in labelled("network.overhead", ["1.9e-05"])] == ["19 us"]
    assert [g["label"] for g in labelled("workers", ["4253"])] == ["4,253"]


def test_a_grid_keeps_its_lines_and_its_value_controls() -> None:
    """A grid (few values per axis) starts at the scenario's values and draws lines."""
    df = pd.DataFrame({"algorithm": ["a", "a", "b", "b"], "workers": [2, 4, 2, 4],
                       "throughput": [1.0, 2.0, 1.5, 2.5]})
    ex = Explorer(df, ["algorithm", "workers"], ["throughput"])
    assert default_value(ex, "workers", [ANY, *options(df, "workers")]) == "4"
    fig = figure(ex, "workers", "throughput", "algorithm", NONE, {"algorithm": "a"})
    assert [t.mode for t in fig.data] == ["lines+markers"] * 2


def test_the_sweeps_own_design_says_which_axes_are_sampled() -> None:
    """audit L H2: with a compare entry an 8-point design's values repeat once per
    algorithm, and counting distinct values took its axes for a grid's; the sweep's JSON
    (``sampled_inputs``) says which are sampled, whatever the table's shape."""
    n = 8
    df = pd.DataFrame({"algorithm": ["ring"] * n + ["tree"] * n,
                       "workers": list(range(2, 2 + n)) * 2, "seed": [0] * (2 * n)})
    df["throughput"] = df["workers"] * 10.0
    ex = Explorer(df, ["algorithm", "workers", "seed"], ["throughput"])
    opts = [ANY, *options(df, "workers")]
    assert default_value(ex, "workers", opts) == "9"  # by shape alone: a grid
    ex.sampled = frozenset({"workers"})
    assert default_value(ex, "workers", opts) == ANY


def test_computed_rows_leave_a_numeric_axis_numeric() -> None:
    """audit L H2: rows computed for a network factor lack a sweep's sampled axis; they took
    the text "(scenario)", which made the column text and hid its values' order."""
    import time

    df = pd.DataFrame({"algorithm": ["a", "a"], "platform.link.bandwidth": [1e9, 2e9],
                       "bandwidth_factor": [1.0, 1.0], "latency_factor": [1.0, 1.0],
                       "throughput": [1.0, 2.0]})
    ins = ["algorithm", "platform.link.bandwidth", "bandwidth_factor", "latency_factor"]
    new = pd.DataFrame({"algorithm": ["a"], "bandwidth_factor": [2.0],
                        "latency_factor": [1.0], "throughput": [3.0]})
    ex = Explorer(df, ins, ["throughput"], compute=lambda bw, lat, adv: new.copy(),
                  total=lambda: 1)
    ex.start(2.0, 1.0)
    deadline = time.monotonic() + 30
    while ex.version == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    col = ex.table["platform.link.bandwidth"]
    assert col.dtype.kind == "f" and col.isna().sum() == 1 and not ex.running
