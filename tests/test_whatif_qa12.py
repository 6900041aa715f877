"""A what-if cell is the scenario with every link scaled, host-staging copies included.

QA 12 F3: ``scaled_platform`` scales the capacity array, and the staging copy of a
host-staged collective (Theano-MPI's ``ar``) read its bandwidth from the graph's edge
attribute, so on the 2x page ``ar`` kept its copies at 1x speed: 8-GPU comm 198.3 ms
against 182.8 ms for the same scenario with both link classes doubled (2.2-2.7 % of
throughput).  Every other strategy was equal to the bit."""

from __future__ import annotations

import pytest

from clustersim.report.whatif import scaled_scenario
from clustersim.scenario.schema import load_scenario
from clustersim.sim.sweep import simulate_point

DOUBLED = ["catalog.links.pcie3x16.bandwidth=31.5 GB/s",
           "platform.node.intersocket={bandwidth: 16.6 GB/s, latency: 0.3 us}"]


@pytest.mark.parametrize("label", ["ar", "nccl32"])
def test_a_2x_cell_equals_the_scenario_with_every_link_doubled(label: str) -> None:
    base = load_scenario("scenarios/theano_mpi_alexnet.yaml")
    doubled = load_scenario("scenarios/theano_mpi_alexnet.yaml", DOUBLED)
    # the platform has exactly these two link classes: the sets double every link
    assert sorted(set(doubled.platform.capacity / base.platform.capacity)) == [2.0]
    cell = scaled_scenario(base, 2.0, 1.0)
    alg = next(a for a in cell.algorithms if a.title == label)
    ref = next(a for a in doubled.algorithms if a.title == label)
    for workers in (2, 8):
        a = simulate_point(cell, alg, workers, 0)[0]
        b = simulate_point(doubled, ref, workers, 0)[0]
        assert a.iteration_time == b.iteration_time
        assert a.comm == b.comm
    one = simulate_point(base, next(x for x in base.algorithms if x.title == label), 8, 0)[0]
    assert a.comm < one.comm  # the cell did move
