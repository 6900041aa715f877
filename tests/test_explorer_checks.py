"""``clustersim explore``'s checks at start and in the page (QA report 4): a table with a
benchmark or with another study's scenario is refused before anything is served, a directory
is called one, the page's factors pass the CLI's own range check, an answer to "compute"
stays until something new happens, a facet grid has one y and one x title and tick labels
under every column, and the server logs failed requests only."""

from __future__ import annotations

import logging
import threading
import urllib.error
import urllib.request

import pandas as pd
import pytest
import yaml

from clustersim.cli import main

SCN = {
    "platform": {"topology": "star", "hosts": 8, "device": "v100", "link": "eth10g"},
    "workload": {"model": "resnet50", "batch_per_worker": 32},
    "algorithm": {"name": "bsp"},
    "compare": [{"name": "sync_ps", "label": "ps"}],
    "sweep": {"workers": [1, 2, 4], "axes": {"workload.batch_per_worker": [16, 32]}},
    "run": {"iterations": 3, "warmup": 1, "fidelity": "analytic"},
}
BENCH = {"platform": {"topology": "star", "hosts": 4, "device": "v100", "link": "eth10g"},
         "benchmark": {"op": "allreduce", "algorithms": ["ring"], "ranks": [4],
                       "sizes": [1024]}}


@pytest.fixture
def swept(tmp_path, monkeypatch):
    """A sweep's table (sweep.parquet beside sweep.json) of SCN written as scn.yaml; serving
    is an error here: every explore below must stop before it."""
    pytest.importorskip("dash")
    pytest.importorskip("pyarrow")
    import clustersim.explorer.server as server

    monkeypatch.setattr(server, "serve", lambda *a, **k: pytest.fail("served"))
    f = tmp_path / "scn.yaml"
    f.write_text(yaml.safe_dump(SCN))
    assert main(["sweep", str(f), "--out", str(tmp_path / "sw"), "-j", "1", "-q",
                 "--no-cache"]) == 0
    return f, tmp_path / "sw" / "sweep.parquet"


