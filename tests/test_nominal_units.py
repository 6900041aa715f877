"""The note that a nominal lies outside its own input-uncertainty band writes the nominal
as the prediction's table does, in its own unit (audit L8: knl_4253's table printed a time
to target of 8.15 h and the note under it "(0.34 d)", in the band's unit)."""

from __future__ import annotations

from clustersim.uncertainty.bands import Band
from clustersim.uncertainty.nominal import outside_notes
from clustersim.units import format_duration

HOUR, DAY = 3600.0, 86400.0


class _Point:
    throughput, efficiency, time_to_target = 13_959.0, 0.916, 8.15 * HOUR


def test_the_nominal_is_written_in_its_own_unit_and_the_band_in_its_own():
    bands = {"Sync EASGD": [(4253, {"time_to_target": Band(1.5 * DAY, 0.52 * DAY,
                                                           4.12 * DAY, 16)})]}
    (note,) = outside_notes(bands, {"Sync EASGD": [_Point()]}, None, ())
    assert note["text"].startswith(
        "note: Sync EASGD's nominal time to target (8.15 h) at 4,253 workers is outside its "
        "90% band [0.52 d, 4.12 d]: ")
    # the table's own cell (clustersim/report/training.py formats it so)
    assert format_duration(_Point.time_to_target) == "8.15 h"
    assert note["metrics"][0]["nominal"] == 8.15 * HOUR  # JSON: seconds, unchanged


def test_a_nominal_beside_its_band_by_less_than_the_band_digits_says_nothing():
    # 2.049 d and 2.05 d read alike in the band's unit: inside as people read the band,
    # even though the nominal alone prints as 2.05 d too
    bands = {"A": [(8, {"time_to_target": Band(2.1 * DAY, 2.0496 * DAY, 2.29 * DAY, 16)})]}

    class P:
        throughput, efficiency, time_to_target = 1.0, 0.5, 2.0494 * DAY

    assert outside_notes(bands, {"A": [P()]}, None, ()) == []


def test_a_variant_s_cause_is_read_from_the_variant(tmp_path):
    """A band titled "fast · ring" is the fast variant's: the cause is its own value of
    an input, not the base case's (the qualified title matched no algorithm, and the base
    case's main one was read)."""
    from clustersim.scenario.schema import load_scenario
    from clustersim.uncertainty.nominal import nominal_value

    path = tmp_path / "v.yaml"
    path.write_text(
        "label: slow\n"
        "platform: {topology: star, hosts: 8, device: v100, link: {bandwidth: 10 Gb/s, "
        "latency: 2 us}}\n"
        "network: {efficiency: 0.9}\n"
        "workload: {model: resnet50, batch_per_worker: 32}\n"
        "algorithm: {name: bsp, label: s}\n"
        "compare: [{name: sync_easgd, tau: 4, label: e}]\n"
        "variants: [{label: fast, set: {network.efficiency: 0.6, compare: "
        "[{name: sync_easgd, tau: 8, label: e}]}}]\n"
        "sweep: {workers: [2, 8]}\n")
    scn = load_scenario(str(path), [])
    assert nominal_value(scn, "network.efficiency", "fast · e") == 0.6
    assert nominal_value(scn, "network.efficiency", "slow · e") == 0.9
    assert nominal_value(scn, "algorithm.tau", "fast · e") == 8
    assert nominal_value(scn, "algorithm.tau", "slow · e") == 4
