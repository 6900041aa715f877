"""A server's utilisation is its busiest resource's - thread, processor or link, the one its
service time and saturation point are taken from - by the utilisation law U = X S.

Before, it counted the update's compute alone: a 2-shard parameter server whose pushes
queue at its 25 Gb/s link read 0.5 % busy beside "saturates at ~21 workers" and 36.4
updates/s of 18.2 ms each (QA 18b M1)."""

from __future__ import annotations

import pytest

from clustersim.scenario.schema import parse_scenario
from clustersim.sim.sweep import simulate_point

RAW = {"name": "ps_ft",
       "platform": {"topology": "fat_tree", "k": 4, "device": "v100",
                    "link": {"bandwidth": "25 Gb/s", "latency": "1 us"}},
       "network": {"overhead": "5 us", "efficiency": 0.9},
       "workload": {"model": "resnet50", "batch_per_worker": 64, "bucket": "25 MiB"},
       "algorithm": {"name": "async_sgd", "shards": 2},
       "sweep": {"workers": [8]},
       "run": {"iterations": 10, "warmup": 2, "seed": 0}}


def test_a_link_bound_servers_utilisation_obeys_the_utilisation_law():
    scn = parse_scenario(RAW)
    m, run = simulate_point(scn, scn.algorithm, 8, 0)
    shards = [a for a in run.actors if a.role == "server"]
    assert len(shards) == 2
    # the link is the bottleneck: far more than the update's compute
    assert m.service_time > 10 * max(a.compute / len(a.records["update"]) for a in shards)
    per_shard = m.update_rate / len(shards)
    assert m.server_utilization == pytest.approx(per_shard * m.service_time, rel=1e-6)
    assert 0.25 < m.server_utilization < 1.0  # it read 0.0046
