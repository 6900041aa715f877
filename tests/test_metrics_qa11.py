"""Derived metrics that QA pass 11 found inconsistent with the figures beside them.

* F1: a server's update rate and utilisation were divided by the whole run (warm-up, ramp,
  a heterogeneous run's tail), while the throughput beside them is over the measured steps:
  ``hetero_hybrid``'s all-async parameter server printed 10.1 updates/s beside 1,488
  samples/s of one update per 64 samples.
* F9: ``comm_total`` summed its operations' spans although they overlap (buckets queued on
  one communicator), and reached 183 % of the iteration on a four-bucket model.
"""

from __future__ import annotations

import copy

import pytest

from clustersim.scenario.schema import load_scenario, parse_scenario
from clustersim.sim.inflight import add_span
from clustersim.sim.sweep import simulate_point

BASE = {
    "name": "qa11", "about": "closed forms",
    "platform": {"topology": "star", "hosts": 8, "device": "v100",
                 "link": {"bandwidth": "10 Gb/s", "latency": "1 us"}},
    "network": {"overhead": "0 us", "efficiency": 1.0},
    "workload": {"model": {"name": "tot", "params": 25_000_000, "fwd_flops": 4.0e9,
                           "kind": "fc", "split": 4},
                 "batch_per_worker": 32, "bucket": "25 MB", "optimizer": "sgd"},
    "algorithm": {"name": "bsp", "strategy": "ring"},
    "sweep": {"workers": [8]},
    "run": {"iterations": 5, "warmup": 1, "seed": 0},
}


def _ps() -> dict:
    """A link-bound parameter server: 40 hosts on 10 Gb/s, 2.5 M parameters (8 ms a push
    or an answer), batch 32, Async SGD with tau 1."""
    raw = copy.deepcopy(BASE)
    raw["platform"]["hosts"] = 40
    raw["workload"] = {"model": {"name": "tot", "params": 2_500_000, "fwd_flops": 4.0e8,
                                 "kind": "fc", "split": 1},
                       "batch_per_worker": 32, "optimizer": "sgd"}
    raw["algorithm"] = {"name": "async_sgd", "tau": 1}
    return raw


def _point(raw: dict, workers: int):
    scn = parse_scenario(raw)
    return simulate_point(scn, scn.algorithm, workers, 0)[0]


def test_overlapped_buckets_count_the_time_in_flight_once() -> None:
    """Four 25 MB buckets, each all-reduce (A = 35.1 ms) longer than a layer's backward
    (b = 8.2 ms): they queue, so communication is in flight from the first bucket's
    issue to the last one's end, 4 A - what the same buckets take exposed, one after the
    other, without overlap.  The sum of their spans was 10 A - 6 b (183 %)."""
    serial = _point(BASE, 8)
    raw = copy.deepcopy(BASE)
    raw["algorithm"]["overlap"] = True
    over = _point(raw, 8)
    four_a = serial.comm  # exposed: the four all-reduces back to back after the backward
    assert serial.comm_total == pytest.approx(four_a, rel=1e-9)
    assert over.comm_total == pytest.approx(four_a, rel=1e-9)
    assert 0.8 < over.comm_share_total < 0.9  # 84.9 %: the hand timeline of QA 11
    # the iteration: forward, the first layer's backward, then the four in a row, update
    assert over.iteration_time > over.comm_total


def test_add_span_is_the_union_of_spans_added_in_order_of_their_ends() -> None:
    blocks: list[list[float]] = []
    assert add_span(blocks, 2.0, 5.0) == 3.0
    assert add_span(blocks, 0.0, 10.0) == 7.0  # covers [2, 5] already counted
    assert blocks == [[0.0, 10.0]]
    assert add_span(blocks, 12.0, 13.0) == 1.0
    assert add_span(blocks, 9.0, 14.0) == pytest.approx(3.0)  # [10, 12] and [13, 14]
    assert blocks == [[0.0, 14.0]]
    assert add_span(blocks, 14.0, 14.0) == 0.0
    assert add_span(blocks, 15.0, 16.0) == 1.0 and len(blocks) == 2


def test_the_update_rate_agrees_with_the_throughput_of_the_measured_steps() -> None:
    """Async SGD, tau 1: one update per worker step of 32 samples, so updates/s =
    samples/s / 32, at any worker count (it was 10 % low at 32 workers: the first step's
    start and the last workers' tail were in the divisor)."""
    raw = _ps()
    for workers in (4, 32):
        m = _point(raw, workers)
        assert m.update_rate == pytest.approx(m.throughput / 32, rel=1e-9)
        assert 0 < m.server_utilization <= 1.0


def test_heterogeneous_servers_are_measured_over_the_measured_steps() -> None:
    """``hetero_hybrid`` (four GPU types): the all-async server applies one update per
    worker step of 64 samples, the hybrid global server one per group step of 4 x 64."""
    scn = load_scenario("scenarios/hetero_hybrid.yaml")
    cases = {a.title: a for a in scn.algorithms}
    ps = simulate_point(scn, cases["all-async ps"], 16, 0)[0]
    assert ps.update_rate == pytest.approx(ps.throughput / 64, rel=1e-9)  # 23.3, not 10.1
    hyb = simulate_point(scn, cases["hybrid"], 16, 0)[0]
    assert hyb.update_rate == pytest.approx(hyb.throughput / 256, rel=0.02)  # 10.4, not 2.9


