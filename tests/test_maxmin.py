"""Max-min fair sharing: the defining invariants, checked on random small networks.

Feasibility (no link over capacity) plus "every flow crosses a saturated link on which no
other flow gets more" characterise the max-min fair allocation uniquely (Bertsekas & Gallager,
*Data Networks*, 6.5.2), so together with the closed forms below they pin the result down.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.network.maxmin import flat_incidence, incidence, maxmin_rates, progressive_fill

TOL = 1e-9


@st.composite
def networks(draw, max_links: int = 8, max_flows: int = 12, repeats: bool = False):
    """(routes, capacity): random links and non-empty routes over them."""
    nlinks = draw(st.integers(1, max_links))
    cap = np.array(draw(st.lists(st.floats(0.5, 1000.0), min_size=nlinks, max_size=nlinks)))
    link = st.integers(0, nlinks - 1)
    if repeats:
        route = st.lists(link, min_size=1, max_size=5).map(tuple)
    else:
        route = st.lists(link, min_size=1, max_size=min(5, nlinks), unique=True).map(tuple)
    routes = draw(st.lists(route, min_size=1, max_size=max_flows))
    return routes, cap


def link_loads(routes, rates, nlinks):
    load = np.zeros(nlinks)
    for r, x in zip(routes, rates):
        for lk in r:
            load[lk] += x
    return load


def check_maxmin(routes, cap, rates):
    """Assert feasibility and the bottleneck property; returns the link loads."""
    assert np.all(np.isfinite(rates)) and np.all(rates > 0)
    load = link_loads(routes, rates, len(cap))
    assert np.all(load <= cap * (1 + TOL)), (load, cap)
    for f, r in enumerate(routes):
        ok = False
        for lk in r:
            saturated = load[lk] >= cap[lk] * (1 - TOL)
            top = max(rates[g] for g, rg in enumerate(routes) if lk in rg)
            if saturated and rates[f] >= top * (1 - TOL):
                ok = True
                break
        assert ok, f"flow {f} on {r} has no bottleneck link (rates {rates}, loads {load})"
    return load


@settings(max_examples=300, deadline=None)
@given(networks(repeats=True))
def test_capacity_and_bottleneck_invariants(net):
    routes, cap = net
    check_maxmin(routes, cap, maxmin_rates(routes, cap))


@settings(max_examples=200, deadline=None)
@given(networks(), st.data())
def test_pareto_optimal(net, data):
    """No flow can be raised alone: each crosses a link with no slack left."""
    routes, cap = net
    rates = maxmin_rates(routes, cap)
    load = link_loads(routes, rates, len(cap))
    f = data.draw(st.integers(0, len(routes) - 1))
    slack = min(cap[lk] - load[lk] for lk in routes[f])
    assert slack <= cap.max() * TOL


@settings(max_examples=200, deadline=None)
@given(networks(), st.randoms(use_true_random=False))
def test_permutation_invariance(net, rnd):
    """Renaming flows and links permutes the answer and changes nothing else."""
    routes, cap = net
    rates = maxmin_rates(routes, cap)
    order = list(range(len(routes)))
    rnd.shuffle(order)
    relabel = list(range(len(cap)))
    rnd.shuffle(relabel)
    routes2 = [tuple(relabel[lk] for lk in routes[i]) for i in order]
    cap2 = np.empty_like(cap)
    cap2[relabel] = cap
    rates2 = maxmin_rates(routes2, cap2)
    np.testing.assert_allclose(rates2, rates[order], rtol=1e-12)


@settings(max_examples=200, deadline=None)
@given(networks(max_flows=1))
def test_lone_flow_gets_narrowest_link(net):
    routes, cap = net
    rates = maxmin_rates(routes, cap)
    assert rates[0] == pytest.approx(min(cap[lk] for lk in routes[0]), rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(networks(repeats=True))
def test_precomputed_matrix_gives_same_rates(net):
    routes, cap = net
    a = maxmin_rates(routes, cap)
    b = maxmin_rates(routes, cap, matrix=incidence(routes, len(cap)))
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_equal_sharing_and_second_level():
    """Classic example: links A (cap 10) and B (cap 4); f0 on A+B, f1 on A, f2 on B.

    B's fair share 2 is the first bottleneck: f0 = f2 = 2; f1 then takes A's remaining 8.
    """
    rates = maxmin_rates([(0, 1), (0,), (1,)], np.array([10.0, 4.0]))
    np.testing.assert_allclose(rates, [2.0, 8.0, 2.0])


def test_n_flows_on_one_link_share_equally():
    rates = maxmin_rates([(3,)] * 7, np.array([1.0, 1.0, 1.0, 70.0]))
    np.testing.assert_allclose(rates, np.full(7, 10.0))


def test_flow_crossing_link_twice_uses_it_twice():
    rates = maxmin_rates([(0, 0), (0,)], np.array([9.0]))
    np.testing.assert_allclose(rates, [3.0, 3.0])


def test_empty_route_is_infinite_and_costs_nothing():
    rates = maxmin_rates([(), (0,)], np.array([5.0]))
    assert rates[0] == np.inf and rates[1] == 5.0
    assert maxmin_rates([], np.array([1.0])).shape == (0,)


def test_progressive_fill_on_flat_incidence_matches():
    routes = [(0, 2), (1, 2), (2,), (0,)]
    cap = np.array([3.0, 1.0, 6.0])
    links, flows = flat_incidence(routes)
    assert links.tolist() == [0, 2, 1, 2, 2, 0]
    assert flows.tolist() == [0, 0, 1, 1, 2, 3]
    rates = progressive_fill(links, flows, cap, len(routes))
    # link 1 caps f1 at 1; link 0 then splits 3 between f0 and f3 (1.5 each); link 2 has
    # 6 - 1 - 1.5 = 3.5 left for f2
    np.testing.assert_allclose(rates, [1.5, 1.0, 3.5, 1.5])
    check_maxmin(routes, cap, rates)
