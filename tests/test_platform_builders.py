"""Topology builders: sizes against closed forms, hop counts, oversubscription, node layouts."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections import Counter

import networkx as nx
import pytest

from clustersim.catalog import LinkSpec, builtin_catalog
from clustersim.errors import InputError
from clustersim.platform import (
    NodeSpec,
    Platform,
    dragonfly,
    fat_tree,
    leaf_spine,
    ring,
    single_node,
    star,
    torus,
)
from clustersim.platform.builders import dragonfly_global_links, torus_distance

CAT = builtin_catalog()
K80 = CAT.device("k80")
ETH = CAT.link("eth10g")
PCIE = CAT.link("pcie3x16")


def kinds(p: Platform) -> Counter:
    return Counter(data["kind"] for _, data in p.graph.nodes(data=True))


def cables(p: Platform) -> int:
    """Physical links (each is two directed edges)."""
    return p.graph.number_of_edges() // 2


def link_kinds(p: Platform, a: int | str, b: int | str) -> list[str]:
    return [p.link_kind[i] for i in p.route(a, b)]


# -- star / crossbar ----------------------------------------------------------------------
def test_star_counts_and_two_hop_routes():
    p = star(5, K80, ETH)
    assert kinds(p) == {"device": 5, "switch": 1}
    assert cables(p) == 5
    assert p.devices == ("h0", "h1", "h2", "h3", "h4")
    for a, b in itertools.permutations(range(5), 2):
        r = p.route(a, b)
        assert len(r) == 2
        assert p.path_latency(r) == pytest.approx(2 * ETH.latency)
        assert p.path_bandwidth(r) == ETH.bandwidth
    # full duplex: every direction its own resource
    assert p.num_links == 10


def test_star_devices_per_host_gives_own_ports_and_host_ids():
    p = star(3, K80, ETH, devices_per_host=2)
    assert p.devices == ("h0.d0", "h0.d1", "h1.d0", "h1.d1", "h2.d0", "h2.d1")
    assert [p.host(r) for r in range(6)] == [0, 0, 1, 1, 2, 2]
    assert p.num_hosts == 3
    assert cables(p) == 6
    assert len(p.route(0, 1)) == 2  # intra-machine traffic crosses the switch


def test_star_rejects_bad_arguments_with_field_path():
    with pytest.raises(InputError) as e:
        star(0, K80, ETH)
    assert e.value.path == ("hosts",)
    with pytest.raises(InputError) as e:
        star(True, K80, ETH)
    assert e.value.path == ("hosts",)


# -- leaf-spine ---------------------------------------------------------------------------
def uplink_ratio(p: Platform, leaf: str) -> float:
    """Host bandwidth into a leaf / uplink bandwidth out of it, read from the graph."""
    down = up = 0.0
    for v, data in p.graph[leaf].items():
        if v.startswith("spine"):
            up += data["bandwidth"]
        else:
            down += data["bandwidth"]
    return down / up


def test_leaf_spine_counts_and_oversubscription_from_links():
    up = CAT.link("eth25g")  # 4 hosts x 10 Gb/s over 2 x 25 Gb/s = 0.8
    p = leaf_spine(3, 2, 4, K80, ETH, up)
    assert kinds(p) == {"device": 12, "switch": 5}
    assert cables(p) == 3 * 2 + 12
    expected = 4 * ETH.bandwidth / (2 * up.bandwidth)
    assert expected == pytest.approx(0.8)
    assert p.meta["oversubscription"] == pytest.approx(expected)
    for leaf in ("leaf0", "leaf1", "leaf2"):
        assert uplink_ratio(p, leaf) == pytest.approx(expected)


@pytest.mark.parametrize("ratio", [1.0, 3.0, 0.5])
def test_leaf_spine_sized_by_oversubscription(ratio):
    p = leaf_spine(2, 4, 8, K80, ETH, oversubscription=ratio)
    assert uplink_ratio(p, "leaf0") == pytest.approx(ratio)
    assert p.meta["oversubscription"] == pytest.approx(ratio)
    # uplinks keep the host link's latency when no uplink class is given
    r = p.route(0, 8)
    assert p.path_latency(r) == pytest.approx(4 * ETH.latency)


def test_leaf_spine_hops_and_spine_spreading():
    p = leaf_spine(4, 4, 8, K80, ETH, ETH)
    assert len(p.route(0, 7)) == 2           # same leaf
    assert len(p.route(0, 8)) == 4           # leaf - spine - leaf
    spines = Counter(p.route_nodes(s, d)[2] for s in range(8) for d in range(8, 32))
    assert set(spines) == {"spine0", "spine1", "spine2", "spine3"}
    assert max(spines.values()) <= 2 * (8 * 24 / 4)


def test_leaf_spine_partial_fill_and_errors():
    p = leaf_spine(3, 1, 4, K80, ETH, ETH, hosts=6)
    assert p.num_devices == 6
    assert [p.route_nodes(h, 0)[1] for h in range(1, 6)] == ["leaf0"] * 3 + ["leaf1"] * 2
    with pytest.raises(InputError) as e:
        leaf_spine(2, 1, 4, K80, ETH)
    assert e.value.path == ("uplink",)
    with pytest.raises(InputError) as e:
        leaf_spine(2, 1, 4, K80, ETH, ETH, hosts=9)
    assert e.value.path == ("hosts",)
    with pytest.raises(InputError) as e:
        leaf_spine(2, 1, 4, K80, ETH, oversubscription=0)
    assert e.value.path == ("oversubscription",)


# -- fat-tree -----------------------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 4, 6, 8])
def test_fat_tree_closed_form_sizes(k):
    p = fat_tree(k, K80, ETH)
    assert kinds(p) == {"switch": 5 * k * k // 4, "device": k ** 3 // 4}
    assert cables(p) == 3 * k ** 3 // 4  # host, edge-agg and agg-core links: k^3/4 each
    und = p.graph.to_undirected(as_view=True)
    assert nx.is_connected(und)
    for node, data in p.graph.nodes(data=True):
        if data["kind"] == "switch":
            # every switch uses all k ports (cores: one per pod), so bisection is full
            assert und.degree(node) == k
    tiers = Counter(data.get("tier") for _, data in p.graph.nodes(data=True)
                    if data["kind"] == "switch")
    assert tiers == {0: k * k // 2, 1: k * k // 2, 2: k * k // 4}


def test_fat_tree_hop_counts():
    k = 6
    p = fat_tree(k, K80, ETH)
    half = k // 2
    for a, b in itertools.combinations(range(k ** 3 // 4), 2):
        same_edge = a // half == b // half
        same_pod = a // (half * half) == b // (half * half)
        expected = 2 if same_edge else 4 if same_pod else 6
        assert len(p.route(a, b)) == expected, (a, b)


def test_fat_tree_partial_hosts_fill_edges_in_order():
    p = fat_tree(4, K80, ETH, hosts=5)
    assert p.num_devices == 5
    assert kinds(p)["switch"] == 20
    attach = [p.route_nodes(h, "core0")[1] for h in range(5)]
    assert attach == ["pod0.edge0", "pod0.edge0", "pod0.edge1", "pod0.edge1", "pod1.edge0"]


def test_fat_tree_errors():
    with pytest.raises(InputError) as e:
        fat_tree(5, K80, ETH)
    assert e.value.path == ("k",) and "even" in str(e.value)
    with pytest.raises(InputError) as e:
        fat_tree(4, K80, ETH, hosts=17)
    assert e.value.path == ("hosts",) and "16" in str(e.value)


# -- direct networks ----------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 8, 11])
def test_ring_counts_and_hops(n):
    p = ring(n, K80, ETH)
    assert p.num_devices == n
    assert cables(p) == (0 if n == 1 else 1 if n == 2 else n)
    for a, b in itertools.product(range(n), repeat=2):
        assert len(p.route(a, b)) == min(abs(a - b), n - abs(a - b))


@pytest.mark.parametrize("dims", [(4, 4), (3, 5), (2, 3, 4), (4, 4, 4), (1, 6)])
def test_torus_hops_are_wrapped_manhattan(dims):
    p = torus(dims, K80, ETH)
    size = 1
    for d in dims:
        size *= d
    assert p.num_devices == size
    per_dim = [0 if d == 1 else 1 if d == 2 else d for d in dims]
    assert cables(p) == sum(size // d * c for d, c in zip(dims, per_dim))
    coords = [p.graph.nodes[name]["coord"] for name in p.devices]
    assert coords == list(itertools.product(*(range(d) for d in dims)))
    for a, b in itertools.product(range(size), repeat=2):
        assert len(p.route(a, b)) == torus_distance(coords[a], coords[b], dims)


def test_torus_with_nodes_routes_through_nic_routers():
    node = NodeSpec(devices=2, layout="pcie_tree", sockets=1, devices_per_switch=2)
    p = torus((3, 3), K80, ETH, node=node)
    assert kinds(p)["router"] == 9
    # device - pcie - cpu - router(nic) ... router - cpu - pcie - device
    assert len(p.route("h0.d0", "h4.d1")) == 3 + 2 + 3
    with pytest.raises(InputError) as e:
        torus((3, 3), K80, ETH, node=NodeSpec(devices=2, layout="ports"))
    assert e.value.path == ("node", "layout")
    with pytest.raises(InputError) as e:
        torus((3, 3), K80, ETH, node=NodeSpec(devices=2, layout="crossbar", nics=2))
    assert e.value.path == ("node", "nics")
    with pytest.raises(InputError) as e:
        torus((3, 0), K80, ETH)
    assert e.value.path == ("dims", 1)


# -- dragonfly ----------------------------------------------------------------------------
def groups_of(p: Platform, route) -> list[int]:
    out = []
    for name in route:
        data = p.graph.nodes[name]
        if data["kind"] == "router":
            out.append(data["group"])
    return out


@pytest.mark.parametrize("arrangement", ["relative", "absolute"])
@pytest.mark.parametrize("G,a,p_,h", [(5, 4, 2, 1), (9, 4, 2, 2), (4, 2, 3, 3), (3, 6, 1, 1)])
def test_dragonfly_structure(arrangement, G, a, p_, h):
    p = dragonfly(G, a, p_, K80, ETH, PCIE, CAT.link("aries_global"),
                  global_links_per_router=h, arrangement=arrangement)
    assert kinds(p) == {"router": G * a, "device": G * a * p_}
    glinks = dragonfly_global_links(G, a, h, arrangement)
    # every router uses at most h global ports, every pair of groups is connected
    ports = Counter((g, r) for g, r, _, _ in glinks) + Counter((t, s) for _, _, t, s in glinks)
    assert max(ports.values()) <= h
    pairs = Counter((g, t) for g, _, t, _ in glinks)
    assert set(pairs) == {(g, t) for g in range(G) for t in range(g + 1, G)}
    # P ports per group, G-1 targets: floor(P / (G-1)) full copies always fit on both sides
    assert min(pairs.values()) >= (a * h) // (G - 1)
    if a * h == G - 1:
        assert len(glinks) == G * (G - 1) // 2
    local = G * a * (a - 1) // 2
    assert cables(p) == G * a * p_ + local + len(set(glinks))


def test_dragonfly_minimal_routes_take_one_global_hop():
    G, a, hp = 9, 4, 2
    p = dragonfly(G, a, hp, K80, ETH, PCIE, CAT.link("aries_global"),
                  global_links_per_router=2)
    for s, d in itertools.product(range(0, G * a * hp, 3), repeat=2):
        names = p.route_nodes(s, d)
        gs = groups_of(p, names)
        hops = link_kinds(p, s, d)
        if s == d:
            continue
        if s // hp == d // hp:
            assert len(hops) == 2
        elif s // (a * hp) == d // (a * hp):
            assert len(hops) == 3 and set(gs) == {s // (a * hp)}
        else:
            assert hops.count("aries_global") == 1 and len(hops) <= 5
            assert gs[0] == s // (a * hp) and gs[-1] == d // (a * hp)
            assert p.route_cost(s, d) == len(hops) + 2  # global links cost 3


def test_dragonfly_hop_count_routing_would_take_two_global_links():
    """Why global links cost 3: with unit costs some routes hop through a third group."""
    args = (9, 4, 2, K80, ETH, PCIE, CAT.link("aries_global"))
    unit = dragonfly(*args, global_links_per_router=2, global_cost=1)
    two = [(s, d) for s, d in itertools.product(range(72), repeat=2)
           if link_kinds(unit, s, d).count("aries_global") > 1]
    assert two, "expected hop-count routing to use two global links somewhere"


def test_dragonfly_parallel_cables_merge_into_one_trunk():
    p = dragonfly(2, 2, 1, K80, ETH, PCIE, ETH, global_links_per_router=2,
                  arrangement="absolute")
    assert p.graph["g0.r0"]["g1.r0"]["bandwidth"] == pytest.approx(2 * ETH.bandwidth)
    assert p.graph["g0.r1"]["g1.r1"]["bandwidth"] == pytest.approx(2 * ETH.bandwidth)


def test_dragonfly_errors():
    gl = CAT.link("aries_global")
    with pytest.raises(InputError) as e:
        dragonfly(10, 2, 1, K80, ETH, PCIE, gl, global_links_per_router=2)
    assert e.value.path == ("global_links_per_router",)
    with pytest.raises(InputError) as e:
        dragonfly(3, 2, 1, K80, ETH, PCIE, gl, arrangement="relatve")
    assert e.value.path == ("arrangement",) and "did you mean 'relative'" in str(e.value)


# -- machines with several devices ---------------------------------------------------------
THEANO = NodeSpec(devices=8, layout="pcie_tree", sockets=2, devices_per_switch=2, nics=0)


def test_pcie_tree_theano_node_shape():
    p = single_node(K80, THEANO)
    assert kinds(p) == {"device": 8, "pcie": 4, "cpu": 2}
    assert cables(p) == 8 + 4 + 1
    assert [p.host(r) for r in range(8)] == [0] * 8
    # two dies of a board: through their PCIe switch only
    assert p.route_nodes(0, 1) == ["h0.d0", "h0.pcie0", "h0.d1"]
    # boards 0 and 1 share socket 0; boards 2 and 3 are behind socket 1
    assert p.route_nodes(0, 2) == ["h0.d0", "h0.pcie0", "h0.cpu0", "h0.pcie1", "h0.d2"]
    assert link_kinds(p, 0, 4) == ["pcie3x16", "pcie3x16", "qpi", "pcie3x16", "pcie3x16"]
    assert "qpi" not in link_kinds(p, 0, 3)


def test_pcie_board_uplink_is_shared_by_its_two_dies():
    p = single_node(K80, THEANO)
    up0 = p.route(0, 2)[1]  # h0.pcie0 -> h0.cpu0
    assert up0 == p.route(1, 3)[1]
    assert p.link_names[up0] == "h0.pcie0->h0.cpu0"


def test_gpudirect_decides_whether_the_network_path_crosses_the_cpu():
    base = dict(devices=4, layout="pcie_tree", sockets=2, devices_per_switch=2, nics=1)
    staged = star(2, K80, ETH, node=NodeSpec(**base, gpudirect=False))
    direct = star(2, K80, ETH, node=NodeSpec(**base, gpudirect=True))
    assert staged.route_nodes("h0.d0", "h1.d0") == [
        "h0.d0", "h0.pcie0", "h0.cpu0", "h0.nic0", "sw", "h1.nic0", "h1.cpu0", "h1.pcie0",
        "h1.d0"]
    assert direct.route_nodes("h0.d0", "h1.d0") == [
        "h0.d0", "h0.pcie0", "h0.nic0", "sw", "h1.nic0", "h1.pcie0", "h1.d0"]
    # devices on the other switch still reach the NIC through the CPU
    assert "h0.cpu0" in direct.route_nodes("h0.d2", "h1.d0")


def test_multiple_nics_spread_over_switches_and_sockets():
    def attached(p: Platform, nic: str) -> set[str]:
        return {v for v in p.graph[nic] if v != "sw"}

    node = NodeSpec(devices=8, layout="pcie_tree", nics=2, gpudirect=True)
    p = star(1, K80, ETH, node=node)
    assert attached(p, "h0.nic0") == {"h0.pcie0"}
    assert attached(p, "h0.nic1") == {"h0.pcie2"}
    node = NodeSpec(devices=8, layout="pcie_tree", nics=2, gpudirect=False)
    p = star(1, K80, ETH, node=node)
    assert attached(p, "h0.nic0") == {"h0.cpu0"}
    assert attached(p, "h0.nic1") == {"h0.cpu1"}
    # device-to-device traffic stays inside the machine
    assert "sw" not in p.route_nodes("h0.d0", "h0.d7")


def test_devices_on_root_complex_when_no_pcie_switch():
    node = NodeSpec(devices=2, layout="pcie_tree", sockets=2, devices_per_switch=0)
    p = single_node(K80, node)
    assert kinds(p) == {"device": 2, "cpu": 2, "nic": 1}
    assert p.route_nodes(0, 1) == ["h0.d0", "h0.cpu0", "h0.cpu1", "h0.d1"]


def test_nvlink_mesh_is_all_to_all():
    p = single_node(K80, NodeSpec(devices=4, layout="nvlink_mesh", nics=0))
    for a, b in itertools.permutations(range(4), 2):
        assert link_kinds(p, a, b) == ["nvlink2"]


def test_hybrid_cube_mesh_is_dgx1():
    p = single_node(K80, NodeSpec(devices=8, layout="hybrid_cube_mesh", nics=4, gpudirect=True))
    nv = [(u, v) for u, v, d in p.graph.edges(data=True) if d["kind"] == "nvlink2" and u < v]
    assert len(nv) == 16
    deg = Counter(u for u, v, d in p.graph.edges(data=True) if d["kind"] == "nvlink2")
    assert set(deg.values()) == {4}
    for a, b in itertools.permutations(range(8), 2):
        linked = (a // 4 == b // 4) or abs(a - b) == 4
        assert link_kinds(p, a, b) == ["nvlink2"] * (1 if linked else 2)
    # each NIC under its own PCIe switch, next to two GPUs
    for j in range(4):
        assert p.route_nodes(f"h0.nic{j}", f"h0.d{2 * j}") == [
            f"h0.nic{j}", f"h0.pcie{j}", f"h0.d{2 * j}"]
    with pytest.raises(InputError) as e:
        NodeSpec(devices=4, layout="hybrid_cube_mesh")
    assert e.value.path == ("devices",)


def test_crossbar_layout_for_many_core_nodes():
    shm = LinkSpec("shm", 5e9, 0.5e-6)
    node = NodeSpec(devices=68, layout="crossbar", internal=shm)
    p = fat_tree(4, K80, ETH, hosts=3, node=node)
    assert p.num_devices == 3 * 68
    assert p.devices[67] == "h0.d67" and p.devices[68] == "h1.d0"
    assert [p.host(r) for r in (0, 67, 68, 203)] == [0, 0, 1, 2]
    assert link_kinds(p, 0, 67) == ["shm", "shm"]
    assert link_kinds(p, 67, 68) == ["shm", "pcie3x16", "eth10g", "eth10g", "pcie3x16", "shm"]


def test_rank_order_is_machine_then_device():
    node = NodeSpec(devices=4, layout="nvlink_mesh")
    p = leaf_spine(2, 1, 2, K80, ETH, ETH, node=node)
    assert p.devices == tuple(f"h{m}.d{d}" for m in range(4) for d in range(4))
    assert p.rank_hosts == tuple(r // 4 for r in range(16))
    assert [p.graph.nodes[d]["slot"] for d in p.devices] == [r % 4 for r in range(16)]


def test_node_spec_validation_names_the_field():
    with pytest.raises(InputError) as e:
        NodeSpec(layout="pcie-tree")
    assert e.value.path == ("layout",) and "did you mean 'pcie_tree'" in str(e.value)
    with pytest.raises(InputError) as e:
        NodeSpec(devices=2)
    assert e.value.path == ("devices",)
    with pytest.raises(InputError) as e:
        NodeSpec(devices=2, layout="crossbar", nics=-1)
    assert e.value.path == ("nics",)
    with pytest.raises(InputError) as e:
        star(2, K80, ETH, node=NodeSpec(devices=2, layout="crossbar", nics=0))
    assert e.value.path == ("node", "nics")


def test_builders_name_nodes_deterministically():
    a = fat_tree(4, K80, ETH, node=NodeSpec(devices=2, layout="pcie_tree"))
    b = fat_tree(4, K80, ETH, node=NodeSpec(devices=2, layout="pcie_tree"))
    assert list(a.graph.nodes) == list(b.graph.nodes)
    assert a.link_names == b.link_names


def test_single_node_needs_an_internal_layout():
    with pytest.raises(InputError) as e:
        single_node(K80, NodeSpec(devices=2, layout="ports"))
    assert e.value.path == ("node", "layout")
    p = single_node(K80, NodeSpec(devices=3, layout="crossbar", nics=0))
    assert p.describe() == "node: 1 bus, 3 devices, 3 links"


# -- the networkx graph, made on first use ---------------------------------------------------
def _tables_view(p: Platform) -> tuple[list, list]:
    """Nodes and edges as the platform's own tables and accessors give them."""
    nodes = [(n, dict(a)) for n, a in p.nodes.items()]
    edges = [(u, v, dict(d)) for u in p.nodes for v, d in p.out_links(u).items()]
    return nodes, edges


