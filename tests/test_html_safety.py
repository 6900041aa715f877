"""What-if pages are mailed around: a hostile scenario must not run anything in the browser.

Static checks parse the page (stdlib HTMLParser) and hold it to: no element or attribute that a
scenario string could have introduced, every inline script listed by hash in the page's
Content-Security-Policy, no ``</script`` / U+2028 / U+2029 inside a script.  With Debian's
``chromium`` and ``chromium-driver`` (and selenium), the page is loaded headless: no alert, the
charts render, and an event handler planted in the page on purpose is blocked by the policy.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from clustersim.cli import main
from clustersim.report.htmlpage import script_json

EVIL_ABOUT = "<img src=x onerror=alert(1)>"
EVIL_NAME = "w</title><script>alert(2)</script>"
EVIL_LABEL = "<svg onload=alert(3)>"
EVIL_ASSUMPTION = "</script><script>alert(4)</script>\u2028<!-- & \u2029"

HOSTILE = {
    "name": EVIL_NAME,
    "about": EVIL_ABOUT,
    "assumptions": [EVIL_ASSUMPTION],
    "platform": {"topology": "star", "hosts": 4, "device": "v100", "link": "eth10g"},
    "workload": {"model": "resnet50", "batch_per_worker": 32},
    "algorithm": {"name": "bsp"},
    "compare": [{"name": "bsp", "strategy": "ar", "label": EVIL_LABEL}],
    "sweep": {"workers": [1, 2, 4]},
    "run": {"iterations": 3, "warmup": 1, "fidelity": "analytic"},
}


class _Page(HTMLParser):
    """Every start tag with its attributes, and the text of every script."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        self._in_title = tag == "title"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in_script = self._in_script and tag != "script"
        self._in_title = self._in_title and tag != "title"

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data
        if self._in_title:
            self.title += data


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    f = d / "evil.yaml"
    f.write_text(yaml.safe_dump(HOSTILE))
    out = d / "evil.html"
    assert main(["whatif", str(f), "-o", str(out), "--bandwidth", "0.5,2", "-q"]) == 0
    return out


def _sha(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def test_hostile_strings_are_text_not_markup(hostile_page):
    html = hostile_page.read_text(encoding="utf-8")
    page = _Page()
    page.feed(html)
    tags = [t for t, _ in page.tags]
    # the only elements: the page's own skeleton and one div + script per figure
    assert set(tags) <= {"html", "head", "meta", "title", "style", "script", "body", "h1", "p",
                         "div", "h3", "ul", "li",
                         "fieldset", "legend", "label", "input", "span"}, set(tags)  # panel
    # plotly.js, one per figure (throughput, efficiency, breakdown, efficiency vs bandwidth
    # and vs latency, and time to target and progress: resnet50 has a convergence profile),
    # the panel
    assert tags.count("script") == 1 + 7 + 1
    for _, attrs in page.tags:
        assert not [a for a in attrs if a.startswith("on")], attrs
        assert not any("javascript:" in (v or "").lower() for v in attrs.values())
    assert page.title == f"clustersim what-if: {EVIL_NAME}"  # shown as written, as text
    for s in page.scripts:
        assert "</script" not in s.lower() and "\u2028" not in s and "\u2029" not in s
    for s in page.scripts[1:]:
        assert "<" not in s and ">" not in s  # escaped as \u003c / \u003e in the JSON
    ours = html.replace(page.scripts[0], "")  # the page without plotly.js's own code
    assert "alert(1)" in ours  # the payload is there, as data
    assert "<img" not in ours and "<svg" not in ours and "alert(2)</script>" not in ours


def test_csp_lists_exactly_the_page_scripts(hostile_page):
    html = hostile_page.read_text(encoding="utf-8")
    page = _Page()
    page.feed(html)
    metas = [a for t, a in page.tags if t == "meta"
             and (a.get("http-equiv") or "").lower() == "content-security-policy"]
    assert len(metas) == 1
    policy = dict(d.strip().split(" ", 1) for d in metas[0]["content"].split(";"))
    hashes = set(re.findall(r"'(sha256-[A-Za-z0-9+/=]+)'", policy["script-src"]))
    assert hashes == {_sha(s) for s in page.scripts}
    assert "unsafe-inline" not in policy["script-src"]
    assert "unsafe-hashes" not in policy["script-src"]  # inline handlers never allowed
    assert policy["default-src"] == "'none'" and policy["object-src"] == "'none'"
    # the policy comes before any script (a meta CSP applies to what follows it)
    assert html.index("Content-Security-Policy") < html.index("<script")


@pytest.mark.parametrize("value", [EVIL_NAME, EVIL_ASSUMPTION, {"k<>&": ["\u2028", "</SCRIPT>"]},
                                   "plain", 1.5, None])
def test_script_json_round_trips_without_dangerous_characters(value):
    text = script_json(value)
    assert json.loads(text) == value
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}


# ---------------------------------------------------------------------------------- browser
def _browser():
    """A headless chromium under selenium, or skip (chromium is optional)."""
    webdriver = pytest.importorskip("selenium.webdriver")
    driver_bin = shutil.which("chromedriver")
    browser_bin = shutil.which("chromium") or shutil.which("chromium-browser")
    if not driver_bin or not browser_bin:
        pytest.skip("chromium and chromium-driver are not installed")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = browser_bin
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1200,900"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        return webdriver.Chrome(service=Service(driver_bin), options=opts)
    except Exception as exc:  # a browser that cannot start here is an environment matter
        pytest.skip(f"headless chromium did not start: {exc}")


def _rendered(driver) -> int:
    """How many of the page's figure divs plotly.js has drawn into (an SVG with traces)."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('.plotly-graph-div'))"
        ".filter(d => d.querySelector('svg.main-svg .trace')).length;")


def _alert_fired(driver) -> bool:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        driver.switch_to.alert.dismiss()
        return True
    except NoAlertPresentException:
        return False


@pytest.mark.slow
def test_browser_no_alert_and_charts_render(hostile_page, tmp_path):
    driver = _browser()
    try:
        driver.get(hostile_page.as_uri())
        driver.implicitly_wait(0)
        import time

        deadline = time.monotonic() + 20
        while _rendered(driver) < 4 and time.monotonic() < deadline:
            assert not _alert_fired(driver)
            time.sleep(0.2)
        assert not _alert_fired(driver)
        assert _rendered(driver) == 7
        assert driver.title == f"clustersim what-if: {EVIL_NAME}"
        assert EVIL_ABOUT in driver.find_element("tag name", "body").text
        errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors  # plotly.js runs under the policy (no eval refused, ...)
        driver.save_screenshot(str(tmp_path / "whatif.png"))

        # the policy on its own: a handler planted past the escaping is refused
        planted = tmp_path / "planted.html"
        planted.write_text(hostile_page.read_text(encoding="utf-8").replace(
            "<h1>", "<img src=x onerror=\"document.title='pwned'\"><h1>", 1), encoding="utf-8")
        driver.get(planted.as_uri())
        deadline = time.monotonic() + 20
        while _rendered(driver) < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert driver.title != "pwned" and _rendered(driver) == 7
        blocked = [e["message"] for e in driver.get_log("browser")
                   if "Content Security Policy" in e["message"]]
        assert blocked, "the planted handler was not reported as refused by the policy"
    finally:
        driver.quit()
