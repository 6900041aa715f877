"""white_figure: the plotly_white template without plotly's per-figure deep copy.

The figure must be exactly what ``template="plotly_white"`` gives (the speed-up may change
nothing a reader sees), each figure must own its template (no figure's change leaks into
another or into plotly's registry), and the private flag used must be restored.
"""

from __future__ import annotations

import pytest

go = pytest.importorskip("plotly.graph_objects")
pio = pytest.importorskip("plotly.io")

from clustersim.report.white_figure import TEMPLATE, white_figure  # noqa: E402


def _reference(**layout):
    fig = go.Figure()
    fig.update_layout(template=TEMPLATE, **layout)
    return fig


def test_same_json_as_the_named_template():
    fig = white_figure()
    fig.add_trace(go.Scatter(x=[1, 2], y=[3, 4], name="a"))
    fig.update_layout(height=480, title={"text": "t"})
    ref = _reference(height=480, title={"text": "t"})
    ref.add_trace(go.Scatter(x=[1, 2], y=[3, 4], name="a"))
    assert fig.to_plotly_json() == ref.to_plotly_json()
    assert fig.layout.template.layout.plot_bgcolor == "white"


def test_layout_and_data_arguments_are_kept():
    fig = white_figure(data=[go.Bar(x=[1], y=[2])], layout={"height": 300})
    assert fig.layout.height == 300 and fig.data[0].type == "bar"
    assert fig.to_plotly_json()["layout"]["template"] == \
        _reference().to_plotly_json()["layout"]["template"]


def test_each_figure_owns_its_template():
    a, b = white_figure(), white_figure()
    a.layout.template.layout.font.size = 31
    assert b.layout.template.layout.font.size is None
    assert pio.templates[TEMPLATE].layout.font.size is None


def test_validation_is_on_again_afterwards():
    fig = white_figure()
    assert fig.layout._validate is True
    with pytest.raises(ValueError):
        fig.update_layout(heigth=3)  # a misspelt property is still refused


def test_a_template_in_layout_is_refused():
    with pytest.raises(ValueError, match="sets the template itself"):
        white_figure(layout={"template": "plotly_dark"})


def test_trace_dicts_make_the_same_traces_as_graph_objects():
    from clustersim.report.white_figure import TRACES

    kw = {"x": [1, 2, 4], "y": [0.5, None, 2.0], "name": "a &lt; b", "mode": "lines+markers",
          "line": {"color": "#0072B2", "dash": "dot", "width": 2.5}, "legendgroup": "g",
          "hovertemplate": "%{x}: %{y}<extra></extra>"}
    a, b = white_figure(), white_figure()
    a.add_trace(go.Scatter(**kw))
    a.add_trace(go.Bar(x=[1.0], y=["s"], orientation="h"))
    b.add_trace(TRACES.Scatter(**kw))
    b.add_trace(TRACES.Bar(x=[1.0], y=["s"], orientation="h"))
    assert a.to_plotly_json() == b.to_plotly_json()
    assert b.data[0].line.dash == "dot"  # objects in fig.data, as before


def test_progress_traces_are_the_progress_charts_lines():
    """The what-if page adds every grid position's progress_traces to one figure: they must
    be the lines convergence_figures draws for that position."""
    from clustersim.report.convergence_chart import convergence_figures, progress_traces

    curves = {"BSP": {"time": [0.0, 30.0, 90.0], "value": [0.0, 0.6, 1.0], "metric": "progress",
                      "kind": "model", "target": 1.0, "workers": 8},
              "PS": {"time": [0.0, 200.0], "value": [0.0, 1.0], "metric": "progress",
                     "kind": "model", "target": 1.0, "workers": 16}}
    tta = {"BSP": [(8, 90.0)], "PS": [(16, 200.0)]}
    ends = [90.0, 200.0, 7200.0]  # another position's line ends at 2 h: hours then
    fig = convergence_figures("s", curves, tta, axis_ends=ends, tta_chart=False)[0]
    other = white_figure()
    other.add_traces(progress_traces(curves, tta, ends))
    assert [t.to_plotly_json() for t in other.data] == [t.to_plotly_json() for t in fig.data]
    assert list(other.data[1].x) == [0.0, 200.0 / 3600]  # the unit the ends call for
    assert other.data[1].name == "PS (model, 16 workers)"