def test_a_link_bound_master_is_said_to_creep_past_its_knee() -> None:
    """QA 11 F2: a parameter server whose link is the bottleneck (8 ms per push or answer
    on 10 Gb/s, a 21 ms step): the knee is printed at ~3 workers, but the simulated
    throughput goes on from 1,736 samples/s at 2 workers to 2,618 at 32, 65 % of the 4,000
    samples/s of batch / service.  The line said "stops growing"; it now says what the
    points show, with the knee where it was."""
    from clustersim.explore.saturation import master_knee
    from clustersim.report.training import saturation_line

    raw = _ps()
    pts = [_point(raw, w) for w in (1, 32)]
    w_star, service, step, _ = master_knee(pts[0])
    assert w_star == pytest.approx(2.6, abs=0.2) and service == pytest.approx(0.008, rel=1e-3)
    ceiling = 32 * w_star / step
    assert ceiling == pytest.approx(32 / service, rel=0.01)
    share = pts[1].throughput / ceiling
    assert 0.6 < share < 0.7
    line = saturation_line(pts)
    assert line.startswith("master saturates at ~3 workers: service 8 ms per exchange")
    assert "(measured at 1 worker);" in line
    assert line.endswith(
        f"past it the simulated throughput still creeps up: {pts[1].throughput:,.0f} "
        f"samples/s at 32 workers, {share:.0%} of the {ceiling:,.0f} samples/s the master's "
        "time per step allows (it is not kept busy: a link-bound master's pushes and "
        "answers take turns on its link, docs/algorithms.md)")
    # a sweep that stops short of twice the knee says nothing about it
    assert "stops growing beyond ~3 workers" in saturation_line([pts[0], _point(raw, 4)])


def test_notes_for_a_moving_global_batch_and_a_mean_over_uneven_workers() -> None:
    """QA 11 F7: strong scaling rounds each worker's share, so 256 samples over 3, 5, 6, 7
    workers are 255, 255, 258, 259; F3: with four GPU types ``iter (ms)`` is the mean of the
    workers' own times, so 16 x 64 / iter is 1,711 samples/s against 2,660 done."""
    from clustersim.report.notes import mean_note, split_note

    raw = copy.deepcopy(BASE)
    raw["workload"] = {**raw["workload"], "global_batch": 256}
    del raw["workload"]["batch_per_worker"]
    raw["sweep"] = {"workers": [1, 2, 3, 4, 5, 6, 7, 8], "scaling": "strong"}
    assert split_note(parse_scenario(raw)) == (
        "strong scaling: a global batch of 256 does not split evenly over every worker count; "
        "each worker takes round(256 / workers) samples, so the global batch is 255 at 3, 255 "
        "at 5, 258 at 6, 259 at 7 (speedups compare those batches)")
    raw["sweep"]["workers"] = [1, 2, 4, 8]
    assert split_note(parse_scenario(raw)) is None
    assert split_note(parse_scenario(BASE)) is None  # weak scaling

    scn = load_scenario("scenarios/hetero_hybrid.yaml")
    hyb = next(a for a in scn.algorithms if a.title == "hybrid")
    p = simulate_point(scn, hyb, 16, 0)[0]
    naive = 16 * 64 / p.iteration_time
    assert naive < 0.7 * p.throughput
    assert mean_note([p]) == (
        "iter (ms) is the mean of the workers' own iteration times, and they differ; "
        f"samples/s is the sum of their rates: at 16 workers 16 x 64 / "
        f"{p.iteration_time * 1e3:,.1f} ms = {naive:,.0f} samples/s, against the "
        f"{p.throughput:,.0f} they do")
    assert mean_note([_point(BASE, 8)]) is None  # identical workers in lock step


def test_a_time_to_target_far_past_the_noise_scale_is_called_an_extrapolation() -> None:
    """QA 11 F8: bsp_100k's 19.4 h is 71,433 epochs at a 6.4 M batch, 320x the ResNet-50
    profile's largest noise scale.  One worker at a 300,000-sample batch shows the same:
    15x, past :data:`EXTRAPOLATION`; at 64 samples nothing is said."""
    from clustersim.report.notes import EXTRAPOLATION, extrapolation_note

    scn = load_scenario("scenarios/fabrics_resnet50.yaml")
    top = max(scn.workload.convergence.noise.breakpoint_values())
    assert top == 20_000
    big = parse_scenario({**_raw_of("scenarios/fabrics_resnet50.yaml"),
                          "sweep": {"workers": [1]}})
    import dataclasses

    big = dataclasses.replace(big, workload=dataclasses.replace(big.workload,
                                                                batch_per_worker=300_000))
    p = simulate_point(big, big.algorithm, 1, 0)[0]
    assert p.convergence_terms["batch_eff"] == 300_000 > EXTRAPOLATION * top
    note = extrapolation_note(big, [p])
    assert note.startswith("time to target at 1 workers extrapolates: a step's effective "
                           "batch of 300,000 is 15x the profile's largest gradient noise "
                           "scale (20,000)")
    small = dataclasses.replace(big, workload=dataclasses.replace(big.workload,
                                                                  batch_per_worker=64))
    assert extrapolation_note(small, [simulate_point(small, small.algorithm, 1, 0)[0]]) is None


def _raw_of(path: str) -> dict:
    import yaml

    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def test_the_mean_of_paces_note_is_said_once(capsys) -> None:
    """Every algorithm of hetero_hybrid but the synchronous one has uneven workers: the note
    comes once, under the first table, not under four."""
    from clustersim.cli import main

    assert main(["predict", "hetero_hybrid", "-j", "1", "--no-band", "--wide",
                 "--set", "run.iterations=8", "--set", "run.warmup=2"]) == 0
    out = capsys.readouterr().out
    assert out.count("iter (ms) is the mean of the workers' own iteration times") == 1
    assert "; the same holds in every table below whose workers run at different paces" in out