@pytest.mark.parametrize("build", [
    lambda: dragonfly(3, 4, 2, K80, ETH, ETH, ETH),
    lambda: torus((3, 4), K80, ETH),
    lambda: fat_tree(4, K80, ETH),
    lambda: single_node(K80, NodeSpec(devices=8, layout="pcie_tree")),
])
def test_graph_is_the_platforms_tables_in_networkx(build):
    """Platform.graph, built lazily, holds exactly the nodes, edges and attributes the
    platform routes and costs with, in the same order; the describe line, specs and hosts
    read before it exists agree with it."""
    p = build()
    before = (p.describe(), [p.spec(d) for d in range(p.num_devices)],
              [p.host(d) for d in range(p.num_devices)], p.meta)
    nodes, edges = _tables_view(p)
    g = p.graph
    assert isinstance(g, nx.DiGraph) and p.graph is g  # made once
    assert list(g.nodes(data=True)) == nodes
    assert list(g.edges(data=True)) == edges
    assert dict(g.graph) == p.meta
    assert sorted(d["link"] for _, _, d in g.edges(data=True)) == sorted(
        d["link"] for _, _, d in edges)
    assert before == (p.describe(), [g.nodes[n]["spec"] for n in p.devices],
                      [g.nodes[n]["host"] for n in p.devices], dict(g.graph))
    # a platform made from a networkx graph keeps that very graph
    q = Platform("copy", g, p.devices, [])  # resources are not read by the graph path
    assert q.graph is g and q.describe().split(":", 1)[1] == p.describe().split(":", 1)[1]


def test_a_prediction_does_not_import_networkx():
    """networkx is for whoever asks for Platform.graph: loading the KNL scenario (4,352
    devices) and simulating a point of it must not import it (~0.1 s of every start)."""
    code = ("import sys\n"
            "from clustersim.scenario.schema import load_scenario\n"
            "from clustersim.sim.sweep import simulate_point\n"
            "s = load_scenario('scenarios/knl_4253.yaml', ['run.iterations=1', 'run.warmup=0'])\n"
            "simulate_point(s, s.algorithms[1], 68, 0)\n"
            "print(s.platform.describe())\n"
            "sys.exit(1 if 'networkx' in sys.modules else 0)\n")
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4352 devices" in r.stdout
