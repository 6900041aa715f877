"""Machines 1..n-1 stamped from machine 0 (clustersim.platform.stamp) give the platform that
adding each machine call by call gives: the same nodes and attributes, devices in order, link
resources (names, rates, latencies, classes, transports), edge rows and routes, for every node
layout and the topologies that plug machines in."""

from __future__ import annotations

import dataclasses

import pytest

import clustersim.platform.stamp as stamp_mod
from clustersim.catalog import LinkSpec, builtin_catalog
from clustersim.errors import InputError
from clustersim.platform import NodeSpec, dragonfly, fat_tree, leaf_spine, star
from clustersim.platform.builder import PlatformBuilder
from clustersim.platform.fabric import plug_machines

CAT = builtin_catalog()
K80 = CAT.device("k80")
ETH = CAT.link("eth10g")
HALF = dataclasses.replace(ETH, name="half", duplex=False)

NODES = {
    "single": NodeSpec(),
    "ports": NodeSpec(devices=3, layout="ports"),
    "crossbar": NodeSpec(devices=4, layout="crossbar", nics=2),
    "pcie_tree": NodeSpec(devices=4, layout="pcie_tree"),
    "nvlink_mesh": NodeSpec(devices=4, layout="nvlink_mesh", gpudirect=True),
    "hybrid_cube_mesh": NodeSpec(devices=8, layout="hybrid_cube_mesh"),
}

BUILDS = {
    "star": lambda node, link: star(5, K80, link, node=node),
    "leaf_spine": lambda node, link: leaf_spine(2, 2, 3, K80, link, uplink=ETH, node=node,
                                                   cables=2),
    "fat_tree": lambda node, link: fat_tree(4, K80, link, node=node, hosts=7),
    "dragonfly": lambda node, link: dragonfly(3, 2, 2, K80, link, ETH, ETH, node=node),
}


def _summary(p) -> tuple:
    cols = p._edge_cols  # noqa: SLF001
    return (p.devices, p.link_names, p.link_kind, p.link_transport, p.capacity.tolist(),
            p.latency.tolist(), [c.tolist() for c in cols], dict(p.nodes), p.describe(),
            p.rank_hosts, [p.route(0, d) for d in range(p.num_devices)])


def _call_by_call(monkeypatch: pytest.MonkeyPatch, build):
    with monkeypatch.context() as m:
        m.setattr(stamp_mod, "template", lambda *a, **k: None)
        return build()


@pytest.mark.parametrize("layout", sorted(NODES))
@pytest.mark.parametrize("topology", sorted(BUILDS))
def test_stamped_platform_equals_the_one_built_call_by_call(monkeypatch, topology, layout):
    node = NODES[layout]
    if topology == "dragonfly" and layout == "ports":
        pytest.skip("a direct network takes one port per machine")
    link = HALF if topology == "star" else ETH  # a half-duplex plug cable: one shared resource
    calls = [0]
    real = stamp_mod.stamp

    def counting(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(stamp_mod, "stamp", counting)
    stamped = BUILDS[topology](node, link)
    assert calls[0] == 1  # the fast path was taken
    plain = _call_by_call(monkeypatch, lambda: BUILDS[topology](node, link))
    assert _summary(stamped) == _summary(plain)
    # the adjacency made on first use agrees too (parallel lists included)
    assert stamped._tables.adj == plain._tables.adj  # noqa: SLF001


def test_stamp_refuses_what_add_would_refuse():
    b = PlatformBuilder("x")
    b.add_node("sw")
    b.add_node("h2.d0")  # taken: machine 2's first device
    with pytest.raises(InputError, match="duplicate node 'h2.d0'"):
        plug_machines(b, 3, K80, NodeSpec(devices=2, layout="ports"), ETH, lambda i: "sw")
    b = PlatformBuilder("y")
    b.add_node("sw")
    with pytest.raises(InputError, match="unknown node 'nowhere'"):
        plug_machines(b, 3, K80, NodeSpec(), ETH, lambda i: "sw" if i == 0 else "nowhere")


def test_parallel_cables_in_a_machine_fall_back_to_adding_each_machine():
    b = PlatformBuilder("z")
    b.add_node("sw")
    mark = stamp_mod.mark(b)
    b.add_node("h0")
    b.add_link("h0", "sw", ETH)
    b.add_device("h0.d0", K80, host=0)
    b.add_link("h0.d0", "h0", LinkSpec(name="l", bandwidth=1e9, latency=0.0))
    b.add_link("h0", "sw", ETH)  # a second, parallel cable: tagged by what came before
    assert stamp_mod.template(b, mark, "h0") is None
    assert b.build().link_names[-2:] == ("h0->sw#1", "sw->h0#1")


def test_a_stamp_past_a_bound_is_refused_before_it_adds_anything():
    """40,000 machines of 6 nodes (one device, 4 NICs, the bus) pass the device bound and
    the host count but not the node bound: the stamp refuses them as add_node would, at once
    rather than after building 33,000 machines."""
    b = PlatformBuilder("big")
    b.add_node("sw")
    node = NodeSpec(devices=1, layout="crossbar", nics=4)
    with pytest.raises(InputError, match="more than 200,000 nodes; make it smaller"):
        plug_machines(b, 40_000, K80, node, ETH, lambda i: "sw")
    assert len(b.nodes) == 7  # the switch and machine 0
