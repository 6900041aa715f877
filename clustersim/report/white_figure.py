"""A Plotly figure on the ``plotly_white`` template, without validating the template each time.

Why not ``fig.update_layout(template="plotly_white")``: plotly validates a template given by
name by deep-copying the registered template object, about 23 ms a figure on this project's
2-core machine - 0.3 s of the what-if page of ``scenarios/knl_4253.yaml`` when it built 13
figures, a page whose target is 5 s in all.  Switching plotly's default template instead
does not help: setting ``pio.templates.default`` validates (deep-copies) too, and it is
process-wide.

Here the registered template is assigned with the layout's validation switched off for that
one assignment, as plotly itself assigns its default template to every new figure
(``BaseFigure._initialize_layout_template``): 3.5 ms.  ``_validate`` is plotly's private flag,
so correctness must not hang on it: the template object is plotly's own, already validated,
the figure still receives its own copy of it (changing one figure's template changes no other
figure and not the registry), and should a future plotly drop the flag, the assignment simply
validates as before - slower, same result.  ``tests/test_white_figure.py`` checks that the
figure's JSON equals the one ``template="plotly_white"`` gives.
plotly is imported here lazily, like everywhere in the report layer.

:data:`TRACES` stands in for ``plotly.graph_objects`` where traces are only handed to
``fig.add_trace``: a ``go.Scatter`` given to a figure is validated twice, once when built
and again when the figure rebuilds it as its own trace; a dict is validated once, by the
figure, into the same trace.  With the progress chart built from trace dicts too
(:func:`~clustersim.report.convergence_chart.progress_traces`, not a figure per grid
position to copy from), the what-if page's 280 traces take half the time they took.
Trace objects are still what ``fig.data`` holds.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TEMPLATE", "TRACES", "white_figure"]

TEMPLATE = "plotly_white"


def white_figure(data: Any = None, layout: Any = None) -> Any:
    """``go.Figure(data, layout)`` on :data:`TEMPLATE` (``layout`` must not name a template:
    one named there would be validated and deep-copied again)."""
    import plotly.graph_objects as go
    import plotly.io as pio

    if isinstance(layout, dict) and "template" in layout:
        raise ValueError("white_figure sets the template itself; leave it out of layout")
    fig = go.Figure(data=data, layout=layout)
    lay = fig.layout
    lay._validate = False  # plotly's own path for its (already validated) default template
    try:
        lay.template = pio.templates[TEMPLATE]
    finally:
        lay._validate = True
    return fig


class _TraceDicts:
    """``TRACES.Scatter(**props)``: ``{"type": "scatter", **props}`` (module docs: why)."""

    @staticmethod
    def Scatter(**props: Any) -> dict[str, Any]:  # noqa: N802 - named as plotly's class
        return {"type": "scatter", **props}

    @staticmethod
    def Bar(**props: Any) -> dict[str, Any]:  # noqa: N802
        return {"type": "bar", **props}


TRACES = _TraceDicts()
