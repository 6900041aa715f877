"""The analytic point-to-point model: closed forms, throughput conservation, agreement with
max-min sharing on the quantities both must get right."""

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.network.flow import FlowNetwork
from clustersim.network.params import NetworkParams
from clustersim.network.queueing import LinkQueues

CAP = np.array([10.0, 5.0, 20.0, 10.0])
LAT = np.array([1.0, 2.0, 0.5, 0.25])


def plan(route, params=NetworkParams()):
    env = simpy.Environment()
    return FlowNetwork(env, CAP, LAT, params).message_plan(route, 100.0)


def test_lone_message_is_alpha_plus_n_over_min_bandwidth():
    lat, drain = plan((0, 1, 2), NetworkParams(overhead=0.5))
    assert lat == pytest.approx(0.5 + 1.0 + 2.0 + 0.5) and drain == 100.0
    q = LinkQueues(CAP)
    t = q.reserve((0, 1, 2), drain, now=3.0, latency=lat)
    assert t == pytest.approx(3.0 + 0.5 + (1.0 + 2.0 + 0.5) + 100.0 / 5.0)


def test_incast_serialises_at_the_shared_link():
    q = LinkQueues(CAP)
    arrivals = [q.reserve((0, 3), 50.0, now=0.0, latency=1.25) for _ in range(4)]
    # link 0 (10 B/s) is shared: 5 s per message, back to back
    assert arrivals == pytest.approx([5 * (k + 1) + 1.25 for k in range(4)])


def test_disjoint_routes_do_not_interfere():
    q = LinkQueues(CAP)
    a = q.reserve((0,), 100.0, 0.0, latency=1.0)
    b = q.reserve((2,), 100.0, 0.0, latency=0.5)
    assert a == pytest.approx(10.0 + 1.0) and b == pytest.approx(5.0 + 0.5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 5), st.floats(1, 100)), min_size=1, max_size=12))
def test_makespan_of_a_shared_link_matches_maxmin(msgs):
    """All messages on one link: both models keep the link busy whenever there is work, so
    the last byte arrives at the same time."""
    q = LinkQueues(np.array([10.0]))
    last_q = max(q.reserve((0,), n, t) for t, n in sorted(msgs))
    env = simpy.Environment()
    net = FlowNetwork(env, np.array([10.0]), np.array([0.0]))
    done = []

    def send(t, n):
        yield env.timeout(t)
        yield net.transfer((0,), n)
        done.append(env.now)

    for t, n in msgs:
        env.process(send(t, n))
    env.run()
    assert last_q == pytest.approx(max(done), rel=1e-9)
