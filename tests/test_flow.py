"""FlowNetwork: closed forms, batching, and agreement with a naive fluid reference.

The reference below recomputes max-min rates of *all* flows at every event and steps time
from event to event - obviously right and slow.  The engine (component-only recomputation,
batched timestamps, one wake-up, lazy byte accounting) must give the same finish times.
"""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

import clustersim.network.sharing as flow_module  # the rate machinery and its thresholds
from clustersim.network.flow import LAZY, FlowNetwork
from clustersim.network.maxmin import maxmin_rates
from clustersim.network.params import NetworkParams


def check_maxmin(routes, cap, rates, tol=1e-9):
    """No link over capacity; every flow has a saturated link where nobody gets more."""
    load = np.zeros(len(cap))
    for r, x in zip(routes, rates):
        np.add.at(load, list(r), x)
    assert np.all(load <= cap * (1 + tol))
    for f, r in enumerate(routes):
        assert any(
            load[lk] >= cap[lk] * (1 - tol)
            and rates[f] >= max(rates[g] for g, rg in enumerate(routes) if lk in rg) * (1 - tol)
            for lk in r
        ), f"flow {f} has no bottleneck"


def reference_finish_times(jobs, cap, lat, params=NetworkParams()):
    """Naive fluid simulation: ``jobs`` = [(start, route, nbytes)] -> finish times."""
    cap = np.asarray(cap, float) * params.efficiency
    n = len(jobs)
    finish = [math.nan] * n
    arrive = []
    for i, (t0, route, size) in enumerate(jobs):
        if not route:
            finish[i] = t0
            continue
        ta = t0 + params.overhead + sum(lat[lk] for lk in route)
        if size == 0:
            finish[i] = ta
        else:
            arrive.append((ta, i))
    arrive.sort()
    remaining = {}
    now = 0.0
    k = 0
    while k < len(arrive) or remaining:
        active = sorted(remaining)
        rates = maxmin_rates([jobs[i][1] for i in active], cap) if active else []
        t_done = min((now + remaining[i] / r for i, r in zip(active, rates)), default=math.inf)
        t_next = arrive[k][0] if k < len(arrive) else math.inf
        t = min(t_done, t_next)
        for i, r in zip(active, rates):
            remaining[i] -= r * (t - now)
        now = t
        for i in active:
            if remaining[i] <= 1e-9 * jobs[i][2]:
                finish[i] = now
                del remaining[i]
        while k < len(arrive) and arrive[k][0] <= now:
            remaining[arrive[k][1]] = jobs[arrive[k][1]][2]
            k += 1
    return finish


def run_jobs(jobs, cap, lat, params=NetworkParams()):
    """Each job a process: wait until its start, transfer, record the arrival time."""
    env = simpy.Environment()
    net = FlowNetwork(env, np.asarray(cap, float), np.asarray(lat, float), params)
    finish = [math.nan] * len(jobs)

    def job(i, t0, route, size):
        yield env.timeout(t0)
        yield net.transfer(route, size)
        finish[i] = env.now

    for i, (t0, route, size) in enumerate(jobs):
        env.process(job(i, t0, route, size))
    env.run()
    return finish, net


# -- closed forms ------------------------------------------------------------------------

def test_lone_flow_is_latency_plus_size_over_bandwidth():
    # route over links 0 (10 GB/s, 1 us) and 2 (4 GB/s, 2 us); link 1 is not used
    cap = [10e9, 1e9, 4e9]
    lat = [1e-6, 5e-6, 2e-6]
    params = NetworkParams(overhead=3e-6, efficiency=0.8)
    finish, net = run_jobs([(0.5, (0, 2), 8e6)], cap, lat, params)
    assert finish[0] == pytest.approx(0.5 + 3e-6 + 3e-6 + 8e6 / (4e9 * 0.8), rel=1e-12)
    # a flow alone on its links is rated by the closed form, without a max-min refill
    assert (net.flows_started, net.flows_finished, net.recomputations) == (1, 1, 0)


def test_two_flows_share_then_one_leaves():
    """a < b bytes on one link of capacity C: a ends at 2a/C, then b alone ends at (a+b)/C."""
    c, a, b = 5.0, 30.0, 80.0
    finish, net = run_jobs([(0.0, (0,), a), (0.0, (0,), b)], [c], [0.0])
    assert finish[0] == pytest.approx(2 * a / c, rel=1e-12)
    assert finish[1] == pytest.approx((a + b) / c, rel=1e-12)
    assert net.recomputations == 2  # start (both at once), then a's departure


