"""Calibration profiles: YAML round trip, applying to scenarios, what-moved report, errors,
and the CLI (``calibrate TRACES``, ``predict --calibration``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from clustersim.calibration.applyprofile import apply_profile, apply_profile_data
from clustersim.calibration.params import REGISTRY, lookup, scenario_values
from clustersim.calibration.profile import (
    FORMAT,
    Profile,
    dump_profile,
    load_profile,
    parse_profile,
)
from clustersim.cli import main
from clustersim.errors import InputError
from clustersim.network.params import Segment
from clustersim.scenario.schema import PROJECT_ROOT, load_scenario

BSP = PROJECT_ROOT / "scenarios" / "real_bsp_mlp.yaml"
K80 = PROJECT_ROOT / "scenarios" / "theano_mpi_alexnet.yaml"


def profile() -> Profile:
    return Profile(
        devices={"localhost_core": {"peak": 60e9, "efficiency": 0.55, "mem_bw": 12e9,
                                    "mem_efficiency": 0.6, "overhead": 2e-6,
                                    "reduce_rate": 3e9,
                                    "efficiency_by_class": {"conv": 0.5, "fc": 0.55,
                                                            "other": 0.55}}},
        links={"localhost_shm": {"bandwidth": 4e9, "latency": 2e-6}},
        network={"step_overhead": 5e-6},
        protocols={"localhost_shm": (Segment(0, 0.0, 0.8, 1.5),
                                     Segment(65536, 3e-6, 1.0, 0.5))},
        about="test profile")


def test_yaml_round_trip_keeps_six_digits():
    prof = profile()
    text = dump_profile(prof)
    again = parse_profile(yaml.safe_load(text))
    assert again.devices["localhost_core"]["peak"] == pytest.approx(60e9, rel=1e-6)
    assert again.devices["localhost_core"]["efficiency_by_class"]["conv"] == 0.5
    assert again.links["localhost_shm"]["latency"] == pytest.approx(2e-6, rel=1e-6)
    assert again.protocols["localhost_shm"] == prof.protocols["localhost_shm"]
    assert again.network["step_overhead"] == pytest.approx(5e-6, rel=1e-6)
    assert dump_profile(again) == text  # deterministic, stable


def test_applying_moves_platform_network_and_compute():
    scn = load_scenario(BSP)
    new, changes, notes = apply_profile_data(scn, profile())
    moved = {c.name: c for c in changes}
    # the built platform's link resources and device specs changed
    rid = new.platform.link_kind.index("localhost_shm")
    assert new.platform.capacity[rid] == 4e9 and new.platform.latency[rid] == 2e-6
    assert new.platform.spec(0).reduce_bw == 3e9
    assert new.network.step_overhead == 5e-6
    assert dict(new.network.protocols)["localhost_shm"][1].collective_efficiency == 0.5
    assert dict(new.workload.compute.efficiency) == {"conv": 0.5, "fc": 0.55, "other": 0.55}
    # the report names what moved, from what to what
    assert moved["link.localhost_shm.bandwidth"].before == scn.platform.capacity[rid]
    assert moved["link.localhost_shm.bandwidth"].after == 4e9
    assert moved["device.localhost_core.reduce_bw"].relative == pytest.approx(
        3e9 / scn.platform.spec(0).reduce_bw - 1)
    assert "network.protocol.localhost_shm.1.start" in moved
    assert all(lookup(c.name) in REGISTRY.values() for c in changes)
    assert not notes
    # the original scenario is untouched
    assert scenario_values(scn)["link.localhost_shm.bandwidth"] == scn.platform.capacity[rid]


def test_calibrated_prediction_is_faster_with_a_faster_link():
    from clustersim.sim.sweep import simulate_point

    scn = load_scenario(BSP)
    fast = profile()
    fast.links["localhost_shm"]["bandwidth"] = 40e9
    slow = profile()
    a, _ = simulate_point(apply_profile_data(scn, fast)[0], scn.algorithm, 2, 0)
    b, _ = simulate_point(apply_profile_data(scn, slow)[0], scn.algorithm, 2, 0)
    assert a.comm < b.comm
    assert a.compute == pytest.approx(b.compute)


def test_nothing_matches_nothing_moves():
    scn = load_scenario(K80)
    new, changes, notes = apply_profile_data(scn, profile())
    assert changes == []
    assert any("localhost_core" in n for n in notes)
    assert any("network parameters" in n for n in notes)
    assert new.network == scn.network


def test_apply_profile_prints_what_moved(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text(dump_profile(profile()))
    out = io.StringIO()
    new = apply_profile(load_scenario(BSP), p, stream=out)
    text = out.getvalue()
    assert "parameters moved" in text and "link.localhost_shm.bandwidth" in text
    assert "->" in text and "%" in text
    assert new.network.step_overhead == pytest.approx(5e-6, rel=1e-9)  # through "5 us"


@pytest.mark.parametrize("text,needle", [
    ("format: other/1\n", "format"),
    (f"format: {FORMAT}\ndevices: {{localhost_core: {{peek: 1 GFLOP/s}}}}\n", "peak"),
    (f"format: {FORMAT}\nlinks: {{x: {{bandwidth: fast}}}}\n", "bandwidth"),
    (f"format: {FORMAT}\ndevices: {{d: {{efficiency: 1.5}}}}\n", "(0, 1]"),
    (f"format: {FORMAT}\nnetwork: {{protocols: {{x: [{{start: 1 KiB, overhead: 0 s, "
     f"efficiency: 1}}]}}}}\n", "first segment"),
    (f"format: {FORMAT}\nsurprise: 1\n", "surprise"),
    # out of order: was sorted silently, which renames the segments' parameters (QA 19 M3)
    (f"format: {FORMAT}\nnetwork: {{protocols: {{x: [{{start: 0 B, overhead: 0 s, "
     f"efficiency: 1}}, {{start: 1 MiB, overhead: 0 s, efficiency: 1}}, {{start: 1 KiB, "
     f"overhead: 0 s, efficiency: 1}}]}}}}\n",
     "x[2].start: segments must start at increasing sizes: 1 KiB after 1 MiB"),
    (f"format: {FORMAT}\nlinks: {{x: {{duplex: maybe}}}}\n", "true or false"),
])
def test_bad_profiles_name_the_field(tmp_path, text, needle):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(InputError) as err:
        load_profile(p)
    msg = str(err.value)
    assert needle in msg and "bad.yaml" in msg


def test_predict_with_calibration_cli(tmp_path, capsys):
    p = tmp_path / "p.yaml"
    p.write_text(dump_profile(profile()))
    out = tmp_path / "o.json"
    assert main(["predict", str(BSP), "--calibration", str(p), "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "parameters moved" in err
    assert json.loads(out.read_text())
    # -q: no table, no progress - and no report of what moved (it printed ~35 lines)
    assert main(["predict", str(BSP), "--calibration", str(p), "--json", str(out), "-q"]) == 0
    assert capsys.readouterr().err == ""
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: nope\n")
    assert main(["predict", str(BSP), "--calibration", str(bad), "-q"]) == 2


# -- calibrate TRACES ------------------------------------------------------------------------
PLATFORM_YAML = """
name: rt
topology: node
catalog:
  devices:
    testcpu: {peak: 100 GFLOP/s, mem_bw: 20 GB/s, memory: 8 GB}
  links:
    testshm: {bandwidth: 1 GB/s, latency: 10 us}
