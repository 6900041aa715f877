"""Time to accuracy in predict: what each simulated point hands the convergence layer, and what
the outputs show (issue 11).

Every figure is checked against the closed form it must equal given the run's own measured
numbers - the large-batch law for synchronous points (McCandlish et al. 2018), the identity
time = samples / samples per second for every kind, efficiency = reference samples / samples,
goodput = throughput x efficiency - not against tuned values.
"""

from __future__ import annotations

import copy
import csv
import json
import math

import pytest

from clustersim.cli import main
from clustersim.convergence import load_profile, progress_curve, shipped_profiles
from clustersim.convergence.predict import ConvergenceResult
from clustersim.report.training import _has_tta
from clustersim.scenario.schema import parse_scenario
from clustersim.sim.sweep import run_sweep
from clustersim.sim.tta import run_stats

PROFILE = {"target": {"metric": "top1", "value": 0.75}, "ref_batch": 256, "ref_steps": 100_000,
           "noise_scale": 4000, "lr_rule": "tuned"}

BASE = {
    "name": "tta",
    "platform": {"topology": "star", "hosts": 8, "device": "v100",
                 "link": {"bandwidth": "10 Gb/s", "latency": "1 us"}},
    "workload": {"model": {"name": "toy", "params": 2_000_000, "fwd_flops": 4e9, "split": 8},
                 "batch_per_worker": 32, "convergence": PROFILE},
    "algorithm": {"name": "bsp", "strategy": "ring"},
    "compare": [{"name": "async_sgd", "label": "async"},
                {"name": "sync_easgd", "tau": 2, "label": "sync easgd"},
                {"name": "async_easgd", "tau": 2, "label": "async easgd"},
                {"name": "gosgd", "p": 0.5, "label": "gossip"}],
    "sweep": {"workers": [2, 4]},
    "run": {"iterations": 6, "warmup": 1, "fidelity": "analytic"},
}


def scenario(**changes):
    raw = copy.deepcopy(BASE)
    raw.update(changes)
    return parse_scenario(raw)


@pytest.fixture(scope="module")
def result():
    scn = scenario()
    return scn, run_sweep(scn, jobs=1)


def test_bsp_points_follow_the_large_batch_law(result):
    scn, res = result
    for p in res.points["bsp"]:
        b = p.workers * 32
        s_min = 100_000 / (1 + 4000 / 256)
        steps = s_min * (1 + 4000 / b)
        assert p.steps_to_target == pytest.approx(steps, rel=1e-12)
        assert p.time_to_target == pytest.approx(steps * p.iteration_time, rel=1e-12)
        assert p.samples_to_target == pytest.approx(steps * b, rel=1e-12)
        # Pollux's efficiency (phi + M0)/(phi + M) for a constant noise scale
        assert p.statistical_efficiency == pytest.approx((4000 + 256) / (4000 + b), rel=1e-12)
        assert p.goodput == pytest.approx(p.throughput * p.statistical_efficiency, rel=1e-12)


def test_every_kind_time_is_samples_over_throughput(result):
    _, res = result
    for title, pts in res.points.items():
        for p in pts:
            assert p.time_to_target is not None, title
            assert p.time_to_target == pytest.approx(p.samples_to_target / p.throughput,
                                                     rel=1e-9), title
            assert p.statistical_efficiency == pytest.approx(
                256 * 100_000 / p.samples_to_target, rel=1e-12), title
            assert p.goodput == pytest.approx(p.throughput * p.statistical_efficiency,
                                              rel=1e-12), title
            assert set(p.convergence_terms) == {"batch_eff", "extra", "lag_steps"}


