"""``run.repeats``: every figure of a point is taken over the seeds, the servers' too (audit D:
the update rate, utilisation and staleness had been the first seed's beside a throughput
averaged over all of them)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clustersim.scenario.schema import load_scenario
from clustersim.sim.metrics import summarize
from clustersim.sim.sweep import simulate_point, sweep_cases

SCENARIO = """name: ps_seeds
platform: {topology: star, hosts: 8, device: v100, link: {bandwidth: 10 Gb/s, latency: 2 us}}
workload: {model: resnet50, batch_per_worker: 32, jitter: 0.2}
algorithm: {name: async_sgd}
sweep: {workers: [6]}
run: {iterations: 6, warmup: 1, repeats: 4}
"""


def test_the_servers_figures_are_the_seeds_mean(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    scn = load_scenario(path)
    (_title, s, alg), = sweep_cases(scn)
    runs = [simulate_point(s, alg, 6, seed)[0] for seed in range(4)]
    # the seeds differ (jitter), so the first seed's figure is not the mean
    rates = [m.update_rate for m in runs]
    assert len(set(rates)) == 4, rates
    got = summarize(runs)
    for key in ("throughput", "update_rate", "server_utilization", "staleness_mean",
                "staleness_p90", "service_time"):
        want = float(np.mean([getattr(m, key) for m in runs]))
        assert getattr(got, key) == pytest.approx(want, rel=1e-12), key
    assert got.staleness_max == max(m.staleness_max for m in runs)
    assert got.seeds == 4
