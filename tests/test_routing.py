"""Routing: minimal paths, the documented ECMP rule, spreading, determinism, duplex resources.

The fast router (stub collapse, local balls, C searches, twins, caches) is checked against an
independent reference written here from the documented semantics with networkx's Dijkstra:
same routes for every pair of nodes, under every fallback regime.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections import Counter

import networkx as nx
import pytest

from clustersim.catalog import LinkSpec, builtin_catalog
from clustersim.errors import InputError
from clustersim.platform import (
    ExplicitLink,
    ExplicitNode,
    NodeSpec,
    Platform,
    PlatformBuilder,
    dragonfly,
    explicit,
    fat_tree,
    leaf_spine,
    ring,
    routing,
    star,
    torus,
)
from clustersim.platform.model import _natural_key
from clustersim.platform.routing import mix

CAT = builtin_catalog()
K80 = CAT.device("k80")
ETH = CAT.link("eth10g")
PCIE = CAT.link("pcie3x16")
GLOBAL = CAT.link("aries_global")


def reference_routes(p: Platform, targets: list[str]) -> dict[tuple[str, str], tuple[int, ...]]:
    """Every route into ``targets``, straight from the documented rule (no shortcuts)."""
    g = p.graph
    index = {n: i for i, n in enumerate(sorted(g.nodes, key=_natural_key))}
    rev = g.reverse(copy=True)
    out = {}
    for t in targets:
        dist = nx.single_source_dijkstra_path_length(rev, t, weight="cost")
        for s in g.nodes:
            if s not in dist:
                continue
            h = mix(index[s], index[t])
            u, links = s, []
            while u != t:
                cands = sorted((index[v], v, d["link"]) for v, d in g[u].items()
                               if v in dist and dist[v] + d["cost"] == dist[u])
                pick = cands[mix(h, index[u]) % len(cands)] if len(cands) > 1 else cands[0]
                links.append(pick[2])
                u = pick[1]
            out[(s, t)] = tuple(links)
    return out


def half_duplex_chain() -> Platform:
    """A small irregular graph: a cycle with tails, a half-duplex link and a cost-2 link."""
    slow = LinkSpec("slow", 1e9, 1e-6, duplex=False)
    nodes = [ExplicitNode(f"d{i}", "device", K80, host=i // 2) for i in range(6)]
    nodes += [ExplicitNode(f"s{i}") for i in range(5)]
    links = [ExplicitLink("d0", "s0", ETH), ExplicitLink("d1", "s0", ETH),
             ExplicitLink("s0", "s1", slow), ExplicitLink("s1", "s2", ETH),
             ExplicitLink("s2", "s3", ETH), ExplicitLink("s3", "s0", ETH, cost=2),
             ExplicitLink("s1", "s4", ETH), ExplicitLink("s4", "s3", ETH),
             ExplicitLink("d2", "s2", ETH), ExplicitLink("d3", "d2", ETH),
             ExplicitLink("d4", "s4", ETH), ExplicitLink("d5", "s3", ETH)]
    return explicit(nodes, links)


PLATFORMS = {
    "fat_tree_pcie_nodes": lambda: fat_tree(
        4, K80, ETH, hosts=5, node=NodeSpec(devices=4, layout="pcie_tree", gpudirect=True)),
    "leaf_spine_twins": lambda: leaf_spine(4, 3, 3, K80, ETH, ETH),
    "dragonfly_costs": lambda: dragonfly(5, 4, 2, K80, ETH, PCIE, GLOBAL),
    "torus": lambda: torus((3, 4), K80, ETH),
    "ring": lambda: ring(7, K80, ETH),
    "dgx_star": lambda: star(2, K80, ETH, node=NodeSpec(
        devices=8, layout="hybrid_cube_mesh", nics=4, gpudirect=True)),
    "nvlink_staged": lambda: star(2, K80, ETH, node=NodeSpec(
        devices=4, layout="nvlink_mesh", nics=2, gpudirect=False)),
    "explicit_irregular": half_duplex_chain,
}


@pytest.fixture(params=["default", "always_full", "always_ball", "tiny_caches", "c_searches"])
def regime(request, monkeypatch):
    """Force each code path of the router: full searches (in Python, or in C from the first
    one), Python balls, cache eviction."""
    if request.param == "always_full":
        monkeypatch.setattr(routing, "BALL_BUDGET", 0)
    elif request.param == "c_searches":
        monkeypatch.setattr(routing, "BALL_BUDGET", 0)
        monkeypatch.setattr(routing, "PY_SEARCH_EDGES", 0)
        monkeypatch.setattr(routing, "PY_SEARCH_WORK", 0)
    elif request.param == "always_ball":
        monkeypatch.setattr(routing, "BALL_BUDGET", 10 ** 9)
    elif request.param == "tiny_caches":
        monkeypatch.setattr(routing, "DIST_CACHE_ENTRIES", 1)
        monkeypatch.setattr(routing, "CAND_CACHE_ENTRIES", 1)
        monkeypatch.setattr(routing, "BALL_CACHE_COUNT", 1)
    return request.param


@pytest.mark.parametrize("name", sorted(PLATFORMS))
def test_routes_match_the_reference_for_every_pair(name, regime):
    p = PLATFORMS[name]()
    nodes = sorted(p.graph.nodes, key=_natural_key)
    ref = reference_routes(p, nodes)
    # two passes in different orders: cached and uncached answers must agree
    pairs = list(itertools.product(nodes, repeat=2))
    for s, t in pairs + pairs[::-1]:
        assert p.route(s, t) == ref[(s, t)], (s, t)


@pytest.mark.parametrize("name", sorted(PLATFORMS))
def test_routes_are_minimal_paths(name):
    p = PLATFORMS[name]()
    ends: dict[int, list[tuple[str, str]]] = {}
    for u, v, d in p.graph.edges(data=True):
        ends.setdefault(d["link"], []).append((u, v))
    cost = nx.floyd_warshall(p.graph, weight="cost")
    for s, t in itertools.product(range(p.num_devices), repeat=2):
        u = p.devices[s]
        total = 0
        for lk in p.route(s, t):
            (nxt,) = [b for a, b in ends[lk] if a == u]  # the link leaves where we stand
            total += p.graph[u][nxt]["cost"]
            u = nxt
        assert u == p.devices[t]
        assert total == cost[p.devices[s]][p.devices[t]] == p.route_cost(s, t)


def test_ecmp_spreads_permutation_traffic_over_all_cores():
    k = 8
    p = fat_tree(k, K80, ETH)
    n = k ** 3 // 4
    cores = Counter(p.route_nodes(i, (i + n // 2) % n)[3] for i in range(n))
    assert all(c.startswith("core") for c in cores)
    # 128 flows hashed onto 16 cores: all used; no core above twice the mean (8)
    assert len(cores) == (k // 2) ** 2
    assert max(cores.values()) <= 2 * n // len(cores)
    # and every aggregation uplink of a pod carries some of the pod's flows
    aggs = Counter(p.route_nodes(i, (i + n // 2) % n)[2] for i in range(16))
    assert set(aggs) == {f"pod0.agg{a}" for a in range(k // 2)}


def test_same_rule_without_per_switch_seed_would_polarise():
    """The reason for mixing the switch into the hash: one residue per flow picks one core
    per aggregation index, so only k/2 of (k/2)^2 cores would carry traffic."""
    k = 8
    p = fat_tree(k, K80, ETH)
    n = k ** 3 // 4
    polarised = {(mix(i, (i + n // 2) % n) % (k // 2)) * 2 for i in range(n)}
    assert len(polarised) <= k // 2
    used = {p.route_nodes(i, (i + n // 2) % n)[3] for i in range(n)}
    assert len(used) > len(polarised)


SCRIPT = """
import json
from clustersim.catalog import builtin_catalog
from clustersim.platform import NodeSpec, dragonfly, fat_tree
c = builtin_catalog()
k80, eth = c.device("k80"), c.link("eth10g")
a = fat_tree(6, k80, eth, node=NodeSpec(devices=2, layout="pcie_tree", gpudirect=True))
b = dragonfly(5, 4, 2, k80, eth, c.link("pcie3x16"), c.link("aries_global"))
out = {}
for name, p in (("fat_tree", a), ("dragonfly", b)):
    n = p.num_devices
    out[name] = [list(p.route(i, (i * 7 + 3) % n)) for i in range(n)]