def test_asynchrony_only_adds_steps(result):
    """Async SGD's measured staleness makes its steps exceed synchronous SGD's at the same
    per-update batch (the term is >= 0 and > 0 once staleness is); EASGD's centre lags."""
    _, res = result
    for p in res.points["async"]:
        assert p.staleness_mean and p.staleness_mean > 0
        assert p.convergence_terms["extra"] > 0
        assert p.convergence_terms["batch_eff"] == 32
    for p in res.points["sync easgd"]:
        assert p.convergence_terms["batch_eff"] == p.workers * 32
        assert p.convergence_terms["lag_steps"] > 0  # tau (1 - beta)/beta with beta = 0.9


def test_async_easgd_staleness_is_counted_in_full_centre_steps():
    """A centre version moves the centre by alpha = beta/p: p versions are one elastic step."""
    class M:  # what run_stats reads of a PointMetrics
        iteration_time, throughput, update_rate = 1.0, 64.0, 8.0

    stats = run_stats("elastic", "async_easgd", {"tau": 1, "beta": 0.9, "alpha": 0.0},
                      "sgd", 8, 8.0, M, [8.0, 16.0])
    assert list(stats.staleness) == [1.0, 2.0]
    sync = run_stats("elastic", "sync_easgd", {"tau": 1, "beta": 0.9, "alpha": 0.0},
                     "sgd", 8, 8.0, M, [8.0])
    assert list(sync.staleness) == []
    mom = run_stats("async", "async_msgd", {"shards": 1, "tau": 1}, "sgd", 8, 8.0, M, [1.0])
    assert mom.momentum == 0.9  # MDOWNPOUR's server momentum, whatever the workers use
    assert mom.update_time == pytest.approx(8.0 / 64.0)


def test_comparison_ranks_by_time_to_target(result, capsys):
    scn, res = result
    from rich.console import Console

    from clustersim.report.training import print_training

    console = Console(width=400, force_terminal=False)
    with console.capture() as cap:
        print_training(console, scn, res, wide=True)
    text = cap.get()
    assert "first to the target first" in text
    tail = text[text.index("comparison at"):]
    titles = sorted(res.points, key=len, reverse=True)  # "async easgd" before "async"
    order = []
    for line in tail.splitlines():
        cell = line.strip("│┃ ")
        hit = next((t for t in titles if cell.startswith(t + " ")), None)
        if hit:
            order.append(hit)
    assert sorted(order) == sorted(res.points)
    times = [next(p for p in res.points[t] if p.workers == 4).time_to_target for t in order]
    assert times == sorted(times)


def test_never_reaching_the_target_is_reported_not_a_crash():
    scn = scenario(algorithm={"name": "gosgd", "p": 0.0}, compare=[{"name": "bsp"}])
    res = run_sweep(scn, jobs=1)
    p = res.points["gosgd"][-1]
    assert p.time_to_target is None and p.steps_to_target is None
    assert "never mixes" in p.tta_note
    assert res.points["bsp"][-1].time_to_target is not None


def test_no_profile_no_columns_and_off_switch():
    raw = copy.deepcopy(BASE)
    del raw["workload"]["convergence"]  # 'toy' has no shipped profile
    res = run_sweep(parse_scenario(raw), jobs=1)
    assert not _has_tta(res)
    off = scenario(run={**BASE["run"], "convergence": "off"})
    assert all(p.time_to_target is None for pts in run_sweep(off, jobs=1).points.values()
               for p in pts)


def test_outputs_carry_time_to_accuracy(tmp_path):
    raw = copy.deepcopy(BASE)
    raw["name"] = "</title><script>alert(1)</script>"
    raw["compare"] = []
    f = tmp_path / "s.yaml"
    f.write_text(json.dumps(raw))
    js, cs, plot = tmp_path / "o.json", tmp_path / "o.csv", tmp_path / "p.html"
    assert main(["predict", str(f), "-q", "-j", "1", "--json", str(js), "--csv", str(cs),
                 "--plot", str(plot)]) == 0
    d = json.loads(js.read_text())
    assert d["convergence_profile"]["ref_steps"] == 100_000
    pt = d["algorithms"]["bsp"][0]
    # efficiency is relative to the reference batch (256): a smaller global batch (64) is
    # more sample-efficient, so above 1
    assert pt["time_to_target"] > 0
    assert pt["statistical_efficiency"] == pytest.approx((4000 + 256) / (4000 + 64))
    rows = list(csv.DictReader(cs.open()))
    assert float(rows[0]["time_to_target_s"]) == pytest.approx(pt["time_to_target"])
    page = plot.read_text()
    assert "Content-Security-Policy" in page and "<script>alert(1)" not in page
    assert "time to target vs workers" in page


