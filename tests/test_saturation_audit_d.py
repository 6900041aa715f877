"""A prefetching EASGD master whose pushes take longer than its update (audit D, HIGH).

The Async EASGD master tells the next waiting worker "go" during its update, so that the
worker's push travels meanwhile.  Where a push takes longer than the update - each one
crosses the worker's own link, and the rendezvous lets one push travel at a time - the
master then waits out the rest of it, serving nobody else: service time.  That wait had been
counted as waiting for work, so a master saturated on a torus of 25 Gb/s links (one 102 MB
push every 32.7 ms, throughput flat from 8 to 60 workers) read 14.3 ms per update and 44 %
busy at 16 workers, and its table said it "still creeps up"."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.explore.saturation import creep, master_knee
from clustersim.scenario.schema import load_scenario
from clustersim.sim.sweep import simulate_point, sweep_cases

SCENARIO = """name: torus_ea
platform: {topology: torus, dims: [4, 4, 4], device: p100, link: {bandwidth: 25 Gb/s, latency: 1 us}}
workload: {model: resnet50, batch_per_worker: 32}
algorithm: {name: async_easgd, tau: 1, label: ea}
sweep: {workers: [4, 16, 40]}
run: {iterations: 8, warmup: 2}
"""


@pytest.fixture(scope="module")
def points(tmp_path_factory: pytest.TempPathFactory) -> list:
    path = Path(tmp_path_factory.mktemp("torus")) / "s.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    scn = load_scenario(path)
    (_title, s, alg), = sweep_cases(scn)
    return [simulate_point(s, alg, w, 0)[0] for w in (4, 16, 40)]


def test_a_saturated_master_is_busy_for_its_whole_push(points: list) -> None:
    push = 102_228_128 / (25e9 / 8)  # ResNet-50's gradients over one 25 Gb/s link: 32.7 ms
    for m in points[1:]:
        # flat: one exchange per push time, whatever the worker count
        assert abs(m.update_rate * push - 1.0) < 0.01, m.update_rate
        assert abs(m.service_time / push - 1.0) < 0.01, m.service_time
        assert m.server_utilization == pytest.approx(1.0)
        assert m.service_time * m.update_rate < 1.01  # never busier than time allows


def test_the_line_says_the_throughput_levels_off_lower(points: list) -> None:
    """The knee is the smallest point's (4 workers: no push is prefetched, the master's
    own links' demand, 16.4 ms); the largest point's master takes 32.7 ms per exchange,
    which the line now says instead of "still creeps up ... it is not kept busy"."""
    knee = master_knee(points[0])
    assert knee is not None
    text = creep(points, knee)
    assert text is not None and "levels off lower" in text, text
    assert "32.7 ms per exchange against 16.4 ms at 4 workers" in text, text
