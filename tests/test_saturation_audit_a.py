"""The saturation line never says "throughput stops growing" beside a table whose largest
point beats the ceiling that line implies (audit A M1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from clustersim.explore.saturation import master_knee
from clustersim.report.training import saturation_line
from clustersim.scenario.schema import load_scenario
from clustersim.sim.sweep import simulate_point

SCENARIO = """name: my_resnet
platform:
  topology: leaf_spine
  leaves: 2
  spines: 2
  hosts_per_leaf: 4
  device: a100
  host_link: {bandwidth: 100 Gb/s, latency: 1 us}
  uplink: {bandwidth: 100 Gb/s, latency: 1 us}
  node: {devices: 8, layout: nvlink_mesh}
workload: {model: resnet50, batch_per_worker: 64, bucket: 25 MiB}
algorithm: {name: async_sgd, label: ps}
sweep: {workers: [8, 63], scaling: weak}
run: {iterations: 10, warmup: 2, seed: 0}
"""


def test_a_master_faster_per_exchange_at_more_workers_is_not_said_to_stop(tmp_path: Path):
    """A parameter server on 8-GPU nodes: at 8 workers every push crosses its machine's
    NIC, at 63 seven of them come over NVLink.  The knee's figures (8 workers) give a
    ceiling of ~5,700 samples/s; the 63-worker point does ~8,300.  The line had said the
    throughput stops growing at ~20 workers."""
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    scn = load_scenario(path)
    pts = [simulate_point(scn, scn.algorithm, w, 0)[0] for w in (8, 63)]
    w_star, _service, step, _ = master_knee(pts[0])
    ceiling = 64 * w_star / step
    assert pts[1].throughput > 1.3 * ceiling
    line = saturation_line(pts)
    assert "stops growing" not in line
    assert (f"past it the simulated throughput still grows: {pts[1].throughput:,.0f} "
            f"samples/s at 63 workers, {pts[1].throughput / ceiling:.0%} of the "
            f"{ceiling:,.0f} samples/s the master's time per step at 8 workers allows") in line


def test_the_63_worker_server_is_not_busier_than_time_allows(tmp_path: Path) -> None:
    """Its link demand per update is taken in the measured steps' mix of peers
    (tests/test_link_demand_mix.py): the seven workers beside the server step 2.7x as often
    as the others and none of their exchanges crosses its NIC.  Counted once per step each,
    the NIC read 9.7 ms per update where the server applied one every 7.7 ms (126 %
    busy)."""
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    scn = load_scenario(path)
    m = simulate_point(scn, scn.algorithm, 63, 0)[0]
    assert m.service_bound == "link"
    busy = m.service_time * m.update_rate  # the utilisation law, unclipped
    assert busy < 1.06, (m.service_time, m.update_rate)  # 1.04: the NIC 96 % busy
    assert 0.0075 < m.service_time < 0.0085, m.service_time
    assert np.isclose(m.server_utilization, min(busy, 1.0))
