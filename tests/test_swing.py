"""The headline's one-at-a-time band that predict prints for scenarios with 'uncertain:':
the values each input is moved to, the band and drivers against a closed-form model, the
nominal run equal to the prediction's own point, and the command's output and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.errors import InputError
from clustersim.uncertainty.spec import parse_uncertain
from clustersim.uncertainty.swing import headline_swing, swing_values

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--set", "compare=[]", "--set", "sweep.workers=[68, 272]", "-j", "1"]


def _one(raw):
    return parse_uncertain({"workload.x": raw})[0]


def test_values_tried():
    assert swing_values(_one({"range": [4, 32], "kind": "int"})) == [4, 32]
    assert swing_values(_one({"range": [4.5, 32.5], "kind": "int"})) == [5, 32]
    assert swing_values(_one({"range": [4, 32], "kind": "int"}), 4) == [32]
    assert swing_values(_one({"range": [1, 10], "kind": "int"}), 1.0) == [10]  # 1 == 1.0
    assert swing_values(_one({"uniform": [0, 0.05]}), 0.02) == [0.0, 0.05]
    assert swing_values(_one({"choice": ["ring", "tree", "rd"]}), "tree") == ["ring", "rd"]
    lo, hi = swing_values(_one({"normal": [0.42, 0.04]}))
    assert (lo, hi) == pytest.approx((0.42 - 1.6448536 * 0.04, 0.42 + 1.6448536 * 0.04))
    # clip truncates: the percentiles of the distribution conditioned on the interval
    lo, hi = swing_values(_one({"normal": [0, 1], "clip": [0, 10]}))
    assert (lo, hi) == pytest.approx((0.0627, 1.96), abs=1e-3)
    # a clip narrower than an int range: whole numbers inside the clip (was 2.5 and 8.5,
    # which the field refused, so plain predict failed on a scenario validate accepted)
    assert swing_values(_one({"range": [1, 10], "kind": "int", "clip": [2.5, 8.5]})) == [3, 8]
    assert swing_values(_one({"uniform": [1, 10], "kind": "int", "clip": [2.5, 8.5]})) == [3, 8]
    assert swing_values(_one({"range": [0.1, 0.9], "clip": [0.2, 1]})) == [0.2, 0.9]
    # an option of weight 0 is never drawn, so the band does not move to it either
    assert swing_values(_one({"choice": ["a", "b", "c"], "weights": [1, 0, 2]})) == ["a", "c"]


def _model(scn):
    """A closed form of the sampled fields: efficiency falls with the batch's distance from
    16 and with the jitter; tau does nothing."""
    b = scn.workload.batch_per_worker
    j = scn.workload.jitter
    return {"efficiency": 1.0 - abs(b - 16) / 100 - j, "throughput": 100.0 * b}


def test_band_and_drivers_against_a_closed_form():
    raw_path = ROOT / "scenarios" / "knl_4253.yaml"
    from clustersim.scenario.schema import load_scenario
    from clustersim.uncertainty.predict import load_raw

    scn = load_scenario(raw_path)
    sw = headline_swing(load_raw(str(raw_path), []), str(raw_path), scn.uncertain, 1,
                        run=_model)
    assert sw.algorithm == "Sync EASGD" and sw.workers == 4253
    # nominal batch 8, jitter 0.02; runs: nominal + batch 4, 32 + tau 10 + jitter 0, 0.05
    # + allreduce ring, rabenseifner + compute efficiency 0.25, 0.8 + model alexnet, resnet50
    # (the last two do nothing in this closed form)
    assert sw.runs == 12
    assert sw.nominal["efficiency"] == pytest.approx(1 - 0.08 - 0.02)
    by = {m.input.field: m for m in sw.moved}
    assert by["workload.batch_per_worker"].values == [4, 32]
    assert [r["efficiency"] for r in by["workload.batch_per_worker"].metrics] == \
        pytest.approx([1 - 0.12 - 0.02, 1 - 0.16 - 0.02])
    assert sw.band("efficiency") == pytest.approx((1 - 0.16 - 0.02, 1 - 0.08 - 0.0))
    assert sw.band("throughput") == pytest.approx((400.0, 3200.0))
    drivers = [(m.input.field, s) for m, s in sw.drivers("efficiency")]
    assert drivers[0] == ("workload.batch_per_worker", pytest.approx(0.16 - 0.08))
    assert drivers[1] == ("workload.jitter", pytest.approx(0.05))
    assert dict(drivers)["algorithm.tau"] == 0.0


def test_nominal_run_is_the_predictions_own_point(tmp_path):
    # why predict reuses its own point as the nominal: the focused run (one algorithm, the
    # sweep's ends) gives the same numbers, to the last bit
    sets = ["compare=[]", "sweep.workers=[68, 136, 272]",
            "uncertain={workload.jitter: {uniform: [0, 0.05]}}"]
    out = tmp_path / "p.json"
    assert main(["predict", "knl_4253", *[a for s in sets for a in ("--set", s)], "-j", "1",
                 "--json", str(out), "-q"]) == 0
    d = json.loads(out.read_text())
    point = d["algorithms"]["Sync EASGD"][-1]
    from clustersim.scenario.schema import load_scenario
    from clustersim.uncertainty.predict import load_raw

    path = str(ROOT / "scenarios" / "knl_4253.yaml")
    scn = load_scenario(path, sets)
    alone = headline_swing(load_raw(path, sets), path, scn.uncertain, 1)
    assert alone.runs == 3 and alone.workers == 272
    for key in ("efficiency", "throughput", "iteration_time", "comm_share", "time_to_target"):
        assert alone.nominal[key] == point[key], key
    # a run that shares the nominal's platform (and the routes and plans the nominal run
    # cached on it) gives what a run with a platform of its own gives
    from clustersim.uncertainty.focus import focus_raw, headline_metrics
    from clustersim.uncertainty.propagate import Sample, sample_scenario

    own = sample_scenario(focus_raw(load_raw(path, sets), None)[0], path,
                          Sample({"workload.jitter": 0.05}))
    assert own.platform is not scn.platform
    assert headline_metrics(own) == alone.moved[0].metrics[1]
    hb = d["headline_band"]
    assert hb["algorithm"] == "Sync EASGD" and hb["workers"] == 272 and hb["runs"] == 2
    assert hb["variant"] is None  # no variants in the scenario
    assert hb["nominal"] == alone.nominal
    assert hb["inputs"][0]["metrics"] == alone.moved[0].metrics
    assert hb["nominal"]["efficiency"] == point["efficiency"]
    assert hb["nominal"]["throughput"] == point["throughput"]
    lo, hi = hb["band"]["efficiency"]
    effs = [r["efficiency"] for r in hb["inputs"][0]["metrics"]]
    assert lo == min(effs + [point["efficiency"]]) and hi == max(effs + [point["efficiency"]])
    # more OS noise never helps a synchronous method
    assert effs[0] >= point["efficiency"] >= effs[1]


def test_predict_prints_the_band_unless_asked_not_to(capsys):
    assert main(["predict", "knl_4253", *SMALL]) == 0
    out = capsys.readouterr().out
    assert "each uncertain input alone over its range" in out
    assert "top drivers" in out and "not a probability interval" in out
    assert main(["predict", "knl_4253", *SMALL, "--no-band"]) == 0
    assert "each uncertain input alone" not in capsys.readouterr().out


def test_a_refused_value_names_its_uncertain_entry(tmp_path):
    from clustersim.uncertainty.predict import load_raw

    raw_path = ROOT / "scenarios" / "knl_4253.yaml"
    raw = load_raw(str(raw_path), ["uncertain={workload.batch_per_worker: "
                                   "{range: [0, 8], kind: int}}"])
    with pytest.raises(InputError) as err:
        headline_swing(raw, str(raw_path), parse_uncertain(raw["uncertain"]), 1)
    assert "uncertain.workload.batch_per_worker" in str(err.value)


def test_a_target_never_reached_reads_never_and_null(capsys):
    from rich.console import Console

    from clustersim.report.swing import print_swing, swing_json
    from clustersim.scenario.schema import load_scenario
    from clustersim.uncertainty.predict import load_raw

    def model(scn):
        b = scn.workload.batch_per_worker
        return {**_model(scn), "time_to_target": None if b == 32 else 3600.0 * b}

    raw_path = ROOT / "scenarios" / "knl_4253.yaml"
    scn = load_scenario(raw_path)
    sw = headline_swing(load_raw(str(raw_path), []), str(raw_path), scn.uncertain, 1,
                        run=model)
    assert sw.band("time_to_target") == (4 * 3600.0, float("inf"))
    assert sw.drivers("time_to_target")[0][0].input.field == "workload.batch_per_worker"
    doc = swing_json(sw)
    assert doc["band"]["time_to_target"] == [4 * 3600.0, None]
    json.dumps(doc, allow_nan=False)  # strict JSON: no Infinity
    print_swing(Console(width=200, file=None), sw)
    out = capsys.readouterr().out
    assert "4.00 h, never" in out  # three figures, as every duration


def test_sweeps_on_one_pool_equal_each_sweep_alone():
    # predict runs its band beside its sweep on one pool (run_sweeps): each sweep's result
    # must be what it gives alone, in its own order, whichever process ran which point
    from clustersim.scenario.schema import load_scenario
    from clustersim.sim.sweep import run_sweep, run_sweeps

    path = ROOT / "scenarios" / "knl_4253.yaml"
    a = load_scenario(path, ["compare=[{name: async_easgd, tau: 1}]", "sweep.workers=[68, 136]"])
    b = load_scenario(path, ["compare=[]", "sweep.workers=[34, 68]", "workload.jitter=0.05"])
    together = run_sweeps([a, b], jobs=2)
    assert [list(r.points) for r in together] == [["Sync EASGD", "async_easgd"], ["Sync EASGD"]]
    for scn, res in zip((a, b), together):
        alone = run_sweep(scn, jobs=1)
        assert repr(res.points) == repr(alone.points)


def test_the_band_is_the_same_on_one_process_and_on_the_pool(tmp_path):
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}.json"
        assert main(["predict", "knl_4253", *SMALL[:-2], "-j", jobs, "--json", str(out),
                     "-q"]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert json.loads(outs[0])["headline_band"]["runs"] == 11


def test_an_emulated_time_to_target_has_its_band(tmp_path):
    """run.convergence: emulate - the emulated time to target is what the scenario is for;
    the headline band, the sampled bands and sensitivity dropped it (the emulation is kept
    beside the points).  Now each has it, and the nominal is the prediction's own."""
    import csv

    out = tmp_path / "e.json"
    assert main(["predict", "emulate_digits", "--set", "compare=[]", "-q", "-j", "1",
                 "--set", "uncertain={workload.jitter: {uniform: [0, 0.05]}}",
                 "--uncertainty", "2", "--json", str(out), "--csv", str(tmp_path / "e.csv")
                 ]) == 0
    doc = json.loads(out.read_text())
    # the CSV names the band after the column that holds the emulated time (the analytic
    # time_to_target_s is empty in an emulated row; QA 6c L2)
    row = list(csv.DictReader((tmp_path / "e.csv").open()))[-1]
    band = doc["uncertainty"]["algorithms"]["BSP"][-1]["time_to_target"]
    assert row["time_to_target_s"] == "" and "time_to_target_s_median" not in row
    assert float(row["emulated_time_to_target_s_median"]) == band["median"]
    own = doc["emulation"]["BSP"][-1]["time_to_target"]
    hb = doc["headline_band"]
    assert hb["nominal"]["time_to_target"] == own
    lo, hi = hb["band"]["time_to_target"]
    assert lo <= own <= hi and lo < hi  # jitter moves it
    last = doc["uncertainty"]["algorithms"]["BSP"][-1]["time_to_target"]
    assert last["p05"] <= last["median"] <= last["p95"] and last["never"] == 0