def test_late_arrival_slows_the_first_flow():
    """f0 alone for 2 s at 10 B/s, then f1 (latency 1 s after its start at t=1) halves it."""
    cap, lat = [10.0, 10.0], [0.0, 1.0]
    finish, _ = run_jobs([(0.0, (0,), 50.0), (1.0, (1, 0), 100.0)], cap, lat)
    # f0: 20 B by t=2, then 5 B/s: 30 B more by t=8; f1: 30 B at 5 B/s by t=8, then 70 at 10
    assert finish[0] == pytest.approx(8.0, rel=1e-12)
    assert finish[1] == pytest.approx(15.0, rel=1e-12)


def test_link_crossed_twice_counts_twice_after_a_departure():
    """X crosses link 0 twice and is held to 1 B/s by link 1, so it takes 2 of link 0's 10.
    Y and Z share the other 8 (4 each); when Y leaves at 2.5 s, Z must get 8, not 9."""
    cap, lat = [10.0, 1.0], [0.0, 0.0]
    finish, _ = run_jobs([(0.0, (1, 0, 0), 1e3), (0.0, (0,), 10.0), (0.0, (0,), 100.0)],
                         cap, lat)
    assert finish[1] == pytest.approx(2.5, rel=1e-12)
    assert finish[2] == pytest.approx(2.5 + 90.0 / 8.0, rel=1e-12)


def test_simultaneous_starts_are_one_recomputation():
    env = simpy.Environment()
    net = FlowNetwork(env, np.array([100.0, 1.0]), np.zeros(2))
    ends = []

    def worker():
        yield net.transfer((0,), 10.0)
        ends.append(env.now)

    for _ in range(50):
        env.process(worker())
    env.run()
    assert ends == [pytest.approx(5.0, rel=1e-12)] * 50
    # all 50 start at t=0 (one refill) and all end at t=5 (nothing left to rate)
    assert net.recomputations == 1
    assert net.flows_started == net.flows_finished == 50


def test_one_pending_wakeup_for_many_flows():
    """1,000 flows with distinct finish times keep the SimPy queue at O(1) entries."""
    env = simpy.Environment()
    nlinks = 10
    net = FlowNetwork(env, np.linspace(1.0, 2.0, nlinks), np.zeros(nlinks))
    events = [net.transfer((i % nlinks,), 1.0 + i) for i in range(1000)]
    env.run(until=1e-9)
    assert net.recomputations == 1
    assert len(env._queue) <= 2  # the wake-up (and nothing per flow)
    env.run()
    assert all(ev.processed for ev in events)


def test_transfer_all_completes_with_its_slowest_flow():
    env = simpy.Environment()
    net = FlowNetwork(env, np.array([2.0, 8.0, 4.0]), np.array([0.0, 0.5, 0.0]))
    done = net.transfer_all([(0,), (1,), (1, 2), ()], [4.0, 8.0, 4.0, 99.0])
    env.run(done)
    # link 1 shared by flows 1 and 2 from t=0.5: 4 B/s each; flow 2 ends at 1.5, flow 1 at
    # 1.5 + 4/8 = 2.0; flow 0 ends at 2.0 as well; the local copy costs nothing
    assert env.now == pytest.approx(2.0, rel=1e-12)
    assert net.flows_finished == 4


def test_local_copy_and_empty_message():
    env = simpy.Environment()
    net = FlowNetwork(env, np.array([1.0]), np.array([0.25]), NetworkParams(overhead=0.5))
    local = net.transfer((), 1e9)
    empty = net.transfer((0,), 0.0)
    env.run(local)
    assert env.now == 0.0
    env.run(empty)
    assert env.now == pytest.approx(0.75)  # overhead + latency, no bandwidth
    assert net.recomputations == 0


def test_reentrant_chains_of_processes():
    """Processes that start transfers as soon as others finish, on shared links, give the same
    finish times as the reference fed with the resulting start times."""
    env = simpy.Environment()
    cap, lat = np.array([3.0, 5.0, 7.0]), np.array([0.1, 0.0, 0.2])
    net = FlowNetwork(env, cap, lat)
    log = []

    def chain(k, routes):
        for j, r in enumerate(routes):
            t0 = env.now
            yield net.transfer(r, 10.0 + 3 * k + j)
            log.append((t0, r, 10.0 + 3 * k + j, env.now))

    env.process(chain(0, [(0, 1), (1,), (2, 0)]))
    env.process(chain(1, [(1, 2), (0,), (0, 1, 2)]))
    env.process(chain(2, [(2,), (2, 1), (1,)]))
    env.run()
    ref = reference_finish_times([(t0, r, n) for t0, r, n, _ in log], cap, lat)
    np.testing.assert_allclose([t for *_, t in log], ref, rtol=1e-9)


def test_deterministic():
    jobs = [(0.1 * (i % 7), (i % 5, (i * 3) % 5), 10.0 + i) for i in range(60)]
    a, _ = run_jobs(jobs, [4.0, 5.0, 6.0, 7.0, 8.0], [0.01] * 5)
    b, _ = run_jobs(jobs, [4.0, 5.0, 6.0, 7.0, 8.0], [0.01] * 5)
    assert a == b


