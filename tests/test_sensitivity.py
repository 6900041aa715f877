"""Sensitivity indices against closed forms, and the command on a shipped scenario."""

from __future__ import annotations

import json

import pytest

from clustersim.cli import main
from clustersim.uncertainty.propagate import Inputs
from clustersim.uncertainty.sensitivity import run_sensitivity
from clustersim.uncertainty.spec import parse_uncertain

INPUTS = Inputs(parse_uncertain({"workload.a": {"uniform": [0, 1]},
                                 "workload.b": {"uniform": [0, 1]}}))


def linear(sample):
    return {"y": 3.0 * sample.fields["workload.a"] + 1.0}


def test_sobol_linear_in_one_input_and_independent_of_the_other():
    res = run_sensitivity(INPUTS, 256, "sobol", 0, linear, {"y": "y"})
    m = res["metrics"]["y"]
    assert res["evaluations"] == 256 * 4  # Saltelli without second order: N (k + 2)
    a, b = m["names"].index("workload.a"), m["names"].index("workload.b")
    assert m["S1"][a] == pytest.approx(1.0, abs=0.03)
    assert m["ST"][a] == pytest.approx(1.0, abs=0.03)
    assert abs(m["S1"][b]) < 0.01 and abs(m["ST"][b]) < 0.01
    # band of 3 U(0,1) + 1: the 5th, 50th, 95th percentiles are 1.15, 2.5, 3.85
    assert (m["band"]["p05"], m["band"]["median"], m["band"]["p95"]) == pytest.approx(
        (1.15, 2.5, 3.85), abs=0.02)


def quadratic(sample):
    return {"y": sample.fields["workload.a"] ** 2 + 0.5 * sample.fields["workload.b"]}


@pytest.mark.parametrize("seed", [0, 7])
def test_sobol_confidence_intervals_repeat_with_the_seed(seed):
    # SALib seeds its bootstrap only "if seed:": with run.seed 0 the intervals (and the
    # tornado page's bytes) changed from run to run
    a = run_sensitivity(INPUTS, 16, "sobol", seed, quadratic, {"y": "y"})["metrics"]["y"]
    b = run_sensitivity(INPUTS, 16, "sobol", seed, quadratic, {"y": "y"})["metrics"]["y"]
    assert a["S1_conf"] == b["S1_conf"] and a["ST_conf"] == b["ST_conf"]
    assert all(c > 0 for c in a["ST_conf"])  # a real bootstrap, not zeros


def test_sobol_additive_model_splits_the_variance_by_the_coefficients():
    # y = a + 2 b, a, b ~ U(0, 1): Var = 1/12 + 4/12, S_a = 1/5, S_b = 4/5 (no interactions)
    res = run_sensitivity(INPUTS, 512, "sobol", 1,
                          lambda s: {"y": s.fields["workload.a"] + 2 * s.fields["workload.b"]},
                          {"y": "y"})
    m = res["metrics"]["y"]
    assert m["S1"] == pytest.approx([0.2, 0.8], abs=0.03)
    assert m["ST"] == pytest.approx([0.2, 0.8], abs=0.03)


def test_morris_mu_star_is_the_slope_over_the_range():
    res = run_sensitivity(INPUTS, 20, "morris", 0, linear, {"y": "y"})
    m = res["metrics"]["y"]
    assert res["evaluations"] == 20 * 3
    assert m["mu_star"] == pytest.approx([3.0, 0.0], abs=1e-9)
    assert m["sigma"] == pytest.approx([0.0, 0.0], abs=1e-9)


def test_constant_metric_has_zero_indices():
    res = run_sensitivity(INPUTS, 8, "sobol", 0, lambda s: {"y": 5.0}, {"y": "y"})
    assert res["metrics"]["y"]["ST"] == [0.0, 0.0]


def test_command_on_the_headline_scenario_is_deterministic(tmp_path, capsys):
    args = ["sensitivity", "knl_4253", "--method", "morris", "-n", "2", "-j", "1",
            "--set", "sweep.workers=[68, 272]"]
    assert main([*args, "--json", str(tmp_path / "a.json"), "--plot",
                 str(tmp_path / "t.html")]) == 0
    out = capsys.readouterr().out
    assert "top drivers of scaling efficiency" in out and "Sync EASGD at 272 workers" in out
    assert main([*args, "--json", str(tmp_path / "b.json"), "-q", "-j", "2"]) == 0
    a, b = (tmp_path / "a.json").read_bytes(), (tmp_path / "b.json").read_bytes()
    assert a == b
    res = json.loads(a)
    assert set(res["metrics"]["efficiency"]["names"]) == {
        "workload.batch_per_worker", "algorithm.tau", "workload.jitter",
        "algorithm.allreduce", "workload.compute.efficiency", "workload.model"}
    assert (tmp_path / "t.html").read_text().startswith("<!DOCTYPE html>")


