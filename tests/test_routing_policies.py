"""Routing policies (ecmp + seed, dmodk, smodk, valiant, ugal) and parallel links.

Invariants from docs/fabrics.md ("Routing policies"): seed 0 is the routing the simulator
always had; d-mod-k gives distinct destinations under one leaf distinct uplinks and spreads a
shift permutation evenly; s-mod-k is its mirror image; Valiant goes through a third group in
at most two global hops; UGAL is minimal on an idle network and leaves a loaded minimal path.
"""

from __future__ import annotations

import hashlib

import pytest
import simpy

from clustersim.catalog import LinkSpec, builtin_catalog
from clustersim.errors import InputError
from clustersim.network.adaptive import AdaptiveFlowNetwork
from clustersim.network.flow import FlowNetwork
from clustersim.platform.builders import dragonfly, fat_tree, leaf_spine
from clustersim.platform.describe import build_platform
from clustersim.platform.policies import RoutingSpec, parse_routing

CAT = builtin_catalog()
DEV = CAT.device("k80")
ETH = CAT.link("eth10g")
SLOW = LinkSpec("up1g", bandwidth=1.25e8, latency=1e-6)


def _digest(p) -> str:
    h = hashlib.sha256()
    for s in range(p.num_devices):
        for t in range(p.num_devices):
            h.update(repr(p.route(s, t)).encode())
    return h.hexdigest()[:16]


# digests of every device pair's route, computed with the code before routing policies
# existed (commit c9649fa): seed 0 must keep them
GOLDEN = {"fat_tree4": "ab5a5f1526acf27f", "leaf_spine": "7126594104f4f2ea",
          "dragonfly": "8d2bff1316118644"}


def _platforms():
    return {"fat_tree4": fat_tree(4, DEV, ETH), "leaf_spine": leaf_spine(4, 2, 4, DEV, ETH, ETH),
            "dragonfly": dragonfly(5, 4, 2, DEV, ETH, ETH, ETH)}


def test_ecmp_seed_zero_keeps_the_old_routes():
    for name, p in _platforms().items():
        assert _digest(p) == GOLDEN[name]
        assert _digest(p.with_routing(RoutingSpec("ecmp", 0))) == GOLDEN[name]
        assert _digest(p.with_routing(RoutingSpec("minimal"))) == GOLDEN[name]


def test_other_seeds_change_some_routes_and_all_stay_minimal():
    p = fat_tree(4, DEV, ETH)
    for seed in (1, 7, 12345):
        q = p.with_routing(RoutingSpec("ecmp", seed))
        changed = 0
        for s in range(16):
            for t in range(16):
                r = q.route(s, t)
                assert len(r) == p.route_cost(s, t)  # unit costs: minimal = shortest
                changed += r != p.route(s, t)
        assert changed > 0


def _uplink(p, s, t) -> str:
    nodes = p.route_nodes(s, t)
    r = p.route(s, t)
    return p.link_names[r[1]] if len(nodes) > 3 else ""