def test_bad_input():
    env = simpy.Environment()
    with pytest.raises(ValueError):
        FlowNetwork(env, np.array([1.0, 2.0]), np.array([0.0]))
    with pytest.raises(ValueError):
        FlowNetwork(env, np.array([0.0]), np.array([0.0]))
    net = FlowNetwork(env, np.array([1.0]), np.array([0.0]))
    with pytest.raises(ValueError):
        net.transfer((0,), -1.0)
    with pytest.raises(ValueError):
        net.transfer((0,), math.nan)
    with pytest.raises(ValueError):
        net.transfer((3,), 1.0)
    with pytest.raises(ValueError):
        net.transfer_all([(0,)], [1.0, 2.0])


def test_recompute_runs_after_normal_events_of_the_same_instant():
    assert LAZY > simpy.events.NORMAL > simpy.events.URGENT


# -- properties on random small networks -------------------------------------------------

@st.composite
def workloads(draw):
    nlinks = draw(st.integers(1, 6))
    cap = draw(st.lists(st.floats(1.0, 100.0), min_size=nlinks, max_size=nlinks))
    lat = draw(st.lists(st.sampled_from([0.0, 0.0, 0.01, 0.5]), min_size=nlinks,
                        max_size=nlinks))
    link = st.integers(0, nlinks - 1)
    route = st.one_of(
        st.lists(link, min_size=1, max_size=min(4, nlinks), unique=True),
        st.lists(link, min_size=2, max_size=4),  # may cross a link twice
    ).map(tuple)
    # equal sizes make simultaneous finishes; free sizes make many distinct rate levels
    size = st.one_of(st.sampled_from([10.0, 20.0, 40.0]), st.floats(0.5, 200.0))
    job = st.tuples(st.sampled_from([0.0, 0.0, 0.25, 1.0, 1.5, 3.0]), route, size)
    jobs = draw(st.lists(job, min_size=1, max_size=30))
    return jobs, cap, lat


@settings(max_examples=150, deadline=None)
@given(workloads(), st.sampled_from([0, flow_module._SMALL_COMPONENT]))
def test_finish_times_match_naive_reference(wl, small):
    """Both refill paths (plain Python for small groups, numpy above) against the reference."""
    jobs, cap, lat = wl
    with mock.patch.object(flow_module, "_SMALL_COMPONENT", small):
        got, net = run_jobs(jobs, cap, lat)
    want = reference_finish_times(jobs, cap, np.asarray(lat))
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    assert net.flows_started == net.flows_finished == len(jobs)


@settings(max_examples=150, deadline=None)
@given(workloads(), st.floats(0.05, 4.0))
def test_steady_state_rates_are_global_maxmin(wl, t_probe):
    """At any instant the engine's rates equal max-min over *all* flows then present, and
    satisfy the capacity and bottleneck invariants."""
    jobs, cap, lat = wl
    env = simpy.Environment()
    net = FlowNetwork(env, np.asarray(cap), np.asarray(lat))

    def job(t0, route, size):
        yield env.timeout(t0)
        yield net.transfer(route, size)

    for j in jobs:
        env.process(job(*j))
    env.run(until=t_probe)
    snap = net.snapshot()
    if not snap:
        return
    routes = [s.route for s in snap]
    rates = np.array([s.rate for s in snap])
    np.testing.assert_allclose(rates, maxmin_rates(routes, np.asarray(cap)), rtol=1e-9)
    check_maxmin(routes, np.asarray(cap), rates)
    assert all(0 <= s.remaining <= s.nbytes for s in snap)


def test_networks_over_one_platform_share_their_link_columns():
    """A platform's read-only link arrays give every network the same derived columns (made
    once); other parameters, or arrays that could still change, get their own."""
    from clustersim.catalog import builtin_catalog
    from clustersim.platform import fat_tree

    cat = builtin_catalog()
    p = fat_tree(4, cat.devices["v100"], cat.links["eth25g"])
    a = FlowNetwork.for_platform(simpy.Environment(), p)
    b = FlowNetwork.for_platform(simpy.Environment(), p)
    assert b._cap_list is a._cap_list and b._kinds is a._kinds
    c = FlowNetwork.for_platform(simpy.Environment(), p, NetworkParams(efficiency=0.5))
    assert c._cap_list is not a._cap_list
    assert c._cap_list == [x * 0.5 for x in p.capacity.tolist()]
    cap = np.array(p.capacity)  # writeable: never memoised
    d = FlowNetwork(simpy.Environment(), cap, p.latency)
    e = FlowNetwork(simpy.Environment(), cap, p.latency)
    assert d._cap_list == e._cap_list and d._cap_list is not e._cap_list