def test_command_errors(capsys):
    assert main(["sensitivity", "knl_4253", "-n", "1"]) == 2
    assert main(["sensitivity", "knl_4253", "-n", "12"]) == 2  # Sobol: a power of two
    assert "power of two" in capsys.readouterr().err
    assert main(["sensitivity", "allreduce_crossbar16"]) == 2
    assert main(["sensitivity", "knl_4253", "--algorithm", "nope"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "'nope'" in err and "allowed: Sync EASGD" in err
    assert "--algorithm: --algorithm" not in err


def test_morris_takes_unbounded_inputs_at_quantiles_not_at_their_ends():
    """A normal input without a clip: Morris's levels 0 and 1 were the distribution's ends,
    -inf and +inf (refused mid-run); they are now the medians of 4 equally likely bins, so
    every value is finite and inside the 12.5-87.5% quantiles."""
    inputs = Inputs(parse_uncertain({"workload.a": {"normal": [10.0, 1.0]},
                                     "workload.b": {"uniform": [0, 1]}}))
    seen = []

    def model(sample):
        seen.append(sample.fields["workload.a"])
        return {"y": 2.0 * sample.fields["workload.a"]}

    res = run_sensitivity(inputs, 10, "morris", 0, model, {"y": "y"})
    assert all(8.84 < v < 11.16 for v in seen)  # 10 -+ 1.15 sd: the 12.5/87.5% quantiles
    assert res["metrics"]["y"]["mu_star"][1] == 0.0
    assert res["metrics"]["y"]["mu_star"][0] > 0


def test_an_algorithm_name_shared_by_several_cases_is_refused():
    """theano_mpi_alexnet's six cases are all ``bsp``: ``--algorithm bsp`` analysed the first
    without a word; it now asks for one of their labels."""
    from clustersim.errors import InputError
    from clustersim.uncertainty.focus import focus_raw

    raw = {"algorithm": {"name": "bsp", "label": "a"},
           "compare": [{"name": "bsp", "label": "b"}, {"name": "gosgd", "label": "g"}]}
    from clustersim.scenario.yamlio import LineDict

    with pytest.raises(InputError, match="names 2 algorithms.*a, b"):
        focus_raw(LineDict(raw), "bsp")
    out, title = focus_raw(LineDict(raw), "gosgd")
    assert title == "g" and out["algorithm"]["name"] == "gosgd"
    assert focus_raw(LineDict(raw), "b")[1] == "b"


def test_quiet_indices_shown_nowhere_are_refused(capsys):
    """sensitivity -q without --json or --plot ran every simulation and printed nothing."""
    from clustersim.cli import main

    assert main(["sensitivity", "theano_mpi_alexnet", "-q", "-n", "2", "--method",
                 "morris"]) == 2
    err = capsys.readouterr().err
    assert "shows the indices nowhere" in err and err.count("\n") == 1


def test_independent_calibration_blocks_of_one_source_are_separate_groups() -> None:
    """QA 17 LOW-1: the ping-pong's bandwidth, latency and overhead fits are three
    independent covariance blocks of one source; named by the source alone, SALib merged
    them into one group and they could not be ranked apart."""
    from types import SimpleNamespace

    from clustersim.uncertainty.sensitivity import _problem

    blocks = (SimpleNamespace(source="pingpong", parameters=("links.nic.bandwidth",)),
              SimpleNamespace(source="pingpong", parameters=("links.nic.latency",)),
              SimpleNamespace(source="collective", parameters=("network.segments.2.ce",)))
    groups = _problem(Inputs(blocks=blocks))["groups"]
    assert groups == ["calibration (pingpong: bandwidth)", "calibration (pingpong: latency)",
                      "calibration (collective)"]


def test_sobol_band_is_taken_from_the_independent_a_and_b_rows():
    """QA 17 LOW-4: each AB_j row repeats the A row's values of every input but j, so a
    band over all N (k + 2) rows counted one draw up to k times.  The band is the 5/50/95 %
    of the 2N A and B rows: 2N distinct draws of an input, each once."""
    from clustersim.uncertainty.bands import quantiles
    from clustersim.uncertainty.sensitivity import band_rows, design

    five = Inputs(parse_uncertain({f"workload.x{i}": {"uniform": [0, 1]} for i in range(5)}))
    seen = []

    def first(sample):
        seen.append(sample.fields["workload.x0"])
        return {"y": sample.fields["workload.x0"]}

    res = run_sensitivity(five, 8, "sobol", 3, first, {"y": "y"})
    assert len(seen) == 8 * 7
    prob, _x = design(five, 8, "sobol", 3)
    rows = band_rows(prob, "sobol", len(seen))
    assert rows == sorted([*range(0, 56, 7), *range(6, 56, 7)])
    picked = [seen[j] for j in rows]
    assert len(set(picked)) == 16  # each draw once
    assert len(set(seen)) == 16  # ... and they are all the draws there are: the AB rows repeat them
    b = quantiles(picked)
    assert res["metrics"]["y"]["band"] == {"median": b.median, "p05": b.low, "p95": b.high}
    # every Morris row is a draw at the grid's quantiles: all of them count
    assert band_rows(prob, "morris", 12) == list(range(12))


def test_morris_drivers_are_said_in_the_metrics_own_units():
    """mu* is in SI units: a time to target's 1.7e+03 read as noise (QA 18b L9)."""
    from clustersim.report.uncertainty import _effect

    assert _effect("time_to_target", 1700.0) == "28.3 min"
    assert _effect("iteration_time", 0.0346) == "34.6 ms"
    assert _effect("throughput", 1234.4) == "1,234 samples/s"
    assert _effect("efficiency", 0.042) == "4.2 points"