def test_dmodk_gives_distinct_destinations_under_one_leaf_distinct_uplinks():
    p = leaf_spine(4, 2, 4, DEV, ETH, ETH, cables=2).with_routing(RoutingSpec("dmodk"))
    for s in range(16):
        for leaf in range(4):
            if leaf == s // 4:
                continue
            ups = {_uplink(p, s, d) for d in range(4 * leaf, 4 * leaf + 4)}
            assert len(ups) == 4  # 2 spines x 2 cables, one per destination
    q = fat_tree(4, DEV, ETH).with_routing(RoutingSpec("dmodk"))
    for s in range(16):
        dests = [d for d in range(16) if d // 4 != s // 4 and d // 2 == 2 * (3 - s // 4)]
        assert len({_uplink(q, s, d) for d in dests}) == len(dests)


@pytest.mark.parametrize("shift", [4, 8, 12])
def test_dmodk_spreads_a_shift_permutation_evenly(shift):
    base = leaf_spine(4, 2, 4, DEV, ETH, ETH, cables=2)
    for policy in ("dmodk", "smodk"):
        p = base.with_routing(RoutingSpec(policy))
        load: dict[int, int] = {}
        for s in range(16):
            for lk in p.route(s, (s + shift) % 16):
                load[lk] = load.get(lk, 0) + 1
        assert max(load.values()) == 1  # 4 flows per leaf over 4 uplinks, 4 downlinks
    # hashed ECMP does not: some cable carries several flows (the measured SimGrid gap)
    load = {}
    for s in range(16):
        for lk in base.route(s, (s + 4) % 16):
            load[lk] = load.get(lk, 0) + 1
    assert max(load.values()) > 1


def test_smodk_is_the_mirror_image_of_dmodk():
    for base in (leaf_spine(4, 2, 4, DEV, ETH, ETH, cables=2), fat_tree(4, DEV, ETH)):
        d = base.with_routing(RoutingSpec("dmodk"))
        s = base.with_routing(RoutingSpec("smodk"))
        for a in range(base.num_devices):
            for b in range(base.num_devices):
                assert s.route_nodes(a, b) == d.route_nodes(b, a)[::-1]


def _group(name: str) -> int | None:
    return int(name[1:].split(".")[0]) if name.startswith("g") else None


def test_valiant_goes_through_a_third_group_in_at_most_two_global_hops():
    base = dragonfly(5, 4, 2, DEV, ETH, ETH, ETH)
    p = base.with_routing(RoutingSpec("valiant", 3))
    again = base.with_routing(RoutingSpec("valiant", 3))
    other = base.with_routing(RoutingSpec("valiant", 4))
    differs = 0
    for s in range(0, 40, 3):
        for t in range(40):
            if s // 8 == t // 8:
                continue
            nodes = p.route_nodes(s, t)
            groups = [g for g in map(_group, nodes) if g is not None]
            hops = sum(1 for a, b in zip(groups, groups[1:]) if a != b)
            assert hops == 2 and len(set(groups)) == 3  # source, intermediate, destination
            assert len(nodes) - 1 <= 7  # host, local, global, local, global, local, host
            assert len(nodes) - 1 >= len(base.route(s, t))
            assert p.route(s, t) == again.route(s, t)  # deterministic
            differs += p.route(s, t) != other.route(s, t)
    assert differs > 0


def test_ugal_is_minimal_when_idle_and_leaves_a_loaded_global_link():
    p = dragonfly(5, 4, 2, DEV, ETH, ETH, ETH).with_routing(RoutingSpec("ugal"))
    assert p.adaptive and not dragonfly(5, 4, 2, DEV, ETH, ETH, ETH).adaptive
    load = [0] * p.num_links
    minimal = p.route(0, 12)
    assert p.choose_route(0, 12, load) == minimal
    glob = next(lk for lk in minimal if p.link_names[lk].startswith("g0.")
                and "->g1." in p.link_names[lk])
    load[glob] = 5
    chosen = p.choose_route(0, 12, load)
    assert chosen != minimal and glob not in chosen
    groups = {_group(n) for n in p.route_nodes(0, 12)} - {None}
    assert groups == {0, 1}
    # a loaded host link is shared by both routes: hops decide, minimal wins
    load = [0] * p.num_links
    load[minimal[0]] = 3
    assert p.choose_route(0, 12, load) == minimal


def test_ugal_flows_beat_minimal_and_valiant_on_group_to_group_traffic():
    base = dragonfly(5, 4, 2, DEV, ETH, ETH, ETH)
    pairs = [(i, 8 + i) for i in range(8)]
    times = {}
    for policy in ("minimal", "valiant", "ugal"):
        p = base.with_routing(RoutingSpec(policy))
        env = simpy.Environment()
        net = FlowNetwork.for_platform(env, p)
        assert (type(net) is AdaptiveFlowNetwork) == (policy == "ugal")
        if policy == "ugal":
            net.transfer_pairs(pairs, 1e8)
        else:
            net.transfer_all([p.route(a, b) for a, b in pairs], 1e8)
        env.run()
        times[policy] = env.now
        if policy == "ugal":
            assert not any(net.load)  # every count went back to zero
    assert times["ugal"] < times["valiant"] < times["minimal"]


def test_two_cables_double_the_leaf_spine_capacity_for_two_flows():
    nbytes = 1e7
    times = {}
    for cables in (1, 2):
        p = leaf_spine(2, 1, 2, DEV, ETH, SLOW, cables=cables)
        p = p.with_routing(RoutingSpec("dmodk"))
        assert p.num_links == 2 * (4 + 2 * cables)
        env = simpy.Environment()
        net = FlowNetwork.for_platform(env, p)
        routes = [p.route(0, 2), p.route(1, 3)]
        net.transfer_all(routes, nbytes)
        env.run()
        lat = p.path_latency(routes[0])
        # closed form: the uplink (1 Gb/s) is the bottleneck, shared by 2 flows or not
        assert env.now == pytest.approx(lat + nbytes * (3 - cables) / SLOW.bandwidth, rel=1e-9)
        times[cables] = env.now - lat
    assert times[1] == pytest.approx(2 * times[2], rel=1e-9)


def test_oversubscription_counts_every_cable():
    p = leaf_spine(2, 2, 8, DEV, ETH, oversubscription=2.0, cables=2)
    assert p.meta["oversubscription"] == pytest.approx(2.0)
    assert p.meta["cables"] == 2
    up = [lk for lk, n in enumerate(p.link_names) if n.startswith("leaf0->spine0")]
    assert len(up) == 2 and p.capacity[up[0]] == pytest.approx(8 * ETH.bandwidth / 8)


def test_explicit_parallel_links_parse_and_are_separate_choices():
    raw = {"topology": "explicit", "device": "k80", "link": "eth10g",
           "nodes": [{"name": f"a{i}", "host": i} for i in range(2)]
           + [{"name": "b0", "host": 2}, {"name": "b1", "host": 3}, {"name": "s0"},
              {"name": "s1"}],
           "links": [["a0", "s0"], ["a1", "s0"], ["b0", "s1"], ["b1", "s1"],
                     ["s0", "s1"], {"between": ["s0", "s1"], "link": "eth25g"},
                     ["a0", "s0"]],
           "routing": "dmodk"}
    p = build_platform(raw, CAT)
    names = p.link_names
    assert "s0->s1#1" in names and "a0->s0#1" in names
    assert p.capacity[names.index("s0->s1#1")] == CAT.link("eth25g").bandwidth
    used = {names[p.route(s, t)[-2]] for s in range(2) for t in (2, 3)}
    assert used == {"s0->s1", "s0->s1#1"}  # two destinations: both cables
    # a host with two cables stays a routing choice (not collapsed as a stub)
    firsts = {names[p.route(0, t)[0]] for t in (1, 2, 3)}
    assert firsts == {"a0->s0", "a0->s0#1"}
    assert "s1->s0#1" in names and p.describe().endswith("7 links")


def test_routing_field_errors_name_the_field_and_the_choices():
    base = {"topology": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
            "device": "k80", "host_link": "eth10g", "uplink": "eth10g"}
    for bad, where, what in (
            ({"policy": "dmodkk"}, "platform.routing.policy", "did you mean 'dmodk'"),
            ("valiant", "platform.routing.policy", "applies to dragonfly"),
            ({"policy": "ecmp", "sed": 1}, "platform.routing.sed", "unknown routing field"),
            ({"seed": -1}, "platform.routing.seed", "from 0 to"),
            ({"seed": True}, "platform.routing.seed", "from 0 to"),
            (["ecmp"], "platform.routing", "policy name")):
        with pytest.raises(InputError, match=what) as exc:
            build_platform({**base, "routing": bad}, CAT)
        assert where in str(exc.value)
    p = build_platform({**base, "routing": {"policy": "smodk", "seed": 2.0}}, CAT)
    assert p.routing == RoutingSpec("smodk", 2)
    assert parse_routing("ugal", "dragonfly").adaptive
    with pytest.raises(InputError, match="routing policy 'ugal' applies"):
        leaf_spine(2, 2, 2, DEV, ETH, ETH).with_routing(RoutingSpec("ugal"))


def test_routing_error_in_a_topology_file_names_file_and_line(tmp_path):
    from clustersim.platform.describe import load_platform

    f = tmp_path / "fab.yaml"
    f.write_text("topology: leaf_spine\nleaves: 2\nspines: 2\nhosts_per_leaf: 2\n"
                 "device: k80\nhost_link: eth10g\nuplink: eth10g\ncables: 2\n"
                 "routing: {policy: fancy}\n")
    with pytest.raises(InputError) as exc:
        load_platform(f)
    text = str(exc.value)
    assert "fab.yaml:9" in text and "routing.policy" in text and "allowed: dmodk" in text


def test_retune_keeps_parallel_cables_apart():
    from clustersim.calibration.retune import retune_platform

    p = leaf_spine(2, 1, 2, DEV, ETH, SLOW, cables=2)
    q = retune_platform(p, links={"up1g": {"bandwidth": 1e9, "duplex": False}})
    assert q.num_links == p.num_links - 4  # 4 uplink cables, each now one shared resource
    assert sorted(n for n in q.link_names if "<->" in n) == [
        "leaf0<->spine0", "leaf0<->spine0#1", "leaf1<->spine0", "leaf1<->spine0#1"]
    assert len({q.route(0, 2)[1], q.route(1, 3)[1]}) in (1, 2)


def test_platforms_under_a_policy_pickle_with_their_routes():
    import pickle

    for base, policies in ((leaf_spine(4, 2, 4, DEV, ETH, ETH, cables=2), ("ecmp", "dmodk")),
                           (dragonfly(5, 4, 2, DEV, ETH, ETH, ETH), ("valiant", "ugal"))):
        for policy in policies:
            p = base.with_routing(RoutingSpec(policy, 3))
            q = pickle.loads(pickle.dumps(p))  # process pools may pickle scenarios
            n = p.num_devices
            assert [q.route(0, t) for t in range(n)] == [p.route(0, t) for t in range(n)]
            assert q.adaptive == p.adaptive and q.routing == p.routing
