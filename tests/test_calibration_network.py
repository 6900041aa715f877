"""The network model's calibration extensions: piecewise protocols, collective corrections.

Closed forms on a two-hop crossbar (device -> bus -> device): a lone message of ``s`` bytes
in segment ``k`` takes ``2 * latency + overhead_k + s / (bandwidth * efficiency_k)``, in the
flow model and in the analytic one; a schedule step pays ``step_overhead`` once and its
transfers the collective efficiency.  Without any of it, nothing changes.
"""

from __future__ import annotations

import math

import pytest
import simpy

from clustersim.catalog import DeviceSpec, LinkSpec
from clustersim.collectives import build_schedule
from clustersim.network.analytic import cost_schedule
from clustersim.network.fidelity import analytic_is_exact, cost_collective
from clustersim.network.flow import FlowNetwork
from clustersim.network.flowsim import simulate_schedule
from clustersim.network.params import NetworkParams, Segment, bottleneck_class
from clustersim.platform.model import PlatformBuilder

BW, LAT = 4e9, 1e-6
DEV = DeviceSpec("dev", peak=1e11, mem_bw=3e10, memory=1e9, reduce_rate=6e9)
SEGS = (Segment(0, 0.0, 0.5, 2.0), Segment(65536, 5e-6, 1.0, 0.5),
        Segment(1 << 22, 20e-6, 0.6, 0.25))


def crossbar(n: int = 4):
    b = PlatformBuilder("xb")
    b.add_node("bus", "bus")
    for i in range(n):
        b.add_device(f"d{i}", DEV, host=0)
        b.add_link(f"d{i}", "bus", LinkSpec("shm", BW, LAT))
    return b.build()


def lone(nbytes: float, params: NetworkParams) -> float:
    plat = crossbar()
    env = simpy.Environment()
    net = FlowNetwork.for_platform(env, plat, params)
    ev = net.transfer(plat.route(0, 1), nbytes)
    env.run(ev)
    return env.now


@pytest.mark.parametrize("nbytes,seg", [(1000, 0), (65535, 0), (65536, 1), (1 << 20, 1),
                                        (1 << 22, 2), (3 << 22, 2)])
def test_lone_message_follows_its_segment(nbytes, seg):
    params = NetworkParams(protocols={"shm": SEGS})
    s = SEGS[seg]
    expect = 2 * LAT + s.overhead + nbytes / (BW * s.efficiency)
    assert lone(nbytes, params) == pytest.approx(expect, rel=1e-12)


def test_protocol_of_another_class_or_wildcard():
    other = NetworkParams(protocols={"nic": SEGS})
    assert lone(1 << 20, other) == pytest.approx(2 * LAT + (1 << 20) / BW, rel=1e-12)
    star = NetworkParams(protocols={"*": SEGS})
    assert lone(1 << 20, star) == pytest.approx(2 * LAT + 5e-6 + (1 << 20) / BW, rel=1e-12)


def test_no_table_is_the_textbook_model():
    params = NetworkParams(overhead=3e-6)
    assert params.plain
    assert lone(1 << 20, params) == pytest.approx(2 * LAT + 3e-6 + (1 << 20) / BW, rel=1e-12)
    assert params.message_cost(123.0) == (3e-6, 1.0)


def test_two_flows_share_capacity_in_proportion_to_their_charge():
    """Two 1 MiB messages from d0 and d2 into d1 share bus->d1: each is charged its bytes at
    the segment's efficiency, so together they drain 2 MiB at the full capacity."""
    plat = crossbar()
    params = NetworkParams(efficiency=1.0, protocols={"shm": SEGS})
    env = simpy.Environment()
    net = FlowNetwork.for_platform(env, plat, params)
    ev = net.transfer_all([plat.route(0, 1), plat.route(2, 1)], [1 << 20, 1 << 20])
    env.run(ev)
    assert env.now == pytest.approx(2 * LAT + 5e-6 + 2 * (1 << 20) / BW, rel=1e-12)