def test_a_scenario_value_outside_its_entry_is_named():
    """The band spans the nominal run, so a scenario value the entry never draws (0.9 with
    uniform [0.3, 0.4]) widened it silently; such inputs are now named (printed and in the
    JSON), units read, choices of weight 0 not counted as drawn."""
    from clustersim.uncertainty.swing import outside

    assert outside(_one({"uniform": [0.3, 0.4]}), 0.9)
    assert not outside(_one({"uniform": [0.3, 0.4]}), 0.3)
    us = parse_uncertain({"network.overhead": {"uniform": ["5 us", "20 us"]}})[0]  # a time
    assert outside(us, "1 us")
    assert not outside(us, "10 us")
    assert outside(_one({"range": [1, 10], "clip": [2, 8]}), 9)
    assert not outside(_one({"normal": [0.42, 0.04]}), 5.0)  # unbounded: anything is drawn
    assert outside(_one({"choice": ["a", "b"], "weights": [1, 0]}), "b")
    assert not outside(_one({"choice": ["a", "b"]}), "b")
    assert not outside(_one({"uniform": [0.3, 0.4]}), "not a number")


def test_one_worker_count_has_no_efficiency_band():
    """A sweep of one worker count is 100 % efficient by definition: its band read
    "100.0% to 100.0%; top drivers none", and sensitivity gave it zero indices."""
    from types import SimpleNamespace

    from clustersim.uncertainty.focus import sweep_headline

    def point(w, thr):
        return SimpleNamespace(workers=w, efficiency=1.0, throughput=thr, iteration_time=0.5,
                               comm_share=0.1, time_to_target=None, tta_note="")

    one = SimpleNamespace(points={"a": [point(16, 100.0)]})
    two = SimpleNamespace(points={"a": [point(8, 60.0), point(16, 100.0)]})
    assert "efficiency" not in sweep_headline(one)
    assert sweep_headline(one)["throughput"] == 100.0
    assert sweep_headline(two)["efficiency"] == 1.0


def test_the_note_of_one_worker_count_says_one_point(capsys):
    assert main(["predict", "theano_mpi_alexnet", "--set", "compare=[]", "--set",
                 "sweep.workers=[8]", "--set", "uncertain={workload.jitter: {uniform: "
                 "[0, 0.05]}}", "-j", "1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "of nccl32 at its one point)" in text and "two ends" not in text
    assert "efficiency" not in text.split("each uncertain input alone")[1].split("one input")[0]
