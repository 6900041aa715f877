"""A standalone HTML page that is safe to mail around.

What-if pages are opened by people who did not write the scenario, so every string that comes
from a scenario (its name, ``about``, assumptions, platform and algorithm labels) is data, never
markup:

* text in HTML is escaped (``html.escape``: ``< > & " '``);
* JSON inside ``<script>`` has ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\uXXXX``
  escapes, so no string can close the script element (``</script>``), open a comment
  (``<!--``) or end a JavaScript line (U+2028/2029 were line terminators in JavaScript before
  ES2019) — the escapes mean the same string to ``JSON.parse`` and to JavaScript;
* a Content-Security-Policy ``<meta>`` allows only the page's own inline scripts, by their
  SHA-256 hashes (CSP level 2), and forbids every inline event handler (``onerror=`` ...),
  ``javascript:`` URLs, plugins, forms and remote loads: even a string that escaped the
  escaping could not run.  Styles stay allowed inline because plotly.js writes its own.

Why hashes and not a nonce: a nonce must be unpredictable per page view, which a static file
cannot offer; hashes are deterministic, so the same scenario still gives the same bytes.
plotly is imported lazily, in the functions that need it (the core never imports it).
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Sequence
from typing import Any

__all__ = ["escape_text", "script_json", "figure_script", "csp_policy", "standalone_page"]

# characters that must not appear raw in JSON embedded in a <script> element
_SCRIPT_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                   ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def escape_text(value: Any) -> str:
    """A user-provided string as HTML text (also for plotly titles and labels, which read a
    subset of HTML and decode entities back for display)."""
    return html.escape(str(value), quote=True)


def script_json(obj: Any) -> str:
    """JSON that is safe inside ``<script>``: in valid JSON these characters occur only inside
    strings, where a ``\\uXXXX`` escape denotes the same character."""
    from plotly.io.json import to_json_plotly  # numpy arrays and plotly objects

    text = to_json_plotly(obj)
    for raw, esc in _SCRIPT_ESCAPES:
        text = text.replace(raw, esc)
    return text


def figure_script(fig: Any, div_id: str, config: dict[str, Any]) -> tuple[str, str]:
    """The ``<div>`` for one figure and the inline script that draws it there."""
    d = fig.to_plotly_json()
    height = d.get("layout", {}).get("height")
    style = f"height:{int(height)}px;width:100%" if height else "width:100%"
    div = f'<div id="{escape_text(div_id)}" class="plotly-graph-div" style="{style}"></div>'
    script = (f"Plotly.newPlot({script_json(div_id)}, {script_json(d.get('data', []))}, "
              f"{script_json(d.get('layout', {}))}, {script_json(config)});")
    return div, script


def _sha256(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


def csp_policy(scripts: Sequence[str]) -> str:
    """Only these inline scripts run; no handlers, no remote anything."""
    hashes = " ".join(_sha256(s) for s in scripts)
    return ("default-src 'none'; "
            f"script-src {hashes}; "
            "style-src 'unsafe-inline'; img-src data: blob:; font-src data:; "
            "base-uri 'none'; form-action 'none'; object-src 'none'")


def standalone_page(title: str, body_before: str, figures: Sequence[tuple[str, str]],
                    body_after: str = "", scripts_after: Sequence[str] = ()) -> str:
    """The page: plotly.js and the figures' scripts inline, under a hash-based CSP.

    ``title`` is plain text (escaped here); ``body_before``/``body_after`` are HTML the caller
    built with :func:`escape_text`; ``figures`` are :func:`figure_script` pairs;
    ``scripts_after`` run last (a control panel that binds its inputs with
    ``addEventListener``: hashed like the others, since inline handlers are refused), and
    any data they embed must come from :func:`script_json`.
    """
    from plotly.offline import get_plotlyjs

    scripts = [get_plotlyjs()] + [s for _, s in figures] + list(scripts_after)
    parts = [f"{div}<script>{script}</script>" for div, script in figures]
    parts += [f"<script>{script}</script>" for script in scripts_after]
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp_policy(scripts)}\">"
        f"<title>{escape_text(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}</style>"
        f"<script>{scripts[0]}</script></head><body>"
        + body_before + "".join(parts) + body_after
        + "</body></html>\n"
    )
