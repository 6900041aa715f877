"""Propagation: quantiles against closed forms, determinism, predict unchanged without
--uncertainty, and the calibration covariance read back as uncertainty."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from clustersim.cli import main
from clustersim.scenario.schema import load_scenario
from clustersim.uncertainty.bands import quantiles
from clustersim.uncertainty.propagate import Inputs, draw
from clustersim.uncertainty.spec import parse_uncertain

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--set", "compare=[]", "--set", "sweep.workers=[68, 272]", "-j", "1"]


def test_quantiles_of_a_uniform_through_a_monotone_function_are_analytic():
    # x ~ U(1, 2), y = x^2 (increasing): the q-quantile of y is (1 + q)^2
    inputs = Inputs(parse_uncertain({"workload.x": {"uniform": [1, 2]}}))
    ys = [s.fields["workload.x"] ** 2 for s in draw(inputs, 1024, 0)]
    b = quantiles(ys)
    # tolerance: the linear-interpolation estimator sits ~q/N below the quantile (~1e-3)
    assert (b.low, b.median, b.high) == pytest.approx((1.05 ** 2, 1.5 ** 2, 1.95 ** 2),
                                                      rel=1.5e-3)


def test_quantiles_of_a_normal_through_exp_are_lognormal():
    inputs = Inputs(parse_uncertain({"workload.x": {"normal": [0, 1]}}))
    ys = [np.exp(s.fields["workload.x"]) for s in draw(inputs, 2048, 3)]
    b = quantiles(ys)
    assert (b.low, b.median, b.high) == pytest.approx(
        (np.exp(-1.6448536), 1.0, np.exp(1.6448536)), rel=0.01)


def test_never_counts_as_infinite_not_nan():
    b = quantiles([1.0, 2.0, None, None] * 5)
    assert b.high == float("inf") and b.never == 10 and np.isfinite(b.low)


def test_predict_without_uncertainty_ignores_the_section(tmp_path, capsys):
    text = (ROOT / "scenarios" / "knl_4253.yaml").read_text()
    start = text.index("uncertain:")
    end = text.index("\nrun:")
    plain = tmp_path / "knl_plain.yaml"
    plain.write_text(text[:start] + text[end + 1:])
    assert "uncertain" not in plain.read_text()
    # the section adds only the headline's one-at-a-time band (tests/test_swing.py) under
    # the tables, which --no-band leaves out
    assert main(["predict", str(ROOT / "scenarios" / "knl_4253.yaml"), *SMALL,
                 "--no-band"]) == 0
    a = capsys.readouterr().out
    assert main(["predict", str(plain), *SMALL]) == 0
    b = capsys.readouterr().out
    assert a.replace(str(ROOT / "scenarios" / "knl_4253.yaml"), "") == b.replace(str(plain), "")
    assert "input uncertainty" not in a and "each uncertain input alone" not in b


def test_predict_uncertainty_is_deterministic_and_says_which_interval(tmp_path, capsys):
    args = ["predict", "knl_4253", "--uncertainty", "4", *SMALL]
    assert main([*args, "--json", str(tmp_path / "a.json"), "--uncertainty-plot",
                 str(tmp_path / "band.html")]) == 0
    out = capsys.readouterr().out
    # knl_4253 runs one seed: its tables have no jitter interval to tell apart (the note
    # said they had); with run.repeats they have, and the note says which is which
    assert "Sync EASGD — input uncertainty" in out and "seed-to-seed jitter" not in out
    assert main([*args, "--set", "run.repeats=2"]) == 0
    assert "seed-to-seed jitter" in capsys.readouterr().out
    args[args.index("-j") + 1] = "2"
    assert main([*args, "--json", str(tmp_path / "b.json"), "-q"]) == 0
    a = (tmp_path / "a.json").read_bytes()
    assert a == (tmp_path / "b.json").read_bytes()
    unc = json.loads(a)["uncertainty"]
    assert unc["samples"] == 4 and len(unc["inputs"]) == 6
    eff = unc["algorithms"]["Sync EASGD"][-1]["efficiency"]
    assert 0 < eff["p05"] <= eff["median"] <= eff["p95"] <= 1.0 + 1e-9
    # the smallest point is the reference of scaling efficiency: 100% in every sample
    first = unc["algorithms"]["Sync EASGD"][0]["efficiency"]
    assert first["p05"] == first["p95"] == pytest.approx(1.0)
    assert (tmp_path / "band.html").stat().st_size > 1000


def test_predict_uncertainty_errors(capsys):
    assert main(["predict", "knl_4253", "--uncertainty", "1", *SMALL]) == 2
    assert main(["predict", "allreduce_crossbar16", "--uncertainty", "4"]) == 2
    assert main(["predict", "theano_mpi_alexnet", "--uncertainty-plot", "x.html"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--uncertainty" in err


def test_calibration_covariance_round_trips_and_matches_the_fit(tmp_path):
    from clustersim.calibration.covariance import dump_covariance, with_values
    from clustersim.calibration.pipeline import calibrate_rows, make_target
    from clustersim.calibration.profile import dump_profile, load_profile
    from clustersim.platform.describe import load_platform

    rows = json.loads((ROOT / "tests" / "data" / "calibration_rows_2rank_vm.json").read_text())
    plat = load_platform(ROOT / "topologies" / "localhost.yaml")
    cal = calibrate_rows(rows, make_target(plat, 2))
    blocks = {b.source: b for b in cal.profile.covariance}
    assert {"gemm+memory", "reduce", "pingpong", "collective"} <= set(blocks)
    g = blocks["gemm+memory"]
    f, cf = cal.compute.fit, cal.compute
    i = g.parameters.index("devices.localhost_core.efficiency_by_class.fc")
    # efficiency = rate / peak: its standard error is the rate's divided by the peak
    assert g.matrix[i][i] ** 0.5 == pytest.approx(f.error("rate_fc") / cf.peak, rel=1e-9)
    # (conv is fitted on its limit here, efficiency 1: held there, not in the covariance)
    assert "devices.localhost_core.efficiency_by_class.conv" not in g.parameters
    j = g.parameters.index("devices.localhost_core.efficiency_by_class.fc_wgrad")
    ci = f.names.index("rate_fc_wgrad")
    fi = f.names.index("rate_fc")
    assert g.matrix[i][j] == pytest.approx(f.cov[fi, ci] / cf.peak ** 2, rel=1e-9)
    path = tmp_path / "p.yaml"
    path.write_text(dump_profile(cal.profile))
    again = load_profile(path)
    assert [b.parameters for b in again.covariance] == [b.parameters
                                                        for b in cal.profile.covariance]
    assert dump_covariance(again.covariance) == dump_covariance(cal.profile.covariance)
    moved = with_values(again, {"links.localhost_shm.latency": 1e-6})
    assert moved.links["localhost_shm"]["latency"] == 1e-6
    assert again.links["localhost_shm"]["latency"] != 1e-6


def test_a_bad_covariance_names_its_field(tmp_path, capsys):
    prof = tmp_path / "p.yaml"
    prof.write_text("format: clustersim-calibration/1\n"
                    "links: {localhost_shm: {bandwidth: 4 GB/s, latency: 1 us}}\n"
                    "covariance:\n"
                    "  - parameters: [links.localhost_shm.latency, links.nope.bandwidth]\n"
                    "    value: [1.0e-6, 4.0e9]\n"
                    "    matrix: [[1.0e-14, 0], [0, 1.0e16]]\n")
    assert main(["predict", "theano_mpi_alexnet", "--calibration", str(prof), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{prof}:4" in err and "covariance[0].parameters[1]" in err


_SHM = ("format: clustersim-calibration/1\n"
        "devices: {localhost_core: {efficiency: 0.5, mem_efficiency: 0.6}}\n"
        "links: {localhost_shm: {bandwidth: 4 GB/s, latency: 1 us}}\n")


@pytest.mark.parametrize("block, where, says", [
    # a value apart from the profile's own number: the band was centred on it, silently
    ("[links.localhost_shm.bandwidth]\n    value: [-5.0]\n    matrix: [[1.0e16]]",
     "covariance[0].value[0]", "-5 is not the profile's links.localhost_shm.bandwidth (4e+09)"),
    # a correlation of 48 between mixed-scale entries: passed a check scaled by the largest
    ("[devices.localhost_core.efficiency, devices.localhost_core.mem_efficiency, "
     "links.localhost_shm.bandwidth]\n    value: [0.5, 0.6, 4.0e9]\n"
     "    matrix: [[0.01, 0.48, 0], [0.48, 0.01, 0], [0, 0, 1.0e29]]",
     "covariance[0].matrix", "largest |correlation| 48,"),
    ("[links.localhost_shm.latency]\n    value: [1.0e-6]\n    matrix: [[-1.0e-14]]",
     "covariance[0].matrix", "a variance on its diagonal is negative"),
    # one parameter in two blocks: both listed as inputs, the later draw silently won
    ("[links.localhost_shm.latency]\n    value: [1.0e-6]\n    matrix: [[1.0e-14]]\n"
     "  - parameters: [links.localhost_shm.latency]\n    value: [1.0e-6]\n"
     "    matrix: [[1.0e-16]]",
     "covariance[1].parameters[0]", "is already covariance[0].parameters[0]"),
])
def test_a_covariance_apart_from_its_profile_is_refused(tmp_path, capsys, block, where, says):
    prof = tmp_path / "p.yaml"
    prof.write_text(_SHM + "covariance:\n  - parameters: " + block + "\n")
    assert main(["predict", "real_bsp_mlp", "--calibration", str(prof), "-q",
                 "--uncertainty", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and where in err and says in err, err


def test_a_profile_that_applies_to_nothing_is_refused_and_q_is_quiet(tmp_path, capsys):
    """A profile of another machine (the H200 node's on the KNL platform) was "0 parameters
    moved" and the catalog's prediction, exit 0; one that applies is reported, but not
    under ``-q``."""
    h200 = ROOT / "tests" / "data" / "gpu_h200" / "h200_profile.yaml"
    assert main(["predict", "knl_unsaturated", "--calibration", str(h200), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {h200}: applies to nothing in platform 'cori_knl_cores'")
    assert "device 'h200_rank'" in err and "'knl_core'" in err
    # sensitivity samples the profile instead of applying it once: it ignored it, exit 0
    assert main(["sensitivity", "knl_4253", "--calibration", str(h200), "-n", "2",
                 "-q", "--json", str(tmp_path / "s.json")]) == 2
    assert "applies to nothing in platform 'cori_knl_cores'" in capsys.readouterr().err
    prof = tmp_path / "p.yaml"
    prof.write_text(_SHM)
    out = tmp_path / "o.json"
    assert main(["predict", "real_bsp_mlp", "--calibration", str(prof), "-q",
                 "--json", str(out)]) == 0
    assert capsys.readouterr().err == "" and out.exists()
    import hashlib  # the JSON names the profile its numbers hang on (it did not)

    assert json.loads(out.read_text())["calibration"] == {
        "file": str(prof), "sha256": hashlib.sha256(prof.read_bytes()).hexdigest()}
    assert main(["predict", "real_bsp_mlp", "--calibration", str(prof), "--json",
                 str(out)]) == 0
    assert "calibration profile" in capsys.readouterr().err


def test_a_badly_scaled_covariance_block_is_sampled_with_its_moments():
    # an efficiency (sd 0.05) and a rate in B/s (sd 1e9), correlation 0.6: eigh of the raw
    # matrix loses the efficiency in round-off; the samples must keep both and their coupling
    from clustersim.calibration.covariance import CovBlock

    sd = np.array([0.05, 1e9])
    corr = np.array([[1.0, 0.6], [0.6, 1.0]])
    cov = corr * np.outer(sd, sd)
    blk = CovBlock(("devices.d.efficiency_by_class.fc", "devices.d.pack_rate"), (0.5, 5e9),
                   tuple(map(tuple, cov)), "gemm")
    xs = np.array([[s.profile[p] for p in blk.parameters]
                   for s in draw(Inputs(blocks=(blk,)), 4096, 0)])
    assert xs.mean(axis=0) == pytest.approx([0.5, 5e9], rel=1e-3)
    assert xs.std(axis=0) == pytest.approx(sd, rel=0.02)
    assert np.corrcoef(xs.T)[0, 1] == pytest.approx(0.6, abs=0.02)


def test_covariance_blocks_of_devices_not_on_the_platform_are_not_inputs(capsys):
    from types import SimpleNamespace

    from clustersim.calibration.covariance import CovBlock
    from clustersim.uncertainty.propagate import collect_inputs

    spec = SimpleNamespace(name="gpu")
    plat = SimpleNamespace(num_devices=2, spec=lambda d: spec, link_kind=["nvlink"])
    gone = CovBlock(("devices.other.overhead", "links.ib.latency"), (1e-6, 2e-6),
                    ((1e-14, 0.0), (0.0, 1e-14)), "elsewhere")
    part = CovBlock(("devices.gpu.efficiency_by_class.conv", "devices.other.pack_rate",
                     "network.step_overhead"), (0.5, 1e9, 1e-6),
                    ((1e-4, 1e2, 0.0), (1e2, 1e16, 0.0), (0.0, 0.0, 1e-14)), "gemm")
    prof = SimpleNamespace(covariance=[gone, part], devices={"gpu": {}, "other": {}},
                           links={"ib": {}})
    scn = SimpleNamespace(uncertain=(), platform=plat, file=None)
    inputs = collect_inputs(scn, prof)
    assert inputs.names == ["calibration:devices.gpu.efficiency_by_class.conv",
                            "calibration:network.step_overhead"]
    assert inputs.blocks[0].matrix == ((1e-4, 0.0), (0.0, 1e-14))
    # the h200 profile on the K80 node: nothing of it applies, so nothing is uncertain there
    from clustersim.calibration.profile import load_profile
    from clustersim.scenario.schema import load_scenario

    alex = load_scenario(ROOT / "scenarios" / "theano_mpi_alexnet.yaml")
    h200 = load_profile(ROOT / "tests" / "data" / "gpu_h200" / "h200_profile.yaml")
    assert h200.covariance and collect_inputs(alex, h200).dims == len(alex.uncertain)


def test_profile_draws_below_a_rates_floor_are_redrawn_beyond_a_physical_limit_clipped():
    from clustersim.calibration.covariance import CovBlock

    # a rate whose sd is 17 times its value: half its Gaussian is below 1 % of the fit
    blk = CovBlock(("devices.d.pack_rate", "devices.d.efficiency_by_class.fc"), (1e9, 0.9),
                   ((17e9 ** 2, 0.0), (0.0, 0.2 ** 2)), "gemm")
    xs = np.array([[s.profile[p] for p in blk.parameters]
                   for s in draw(Inputs(blocks=(blk,)), 512, 0)])
    assert np.all(xs[:, 0] >= 1e7) and np.all((xs[:, 1] > 0) & (xs[:, 1] <= 1.0))
    assert np.sum(xs[:, 0] == 1e7) == 0  # redrawn, not piled on the floor
    # the efficiency's Gaussian above 1 (the peak) is projected onto it: P(N(0.9, 0.2) > 1)
    # = 30.9 %, +- 3 binomial sd at n = 512 (the two are independent here)
    assert abs(np.mean(xs[:, 1] == 1.0) - 0.3085) < 3 * (0.3085 * 0.6915 / 512) ** 0.5
    again = np.array([[s.profile[p] for p in blk.parameters]
                      for s in draw(Inputs(blocks=(blk,)), 512, 0)])
    assert xs.tobytes() == again.tobytes()


def test_parameters_fitted_on_a_physical_limit_keep_their_fit_as_median():
    """An efficiency fitted at 1 and an overhead at 0 (what calibrate writes when a GEMM beats
    the nominal peak, or an overhead is too small to resolve): half their draws sit on the
    limit, so each median is the fitted value.  Truncated instead, every efficiency drawn
    was below 1 and every overhead above 0, and a calibrated CPU run's band (24.0 [22.5,
    26.2] ms) missed its own nominal prediction (21.6 ms)."""
    from clustersim.calibration.covariance import CovBlock

    blk = CovBlock(("devices.d.efficiency_by_class.fc", "devices.d.overhead",
                    "devices.d.efficiency_by_class.conv"), (1.0, 2.5e-20, 0.7),
                   ((0.22 ** 2, 1e-6, 0.0), (1e-6, 1.3e-4 ** 2, 0.0), (0.0, 0.0, 0.05 ** 2)),
                   "gemm")
    xs = np.array([[s.profile[p] for p in blk.parameters]
                   for s in draw(Inputs(blocks=(blk,)), 1024, 0)])
    # (the median of 1,024 is the mean of the two middle draws: one may be just off the limit)
    assert np.median(xs[:, 0]) > 1.0 - 0.01 * 0.22 and np.median(xs[:, 1]) < 0.01 * 1.3e-4
    for col in (0, 1):  # half on the limit, +- 3 binomial sd
        assert abs(np.mean(xs[:, col] == blk.value[col] * (col == 0)) - 0.5) < 3 * 0.5 / 32
    assert np.all(xs[:, 1] >= 0.0) and np.all(xs[:, 0] <= 1.0)
    assert np.median(xs[:, 2]) == pytest.approx(0.7, abs=0.01)


def test_a_misspelled_field_is_not_blamed_on_the_distribution():
    from clustersim.errors import InputError
    from clustersim.scenario.yamlio import load_yaml
    from clustersim.uncertainty.propagate import Sample, sample_scenario

    path = str(ROOT / "scenarios" / "theano_mpi_alexnet.yaml")
    raw = load_yaml(path, what="scenario file")
    with pytest.raises(InputError) as e:
        sample_scenario(raw, path, Sample({"workload.jiter": 0.01}))
    assert "did you mean 'jitter'" in str(e.value) and "narrow" not in str(e.value)
    with pytest.raises(InputError) as e:
        sample_scenario(raw, path, Sample({"workload.jitter": 2.0}))
    assert "narrow the distribution" in str(e.value)


def test_uncertainty_json_reports_a_choice_of_names_as_names(tmp_path):
    args = ["predict", "knl_4253", "--uncertainty", "2", "-q", *SMALL,
            "--json", str(tmp_path / "a.json")]
    assert main(args) == 0
    inputs = json.loads((tmp_path / "a.json").read_bytes())["uncertainty"]["inputs"]
    kinds = {i["field"]: i["kind"] for i in inputs}
    assert kinds["algorithm.allreduce"] == "name" and kinds["algorithm.tau"] == "int"


def test_a_communication_bound_band_carries_the_collective_fits_uncertainty(tmp_path, capsys):
    """The refitted H200 profile (tests/data/gpu_h200_pinned): the collective efficiency of
    the segment its 48 MiB all-reduce falls in is 0.223 with a 95 % interval of +-0.083, and
    the run is ~88 % communication.  Its covariance now carries the collective efficiencies
    the fit determined (not the one stuck at the fit's bound of 100) and each segment's
    lone-message overhead and efficiency that the ping-pong determined, and the band is that
    wide; it was +-2 % (only the step overhead was in it)."""
    from clustersim.calibration.profile import load_profile

    prof = tmp_path / "h200.yaml"
    data = ROOT / "tests" / "data" / "gpu_h200_pinned"
    assert main(["calibrate", str(data / "bench"), "--platform",
                 str(ROOT / "topologies" / "h200_shared.yaml"), "--out", str(prof), "-q"]) == 0
    p = load_profile(prof)
    blocks = {b.source: b for b in p.covariance}
    coll = blocks["collective"]
    name = "network.protocols.gpu_hoststaged.2.collective_efficiency"
    k = coll.parameters.index(name)
    fit = next(f for f in p.fit if f["parameter"] == "network.protocol.gpu_hoststaged.2."
                                                      "collective_efficiency")
    half = (fit["ci95"][1] - fit["ci95"][0]) / 2
    # the profile's 95 % interval is the fit's t-interval: ~2 sd (t at 8 points and 3
    # parameters is 2.57; 1.96 would be the normal's)
    assert coll.matrix[k][k] ** 0.5 * 1.96 < half < coll.matrix[k][k] ** 0.5 * 2.6
    assert all(p.protocols["gpu_hoststaged"][int(n.split(".")[3])].collective_efficiency < 100
               for n in coll.parameters[1:])  # the one at the fit's bound is not sampled
    sampled = {n for b in p.covariance for n in b.parameters}
    assert "network.protocols.gpu_hoststaged.0.overhead" in sampled
    # segment 2's lone-message efficiency: its beta's interval reaches 0, so its own
    # reaches infinity - undetermined, named in the report, not sampled
    assert "network.protocols.gpu_hoststaged.2.efficiency" not in sampled
    capsys.readouterr()
    out = tmp_path / "u.json"
    assert main(["predict", "real_gpu_bsp_mlp", "--calibration", str(prof), "--uncertainty",
                 "64", "-q", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    it = doc["uncertainty"]["algorithms"]["bsp"][0]["iteration_time"]
    nominal = doc["algorithms"]["bsp"][0]["iteration_time"]
    assert it["p95"] / it["p05"] > 1.3  # was 1.04
    assert it["p05"] < nominal < it["p95"]


def test_a_collective_efficiency_follows_its_sampled_lone_message_efficiency():
    """``bandwidth x efficiency x collective_efficiency`` of a segment keeps the collective
    fit's draw: the collective efficiencies were fitted given the ping-pong values."""
    from clustersim.calibration.covariance import CovBlock

    seg = "network.protocols.c.2."
    pp = CovBlock((seg + "efficiency",), (0.9,), ((0.4,),), "pingpong")
    bw = CovBlock(("links.c.bandwidth",), (5e9,), ((1e16,),), "pingpong")
    co = CovBlock((seg + "collective_efficiency",), (0.22,), ((0.0015,),), "collective")
    spread = [s.profile[seg + "collective_efficiency"]
              for s in draw(Inputs(blocks=(pp, bw, co)), 64, 0)]
    assert min(spread) < 0.2 < 0.24 < max(spread)  # the collective fit's own spread stays
    # with the collective block held at its fit (variance 0), the product is the fitted one
    fixed = CovBlock((seg + "collective_efficiency",), (0.22,), ((0.0,),), "collective")
    for s in draw(Inputs(blocks=(pp, bw, fixed)), 64, 0):
        v = s.profile
        product = v["links.c.bandwidth"] * v[seg + "efficiency"] * v[seg + "collective_efficiency"]
        assert product == pytest.approx(5e9 * 0.9 * 0.22, rel=1e-12)


def test_a_held_collective_efficiency_follows_the_sampled_bandwidth_too():
    """QA 17 LOW-2: a segment's collective efficiency left out of the covariance (on the
    fit's bound, or undetermined) is still a collective fit given the ping-pong's bandwidth,
    so a bandwidth draw divides it as it divides a sampled one - the product stays the
    fitted one (it had moved as 1/bandwidth: a +-3 % band on an H200 step that the
    collectives had measured).  A segment with no collective fit (1.0) is not touched."""
    from clustersim.calibration.covariance import CovBlock
    from clustersim.calibration.profile import Profile, Segment

    prof = Profile()
    prof.protocols["c"] = (Segment(0, 1e-6, 0.5), Segment(8192, 1e-6, 0.7, 100.0),
                           Segment(131072, 0.0, 0.8, 0.22))
    bw = CovBlock(("links.c.bandwidth",), (5e9,), ((1e16,),), "pingpong")
    samples = draw(Inputs(blocks=(bw,), profile=prof), 64, 0)
    assert len({s.profile["links.c.bandwidth"] for s in samples}) == 64
    for s in samples:
        v = s.profile
        bw = v["links.c.bandwidth"]
        assert bw * v["network.protocols.c.2.collective_efficiency"] == \
            pytest.approx(5e9 * 0.22, rel=1e-12)
        # one on the fitter's bound stays within its range [0.01, 100] (review 2026-11-29)
        assert v["network.protocols.c.1.collective_efficiency"] == \
            pytest.approx(min(100.0, 5e9 * 100.0 / bw), rel=1e-12)
        assert "network.protocols.c.0.collective_efficiency" not in v


def test_undetermined_fits_are_named_by_one_rule():
    from clustersim.calibration.fitlines import FitLine, covariance_name, undetermined

    def line(name, v, lo, hi, unit="1"):
        return FitLine(name, v, lo, hi, unit, 8, 0.01, "collective")

    lines = [line("network.step_overhead", 0.0, 0.0, 25e-6, "s"),       # on its limit, 0
             line("network.protocol.c.1.overhead", 3e-6, 2e-6, 4e-6, "s"),
             line("network.protocol.c.0.collective_efficiency", 100.0, -1e6, 1e6),
             line("network.protocol.c.2.collective_efficiency", 0.22, 0.14, 0.31),
             line("network.protocol.c.2.efficiency", 0.9, 0.09, float("inf")),
             line("network.protocol.c.3.efficiency", 1.0, 0.9, 1.1),     # may exceed 1
             line("device.d.pack_rate", 8e13, 2e12, float("inf"), "B/s"),
             line("device.d.mem_efficiency", 1.0, 0.8, 1.2),             # on its limit, 1
             line("compute.efficiency.fc", 0.4, 0.0, 1.8)]               # half-width 0.9 > 0.4
    assert [ln.parameter for ln in undetermined(lines)] == [
        "network.step_overhead", "network.protocol.c.0.collective_efficiency",
        "network.protocol.c.2.efficiency", "device.d.pack_rate", "device.d.mem_efficiency",
        "compute.efficiency.fc"]
    assert covariance_name("compute.efficiency.fc", "d") == "devices.d.efficiency_by_class.fc"
    assert covariance_name("device.d.reduce_bw", "d") == "devices.d.reduce_rate"
    assert covariance_name("network.protocol.c.2.efficiency", "d") == \
        "network.protocols.c.2.efficiency"
    assert covariance_name("link.c.bandwidth", "d") == "links.c.bandwidth"


@pytest.mark.parametrize("scenario", ["real_bsp_mlp", "real_async_ps"])
def test_a_band_from_a_profile_with_fits_on_their_limits_stays_on_its_nominal(tmp_path,
                                                                              scenario):
    """The 2-rank CPU calibration fits conv and memory efficiency at 1 and the kernel
    overhead at 0: held at those limits, not sampled (each draw could only slow the step:
    real_async_ps's band lay wholly above its nominal, 12.12 [11.54, 13.14] ms against
    11.47).  The band now straddles the nominal, its median within 2 %."""
    from clustersim.calibration.pipeline import calibrate_rows, make_target
    from clustersim.calibration.profile import dump_profile
    from clustersim.platform.describe import load_platform

    rows = json.loads((ROOT / "tests" / "data" / "calibration_rows_2rank_vm.json").read_text())
    cal = calibrate_rows(rows, make_target(load_platform(ROOT / "topologies" / "localhost.yaml"),
                                           2))
    prof = tmp_path / "p.yaml"
    prof.write_text(dump_profile(cal.profile))
    out = tmp_path / "u.json"
    assert main(["predict", scenario, "--calibration", str(prof), "--uncertainty", "32",
                 "-q", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    alg = next(iter(doc["uncertainty"]["algorithms"]))
    band = doc["uncertainty"]["algorithms"][alg][-1]["iteration_time"]
    nominal = doc["algorithms"][alg][-1]["iteration_time"]
    assert band["p05"] < nominal < band["p95"]
    assert band["median"] == pytest.approx(nominal, rel=0.02)


def test_an_algorithm_input_moves_every_algorithm_that_takes_it(tmp_path):
    """algorithm.tau reached the main algorithm only: knl_4253's master-based methods kept
    tau 1 under a band drawn over tau 1..10.  Now every case that takes the parameter moves
    (as a sweep axis does); one that does not (BSP) is left; a parameter no algorithm of the
    run takes is refused with the main algorithm's parameters."""
    from clustersim.errors import InputError
    from clustersim.uncertainty.predict import load_raw
    from clustersim.uncertainty.propagate import Sample, sample_scenario

    path = str(ROOT / "scenarios" / "knl_4253.yaml")
    raw = load_raw(path, ["compare=[{name: async_sgd, label: a}, {name: bsp, label: b}]"])
    scn = sample_scenario(raw, path, Sample({"algorithm.tau": 7}))
    assert scn.algorithm.params["tau"] == 7
    assert [c.params.get("tau") for c in scn.compare] == [7, None]
    # a run reduced to an algorithm that does not take it (sensitivity --algorithm b): the
    # input does not move it (its index is 0), not "no other algorithm takes tau"
    raw = load_raw(path, ["algorithm={name: bsp, label: b}", "compare=[]"])
    assert "tau" not in sample_scenario(raw, path, Sample({"algorithm.tau": 7})).algorithm.params
    # the scenario as written: a parameter no algorithm takes is refused when read
    text = (ROOT / "scenarios" / "knl_4253.yaml").read_text()
    start, end = text.index("algorithm: {name: sync_easgd"), text.index("sweep:")
    f = tmp_path / "b.yaml"
    f.write_text(text[:start] + "algorithm: {name: bsp, label: b}\n" + text[end:])
    with pytest.raises(InputError) as e:
        load_scenario(f)
    assert "uncertain.algorithm.tau: unknown parameter 'tau': no algorithm of this run " \
           "takes it (b's parameters: strategy" in str(e.value)
    assert str(f) in str(e.value)


def test_a_parameter_only_a_compare_entry_takes_and_bare_names():
    """algorithm.every with a main that does not take it but a compare entry that does was
    refused when read (the check set it on the main algorithm only); algorithms written as
    bare names (algorithm: sync_easgd, compare: [async_sgd]) could not take a parameter."""
    from clustersim.uncertainty.predict import load_raw
    from clustersim.uncertainty.propagate import Sample, sample_scenario

    path = str(ROOT / "scenarios" / "knl_4253.yaml")
    sets = ["compare=[{name: bsp, exchange: weights, label: w}]",
            "uncertain={algorithm.every: {range: [1, 4], kind: int}}"]
    scn = load_scenario(path, sets)  # read, checked: no refusal
    raw = load_raw(path, sets)
    s = sample_scenario(raw, path, Sample({"algorithm.every": 3}))
    assert s.compare[0].params["every"] == 3 and "every" not in s.algorithm.params
    assert scn.compare[0].params["every"] == 1
    sets = ["algorithm=sync_easgd", "compare=[async_sgd, bsp]",
            "uncertain={algorithm.tau: {range: [1, 4], kind: int}}"]
    load_scenario(path, sets)
    s = sample_scenario(load_raw(path, sets), path, Sample({"algorithm.tau": 4}))
    assert s.algorithm.params["tau"] == 4 and s.compare[0].params["tau"] == 4
    assert "tau" not in s.compare[1].params


def test_csv_carries_the_bands_beside_each_point(tmp_path):
    """--uncertainty with --csv: each point's row has <column>_median/_p05/_p95, equal to the
    JSON's bands (they were only in the JSON)."""
    import csv
    import json

    from clustersim.cli import main

    args = ["predict", "theano_mpi_alexnet", "--set", "compare=[]", "--set",
            "sweep.workers=[1, 8]", "--uncertainty", "2", "-q", "-j", "1"]
    assert main([*args, "--csv", str(tmp_path / "b.csv"), "--json", str(tmp_path / "b.json")]) == 0
    rows = list(csv.DictReader((tmp_path / "b.csv").open()))
    doc = json.loads((tmp_path / "b.json").read_text())["uncertainty"]["algorithms"]["nccl32"]
    assert [int(r["workers"]) for r in rows] == [b["workers"] for b in doc] == [1, 8]
    for r, b in zip(rows, doc):
        for q in ("median", "p05", "p95"):
            assert float(r[f"efficiency_fraction_{q}"]) == b["efficiency"][q]
            assert float(r[f"iteration_time_s_{q}"]) == b["iteration_time"][q]
        assert float(r["efficiency_fraction_p05"]) <= float(r["efficiency_fraction_p95"])


def test_one_worker_count_has_no_efficiency_band(tmp_path):
    """A sweep of one worker count is 100 % efficient and 1x by definition: its band read
    "100.0% [100.0%, 100.0%]" (pushing time to target out of an 80-column table) and the
    band chart drew a flat efficiency panel."""
    import json

    from clustersim.cli import main

    args = ["predict", "theano_mpi_alexnet", "--set", "compare=[]", "--set",
            "sweep.workers=[8]", "--uncertainty", "2", "-q", "-j", "1", "--no-band",
            "--json", str(tmp_path / "u.json"), "--uncertainty-plot", str(tmp_path / "u.html")]
    assert main(args) == 0
    rows = json.loads((tmp_path / "u.json").read_text())["uncertainty"]["algorithms"]
    (row,) = rows["nccl32"]
    assert "efficiency" not in row and "speedup" not in row and "throughput" in row
    page = (tmp_path / "u.html").read_text()
    assert page.count("Plotly.newPlot") == 1 and "scaling efficiency" not in page