@pytest.mark.parametrize("size", [4096, 1 << 18, 1 << 24])
def test_ring_allreduce_closed_form_in_both_fidelities(size):
    """2 ranks, ring: two steps of size/2 each way, one reduction of size/2."""
    plat = crossbar()
    params = NetworkParams(step_overhead=7e-6, protocols={"shm": SEGS})
    sched = build_schedule("allreduce", "ring", 2, float(size))
    half = size / 2
    seg = params.segment(half, "shm")
    per_step = 7e-6 + 2 * LAT + seg.overhead + half / (BW * seg.efficiency
                                                      * seg.collective_efficiency)
    expect = 2 * per_step + half / DEV.reduce_bw
    flow = simulate_schedule(sched, plat, [0, 1], params)
    ana = cost_schedule(sched, plat, [0, 1], params)
    assert flow.time == pytest.approx(expect, rel=1e-9)
    assert ana.time == pytest.approx(expect, rel=1e-9)
    assert analytic_is_exact(sched, plat, [0, 1], params)


def test_global_collective_efficiency_without_a_table():
    plat = crossbar()
    params = NetworkParams(collective_efficiency=0.25)
    assert not params.plain
    sched = build_schedule("allreduce", "ring", 4, float(1 << 20))
    base = cost_collective(sched, plat, [0, 1, 2, 3], NetworkParams(), "analytic")
    slow = cost_collective(sched, plat, [0, 1, 2, 3], params, "analytic")
    flow = cost_collective(sched, plat, [0, 1, 2, 3], params, "flow")
    # 6 steps of (2 hops latency + chunk / rate): only the bandwidth term grows 4x
    chunk = (1 << 20) / 4
    assert slow.comm - base.comm == pytest.approx(6 * 3 * chunk / BW, rel=1e-9)
    assert flow.time == pytest.approx(slow.time, rel=1e-9)


def test_point_to_point_ignores_collective_corrections():
    params = NetworkParams(collective_efficiency=0.1, step_overhead=1e-3)
    assert lone(1 << 20, params) == pytest.approx(2 * LAT + (1 << 20) / BW, rel=1e-12)


def test_message_latency_is_the_segment_overhead_plus_hops():
    plat = crossbar()
    env = simpy.Environment()
    net = FlowNetwork.for_platform(env, plat, NetworkParams(protocols={"shm": SEGS}))
    assert net.message_latency(plat.route(0, 1), 0) == pytest.approx(2 * LAT)
    assert net.message_latency(plat.route(0, 1), 1 << 23) == pytest.approx(2 * LAT + 20e-6)
    assert net.message_latency((), 1 << 23) == 0.0


def test_bottleneck_class_is_the_narrowest_link():
    assert bottleneck_class((0, 1, 2), [5.0, 1.0, 1.0], ["a", "b", "c"]) == "b"
    assert bottleneck_class((), [1.0], ["a"]) is None
    assert bottleneck_class((0,), [1.0], None) is None


@pytest.mark.parametrize("bad", [
    dict(protocols={"shm": ()}),
    dict(protocols={"shm": (Segment(10, 0, 1),)}),
    dict(protocols={"shm": (Segment(0, 0, 1), Segment(0, 1e-6, 1))}),
    dict(step_overhead=-1.0),
    dict(collective_efficiency=0.0),
])
def test_bad_parameters_are_rejected(bad):
    with pytest.raises(ValueError):
        NetworkParams(**bad)


def test_segments_are_validated():
    with pytest.raises(ValueError):
        Segment(-1, 0, 1)
    with pytest.raises(ValueError):
        Segment(0, math.inf, 1)
    with pytest.raises(ValueError):
        Segment(0, 0, 0)
    with pytest.raises(ValueError):
        Segment(0, 0, 1, collective_efficiency=-1)
