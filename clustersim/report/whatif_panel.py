"""The what-if page's one control panel: its HTML, its script, and the series' styles.

Why our own few lines of JavaScript instead of a Plotly slider per figure: sliders live inside
one figure each, so four charts had four sliders that could disagree, and their step labels
overlapped as soon as a grid had more than a handful of cells.  One panel of radio buttons
drives every chart (``Plotly.restyle`` of each trace's visibility); the script binds its inputs
with ``addEventListener`` (the page's Content-Security-Policy refuses inline handlers) and is
hashed by that policy like every other script.  Its only data is a JSON object written with
:func:`~clustersim.report.htmlpage.script_json` (cells, and per figure which cell each trace
belongs to), so no scenario string reaches it unescaped; the script itself is written without
``<``, ``>`` and ``&`` so that, like the figures' scripts, it holds none of them at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from clustersim.report.htmlpage import escape_text

__all__ = ["PANEL_JS", "factor_label", "panel_html", "series_style"]

# Tableau 10, then ten more of other hues and lightness (a collective benchmark draws twenty
# algorithms: with ten colours, two teal dash-dot lines lay on top of each other), and eight
# dash patterns: series i gets colour i mod 20 and dash i mod 8, so the first 20 series have
# colours of their own, the first 40 a (colour, dash) pair of their own, and the first eight
# differ in both (a print-out in grey or a colour-blind reader still tells them apart)
PALETTE = ("#4E79A7", "#F28E2B", "#E15759", "#76B7B2", "#59A14F", "#EDC948", "#B07AA1",
           "#FF9DA7", "#9C755F", "#BAB0AC",
           "#1B1B1B", "#17BECF", "#8C2D04", "#6A3D9A", "#B2DF8A", "#D62728", "#A6CEE3",
           "#7F7F00", "#E7298A", "#08519C")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "8px,3px,2px,3px,2px,3px",
          "2px,6px")


def series_style(i: int) -> tuple[str, str]:
    """(colour, dash) of the i-th series of a chart."""
    return PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)]


def factor_label(x: float) -> str:
    """0.25 -> '0.25x', 10 -> '10x' (the same text as the panel's script writes)."""
    return f"{x:g}x"


def _radios(name: str, values: Sequence[float]) -> str:
    items = []
    for v in values:
        checked = " checked" if v == 1.0 else ""
        items.append(
            f'<label style="margin-right:0.9em;white-space:nowrap">'
            f'<input type="radio" name="{escape_text(name)}" value="{float(v)!r}"'
            f' id="clustersim-{escape_text(name)}-{float(v)!r}"{checked}> '
            f"{escape_text(factor_label(v))}</label>")
    return (f'<fieldset style="border:0;margin:0;padding:0.2em 0"><legend style="float:left;'
            f'width:12em;padding:0">link {escape_text(name)}</legend>{"".join(items)}</fieldset>')


def panel_html(bandwidths: Sequence[float], latencies: Sequence[float]) -> str:
    """The panel: one row of factors per axis and a line that says which cell is shown."""
    return (
        '<div id="clustersim-panel" style="position:sticky;top:0;z-index:10;background:#fff;'
        'border-bottom:1px solid #ccc;padding:0.4em 0">'
        + _radios("bandwidth", bandwidths) + _radios("latency", latencies)
        + '<div>showing: <span id="clustersim-showing">bandwidth 1x, latency 1x</span>'
        " (one factor at a time; the other is back at 1x)</div></div>"
    )


#: runs after the figures' scripts; ``CLUSTERSIM_WHATIF`` is defined just before it
PANEL_JS = """(function () {
  var S = CLUSTERSIM_WHATIF;
  function fmt(x) { return String(x) + "x"; }
  function cellIndex(bw, lat) {
    var want = String([bw, lat]);
    return S.cells.findIndex(function (c) { return String(c) === want; });
  }
  function show(k) {
    S.figures.forEach(function (f) {
      var idx = f.owners.map(function (c, i) { return i; });
      var vis = f.owners.map(function (c) { return c === -1 || c === k; });
      Plotly.restyle(document.getElementById(f.id), {visible: vis}, idx);
    });
    var c = S.cells[k];
    document.getElementById("clustersim-showing").textContent =
      "bandwidth " + fmt(c[0]) + ", latency " + fmt(c[1]);
    document.body.setAttribute("data-cell", String(k));
  }
  function changed(ev) {
    var v = parseFloat(ev.target.value);
    var other = ev.target.name === "bandwidth" ? "latency" : "bandwidth";
    var reset = document.querySelector('input[name="' + other + '"][value="1.0"]');
    if (reset) { reset.checked = true; }
    var bw = ev.target.name === "bandwidth" ? v : 1, lat = ev.target.name === "latency" ? v : 1;
    var k = cellIndex(bw, lat);
    if (k !== -1) { show(k); }
  }
  document.querySelectorAll("#clustersim-panel input").forEach(function (el) {
    el.addEventListener("change", changed);
  });
  document.body.setAttribute("data-cell", String(S.active));
})();
"""
