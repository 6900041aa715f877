"""Headless Chromium under selenium for the browser tests, or a skip when it is missing
(Debian's ``chromium`` and ``chromium-driver``; ``.ci/run`` installs them where apt works)."""

from __future__ import annotations

import shutil

import pytest


def browser(width: int = 1200, height: int = 900):
    webdriver = pytest.importorskip("selenium.webdriver")
    driver_bin = shutil.which("chromedriver")
    browser_bin = shutil.which("chromium") or shutil.which("chromium-browser")
    if not driver_bin or not browser_bin:
        pytest.skip("chromium and chromium-driver are not installed")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = browser_bin
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        return webdriver.Chrome(service=Service(driver_bin), options=opts)
    except Exception as exc:  # a browser that cannot start here is an environment matter
        pytest.skip(f"headless chromium did not start: {exc}")


def wait_for(driver, script: str, timeout: float = 90.0):
    """Poll a JavaScript expression until it is truthy; its value."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(
        lambda d: d.execute_script(f"return {script};"))


#: pairs of overlapping text boxes among a figure's tick labels and axis titles (every
#: subplot's: plotly names them xtick, x2tick, ... and g-xtitle, g-x2title, g-y3title, ...),
#: title, annotations (a facet's label, a facet grid's shared axis title) and legend entries
OVERLAPS_JS = """
var out = [];
document.querySelectorAll('.js-plotly-plot').forEach(function (g) {
  var boxes = [];
  g.querySelectorAll('[class^="x"][class$="tick"] text, [class^="y"][class$="tick"] text, '
                     + '[class^="g-x"][class$="title"] text, [class^="g-y"][class$="title"] text, '
                     + '.gtitle, .annotation-text, .legendtext').forEach(function (t) {
    var r = t.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) { boxes.push([t.textContent, r]); }
  });
  for (var i = 0; i < boxes.length; i++) {
    for (var j = i + 1; j < boxes.length; j++) {
      var a = boxes[i][1], b = boxes[j][1];
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1
          && b.top < a.bottom - 1) { out.push(g.id + ': ' + boxes[i][0] + ' / ' + boxes[j][0]); }
    }
  }
});
return out;
"""