def test_progress_curve_closed_form():
    """Constant noise, tuned LR, no lag: every ideal step costs the same, so progress is
    linear in the steps taken; a lag spreads evenly; the curve ends at (1, 1)."""
    prof = load_profile("toy", PROFILE, ("workload", "convergence"))
    res = ConvergenceResult(5000.0, 0.0, None, 1.0, 0.0, 0.0, batch_eff=128, extra=2.0)
    frac, prog = progress_curve(prof, res, points=11)
    assert frac == pytest.approx(prog, abs=1e-12)
    grow = load_profile("toy", {**PROFILE, "noise_scale": {"from": 100, "to": 10000}},
                        ("workload", "convergence"))
    frac, prog = progress_curve(grow, res, points=11)
    assert frac[-1] == pytest.approx(1.0) and prog[-1] == 1.0
    assert all(b >= a for a, b in zip(frac, frac[1:]))
    # a growing noise scale makes late progress dearer: the first half of the progress
    # takes less than half of the steps
    assert frac[5] < 0.5
    assert progress_curve(prof, ConvergenceResult(math.inf, 0, None, math.inf, 0, 0)) == ([], [])


@pytest.mark.parametrize("name", ["knl_4253", "knl_easgd_compare", "hetero_hybrid",
                                  "knl_unsaturated"])
def test_headline_scenarios_have_profiles(name):
    from clustersim.scenario.schema import load_scenario

    scn = load_scenario(f"scenarios/{name}.yaml")
    assert scn.workload.model.name in shipped_profiles()
    assert scn.workload.convergence is not None and scn.run.convergence == "auto"


def test_emulate_mode_reports_emulation_beside_its_analytic_twin(tmp_path):
    """run.convergence: emulate - the table, JSON and chart carry the emulated curves; each
    point has the analytic prediction for the same run beside it; the ImageNet-profile
    figures are not mixed in (the emulated task is the measure)."""
    raw = copy.deepcopy(BASE)
    raw["compare"] = [{"name": "async_sgd", "label": "async"}]
    raw["sweep"] = {"workers": [2]}
    raw["run"] = {**BASE["run"], "convergence": "emulate",
                  "emulation": {"task": "teacher_student", "max_iterations": 400}}
    f = tmp_path / "e.yaml"
    f.write_text(json.dumps(raw))
    js, plot = tmp_path / "e.json", tmp_path / "e.html"
    assert main(["predict", str(f), "-q", "-j", "1", "--json", str(js), "--plot",
                 str(plot)]) == 0
    d = json.loads(js.read_text())
    assert "convergence_profile" not in d
    assert all(p["time_to_target"] is None for pts in d["algorithms"].values() for p in pts)
    for title in ("bsp", "async"):
        (e,) = d["emulation"][title]
        assert e["stopped"] == "target" and e["time_to_target"] > 0
        assert e["curve"]["metric"][-1] >= e["target"]
        # time is monotone and the target is first reached at time_to_target
        t = e["curve"]["time"]
        assert t == sorted(t) and e["time_to_target"] in t
        assert e["analytic_time_to_target"] is not None and e["analytic_time_to_target"] > 0
    page = plot.read_text()
    metric = d["emulation"]["bsp"][0]["metric_name"]
    assert f"{metric} vs simulated time" in page and "time to target vs workers" in page
