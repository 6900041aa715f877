"""The what-if page in a real browser (headless Chromium): the one control panel moves every
chart, the axes read 0.25x / 0.5x, series differ in colour and dash, no text overlaps, the
bands of repeated seeds are drawn.  The screenshot goes to ``$CLUSTERSIM_SCREENSHOTS`` (or the
test's temporary directory) for a person to look at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from _browser import OVERLAPS_JS, browser, wait_for

from clustersim.cli import main

SCN = {
    "name": "whatif_browser",
    "platform": {"topology": "star", "hosts": 8, "device": "v100", "link": "eth10g"},
    "workload": {"model": "resnet50", "batch_per_worker": 32, "jitter": 0.05},
    "algorithm": {"name": "bsp"},
    "compare": [{"name": "bsp", "strategy": "ar", "label": "ring all-reduce"},
                {"name": "sync_ps", "label": "parameter server"}],
    "sweep": {"workers": [1, 2, 4, 8]},
    "run": {"iterations": 4, "warmup": 1, "fidelity": "analytic", "repeats": 3},
}


def _shots(tmp_path: Path) -> Path:
    d = Path(os.environ.get("CLUSTERSIM_SCREENSHOTS", tmp_path))
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("whatif")
    (d / "s.yaml").write_text(yaml.safe_dump(SCN))
    out = d / "page.html"
    assert main(["whatif", str(d / "s.yaml"), "-o", str(out), "--bandwidth", "0.25,0.5,2,4",
                 "--latency", "10", "-q"]) == 0
    return out


_VISIBLE_Y = """
var g = document.getElementById(arguments[0]);
return g.data.filter(function (t) { return t.visible === true && t.fill !== 'toself'; })
             .map(function (t) { return Array.from(t.orientation === 'h' ? t.x : t.y); });
"""


def test_panel_drives_every_chart(page, tmp_path):
    driver = browser()
    try:
        driver.get(page.as_uri())
        wait_for(driver, "document.querySelectorAll('.plotly-graph-div .trace').length > 0 && "
                 "document.body.getAttribute('data-cell') !== null")
        ids = ["clustersim-fig-0", "clustersim-fig-1", "clustersim-fig-2"]
        before = {i: driver.execute_script(_VISIBLE_Y, i) for i in ids}
        # throughput: one line per algorithm shown, never all the grid's cells at once
        assert len(before["clustersim-fig-0"]) == 3
        # readable axes: factors as 0.25x, workers as plain counts
        ticks = driver.execute_script(
            "return Array.from(document.querySelectorAll('#clustersim-fig-3 .xtick text'))"
            ".map(function (t) { return t.textContent; });")
        assert ticks == ["0.25x", "0.5x", "1x", "2x", "4x"]
        # one colour and one dash per series
        styles = driver.execute_script(
            "return document.getElementById('clustersim-fig-0').data"
            ".filter(function (t) { return t.visible === true && t.fill !== 'toself'; })"
            ".map(function (t) { return t.line.color + ' ' + t.line.dash; });")
        assert len(set(s.split()[0] for s in styles)) == 3
        assert len(set(s.split()[1] for s in styles)) == 3
        # bands: 3 seeds per point give a 90% interval, drawn behind each line
        bands = driver.execute_script(
            "return document.getElementById('clustersim-fig-0').data"
            ".filter(function (t) { return t.visible === true && t.fill === 'toself'; }).length;")
        assert bands == 3
        assert driver.execute_script(OVERLAPS_JS) == []
        driver.save_screenshot(str(_shots(tmp_path) / "whatif_before.png"))

        driver.find_element("id", "clustersim-bandwidth-4.0").click()
        wait_for(driver, "document.getElementById('clustersim-showing').textContent"
                 " === 'bandwidth 4x, latency 1x'")
        after = {i: driver.execute_script(_VISIBLE_Y, i) for i in ids}
        for i in ids:  # every chart moved with the one control
            assert after[i] != before[i], i
        # 4x the bandwidth never slows the largest point (throughput, last of each line)
        for b, a in zip(before["clustersim-fig-0"], after["clustersim-fig-0"]):
            assert a[-1] >= b[-1]
        # the latency row went back to 1x: the grid varies one factor at a time
        assert driver.find_element("id", "clustersim-latency-1.0").is_selected()
        driver.find_element("id", "clustersim-latency-10.0").click()
        wait_for(driver, "document.getElementById('clustersim-showing').textContent"
                 " === 'bandwidth 1x, latency 10x'")
        assert driver.find_element("id", "clustersim-bandwidth-1.0").is_selected()
        driver.find_element("id", "clustersim-bandwidth-4.0").click()
        wait_for(driver, "document.body.getAttribute('data-cell') !== null")
        assert driver.execute_script(OVERLAPS_JS) == []
        shot = _shots(tmp_path) / "whatif_after.png"
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
    finally:
        driver.quit()


#: per figure: its title's right edge, the figure's, and whether the title and the toolbar
#: (or the legend and the toolbar) overlap
_EDGES_JS = """
function hit(a, b) { return a.left < b.right - 1 && b.left < a.right - 1
                            && a.top < b.bottom - 1 && b.top < a.bottom - 1; }
var out = [];
document.querySelectorAll('.js-plotly-plot').forEach(function (g) {
  var t = g.querySelector('.gtitle').getBoundingClientRect();
  var m = g.querySelector('.modebar').getBoundingClientRect();
  var fig = g.getBoundingClientRect();
  var legend = Array.from(g.querySelectorAll('.legendtext')).some(function (e) {
    return hit(e.getBoundingClientRect(), m); });
  out.push([g.id, t.right <= fig.right, hit(t, m), legend]);
});
return out;
"""

_RANGE_JS = """
var g = document.getElementById(arguments[0]);
return [g._fullLayout.xaxis.range.slice(), g._fullLayout.yaxis.range.slice()];
"""


def test_titles_fit_at_800_px_and_axes_keep_their_range(page, tmp_path):
    """At 800 px long titles ran off the figure and under Plotly's toolbar (the progress
    chart lost its worker count); the axes rescaled at each position of the panel, so the
    curves of 1x and 0.25x had the same height on the screen."""
    driver = browser(800, 900)
    try:
        driver.get(page.as_uri())
        wait_for(driver, "document.querySelectorAll('.js-plotly-plot .modebar').length >= 6")
        edges = driver.execute_script(_EDGES_JS)
        assert len(edges) >= 6
        for fid, inside, over_title, over_legend in edges:
            assert inside and not over_title and not over_legend, (fid, edges)
        assert driver.execute_script(OVERLAPS_JS) == []
        ids = ["clustersim-fig-0", "clustersim-fig-1", "clustersim-fig-2"]
        before = {i: driver.execute_script(_RANGE_JS, i) for i in ids}
        driver.find_element("id", "clustersim-bandwidth-0.25").click()
        wait_for(driver, "document.getElementById('clustersim-showing').textContent"
                 " === 'bandwidth 0.25x, latency 1x'")
        assert {i: driver.execute_script(_RANGE_JS, i) for i in ids} == before
        driver.save_screenshot(str(_shots(tmp_path) / "whatif_800.png"))
    finally:
        driver.quit()
