"""The charts' axes, legends and data (what-if page, ``predict --plot``), without a browser:
ticks that are full values in the data's unit, legends that say what each line is, the
emulated time to target on the what-if page, one benchmark chart per rank count, and
``predict --plot`` refused for a collective benchmark (QA round 4, items 4 and 8-12)."""

from __future__ import annotations

import pytest

from clustersim.cli import main
from clustersim.report.convergence_chart import convergence_figures
from clustersim.report.whatif import grid_points, whatif_grid, whatif_html


def test_predict_plot_of_a_benchmark_is_refused_before_simulating(tmp_path, capsys):
    # it exited 0, wrote no page and said nothing; the --json beside it was written
    page, js = tmp_path / "p.html", tmp_path / "p.json"
    rc = main(["predict", "nccl_dgxa100", "--plot", str(page), "--json", str(js), "-q"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--plot" in err and "collective benchmark" in err and len(err.splitlines()) == 1
    assert not page.exists() and not js.exists()


def test_tick_helpers():
    from clustersim.report.plot_axes import log_ticks, size_ticks, tick_text, time_unit
    from clustersim.units import format_size as size_label

    assert tick_text(log_ticks([20.0, 300.0])) == ["20", "50", "100", "200"]
    assert [size_label(t) for t in size_ticks([2 ** 26, 2 ** 33])] == [
        "64 MiB", "128 MiB", "256 MiB", "512 MiB", "1 GiB", "2 GiB", "4 GiB", "8 GiB"]
    many = size_ticks([4, 2 ** 26])
    assert len(many) <= 8 and 1024.0 in many and 2.0 ** 20 in many
    assert time_unit([60.0, 420.0])[1] == "minutes"
    assert time_unit([3 * 3600.0])[1] == "hours"
    assert time_unit([10 * 86400.0])[1] == "days"


def _curves(ends: list[float], kind: str = "model") -> dict:
    return {f"alg{k}": {"time": [0.0, e / 2, e], "value": [0.0, 0.5, 1.0],
                        "metric": "progress to target", "kind": kind, "target": 1.0}
            for k, e in enumerate(ends)}


def test_tta_chart_log_ticks_are_full_values():
    # plotly's minor labels read "2 3 4 ... 9 100 2 3": "2" was both 20 and 200 hours
    tta = {"a": [(2, 20 * 3600.0), (4, 90 * 3600.0)], "b": [(2, 150 * 3600.0), (4, None)]}
    fig = convergence_figures("s", _curves([20 * 3600.0, 150 * 3600.0]), tta)[1]
    assert fig.layout.yaxis.type == "log"
    assert list(fig.layout.yaxis.ticktext) == ["1", "2", "5"]  # days: 20-150 h
    assert "days" in fig.layout.yaxis.title.text
    assert list(fig.layout.xaxis.ticktext) == ["2", "4"]


def test_legend_marks_every_line_and_title_names_the_workers():
    # the page says lines are marked "emulated" or "model": the legend marked neither
    tta = {"alg0": [(4, 100.0), (16, 300.0)], "alg1": [(4, 200.0), (16, 400.0)]}
    figs = convergence_figures("s", _curves([300.0, 400.0]), tta)
    assert [t.name for t in figs[0].data] == ["alg0 (model)", "alg1 (model)"]
    assert [t.name for t in figs[1].data] == ["alg0 (model)", "alg1 (model)"]
    assert "at 16 workers" in figs[0].layout.title.text
    emu = convergence_figures("s", _curves([300.0, 400.0], "emulated"), tta)
    assert all(t.name.endswith("(emulated)") for f in emu for t in f.data)


def test_minutes_for_a_short_run_and_log_time_for_a_wide_span():
    # a 1-7 minute run read "0.01-0.09 h"; a 10 h line hid under a 2,800 h linear axis
    short = convergence_figures("s", _curves([60.0, 420.0]), {})[0]
    assert "minutes" in short.layout.xaxis.title.text
    assert max(short.data[1].x) == pytest.approx(7.0)
    assert short.layout.xaxis.type != "log"
    wide = convergence_figures("s", _curves([10 * 3600.0, 2800 * 3600.0]), {})[0]
    assert wide.layout.xaxis.type == "log"
    assert all("e" not in t and len(t) < 8 for t in wide.layout.xaxis.ticktext)


def test_whatif_charts_the_emulated_time_to_target():
    # whatif emulate_digits had no time-to-accuracy chart although predict prints one
    from clustersim.explore import load_study

    scn, _ = load_study("emulate_digits", ["sweep.workers=[2,4]", "run.emulation.target=0.9",
                                           "algorithm.name=bsp", "compare=[]"])
    grid = whatif_grid(scn, [1.0], [1.0], jobs=1)
    pts = grid["cells"][(1.0, 1.0)]["BSP"]
    assert all(p["emulation"]["time_to_target"] for p in pts)
    html = whatif_html(scn, grid)
    assert "Time to target vs workers" in html and "(emulated)" in html
    assert "accuracy vs simulated time at 4 workers" in html
    from clustersim.report.whatif import _training_figures

    figs, _ = _training_figures(scn, grid, grid_points([1.0], [1.0]))
    tta = figs[-1]
    line = next(t for t in tta.data if t.name.endswith("(emulated)"))
    unit = 60.0 if "minutes" in tta.layout.yaxis.title.text else 1.0
    assert list(line.y) == pytest.approx([p["emulation"]["time_to_target"] / unit
                                          for p in pts])
    # the analytic twin beside it (at the target the digits profile was measured at: 0.9)
    assert any(t.name.endswith("(model)") for t in tta.data)


@pytest.fixture(scope="module")
def crossbar():
    from clustersim.explore import load_study

    scn, _ = load_study("allreduce_crossbar16", [])
    return scn, whatif_grid(scn, [1.0], [1.0])


def test_benchmark_page_one_chart_per_rank_count_each_style_unique(crossbar):
    # 60 lines on one chart reused 20 (colour, dash) pairs; the legend covered the x title
    from clustersim.report.whatif import _LAYOUT
    from clustersim.report.whatif_bench_chart import benchmark_figures

    scn, grid = crossbar
    rows = grid["cells"][(1.0, 1.0)]
    ranks = list(dict.fromkeys(r["ranks"] for r in rows))
    figs, owners = benchmark_figures(grid, [(1.0, 1.0)], _LAYOUT)
    assert len(figs) == len(ranks) > 1
    for fig, n in zip(figs, ranks):
        styles = [(t.line.color, t.line.dash) for t in fig.data]
        assert len(set(styles)) == len(styles) == len({r["algorithm"] for r in rows})
        assert f"{n} ranks" in fig.layout.title.text
        assert fig.layout.legend.orientation == "v" and fig.layout.legend.x > 1
        assert all(t.endswith("B") for t in fig.layout.xaxis.ticktext)
    first = {t.name: (t.line.color, t.line.dash) for t in figs[0].data}
    assert all(first[t.name] == (t.line.color, t.line.dash) for f in figs for t in f.data)


def test_nccl_sizes_ticks_binary_and_few():
    # "600M700M800M900M1G": decimal labels, run together, for sizes of 64 MiB ... 8 GiB
    from clustersim.explore import load_study
    from clustersim.report.whatif import _LAYOUT
    from clustersim.report.whatif_bench_chart import benchmark_figures

    scn, _ = load_study("nccl_dgxa100", [])
    grid = whatif_grid(scn, [1.0], [1.0])
    fig = benchmark_figures(grid, [(1.0, 1.0)], _LAYOUT)[0][0]
    assert list(fig.layout.xaxis.ticktext) == ["64 MiB", "128 MiB", "256 MiB", "512 MiB",
                                               "1 GiB", "2 GiB", "4 GiB", "8 GiB"]


def test_emulated_tta_chart_can_draw_the_analytic_twin():
    # predict printed the model's time beside each emulated one, and the chart drew neither
    tta = {"a": [(4, 300.0), (16, 200.0)]}
    fig = convergence_figures("s", {"a": _curves([300.0], "emulated")["alg0"]}, tta,
                              model_tta={"a": [(4, 260.0), (16, None)]})[1]
    assert [t.name for t in fig.data] == ["a (emulated)", "a (model)"]
    assert list(fig.data[1].y) == [260.0 / 60.0, None]
