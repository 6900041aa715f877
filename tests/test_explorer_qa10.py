"""``clustersim explore`` after QA 10: a sweep table's bookkeeping columns (the simulation's
counters, the seeds summarised, the run window's steps) are not offered as the chart's metric
or x axis, and the fixed controls of the network factors read ``0.25x``, ``1x`` as the what-if
page writes them, their values unchanged."""

from __future__ import annotations

import pandas as pd
import pytest
from test_explorer import _sweep_parquet
from test_explorer_qa7 import _find

#: the sweep's columns that count how a point was simulated
COUNTERS = ("sim_events", "flows", "seeds", "warmup_steps", "measured_steps")


def _options(layout, ident) -> list:
    return list(_find(layout, ident).options)


def test_sweep_counters_are_not_offered_as_metrics(tmp_path):
    """The metric list of a sweep table held sim_events, flows, seeds, warmup_steps and
    measured_steps among the performance figures (L1).  They stay metrics of the table (not
    axes), but the page offers neither them as the metric nor as the x axis."""
    pytest.importorskip("dash")
    pytest.importorskip("pyarrow")
    from clustersim.explorer.app import Explorer, make_app
    from clustersim.explorer.table import read_table, split_columns

    _, pq = _sweep_parquet(tmp_path)
    df, named = read_table(pq)
    ins, mets = split_columns(df, named)
    assert set(COUNTERS) <= set(mets) and not set(COUNTERS) & set(ins)
    page = make_app(Explorer(df, ins, mets), "t").layout()
    y, x = _options(page, "y"), _options(page, "x")
    assert "throughput" in y and "iteration_time" in y
    # restatements of inputs are no metrics (audit K L3): the platform's device count, and
    # the batch each worker ran
    assert "devices" not in y and "batch_per_worker" not in y
    for col in COUNTERS:
        assert col not in y and col not in x, col
    assert x == [*ins, *y]
    assert _find(page, "y").value == "throughput"


def test_metric_choices_keep_a_table_of_counters_only():
    """A table whose only numeric columns are counters still has something to draw."""
    from clustersim.explorer.table import metric_choices

    assert metric_choices(["throughput", "flows", "sim_events"]) == ["throughput"]
    assert metric_choices(["flows", "sim_events"]) == ["flows", "sim_events"]


def test_bookkeeping_names_are_the_sweeps():
    """The explorer's bookkeeping list names the sweep's counters (its METRICS), and its
    by-name metric list holds them, so a bare table's counters are metrics (not axes) that
    the page leaves out."""
    from clustersim.explore.points import METRICS
    from clustersim.explorer.table import BOOKKEEPING, METRIC_NAMES

    assert set(COUNTERS) <= BOOKKEEPING
    assert not (BOOKKEEPING & METRIC_NAMES) - set(METRICS)
    assert set(COUNTERS) <= METRIC_NAMES


def test_factor_controls_read_as_factors_with_their_values_unchanged():
    """The bandwidth and latency controls showed 1.0 and 0.25 (L2); they read 0.25x, 1x, 2x
    as the what-if page writes factors, and their values stay the column's text, which the
    chart slices with - on the first page and after a computation added rows."""
    pytest.importorskip("dash")
    from dash import no_update

    from clustersim.explorer.app import Explorer, make_app
    from clustersim.explorer.table import split_columns

    df = pd.DataFrame([{"algorithm": "a", "workers": w, "bandwidth_factor": bw,
                        "latency_factor": 1.0, "throughput": w / bw}
                       for w in (1, 2) for bw in (0.25, 1.0, 2.0)])
    ex = Explorer(df, *split_columns(df),
                  defaults={"bandwidth_factor": 1.0, "latency_factor": 1.0})
    app = make_app(ex, "t")
    page = app.layout()
    bw = _find(page, {"type": "fix", "axis": "bandwidth_factor"})
    # every control offers "(any)" first (audit K H1)
    assert list(bw.options) == [{"label": "(any)", "value": "(any)"},
                                {"label": "0.25x", "value": "0.25"},
                                {"label": "1x", "value": "1.0"},
                                {"label": "2x", "value": "2.0"}]
    assert bw.value == "1.0"
    lat = _find(page, {"type": "fix", "axis": "latency_factor"})
    assert list(lat.options) == [{"label": "(any)", "value": "(any)"},
                                 {"label": "1x", "value": "1.0"}] and lat.value == "1.0"
    assert [o["label"] for o in _find(page, {"type": "fix", "axis": "workers"}).options] == [
        "(any)", "1", "2"]
    callbacks = {k: v["callback"].__wrapped__ for k, v in app.callback_map.items()}
    chart = callbacks["chart.figure"]
    fig = chart("workers", "throughput", "algorithm", "(none)", ["a", "2", "0.25", "1.0"], 0)
    assert list(fig.data[0].y) == [4.0, 8.0]  # the value a label stands for slices the table
    # a poll after new rows: the controls' new options are labelled the same way
    ex.table = pd.concat([df, df.assign(bandwidth_factor=4.0)], ignore_index=True)
    ex.version += 1
    tick = next(f for k, f in callbacks.items() if "said.data" in k)
    out = tick(1, 0, ex.said)
    assert out[-2] == ex.version and out[-1][ex.inputs.index("bandwidth_factor")] == [
        {"label": "(any)", "value": "(any)"},
        *({"label": f"{v:g}x", "value": str(v)} for v in (0.25, 1.0, 2.0, 4.0))]
    assert tick(2, ex.version, ex.said)[-1] == [no_update] * len(ex.inputs)
    from clustersim.explorer.app import labelled

    assert labelled("workers", ["1", "4253"]) == [{"label": "1", "value": "1"},
                                                  {"label": "4,253", "value": "4253"}]
    assert labelled("bandwidth_factor", ["(scenario)"]) == [{"label": "(scenario)",
                                                             "value": "(scenario)"}]