device: testcpu
node: {devices: 4, layout: crossbar, nics: 0, internal: testshm}
"""


def test_calibrate_from_recorded_traces_cli(tmp_path):
    """Traces written to disk the way realrun writes them (one JSONL per rank) are fitted by
    ``clustersim calibrate TRACES`` into a profile that gives the parameters back."""
    from test_calibration_roundtrip import BW, LAT, SEGS, traces

    from clustersim.trace import TraceWriter

    _, events = traces()
    tdir = tmp_path / "run"
    tdir.mkdir()
    for rank in range(4):
        with TraceWriter(tdir / f"trace.rank{rank}.jsonl",
                         {"rank": rank, "host": "node7", "backend": "real"}) as w:
            for ev in events:
                if ev.actor == rank:
                    w.write(ev)
    plat = tmp_path / "rt.yaml"
    plat.write_text(PLATFORM_YAML)
    out = tmp_path / "fitted.yaml"
    code = main(["calibrate", str(tdir), "--platform", str(plat), "--out", str(out), "-q"])
    assert code == 0
    prof = load_profile(out)
    assert prof.links["testshm"]["bandwidth"] == pytest.approx(BW, rel=0.02)
    assert prof.links["testshm"]["latency"] == pytest.approx(LAT, rel=0.02)
    assert [s.start for s in prof.protocols["testshm"]] == [s.start for s in SEGS]
    assert prof.source["kind"] == "traces" and prof.source["hosts"] == ["node7"]
    assert prof.validation is None


def test_traces_of_two_runs_pool_their_batches(tmp_path):
    """Two directories (two rounds of microbenchmarks) are different repeats of the same
    points: every row counts the batches of both, none overwrites the other's."""
    from test_calibration_roundtrip import traces

    from clustersim.commands.calibrate_inputs import load_traces
    from clustersim.trace import TraceWriter

    _, events = traces()
    for run in ("round0", "round1"):
        (tmp_path / run).mkdir()
        for rank in range(4):
            with TraceWriter(tmp_path / run / f"trace.rank{rank}.jsonl", {"rank": rank}) as w:
                for ev in events:
                    if ev.actor == rank:
                        w.write(ev)
    one, _ = load_traces([str(tmp_path / "round0")], "mean")
    both, _ = load_traces([str(tmp_path / "round0"), str(tmp_path / "round1")], "mean")
    assert len(both) == len(one)
    assert [r["repeats"] for r in both] == [2 * r["repeats"] for r in one]


