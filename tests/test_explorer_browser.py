"""``clustersim explore``'s app in a real browser: served on 127.0.0.1 (a free port) in a
thread, driven by headless Chromium: the chart draws, choosing another metric changes it,
asking for a bandwidth factor not yet computed runs it (progress shown) and the new factor
joins the controls; the server is stopped at the end (nothing left running)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from _browser import browser, wait_for

from clustersim.scenario.schema import parse_scenario

SCN = {
    "platform": {"topology": "star", "hosts": 4, "device": "v100", "link": "eth10g"},
    "workload": {"model": "resnet50", "batch_per_worker": 32},
    "algorithm": {"name": "bsp"},
    "compare": [{"name": "sync_ps", "label": "ps"}],
    "sweep": {"workers": [1, 2, 4]},
    "run": {"iterations": 3, "warmup": 1, "fidelity": "analytic"},
}

_Y = ("(function () { var g = document.querySelector('#chart .js-plotly-plot');"
      " return g && g.data && g.data.length ? JSON.stringify([g.layout.yaxis.title.text,"
      " g.data.map(function (t) { return Array.from(t.y); })]) : null; })()")


def _choose(driver, dropdown_id: str, text: str) -> None:
    """Pick an option of a dcc.Dropdown: open it, click the option that reads ``text``."""
    driver.find_element("id", dropdown_id).click()
    options = wait_for(driver, "(function () { var o = Array.from(document.querySelectorAll("
                       "'[role=option]')).filter(function (e) { return e.textContent.trim() "
                       f"=== {text!r}; }}); return o.length ? o : null; }})()")
    options[-1].click()


def test_explorer_in_browser(tmp_path):
    pytest.importorskip("dash")
    from clustersim.explorer.app import Explorer, make_app
    from clustersim.explorer.server import serve
    from clustersim.explorer.table import compute_cells, count_tasks, split_columns

    scn = parse_scenario(SCN)
    df = compute_cells(scn, [(1.0, 1.0), (2.0, 1.0)], jobs=1)
    ins, mets = split_columns(df)
    ex = Explorer(df, ins, mets,
                  compute=lambda bw, lat, adv: compute_cells(scn, [(bw, lat)], adv, jobs=1),
                  total=lambda: count_tasks(scn))
    threads = set(threading.enumerate())
    served = serve(make_app(ex, "test"), "127.0.0.1", 0)
    driver = browser()
    try:
        assert served.url.startswith("http://127.0.0.1:")
        driver.get(served.url)
        first = wait_for(driver, _Y)
        assert '"samples/s"' not in first and "throughput" in first
        _choose(driver, "y", "efficiency")
        second = wait_for(driver, f"{_Y} !== {first!r} ? {_Y} : null")
        assert second.startswith('["efficiency"')
        # a factor not yet in the table: computed in the background, progress shown
        bw = driver.find_element("id", "bw")
        bw.clear()
        bw.send_keys("4")
        driver.find_element("id", "go").click()
        wait_for(driver, "document.getElementById('status').textContent"
                 ".indexOf('added bandwidth 4x') === 0", timeout=120)
        assert (ex.table.bandwidth_factor == 4.0).sum() == 2 * 3
        # the bar is full when the message says so (one poll sets both); the page may take
        # a moment to render that poll on a loaded machine
        wait_for(driver, "(function () { var p = document.getElementById('progress');"
                 " return p.getAttribute('value') === '6' && p.getAttribute('max') === '6'; })()",
                 timeout=30)
        # the new factor is offered by the linked control of its axis
        wait_for(driver, "document.getElementById('{\"axis\":\"bandwidth_factor\",\"type\":"
                 "\"fix\"}') !== null")
        _choose(driver, "x", "bandwidth_factor")
        wait_for(driver, "Array.from(document.querySelectorAll('#chart .xtick text'))"
                 ".map(function (t) { return t.textContent; }).join(' ') === '1x 2x 4x'")
        shots = Path(os.environ.get("CLUSTERSIM_SCREENSHOTS", tmp_path))
        shots.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(shots / "explorer.png"))
    finally:
        driver.quit()
        served.stop()
    left = [t for t in threading.enumerate() if t not in threads and t.is_alive()
            and t.name == "clustersim-explore-http"]
    assert left == []
