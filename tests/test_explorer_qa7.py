"""``clustersim explore`` after QA 7a: an emulated scenario's time to target is a metric (its
values those of ``predict --json``), ``--scenario`` beside a scenario is refused, the page's
factor boxes answer an empty, non-numeric or decimal-comma entry, a sweep table's "no rows"
says where new points are computed, durations are drawn in hours or days, and a server that
listens beyond this machine says so and prints a URL to open."""

from __future__ import annotations

import json
import math
import socket
import types

import pandas as pd
import pytest
from test_explorer import _added, _sweep_parquet

from clustersim.cli import build_parser, main

#: emulate_digits at 4 workers only: five emulated runs, a few seconds; with the assumed
#: gossip constant k_g = 1 (the emulation's fit puts it at ~0), so that GoSGD's analytic
#: twin is "never" and the table's NaN for it is checked too
EMU = ["emulate_digits", "--set", "sweep.workers=[4]", "--set",
       "workload.convergence={constants: {k_g: 1.0}}"]


def _layout_options(layout, ident: str) -> list:
    """The options of the component ``ident`` in a Dash layout tree."""
    stack = [layout]
    while stack:
        node = stack.pop()
        if getattr(node, "id", None) == ident:
            return list(node.options)
        kids = getattr(node, "children", None)
        stack.extend(kids if isinstance(kids, list) else [kids] if kids is not None else [])
    raise AssertionError(f"no {ident} in the layout")


def test_emulated_time_to_target_is_a_metric_equal_to_predicts(tmp_path):
    """explore emulate_digits listed no time-to-accuracy metric at all (H1): the emulated
    runs were under a dict the table skipped.  Now both figures are metrics, offered by the
    metric dropdown, and equal ``predict --json``'s ``emulation`` to the bit."""
    pytest.importorskip("dash")
    from clustersim.commands.explore import load
    from clustersim.explorer.app import make_app

    out = tmp_path / "p.json"
    assert main(["predict", *EMU, "--json", str(out), "-q"]) == 0
    want = json.loads(out.read_text())["emulation"]
    args = build_parser().parse_args(["explore", *EMU, "--bandwidth", "1", "-j", "1",
                                      "--no-cache", "-q"])
    ex, _title = load(args)
    for col in ("emulated_time_to_target", "analytic_time_to_target"):
        assert col in ex.metrics, ex.metrics
        assert col in _layout_options(make_app(ex, "t").layout(), "y")
    rows = ex.table[ex.table.workers == 4].set_index("algorithm")
    assert sorted(rows.index) == sorted(want)
    for alg, (run,) in want.items():
        assert rows.at[alg, "emulated_time_to_target"] == run["time_to_target"], alg
        twin = rows.at[alg, "analytic_time_to_target"]
        if run["analytic_time_to_target"] is None:  # gossip: no analytic model
            assert math.isnan(twin), alg
        else:
            assert twin == run["analytic_time_to_target"], alg
    assert want["GoSGD (p 0.2)"][0]["analytic_time_to_target"] is None
    assert 80 < want["Async SGD"][0]["time_to_target"] < 100  # the run as QA saw it: 87.8 s


def test_emulated_metrics_from_a_table_and_their_titles():
    """Read back from Parquet, the columns are metrics by name (not inputs), and the chart
    draws them in minutes here (the longest is 6.8 min), titled as predict's CSV names them."""
    pytest.importorskip("dash")
    from clustersim.explorer.app import NONE, Explorer, figure
    from clustersim.explorer.table import split_columns

    df = pd.DataFrame([{"algorithm": a, "workers": w, "bandwidth_factor": 1.0,
                        "latency_factor": 1.0, "throughput": 10.0 * w,
                        "emulated_time_to_target": 60.0 * w + k,
                        "analytic_time_to_target": 30.0 * w}
                       for k, a in enumerate(("bsp", "ps")) for w in (4, 8)])
    ins, mets = split_columns(df)
    assert ins == ["algorithm", "workers", "bandwidth_factor", "latency_factor"]
    assert {"emulated_time_to_target", "analytic_time_to_target"} <= set(mets)
    ex = Explorer(df, ins, mets)
    fig = figure(ex, "workers", "emulated_time_to_target", "algorithm", NONE,
                 {"bandwidth_factor": "1.0", "latency_factor": "1.0"})
    assert fig.layout.yaxis.title.text == "emulated time to target (minutes)"
    assert [list(t.y) for t in fig.data] == [[4.0, 8.0], [4.0 + 1 / 60, 8.0 + 1 / 60]]
    fig = figure(ex, "workers", "analytic_time_to_target", NONE, NONE,
                 {"algorithm": "bsp", "bandwidth_factor": "1.0", "latency_factor": "1.0"})
    assert fig.layout.yaxis.title.text == "analytic model's time to target, same run (minutes)"


