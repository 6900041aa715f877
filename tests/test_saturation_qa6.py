"""QA 6a M3: the saturation summary's knee does not depend on which worker counts were swept.

Async EASGD on scenarios/knl_unsaturated.yaml (GoogLeNet on KNL cores, one master core): the
master's time per exchange is 18.2 ms and a worker's step without queueing ~1.98 s, so the
knee is ~109 workers.  Before, the summary took ``iteration_time / D`` at the group's
smallest point; a sweep starting past the knee (200 workers) has a 3.64 s step there, mostly
queueing at the master, and printed "saturates at ~200 workers" with no warning.  Now the
knee comes from the step without queueing (compute, the exchange under way, and of the wait
the master's own time on the worker's exchange), and a smallest point past the knee is named
as such.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from clustersim.explore.saturation import saturation_summary, saturation_text
from clustersim.report.training import saturation_line
from clustersim.scenario.schema import parse_scenario
from clustersim.sim.sweep import simulate_point

ROOT = Path(__file__).resolve().parents[1]
RAW = yaml.safe_load((ROOT / "scenarios" / "knl_unsaturated.yaml").read_text())
INPUTS = ["algorithm", "workers"]


@pytest.fixture(scope="module")
def points() -> dict[int, object]:
    """Async EASGD (tau 1) at 17, 68, 200 and 300 workers, three measured rounds."""
    raw = copy.deepcopy(RAW)
    raw["algorithm"], raw["compare"] = {"name": "async_easgd", "tau": 1, "label": "A"}, []
    raw["run"] = dict(raw["run"], iterations=4, warmup=1)
    scn = parse_scenario(raw)
    return {w: simulate_point(scn, scn.algorithm, w, 0)[0] for w in (17, 68, 200, 300)}


def _rows(points: dict, counts: tuple[int, ...]) -> list[dict]:
    return [{**points[w].to_dict(), "algorithm": "A"} for w in counts]


def test_the_knee_is_the_same_whichever_counts_were_swept(points) -> None:
    (_, below, s0, step0, w0), = saturation_summary(_rows(points, (17, 68)), INPUTS)
    (_, past, s1, step1, w1), = saturation_summary(_rows(points, (200, 300)), INPUTS)
    assert (w0, w1) == (17, 200)
    assert past == pytest.approx(below, rel=0.01)
    assert below == pytest.approx(109, abs=2)
    # the step without queueing is compute plus the exchange, not the 3.6 s measured at 200
    assert points[200].iteration_time > 3.5
    assert step1 == pytest.approx(step0, rel=0.01) and step1 < 2.0
    assert s1 == pytest.approx(s0, rel=0.01)


def test_the_knee_is_where_the_simulated_throughput_meets_its_ceiling(points) -> None:
    """The crossing of the two asymptotes the simulator draws: the per-worker rate at 17
    workers (linear below the knee) and the plateau at 300 (the master busy all the time)."""
    from clustersim.explore.saturation import master_knee

    crossing = points[300].throughput / (points[17].throughput / 17)
    assert crossing == pytest.approx(110, abs=3)
    for w in (17, 68, 200, 300):
        assert master_knee(points[w])[0] == pytest.approx(crossing, rel=0.03), w


def test_a_smallest_point_past_the_knee_is_named_so(points) -> None:
    (_, w_star, s, step, w0), = saturation_summary(_rows(points, (200, 300)), INPUTS)
    text = saturation_text(w_star, s, step, w0)
    assert text.startswith("master already saturated at the smallest point (200 workers); "
                           "the knee is below it, at ~109 workers or fewer: ")
    assert "a step of 1.98 s without queueing" in text
    # predict prints the same line for the same points (its smallest point first)
    assert saturation_line([points[200], points[300]]) == text


def test_below_the_knee_the_line_names_the_figure_it_stops_growing_beyond(points) -> None:
    (_, w_star, s, step, w0), = saturation_summary(_rows(points, (17, 68)), INPUTS)
    text = saturation_text(w_star, s, step, w0)
    assert text.startswith("master saturates at ~109 workers: service 18.")
    assert text.endswith(" ms per exchange x workers > a step of 1.98 s without queueing "
                         "(measured at 17 workers); throughput stops growing beyond ~109 "
                         "workers")
    assert saturation_line([points[17], points[68]]) == text


def test_the_queue_is_only_what_the_other_workers_can_put_ahead() -> None:
    """Hand-made rows, D = 1.0 / 5 = 0.2 s per worker step: one worker queues behind nobody,
    so all of its wait is its own exchange (W* = its step / D = 5); with three workers the
    wait beyond D (0.2 s) can be the others' and is left out (W* = 0.8 / 0.2 = 4)."""
    row = {"algorithm": "a", "iteration_time": 1.0, "compute": 0.5, "comm": 0.1,
           "wait": 0.4, "saturation_workers": 5.0, "service_time": 0.2}
    (_, w1, _, step1, _), = saturation_summary([{**row, "workers": 1}], INPUTS)
    (_, w3, _, step3, _), = saturation_summary([{**row, "workers": 3}], INPUTS)
    assert (w1, step1) == (pytest.approx(5.0), pytest.approx(1.0))
    assert (w3, step3) == (pytest.approx(4.0), pytest.approx(0.8))


def test_without_the_time_columns_a_saturated_point_names_no_figure() -> None:
    """A row that cannot separate the queueing (no compute/comm/wait) keeps the measured
    figure below the knee; at its own worker count or so, it says only that the knee is
    below the point."""
    row = {"algorithm": "a", "iteration_time": 3.64, "service_time": 0.0182}
    (_, w, s, step, w0), = saturation_summary(
        [{**row, "workers": 200, "saturation_workers": 199.9}], INPUTS)
    assert saturation_text(w, s, step, w0) == (
        "master already saturated at the smallest point (200 workers); the knee is below it")
    (_, w, _, _, _), = saturation_summary(
        [{**row, "workers": 17, "saturation_workers": 110.0}], INPUTS)
    assert w == 110.0