print(json.dumps(out))
"""


def test_routes_are_identical_across_processes():
    """Another interpreter with another string-hash seed computes the very same routes."""
    env = dict(os.environ, PYTHONHASHSEED="4242")
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, check=True)
    there = json.loads(res.stdout)
    scope: dict = {}
    exec(SCRIPT.replace("print(json.dumps(out))", ""), scope)
    assert json.loads(json.dumps(scope["out"])) == there
    assert len(there["fat_tree"]) == 108 and len(there["dragonfly"]) == 40


def test_half_duplex_link_is_one_shared_resource():
    half = LinkSpec("half", 1e9, 1e-6, duplex=False)
    p = star(2, K80, half)
    assert p.num_links == 2  # two cables, one resource each
    assert p.route(0, 1)[0] == p.route(1, 0)[1]
    assert p.route(0, 1)[1] == p.route(1, 0)[0]
    full = star(2, K80, ETH)
    assert full.num_links == 4
    assert not set(full.route(0, 1)) & set(full.route(1, 0))


def test_route_api_edges():
    p = ring(4, K80, ETH)
    assert p.route(2, 2) == ()
    assert p.route("h0", "h2") == p.route(0, 2)
    assert p.routes([(0, 1), (1, 0)]) == [p.route(0, 1), p.route(1, 0)]
    assert p.hops(0, 2) == 2
    with pytest.raises(InputError, match="unknown node 'nope'"):
        p.route("nope", 0)
    with pytest.raises(InputError, match="rank 4 is out of range"):
        p.route(0, 4)
    with pytest.raises(InputError, match="rank -1 is out of range"):
        p.route(-1, 0)


def test_one_way_graph_reports_no_route():
    g = nx.DiGraph()
    g.add_node("a", kind="device", spec=K80, host=0)
    g.add_node("b", kind="device", spec=K80, host=1)
    g.add_edge("a", "b", bandwidth=1.0, latency=0.0, link=0, kind="x", cost=1)
    from clustersim.platform.model import _LinkRes

    p = Platform("oneway", g, ["a", "b"], [_LinkRes("a->b", 1.0, 0.0, "x")])
    assert p.route(0, 1) == (0,)
    with pytest.raises(InputError, match="no route from 'b' to 'a'"):
        p.route(1, 0)


def test_builder_rejects_disconnected_and_malformed_links():
    b = PlatformBuilder("x")
    b.add_device("a", K80, host=0)
    b.add_device("b", K80, host=1)
    with pytest.raises(InputError, match="disconnected"):
        b.build()
    with pytest.raises(InputError, match="itself"):
        b.add_link("a", "a", ETH)
    with pytest.raises(InputError, match="unknown node 'c'"):
        b.add_link("a", "c", ETH)
    with pytest.raises(InputError, match="routing cost"):
        b.add_link("a", "b", ETH, cost=0)
    b.add_link("a", "b", ETH)
    b.add_link("b", "a", ETH)  # a second cable between the pair: a parallel link
    p = b.build()
    assert p.num_links == 4 and "b->a#1" in p.link_names


def test_twin_switches_share_one_search():
    p = leaf_spine(8, 4, 4, K80, ETH, ETH)
    for s in range(32):
        for d in range(32):
            p.route(s, d)
    # 8 leaves are twins (same spines); spines are twins too: at most 2 full searches
    assert p._router.searches <= 2


def test_devices_collapse_onto_switches_and_twins_bound_the_searches():
    p = fat_tree(8, K80, ETH)
    assert p.routing_core_size == 80  # only the 5k^2/4 switches are ever searched
    for i in range(128):
        p.route(i, (i + 1) % 128)
        p.route(i, (i + 37) % 128)
    # edge switches of a pod are twins: at most one full search per pod (and per tier)
    assert p._router.searches <= 8 + 2


@pytest.mark.parametrize("name", sorted(PLATFORMS) + ["crossbar_star"])
def test_rank_routes_are_the_routes_of_every_rank_pair(name):
    """The array path (siblings under one node built from its link columns) gives exactly
    what :meth:`Platform.route` gives, for every ordered pair of ranks, self-pairs included,
    under every policy the platform accepts."""
    import numpy as np

    from clustersim.platform.policies import RoutingSpec
    from clustersim.platform.rankroutes import sibling_columns

    base = (star(3, K80, ETH, node=NodeSpec(devices=8, layout="crossbar", nics=2))
            if name == "crossbar_star" else PLATFORMS[name]())
    n = base.num_devices
    src = np.repeat(np.arange(n), n)
    dst = np.tile(np.arange(n), n)
    policies = {"fat_tree_pcie_nodes": ("ecmp", "dmodk", "smodk"),
                "dragonfly_costs": ("minimal", "valiant")}.get(name, ("ecmp",))
    siblings = 0
    for policy in policies:
        p = base if policy == "ecmp" else base.with_routing(RoutingSpec(policy))
        got = p.rank_routes(src, dst)
        want = [p.route(int(s), int(t)) for s, t in zip(src, dst)]
        assert got == want
        _, up, down = sibling_columns(p)
        siblings += sum(len(r) == 2 and r == (up[s], down[t])
                        for r, s, t in zip(got, src.tolist(), dst.tolist()) if s != t)
    if name in ("fat_tree_pcie_nodes", "crossbar_star"):  # devices hang off one node
        assert siblings > 0  # the array path was taken


@pytest.mark.parametrize("name", ["h12.d3", "core7", "x", "pod3.edge12", "a1b2c3", "10", "",
                                  "1.2.3.4", "n01", "sw.0", "h0.nic1.port22"])
def test_natural_key_splits_every_digit_run(name):
    import re

    parts = re.split(r"(\d+)", name)
    assert _natural_key(name) == tuple(int(p) if i % 2 else p for i, p in enumerate(parts))
    assert sorted(["n10", "n2", "n1"], key=_natural_key) == ["n1", "n2", "n10"]


def test_large_graphs_search_in_python_until_the_budget_then_in_c(monkeypatch):
    """A large core is searched in Python while its searches cost less than scipy's import
    (PY_SEARCH_WORK edges scanned), in C after: the same distances either way."""
    import numpy as np

    from clustersim.platform import searches

    calls = []
    monkeypatch.setattr(routing, "bfs_py", lambda *a: calls.append("py") or searches.bfs_py(*a))
    monkeypatch.setattr(routing, "bfs_c", lambda *a: calls.append("c") or searches.bfs_c(*a))
    monkeypatch.setattr(routing, "PY_SEARCH_EDGES", 16)
    p = fat_tree(8, K80, ETH, hosts=16)
    r = p._router
    monkeypatch.setattr(routing, "PY_SEARCH_WORK", 2 * r._nredges)
    monkeypatch.setattr(routing, "_scipy_loaded", lambda: False)  # as if not imported yet
    got = [r._bfs(ct) for ct in range(4)]
    assert calls == ["py", "py", "c", "c"]
    want = [searches.bfs_py(r._radj, r._nexp, r._ncore, ct) for ct in range(4)]
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