def test_durations_in_hours_or_days_with_their_interval():
    """A time to target of 450,000 s showed as "450k" seconds (L4): it is drawn in days, as
    whatif draws it, its interval scaled alike; a short duration stays in seconds, and a
    rate (samples/s, whose CSV name also ends in _s) is no duration."""
    pytest.importorskip("dash")
    from clustersim.explorer.app import NONE, Explorer, figure
    from clustersim.explorer.table import split_columns, time_scale

    df = pd.DataFrame([{"algorithm": "bsp", "workers": w, "bandwidth_factor": 1.0,
                        "latency_factor": 1.0, "throughput": 100.0 * w,
                        "iteration_time": 0.25, "time_to_target": 432000.0 / w,
                        "time_to_target_lo": 345600.0 / w, "time_to_target_hi": 518400.0 / w}
                       for w in (1, 2)])
    ex = Explorer(df, *split_columns(df))
    fixed = {"algorithm": "bsp", "bandwidth_factor": "1.0", "latency_factor": "1.0"}
    fig = figure(ex, "workers", "time_to_target", NONE, NONE, fixed)
    assert fig.layout.yaxis.title.text == "time to target accuracy (days)"
    (tr,) = fig.data
    assert list(tr.y) == [5.0, 2.5]
    assert list(tr.error_y.array) == [1.0, 0.5] and list(tr.error_y.arrayminus) == [1.0, 0.5]
    assert figure(ex, "workers", "iteration_time", NONE, NONE, fixed
                  ).layout.yaxis.title.text == "iteration time (s)"
    assert time_scale("throughput", [1e6]) is None
    assert time_scale("time_to_target", [7200.0]) == (3600.0, "hours")
    assert time_scale("time_to_target", [float("nan")]) is None


