"""What-if charts: a standalone page (plotly.js inside), sliders over real simulations,
deterministic bytes; and the core never imports plotly, mpi4py or cupy."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from clustersim.cli import main
from clustersim.report.whatif import grid_points, scaled_platform, whatif_grid
from clustersim.scenario.schema import parse_scenario

SMALL = {
    "platform": {"topology": "star", "hosts": 4, "device": "v100", "link": "eth10g"},
    "workload": {"model": "resnet50", "batch_per_worker": 32},
    "algorithm": {"name": "bsp"},
    "compare": [{"name": "bsp", "strategy": "ar", "label": "ar"}],
    "sweep": {"workers": [1, 2, 4]},
    "run": {"iterations": 3, "warmup": 1, "fidelity": "analytic"},
}


def test_scaled_platform_scales_links_only():
    scn = parse_scenario(SMALL)
    p2 = scaled_platform(scn.platform, bandwidth=2.0, latency=0.5)
    assert (p2.capacity == 2 * scn.platform.capacity).all()
    assert (p2.latency == 0.5 * scn.platform.latency).all()
    assert p2.route(0, 3) == scn.platform.route(0, 3)
    assert (scn.platform.capacity == parse_scenario(SMALL).platform.capacity).all()


def test_grid_more_bandwidth_never_hurts():
    scn = parse_scenario(SMALL)
    grid = whatif_grid(scn, [0.5, 2.0], [10.0])
    assert set(grid["cells"]) == set(grid_points([0.5, 1.0, 2.0], [1.0, 10.0]))
    for alg in ("bsp", "ar"):
        thr = [grid["cells"][(bw, 1.0)][alg][-1]["throughput"] for bw in (0.5, 1.0, 2.0)]
        assert thr[0] < thr[1] < thr[2]
        assert grid["cells"][(1.0, 10.0)][alg][-1]["throughput"] <= thr[1]


def test_whatif_page(tmp_path, capsys):
    import yaml

    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(SMALL))
    out1, out2 = tmp_path / "a.html", tmp_path / "b.html"
    assert main(["whatif", str(f), "-o", str(out1), "--bandwidth", "0.5,2", "-q"]) == 0
    assert main(["whatif", str(f), "-o", str(out2), "--bandwidth", "0.5,2", "-q"]) == 0
    html = out1.read_text()
    assert out1.read_bytes() == out2.read_bytes()
    assert "plotly.js" in html or "Plotly" in html  # the library is embedded, works offline
    # throughput, efficiency, breakdown, efficiency vs bandwidth and vs latency (each factor
    # axis with more than one value), time to target, progress
    assert len(re.findall(r'id="clustersim-fig-\d"', html)) == 7
    # one control panel: a radio button per factor, labelled 0.5x, 10x
    assert 'id="clustersim-bandwidth-0.5"' in html and 'id="clustersim-latency-10.0"' in html
    assert "> 0.5x</label>" in html and "> 10x</label>" in html


@pytest.mark.parametrize("text", ["fast", "inf", "nan", "1e-300", "0", "-1", "0.25,,4", ""])
def test_whatif_bad_factors(tmp_path, capsys, text):
    # inf and 1e-300 were accepted: a page cell that could not be shown, absurd throughputs
    out = tmp_path / "page.html"
    assert main(["whatif", "allreduce_crossbar16", "-o", str(out), "--bandwidth", text]) == 2
    err = capsys.readouterr().err
    assert "--bandwidth" in err and "0.001 to 1000" in err and "Traceback" not in err
    assert not out.exists()


def test_factors_take_the_pages_own_spelling():
    from clustersim.report.factors import parse_factors as _factors

    assert _factors("0.25, 2x,4X", "latency") == [0.25, 2.0, 4.0]
    assert _factors(".5,5.,1e-3", "latency") == [0.5, 5.0, 0.001]


@pytest.mark.parametrize("text, words", [
    ("1_0", "not '1_0'"),  # Python's float() read it as 10: a typo of 1,0 made a 10x page
    ("0x10", "not '0x10'"),
    ("0.5,1,0.5", "the factor '0.5' is given twice"),
    ("-1", "the factor '-1' is outside 0.001 to 1000 (the scenario's own figure times "
           "that factor)\n"),  # not "takes comma-separated factors", no "in '-1'" echo
    (",".join(str(2 ** k) for k in range(-6, 7)), "13 factors with 1x, at most 12"),
    (",".join(str(k) for k in range(2, 14)), "13 factors with 1x, at most 12"),
])
def test_whatif_factors_are_plain_distinct_and_few(tmp_path, capsys, text, words):
    """151 factors had been accepted (41 s, a 7 MB page, tick labels running together)."""
    out = tmp_path / "page.html"
    assert main(["whatif", "allreduce_crossbar16", "-o", str(out), "--bandwidth", text]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
    assert not out.exists()


@pytest.mark.parametrize("module", ["clustersim.cli", "clustersim.sim.sweep",
                                    "clustersim.scenario.schema", "clustersim.sim.engine"])
def test_core_imports_no_plotly_mpi_cupy(module):
    code = (f"import sys, {module}; bad = [m for m in ('plotly', 'mpi4py', 'cupy') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_progress_chart_follows_the_panel_in_the_other_charts_styles():
    # it showed the 1x cell whatever the panel said, in a palette of its own
    from clustersim.report.plot_axes import log_ticks
    from clustersim.report.whatif import _training_figures
    from clustersim.report.whatif_panel import series_style
    from clustersim.report.whatif_tta import progress_figure as _progress_figure

    scn = parse_scenario({**SMALL, "workload": {**SMALL["workload"], "batch_per_worker": 64}})
    grid = whatif_grid(scn, [0.25], [1.0], jobs=1)
    combos = grid_points(grid["bandwidths"], grid["latencies"])
    algs = list(grid["cells"][combos[0]])
    style = {a: series_style(i) for i, a in enumerate(algs)}
    fig, own = _progress_figure(scn, grid, combos, style)
    assert sorted(set(own)) == [0, 1] and len(own) == len(fig.data) == 2 * len(algs)
    for trace in fig.data:
        assert (trace.line.color, trace.line.dash) == style[trace.legendgroup]
    # a quarter of the bandwidth: the same algorithm takes longer to the target
    end = {(k, t.legendgroup): max(t.x) for t, k in zip(fig.data, own)}
    assert all(end[(0, a)] > end[(1, a)] for a in algs)
    thr = _training_figures(scn, grid, combos)[0][0]
    assert {t.line.color for t in thr.data} == {c for c, _ in style.values()}
    assert log_ticks([3.0, 40.0]) == [2.0, 5.0, 10.0, 20.0, 50.0]
    assert log_ticks([0.01, 5000.0]) == [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0]


def test_page_figures_bands_rings_and_palette():
    """Seeds' bands on throughput only (an efficiency band from them read 90-109 % at the
    smallest point, 100 % by definition), said in the title; efficiency against each factor
    axis that has more than one value, with a ring per position for the panel; twenty
    series, twenty colours."""
    from clustersim.report.whatif import _training_figures
    from clustersim.report.whatif_layout import finish_figures, wrap_title
    from clustersim.report.whatif_panel import series_style

    scn = parse_scenario({**SMALL, "workload": {**SMALL["workload"], "jitter": 0.05},
                          "run": {**SMALL.get("run", {}), "repeats": 3}})
    grid = whatif_grid(scn, [0.5], [1.0], jobs=1)
    combos = grid_points(grid["bandwidths"], grid["latencies"])
    figs, owners = _training_figures(scn, grid, combos)
    thr, eff = figs[0], figs[1]
    assert any(t.fill == "toself" for t in thr.data)
    assert not any(t.fill == "toself" for t in eff.data)
    assert "shaded: 5th-95th percentile over 3 seeds" in thr.layout.title.text
    titles = [f.layout.title.text for f in figs]
    assert any("vs link bandwidth" in t for t in titles)
    assert not any("vs link latency" in t for t in titles)  # latency 1x alone: no chart
    k = next(i for i, t in enumerate(titles) if "vs link bandwidth" in t)
    rings = [(t.x[0], own) for t, own in zip(figs[k].data, owners[k]) if own >= 0]
    assert sorted({own for _, own in rings}) == [0, 1]  # one ring per position and series
    assert all(x == combos[own][0] for x, own in rings)
    finish_figures(figs, owners)
    for f, own in zip(figs, owners):
        assert all(len(line) <= 62 for line in f.layout.title.text.split("<br>"))
        assert f.layout.modebar.orientation == "v"
        if any(o >= 0 for o in own) and f.layout.yaxis.type != "log":
            lo, hi = f.layout.yaxis.range if f.layout.barmode != "stack" else \
                f.layout.xaxis.range
            ys = [v for t in f.data for v in ((t.x if f.layout.barmode == "stack" else t.y)
                                               or ()) if v is not None]
            assert lo <= min(ys) and max(ys) <= hi  # every position's data, bands included
    assert wrap_title("a " * 40)[1] == 2
    assert len({series_style(i)[0] for i in range(20)}) == 20


def test_factor_axis_labels_do_not_crowd_and_one_worker_count_charts_throughput():
    """Within the cap, clustered factors (1, 2, 3, 4 between 0.001 and 1000) ran their tick
    labels together; a sweep of one worker count drew efficiency as flat lines at 100 %."""
    from clustersim.report.whatif import _factor_ticks, _training_figures

    assert _factor_ticks([0.001, 1, 2, 3, 4, 1000]) == [0.001, 1.0, 4, 1000]
    assert _factor_ticks([0.001, 0.01, 0.1, 1, 10, 100, 1000, 2, 3, 4, 5, 6]) == [
        0.001, 0.01, 0.1, 1.0, 10, 100, 1000]
    assert _factor_ticks([0.25, 0.5, 1, 2, 4]) == [0.25, 0.5, 1.0, 2, 4]  # all fit
    scn = parse_scenario({**SMALL, "sweep": {"workers": [4]}})
    # 0.001x: throughput spans more than 100x, a log axis whose ticks had been taken for
    # the worker counts (and the efficiency charts came back)
    grid = whatif_grid(scn, [0.001, 0.5, 2.0], [10.0], jobs=1)
    combos = grid_points(grid["bandwidths"], grid["latencies"])
    figs, owners = _training_figures(scn, grid, combos)
    titles = [f.layout.title.text for f in figs]
    assert not any("fficiency" in t for t in titles), titles
    bw = next(f for f in figs if "vs link bandwidth" in f.layout.title.text)
    assert bw.layout.title.text.startswith("Throughput at 4 workers")
    line = next(t for t in bw.data if t.mode == "lines+markers")
    thr = {c: grid["cells"][c][line.legendgroup][-1]["throughput"] for c in combos}
    assert list(line.y) == [thr[(b, 1.0)] for b in (0.001, 0.5, 1.0, 2.0)]
    assert max(line.y) > 100 * min(line.y) and figs[0].layout.yaxis.type == "log"