def _explore(capsys, *argv: str) -> str:
    assert main(["explore", *argv, "--port", "0", "--no-cache", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_table_with_a_benchmark_scenario_is_refused(swept, tmp_path, capsys):
    _, pq = swept
    bench = tmp_path / "bench.yaml"
    bench.write_text(yaml.safe_dump(BENCH))
    err = _explore(capsys, str(pq), "--scenario", str(bench))
    assert f"--scenario {bench}: explore takes a training scenario" in err


def test_factors_with_a_table_are_refused(swept, capsys):
    """--bandwidth/--latency say what a scenario is simulated at; with a table they were
    ignored, invalid values included (0, abc), and the page offered only 1x."""
    f, pq = swept
    for argv in (["--bandwidth", "0.5,2"], ["--latency", "abc"],
                 ["--bandwidth", "2", "--scenario", str(f)]):
        err = _explore(capsys, str(pq), *argv)
        assert f"{argv[0]} applies to a scenario, which is simulated" in err
        assert "a Parquet table shows its rows" in err
    err = _explore(capsys, str(pq), "--bandwidth", "2", "--latency", "10")
    assert "--bandwidth and --latency apply to a scenario" in err


def test_table_with_another_scenario_is_refused(swept, tmp_path, capsys):
    f, pq = swept
    other = dict(SCN, algorithm={"name": "async_sgd"}, compare=[])
    g = tmp_path / "other.yaml"
    g.write_text(yaml.safe_dump(other))
    err = _explore(capsys, str(pq), "--scenario", str(g))
    assert f"{pq}: --scenario {g} does not match the table" in err
    assert "the table is a sweep of 'scn', the scenario is 'other'" in err
    assert "the table's algorithms bsp, ps are not the scenario's (async_sgd)" in err
    # the same study under another name: the name alone differs
    (tmp_path / "same.yaml").write_text(f.read_text())
    err = _explore(capsys, str(pq), "--scenario", str(tmp_path / "same.yaml"))
    assert "sweep of 'scn'" in err and "algorithms" not in err
    # no sweep.json beside the table: the Parquet file names its scenario itself
    (pq.parent / "sweep.json").unlink()
    err = _explore(capsys, str(pq), "--scenario", str(g))
    assert "sweep of 'scn'" in err and "algorithms bsp, ps are not the scenario's" in err


def test_directory_named_parquet_is_called_a_directory(tmp_path, capsys):
    pytest.importorskip("dash")
    d = tmp_path / "dir.parquet"
    d.mkdir()
    err = _explore(capsys, str(d))
    assert f"{d}: is a directory, not a Parquet file" in err


@pytest.mark.parametrize("bw, lat, said", [
    (5000, 1, "bandwidth: the factor '5000' is outside 0.001 to 1000"),
    (1e308, 1, "bandwidth: the factor '1e+308' is outside 0.001 to 1000"),
    (2, 0.0001, "latency: the factor '0.0001' is outside 0.001 to 1000"),
    (0, 1, "bandwidth: the factor '0' is outside 0.001 to 1000"),
    (None, 1, "give a bandwidth factor (0.001 to 1000)"),
    (2, "1,2", "latency: give one factor"),
])
def test_page_factors_are_the_clis(bw, lat, said):
    pytest.importorskip("dash")
    from clustersim.errors import InputError
    from clustersim.explorer.app import page_factors

    with pytest.raises(InputError) as err:
        page_factors(bw, lat)
    assert str(err.value).startswith(said), str(err.value)


def test_page_factors_in_range():
    pytest.importorskip("dash")
    from clustersim.explorer.app import page_factors

    assert page_factors(1000, 0.001) == (1000.0, 0.001)
    assert page_factors(1.5, "2x") == (1.5, 2.0)


def _table() -> pd.DataFrame:
    """8 algorithms x 3 worker counts at 1x: a facet grid of 3 rows, the last one short."""
    rows = [{"algorithm": f"alg {a}", "workers": w, "bandwidth_factor": 1.0,
             "latency_factor": 1.0, "throughput": 100.0 * w + a,
             "time_to_target": 1e6 / w + a} for a in range(8) for w in (17, 34, 68)]
    return pd.DataFrame(rows)


def _app(ex):
    from clustersim.explorer.app import make_app

    app = make_app(ex, "t")
    callbacks = {k: v["callback"].__wrapped__ for k, v in app.callback_map.items()}
    go = next(f for k, f in callbacks.items() if k.startswith("..status.children@"))
    tick = next(f for k, f in callbacks.items() if "said.data" in k)
    return go, tick


def test_an_answer_stays_until_something_new(tmp_path):
    """The poll shows the explorer's message only when it changed since the page showed it:
    it overwrote "the factor is outside ..." with the last "added ..." 0.3 s later."""
    pytest.importorskip("dash")
    from dash import no_update

    from clustersim.explorer.app import Explorer
    from clustersim.explorer.table import split_columns

    df = _table()
    release = threading.Event()

    def compute(bw, lat, adv):  # runs until the test has seen the "computing" message
        release.wait(30)
        return df.iloc[:0]

    ex = Explorer(df, *split_columns(df), compute=compute)
    ex.message, ex.said = "added bandwidth 7x, latency 1x (24 rows)", 3
    go, tick = _app(ex)
    assert go(1, 0.0001, 1)[0].startswith("bandwidth: the factor '0.0001' is outside 0.001")
    out = tick(5, ex.version, 3)
    assert out[2] is no_update and out[3] is no_update
    # a page that has not shown the message yet (another tab, a reload) gets it
    assert tick(5, ex.version, 2)[2:4] == ("added bandwidth 7x, latency 1x (24 rows)", 3)
    ex.start(2.0, 1.0)  # a new event: the next poll says so
    assert tick(6, ex.version, 3)[2:4] == ("computing bandwidth 2x, latency 1x", 4)
    release.set()


def test_facet_grid_has_one_title_per_axis_and_ticks_under_each_column():
    pytest.importorskip("dash")
    from clustersim.explorer.app import Explorer, figure
    from clustersim.explorer.table import split_columns

    df = _table()
    ex = Explorer(df, *split_columns(df))
    fig = figure(ex, "workers", "time_to_target", "bandwidth_factor", "algorithm",
                 {"bandwidth_factor": "1.0", "latency_factor": "1.0"})
    lay = fig.layout.to_plotly_json()
    axes = [k for k in lay if k.startswith(("xaxis", "yaxis"))]
    assert not [k for k in axes if lay[k].get("title", {}).get("text")]
    shared = [a.text for a in fig.layout.annotations if not a.text.startswith("algorithm=")]
    assert shared == ["time to target accuracy (hours)", "workers"]  # up to 16.3 h
    drawn = {t.xaxis for t in fig.data}
    lowest: dict[tuple, tuple] = {}
    for k in (k for k in axes if k.startswith("xaxis") and "x" + k[5:] in drawn):
        bottom = lay["yaxis" + k[5:]]["domain"][0]
        col = tuple(lay[k]["domain"])
        lowest[col] = min(lowest.get(col, (2.0, "")), (bottom, k))
    assert len(lowest) == 3  # three columns, each with tick labels under its lowest cell
    assert all(fig.layout[k].showticklabels for _, k in lowest.values()), lowest


def test_server_logs_only_failed_requests(caplog):
    """The page polls twice a second per tab: a log line per request buried everything."""
    pytest.importorskip("dash")
    from clustersim.explorer.app import Explorer, make_app
    from clustersim.explorer.server import serve
    from clustersim.explorer.table import split_columns

    df = _table()
    caplog.set_level(logging.INFO, logger="werkzeug")
    served = serve(make_app(Explorer(df, *split_columns(df)), "t"), "127.0.0.1", 0)
    try:
        with urllib.request.urlopen(served.url, timeout=30) as page:
            assert page.status == 200
        with pytest.raises(urllib.error.HTTPError):  # a bundle dash does not have: a 500
            urllib.request.urlopen(served.url + "_dash-component-suites/dash/none.js",
                                   timeout=30)
    finally:
        served.stop()
    lines = [r.getMessage() for r in caplog.records if r.name == "werkzeug"]
    assert [s for s in lines if "none.js" in s and '" 500 ' in s], lines
    assert not [s for s in lines if '" 200 ' in s], lines