def test_scenario_option_with_a_scenario_is_refused(capsys, monkeypatch):
    """``explore SCENARIO --scenario OTHER`` started SCENARIO and said nothing, even for a
    missing OTHER (M7): exit 2, one line, before anything is simulated or served."""
    pytest.importorskip("dash")
    import clustersim.commands.explore as cmd

    monkeypatch.setattr(cmd, "load", lambda *a: pytest.fail("simulated"))
    for other in ("/nonexistent.yaml", "knl_4253"):
        assert main(["explore", "theano_mpi_alexnet", "--scenario", other, "--port", "0",
                     "--no-cache", "-q"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert "--scenario applies to a Parquet table" in err
        assert "theano_mpi_alexnet is a scenario itself: drop --scenario" in err


@pytest.mark.parametrize("bw, lat, said", [
    ("", "1", "give a bandwidth factor (0.001 to 1000)"),
    ("   ", "1", "give a bandwidth factor (0.001 to 1000)"),
    ("2", None, "give a latency factor (0.001 to 1000)"),
    ("xyz", "1", "bandwidth: 'xyz' is not a number: give a bandwidth factor (0.001 to 1000)"),
    ("1_0", "1", "bandwidth: '1_0' is not a number"),
    ("2,5", "1", "bandwidth: give one factor, written with a decimal point (2.5, not 2,5), "
                 "not '2,5'"),
    ("4", "4,8", "latency: give one factor, written with a decimal point"),
    ("7000", "1", "bandwidth: the factor '7000' is outside 0.001 to 1000"),
    ("-1", "1", "bandwidth: the factor '-1' is outside 0.001 to 1000"),  # not "not a number"
])
def test_page_factor_text_is_answered(bw, lat, said):
    """What the page's text boxes send: an empty or non-numeric box was dropped by the
    number input and the last error stayed (M5); a decimal comma became 25 (L7)."""
    pytest.importorskip("dash")
    from clustersim.errors import InputError
    from clustersim.explorer.app import page_factors

    with pytest.raises(InputError) as err:
        page_factors(bw, lat)
    assert str(err.value).startswith(said), str(err.value)


def test_page_factor_text_in_range():
    pytest.importorskip("dash")
    from clustersim.explorer.app import page_factors

    assert page_factors(" 2.5 ", "1x") == (2.5, 1.0)
    assert page_factors("0.001", "1000") == (0.001, 1000.0)


def test_sweep_table_says_where_new_points_are_computed(tmp_path):
    """A sweep's table over workload.batch_per_worker [16, 32] (the scenario's: 32): at batch
    16 and a computed bandwidth the chart said "compute it", and computing answered "already
    in the table" (M4).  Now the chart names the value where computing helps; there, the
    computed rows draw."""
    pytest.importorskip("dash")
    from clustersim.commands.explore import load
    from clustersim.explorer.app import NONE, figure

    f, pq = _sweep_parquet(tmp_path)
    args = build_parser().parse_args(["explore", str(pq), "--scenario", str(f), "-j", "1",
                                      "--no-cache", "-q"])
    ex, _ = load(args)
    assert ex.computed_at() == {"workload.batch_per_worker": 32, "seed": 0}
    _added(ex, 2.0, 1.0)
    fixed = {"algorithm": "bsp", "workers": "4", "bandwidth_factor": "2.0",
             "latency_factor": "1.0", "seed": "0", "workload.batch_per_worker": "16"}
    fig = figure(ex, "workers", "throughput", "algorithm", NONE, fixed)
    assert not fig.data
    assert fig.layout.annotations[0].text == (
        "no rows for bandwidth 2x, latency 1x, seed 0, workload.batch_per_worker 16:"
        "<br>new points are computed at the scenario's own workload.batch_per_worker 32 only"
        "<br>(the sweep's other values come from 'clustersim sweep'):"
        "<br>fix it there and compute, or pick another value")
    assert ex.start(2.0, 1.0) == ("bandwidth 2x, latency 1x is already in the table at "
                                  "workload.batch_per_worker 32, seed 0 (the scenario's own: "
                                  "new points are computed there)")
    fig = figure(ex, "workers", "throughput", "algorithm", NONE,
                 dict(fixed, **{"workload.batch_per_worker": "32"}))
    new = ex.table[(ex.table.bandwidth_factor == 2.0) & (ex.table.algorithm == "bsp")]
    bsp = next(t for t in fig.data if t.name == "bsp")
    assert list(bsp.y) == list(new.sort_values("workers").throughput)


def test_no_rows_names_each_value_off_the_computed_ones():
    pytest.importorskip("dash")
    from clustersim.explorer.chart import no_rows

    fixed = {"bandwidth_factor": "2.0", "latency_factor": "1.0", "seed": "1", "x.y": "16"}
    at = {"seed": 0, "x.y": 32}
    assert no_rows(fixed, set(), None) == ("no rows for bandwidth 2x, latency 1x, seed 1, "
                                           "x.y 16: pick another value")
    text = no_rows(fixed, set(), at)
    assert "the scenario's own seed 0, x.y 32 only" in text and "fix them there" in text
    # an axis on the chart (free) is not held: only the fixed one is named
    assert "own x.y 32 only" in no_rows(fixed, {"seed"}, at)
    assert no_rows(dict(fixed, seed="0", **{"x.y": "32.0"}), set(), at).endswith(
        ": compute it or pick another value")


@pytest.mark.parametrize("host, url", [
    ("0.0.0.0", "http://127.0.0.1:8050/"), ("0", "http://127.0.0.1:8050/"),
    ("::", "http://[::1]:8050/"),
    ("::1", "http://[::1]:8050/"), ("[::1]", "http://[::1]:8050/"),
    ("127.0.0.1", "http://127.0.0.1:8050/"), ("localhost", "http://localhost:8050/"),
    ("192.0.2.7", "http://192.0.2.7:8050/"), ("fe80::1%eth0", "http://[fe80::1%25eth0]:8050/"),
])
def test_open_url(host, url):
    """--host :: printed http://:::8797/, and 0.0.0.0 a URL that is not one to open (L5)."""
    from clustersim.explorer.server import open_url

    assert open_url(host, 8050) == url


def _serve_once(monkeypatch, host: str) -> None:
    """Run ``explore`` on ``host`` (port 0) over a small table, stopping at its first sleep."""
    import clustersim.commands.explore as cmd
    from clustersim.explorer.app import Explorer
    from clustersim.explorer.table import split_columns

    df = pd.DataFrame([{"algorithm": "a", "workers": 1, "bandwidth_factor": 1.0,
                        "latency_factor": 1.0, "throughput": 1.0}])
    monkeypatch.setattr(cmd, "_inputs", lambda args: {})
    monkeypatch.setattr(cmd, "load", lambda args: (Explorer(df, *split_columns(df)), "t"))

    def stop(_s):
        raise KeyboardInterrupt

    monkeypatch.setattr(cmd, "time", types.SimpleNamespace(sleep=stop))
    assert main(["explore", "x.yaml", "--host", host, "--port", "0", "-q"]) == 130


@pytest.mark.parametrize("host, shown", [("0.0.0.0", "http://127.0.0.1:"),
                                         ("::", "http://[::1]:")])
def test_every_interface_warns_and_prints_a_url_to_open(host, shown, capsys, monkeypatch):
    pytest.importorskip("dash")
    if host == "::" and not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    _serve_once(monkeypatch, host)
    out, err = capsys.readouterr()
    line = next(x for x in out.splitlines() if x.startswith("clustersim explore: http"))
    assert line.startswith(f"clustersim explore: {shown}"), line
    assert "on this machine (from another: this machine's address)" in line
    warn = next(x for x in err.splitlines() if "warning" in x)
    assert warn.startswith(f"clustersim explore: warning: listening on {host} port ")
    assert "anyone who can reach it can open the page and run simulations here" in warn


def test_this_machine_only_is_not_warned(capsys, monkeypatch):
    pytest.importorskip("dash")
    _serve_once(monkeypatch, "127.0.0.1")
    out, err = capsys.readouterr()
    assert "warning" not in err
    assert "clustersim explore: http://127.0.0.1:" in out and "from another" not in out


def _find(layout, ident: str):
    stack = [layout]
    while stack:
        node = stack.pop()
        if getattr(node, "id", None) == ident:
            return node
        kids = getattr(node, "children", None)
        stack.extend(kids if isinstance(kids, list) else [kids] if kids is not None else [])
    raise AssertionError(f"no {ident} in the layout")


def test_progress_restarts_with_each_computation_and_a_new_page_is_not_greeted():
    """The bar showed the last computation's full 24/24 while "computing" (until the next
    poll; throughout a quick computation), and a freshly opened page was greeted with the
    last "added ..." (L6).  Now "compute" answers with an empty bar of the new size, the
    poll moves it while it runs and fills it once, and a new page shows news only while a
    computation runs."""
    pytest.importorskip("dash")
    import threading

    from dash import no_update

    from clustersim.explorer.app import Explorer, make_app
    from clustersim.explorer.table import split_columns

    df = pd.DataFrame([{"algorithm": "a", "workers": w, "bandwidth_factor": 1.0,
                        "latency_factor": 1.0, "throughput": 1.0 * w} for w in (1, 2)])
    begin, release, advanced = threading.Event(), threading.Event(), threading.Event()

    def compute(bw, lat, adv):
        begin.wait(30)  # once the test has seen "compute"'s answer
        adv(3)
        advanced.set()
        release.wait(30)
        return df.assign(bandwidth_factor=bw)

    ex = Explorer(df, *split_columns(df), compute=compute, total=lambda: 24)
    ex.done = ex.todo = 24  # a computation before, finished
    ex.message, ex.said = "added bandwidth 7x, latency 1x (24 rows)", 3
    app = make_app(ex, "t")
    page = app.layout()
    assert _find(page, "status").children == ""
    assert (_find(page, "progress").value, _find(page, "progress").max) == ("0", "1")
    callbacks = {k: v["callback"].__wrapped__ for k, v in app.callback_map.items()}
    go = next(f for k, f in callbacks.items() if k.startswith("..status.children@"))
    tick = next(f for k, f in callbacks.items() if "said.data" in k)
    assert tick(1, ex.version, 3)[:2] == (no_update, no_update)  # nothing new: bar left
    assert go(1, "7000", "1")[1:] == (no_update, no_update)  # refused: bar left
    assert go(2, "2", "1") == ("computing bandwidth 2x, latency 1x", "0", "24")
    begin.set()
    assert advanced.wait(30)
    assert tick(2, ex.version, 4)[:2] == ("3", "24")
    page = app.layout()  # a page opened meanwhile sees the computation
    assert _find(page, "status").children == "computing bandwidth 2x, latency 1x"
    assert (_find(page, "progress").value, _find(page, "progress").max) == ("3", "24")
    seen = ex.version
    release.set()
    for _ in range(300):
        if ex.version != seen:
            break
        threading.Event().wait(0.1)
    assert tick(3, seen, 4)[:3] == ("24", "24", "added bandwidth 2x, latency 1x (2 rows)")
    assert tick(4, ex.version, 5)[:2] == (no_update, no_update)


def test_a_series_keeps_its_colour_whatever_the_metric():
    """An algorithm without a metric (GoSGD has no analytic time to target) had shifted the
    others' colours between charts: Sync EASGD orange in one, purple in the next (QA 9)."""
    pytest.importorskip("plotly")
    from clustersim.explorer.chart import figure
    from clustersim.report.whatif_panel import series_style

    nan = float("nan")
    table = pd.DataFrame({"algorithm": ["a", "a", "b", "b", "c", "c"],
                          "workers": [1, 2, 1, 2, 1, 2],
                          "emulated": [5.0, 4.0, 6.0, 5.0, 7.0, 6.0],
                          "analytic": [nan, nan, 6.5, 5.5, 7.5, 6.5]})
    styles = []
    for metric in ("emulated", "analytic"):
        fig = figure(table, ["algorithm", "workers"], ["emulated", "analytic"], "workers",
                     metric, "algorithm", "(none)", {})
        styles.append({t.name: (t.line.color, t.line.dash) for t in fig.data})
    assert styles[0]["c"] == styles[1]["c"] == series_style(2)
    assert styles[0]["b"] == styles[1]["b"] == series_style(1) and "a" not in styles[1]
