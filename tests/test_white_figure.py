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
