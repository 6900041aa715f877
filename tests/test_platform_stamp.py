"""Stamped machines (PlatformBuilder.stamp/replay) build exactly what adding every machine
link by link builds: same node order and attributes, same adjacency, same link resources in
the same order - for every node layout and every topology that plugs machines."""

from __future__ import annotations

import pytest

import clustersim.platform.fabric as fabric
import clustersim.platform.switched as switched
from clustersim.catalog import builtin_catalog
from clustersim.errors import InputError
from clustersim.platform.builder import PlatformBuilder
from clustersim.platform.node import LAYOUTS, NodeSpec, add_machine

CAT = builtin_catalog()
DEV, LINK = CAT.devices["v100"], CAT.links["ib_edr"]


def _link_by_link(b, count, device, node, link, switch_of, cost=1):
    out = []
    for i in range(count):
        m = add_machine(b, i, node, device)
        for port in m.ports:
            b.add_link(port, switch_of(i), link, cost=cost)
        out.append(m)
    return out


def _tables(p):
    t = p._tables
    return (list(t.nodes.items()), [(u, list(v.items())) for u, v in t.adj.items()],
            p.devices, p.link_names, p.link_kind, p.link_transport, p.capacity.tolist(),
            p.latency.tolist(), p.rank_hosts)


def _node(layout: str) -> NodeSpec:
    if layout == "single":
        return NodeSpec(layout="single")
    devices = 8 if layout == "hybrid_cube_mesh" else 4
    return NodeSpec(devices=devices, layout=layout, nics=2 if layout != "ports" else 0)


BUILDS = {
    "star": lambda node: switched.star(5, DEV, LINK, node=node),
    "leaf_spine": lambda node: switched.leaf_spine(2, 2, 3, DEV, LINK, LINK, node=node,
                                                   cables=2),
    "fat_tree": lambda node: switched.fat_tree(4, DEV, LINK, hosts=7, node=node),
    "dragonfly": lambda node: switched.dragonfly(3, 2, 2, DEV, LINK, LINK, LINK, node=node),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("topology", sorted(BUILDS))
def test_stamped_platform_equals_the_link_by_link_one(topology, layout, monkeypatch):
    node = _node(layout)
    stamped = BUILDS[topology](node)
    monkeypatch.setattr(switched, "plug_machines", _link_by_link)
    reference = BUILDS[topology](node)
    assert _tables(stamped) == _tables(reference)
    assert stamped.num_hosts == reference.num_hosts > 1
    # routes agree too (they depend only on the tables, but this is what users see)
    a, b = stamped.devices[0], stamped.devices[-1]
    assert stamped.route(a, b) == reference.route(a, b)


def test_replay_keeps_the_bounds(monkeypatch):
    """A stamped machine past the node bound is refused with the builder's own message."""
    monkeypatch.setattr("clustersim.platform.builder.MAX_NODES", 25)
    b = PlatformBuilder("t")
    b.add_node("sw")
    with pytest.raises(InputError, match="more than 25 nodes"):
        fabric.plug_machines(b, 5, DEV, NodeSpec(devices=4, layout="crossbar", nics=1), LINK,
                             lambda i: "sw")


def test_a_stamp_must_be_one_self_contained_machine():
    b = PlatformBuilder("t")
    b.add_node("sw")
    mark = b.mark()
    b.add_device("h0.d0", DEV, host=0)
    b.add_link("h0.d0", "sw", LINK)
    with pytest.raises(ValueError, match="stay inside"):
        b.stamp(mark, "h0")
