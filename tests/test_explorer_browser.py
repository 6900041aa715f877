"""``clustersim explore``'s app in a real browser: served on 127.0.0.1 (a free port) in a
thread, driven by headless Chromium: the chart draws (axis titles with units, the bandwidth
fixed at the scenario's 1x), choosing another metric changes it, asking for a bandwidth factor
not yet computed runs it with the progress bar moving while it runs (every poll answered: no
HTTP 500 in the server's log or the browser's console) and the new factor joins the controls;
a factor out of the CLI's range is refused with that range, and the answer stays (the next
poll overwrote it with the last "added ..."); a facet grid's titles and labels do not
overlap; the server is stopped at the end (nothing left running)."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import pytest
from _browser import OVERLAPS_JS, browser, wait_for

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


def _type(driver, box_id: str, text: str) -> None:
    """Replace the text of an input as a user does (select all, type): selenium's clear()
    does not reach React, which then puts the old text back."""
    from selenium.webdriver.common.keys import Keys

    box = driver.find_element("id", box_id)
    box.click()
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.BACK_SPACE)
    if text:
        box.send_keys(text)


_STATUS = "document.getElementById('status').textContent"
_PROGRESS = ("(function () { var p = document.getElementById('progress');"
             " return p ? p.getAttribute('value') + '/' + p.getAttribute('max') : null; })()")


def test_explorer_in_browser(tmp_path, caplog):
    pytest.importorskip("dash")
    from clustersim.explorer.app import Explorer, make_app
    from clustersim.explorer.server import serve
    from clustersim.explorer.table import compute_cells, count_tasks, split_columns

    scn = parse_scenario(SCN)
    df = compute_cells(scn, [(1.0, 1.0), (2.0, 1.0)], jobs=1)
    ins, mets = split_columns(df)

    def slow(bw, lat, adv):  # each point takes a while: the page polls the progress meanwhile
        def step(n=1):
            adv(n)
            time.sleep(0.4)
        return compute_cells(scn, [(bw, lat)], step, jobs=1)

    ex = Explorer(df, ins, mets, compute=slow, total=lambda: count_tasks(scn),
                  defaults={"bandwidth_factor": 1.0, "latency_factor": 1.0})
    caplog.set_level(logging.INFO, logger="werkzeug")
    threads = set(threading.enumerate())
    served = serve(make_app(ex, "test"), "127.0.0.1", 0)
    driver = browser()
    try:
        assert served.url.startswith("http://127.0.0.1:")
        driver.get(served.url)
        first = wait_for(driver, _Y)
        assert first.startswith('["throughput (samples/s)"')
        # the other axes start at the scenario's own network (1x), not the largest factor
        fixed = driver.execute_script("return document.getElementById('{\"axis\":"
                                      "\"bandwidth_factor\",\"type\":\"fix\"}').textContent;")
        assert fixed.strip() == "1x", fixed  # labelled as the what-if page writes it
        _choose(driver, "y", "efficiency")
        second = wait_for(driver, f"{_Y} !== {first!r} ? {_Y} : null")
        assert second.startswith('["scaling efficiency (%)"')
        # a factor not yet in the table: computed in the background, progress shown
        _type(driver, "bw", "4")
        driver.find_element("id", "go").click()
        # the bar moves while the points are simulated (each idle poll answered, not a 500)
        seen, t0 = set(), time.monotonic()
        while time.monotonic() - t0 < 120:
            seen.add(driver.execute_script(f"return {_PROGRESS};"))
            if driver.execute_script("return document.getElementById('status').textContent"
                                     ".indexOf('added bandwidth 4x') === 0;"):
                break
            time.sleep(0.1)
        assert seen & {"1/6", "2/6", "3/6", "4/6", "5/6"}, seen
        assert (ex.table.bandwidth_factor == 4.0).sum() == 2 * 3
        # the bar is full when the message says so (one poll sets both); the page may take
        # a moment to render that poll on a loaded machine
        wait_for(driver, "(function () { var p = document.getElementById('progress');"
                 " return p.getAttribute('value') === '6' && p.getAttribute('max') === '6'; })()",
                 timeout=30)
        # a factor the CLI refuses: the page says the range, and says it until the next action
        # an empty or non-numeric box (a number input sent nothing: the last error stayed),
        # a decimal comma (Chromium's number input made 2,5 into 25, computed unasked)
        for bad, said in (("0.0001", "bandwidth: the factor '0.0001' is outside 0.001 to 1000"),
                          ("5000", "bandwidth: the factor '5000' is outside 0.001 to 1000"),
                          ("", "give a bandwidth factor (0.001 to 1000)"),
                          ("xyz", "bandwidth: 'xyz' is not a number: give a bandwidth factor"),
                          ("2,5", "bandwidth: give one factor, written with a decimal point "
                                  "(2.5, not 2,5)")):
            _type(driver, "bw", bad)
            driver.find_element("id", "go").click()
            wait_for(driver, f"{_STATUS}.indexOf({said!r}) === 0", timeout=30)
            time.sleep(1.6)  # three polls
            assert driver.execute_script(f"return {_STATUS};").startswith(said)
        assert sorted(ex.table.bandwidth_factor.unique()) == [1.0, 2.0, 4.0]  # no 25x, 2.5x
        # the next computation's bar starts empty with its "computing" (it showed the last
        # one's full 6/6 until the next poll, and throughout a quick computation)
        _type(driver, "bw", "0.5")
        driver.find_element("id", "go").click()
        wait_for(driver, f"{_STATUS}.indexOf('computing bandwidth 0.5x') === 0", timeout=30)
        assert driver.execute_script(f"return {_PROGRESS};") != "6/6"
        wait_for(driver, f"{_STATUS}.indexOf('added bandwidth 0.5x') === 0", timeout=120)
        # the new factor is offered by the linked control of its axis
        wait_for(driver, "document.getElementById('{\"axis\":\"bandwidth_factor\",\"type\":"
                 "\"fix\"}') !== null")
        _choose(driver, "x", "bandwidth_factor")
        wait_for(driver, "Array.from(document.querySelectorAll('#chart .xtick text'))"
                 ".map(function (t) { return t.textContent; }).join(' ') === '0.5x 1x 2x 4x'")
        shots = Path(os.environ.get("CLUSTERSIM_SCREENSHOTS", tmp_path))
        shots.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(shots / "explorer.png"))
        console = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not console, console
    finally:
        driver.quit()
        served.stop()
    left = [t for t in threading.enumerate() if t not in threads and t.is_alive()
            and t.name == "clustersim-explore-http"]
    assert left == []
    failed = [r.getMessage() for r in caplog.records if '" 500 ' in r.getMessage()]
    assert not failed, failed[:3]


def test_facet_grid_in_browser(tmp_path):
    """Eight facets (a 3x3 grid, the last row short) of a metric with a long title: one y and
    one x title for the grid, nothing overlapping (each row's own y title ran into the next
    row's and over the plot to its left), x tick labels under every column."""
    pytest.importorskip("dash")
    import pandas as pd

    from clustersim.explorer.app import Explorer, make_app
    from clustersim.explorer.server import serve
    from clustersim.explorer.table import split_columns

    df = pd.DataFrame([{"algorithm": f"algorithm {a}", "workers": w, "bandwidth_factor": 1.0,
                        "latency_factor": 1.0, "throughput": 100.0 * w + a,
                        "time_to_target": 1e6 / w + a} for a in range(8) for w in (17, 34, 68)])
    served = serve(make_app(Explorer(df, *split_columns(df)), "facets"), "127.0.0.1", 0)
    driver = browser()
    try:
        driver.get(served.url)
        wait_for(driver, _Y)
        _choose(driver, "y", "time_to_target")
        _choose(driver, "facet", "algorithm")
        wait_for(driver, "Array.from(document.querySelectorAll('#chart .annotation-text'))"
                 ".filter(function (t) { return t.textContent.indexOf('algorithm=') === 0; })"
                 ".length === 8")
        time.sleep(0.5)  # the relayout after the facets are drawn
        assert driver.execute_script(OVERLAPS_JS) == []
        shared = driver.execute_script(
            "return Array.from(document.querySelectorAll('#chart .annotation-text'))"
            ".map(function (t) { return t.textContent; });")
        assert shared.count("time to target accuracy (hours)") == 1 and "workers" in shared
        # x tick labels under each of the three columns (the third's bottom cell is empty)
        columns = driver.execute_script(
            "var xs = new Set(); document.querySelectorAll('#chart .xaxislayer-above')"
            ".forEach(function (g) { var l = Array.from(g.querySelectorAll("
            "'[class^=x][class$=tick] text'))"
            ".map(function (t) { return t.getBoundingClientRect(); }).filter(function (r) {"
            " return r.width > 0; }).map(function (r) { return r.left; });"
            " if (l.length) { xs.add(Math.round(Math.min.apply(null, l) / 50)); } });"
            " return xs.size;")
        assert columns == 3, columns
        shots = Path(os.environ.get("CLUSTERSIM_SCREENSHOTS", tmp_path))
        shots.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(shots / "explorer_facets.png"))
    finally:
        driver.quit()
        served.stop()
