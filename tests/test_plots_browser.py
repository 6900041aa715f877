"""The what-if pages of collective benchmarks in a real browser (headless Chromium): no tick
label, title or legend entry overlaps another (the 60-line crossbar chart's legend sat on its
x title; nccl_dgxa100's decimal ticks ran together as "600M700M800M900M1G"), and within each
chart every visible line has its own colour and dash.  Screenshots go to
``$CLUSTERSIM_SCREENSHOTS`` (or the test's temporary directory) for a person to look at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _browser import OVERLAPS_JS, browser, wait_for

from clustersim.cli import main

_STYLES = """
return Array.from(document.querySelectorAll('.js-plotly-plot')).map(function (g) {
  return g.data.filter(function (t) { return t.visible !== false && t.visible !== 'legendonly'; })
               .map(function (t) { return t.line.color + ' ' + t.line.dash; });
});
"""


@pytest.mark.parametrize("name", ["allreduce_crossbar16", "nccl_dgxa100"])
def test_benchmark_whatif_page_reads(name, tmp_path):
    page = tmp_path / f"{name}.html"
    assert main(["whatif", name, "-o", str(page), "--bandwidth", "1", "--latency", "1",
                 "-q"]) == 0
    driver = browser(1200, 900)
    try:
        driver.get(page.as_uri())
        wait_for(driver, "document.querySelectorAll('.plotly-graph-div .trace').length > 0")
        assert driver.execute_script(OVERLAPS_JS) == []
        for styles in driver.execute_script(_STYLES):
            assert len(set(styles)) == len(styles)
        ticks = driver.execute_script(
            "return Array.from(document.querySelectorAll('#clustersim-fig-0 .xtick text'))"
            ".map(function (t) { return t.textContent; });")
        assert ticks and all(t.endswith("B") for t in ticks)
        shots = Path(os.environ.get("CLUSTERSIM_SCREENSHOTS", tmp_path))
        shots.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(shots / f"whatif_{name}.png"))
    finally:
        driver.quit()