@pytest.mark.parametrize("argv,needle", [
    (["calibrate"], "nothing to fit"),
    (["calibrate", "--real", "x"], "not both"),
    (["calibrate", "missing-dir"], "not found"),
    (["calibrate", "--real", "--np", "1"], "--np"),
    (["calibrate", "--real", "--breakpoints", "lots"], "--breakpoints"),
])
def test_calibrate_bad_input_exit_2(argv, needle, capsys):
    assert main(argv) == 2
    assert needle in capsys.readouterr().err


def test_calibrate_traces_without_benchmarks_is_bad_input(tmp_path, capsys):
    from clustersim.trace import TraceEvent, TraceWriter

    with TraceWriter(tmp_path / "trace.rank0.jsonl", {"rank": 0}) as w:
        w.write(TraceEvent(0, "worker", "compute", 0.0, 1.0, "forward"))
    assert main(["calibrate", str(tmp_path), "--out", str(tmp_path / "p.yaml")]) == 2
    assert "no microbenchmark events" in capsys.readouterr().err


def test_registry_covers_every_scenario_value():
    scn = apply_profile_data(load_scenario(BSP), profile())[0]
    for name in scenario_values(scn):
        d = lookup(name)
        assert d.unit and d.source and d.doc
    assert Path(__file__).exists()


def test_half_duplex_profile_merges_directions():
    """``duplex: false`` makes both directions of every cable of the class one resource:
    a message each way between the same two ranks then shares it."""
    scn = load_scenario(BSP)
    prof = profile()
    prof.links["localhost_shm"]["duplex"] = False
    new, changes, _ = apply_profile_data(scn, prof)
    there, back = new.platform.route(0, 1), new.platform.route(1, 0)
    assert set(there) == set(back)
    assert set(scn.platform.route(0, 1)).isdisjoint(scn.platform.route(1, 0))
    assert any(c.name == "link.localhost_shm.duplex" and c.after == 0.0 for c in changes)
    again = parse_profile(yaml.safe_load(dump_profile(prof)))
    assert again.links["localhost_shm"]["duplex"] is False


def test_validation_picks_the_median_or_the_fastest_run():
    """The measured side of a validation case: the median repeat, or with ``pick="min"`` (a
    profile fitted with ``--statistic min``) the fastest; the error is against that run."""
    from types import SimpleNamespace

    from clustersim.calibration.validate import Measured, build_report, predict_scenario

    path = PROJECT_ROOT / "scenarios" / "real_bsp_mlp.yaml"
    pred, _, _ = predict_scenario(path, None)
    times = [3.0 * pred.iteration_time, pred.iteration_time, 2.0 * pred.iteration_time]
    runs = [[Measured(SimpleNamespace(metrics=SimpleNamespace(iteration_time=t,
                                                              comm_share=0.1),
                                      out_dir=f"run{i}"), 0.0)
             for i, t in enumerate(times)]]
    med = build_report(None, [path], runs).cases[0]
    fast = build_report(None, [path], runs, pick="min").cases[0]
    assert med.measured.iteration_time == times[2] and med.error == pytest.approx(-0.5)
    assert fast.measured.iteration_time == times[1] and fast.error == pytest.approx(0.0)
    with pytest.raises(ValueError):
        build_report(None, [path], runs, pick="mean")
    # an even number of repeats: the run standing for the case is the faster middle one,
    # the error is against the median - the mean of the two middle times (QA 15: with two
    # repeats it had been the fastest, which flattered an optimistic prediction)
    two = [runs[0][:2]]
    even = build_report(None, [path], two).cases[0]
    assert even.measured.iteration_time == times[1]
    assert even.measured_time == pytest.approx(2.0 * pred.iteration_time)
    assert even.error == pytest.approx(-0.5)



def test_a_time_fitted_at_its_bound_of_zero_is_written_as_zero():
    """QA 19 L10: the profile held ``step_overhead: 1.02004e-18 ns`` (float noise of a fit
    at its bound) while the table showed 0 ns; it is written as 0 s, as the table reads."""
    prof = profile()
    prof.network["step_overhead"] = 1.02004e-27
    text = dump_profile(prof)
    assert "step_overhead: 0 s" in text and "e-18" not in text
