"""The builder keeps links as columns and the platform makes networkx's adjacency dicts only on
first use: the dicts it makes must be the ones an eager builder would have kept (attributes,
resource ids, parallel cables, half-duplex sharing), and a platform must pickle before them."""

from __future__ import annotations

import pickle

from clustersim.catalog import builtin_catalog
from clustersim.platform.builder import LinkColumns, PlatformBuilder, _LinkRes
from clustersim.platform.model import Platform

K80 = builtin_catalog().device("k80")


def _small() -> Platform:
    b = PlatformBuilder("cols")
    for name in ("a", "b"):
        b.add_device(name, K80, host=0 if name == "a" else 1)
    b.add_node("sw")
    b.add_link("a", "sw", bandwidth=1e9, latency=1e-6, kind="x")           # ids 0, 1
    b.add_link("sw", "b", bandwidth=2e9, latency=2e-6, kind="y", cost=3)   # ids 2, 3
    b.add_link("b", "sw", bandwidth=4e9, latency=0.0, kind="z", duplex=False)  # id 4, shared
    return b.build()


def test_adjacency_made_on_first_use_matches_the_links_added():
    p = _small()
    assert p._tables._adj is None  # noqa: SLF001 - not made by building or predicting
    assert p.describe() == "cols: 2 devices, 1 switch, 3 links"
    assert p._tables._adj is None  # noqa: SLF001 - describe counts the edge table
    assert p.out_links("a") == {"sw": {"bandwidth": 1e9, "latency": 1e-6, "link": 0,
                                       "kind": "x", "cost": 1}}
    sw_b = p.out_links("sw")["b"]
    assert (sw_b["link"], sw_b["cost"], sw_b["kind"]) == (2, 3, "y")
    # the half-duplex cable added from b's side is the pair's second cable: one resource
    # (id 4) for both directions, in the first cable's parallel list on both sides
    assert [x["link"] for x in sw_b["parallel"]] == [4]
    assert [x["link"] for x in p.out_links("b")["sw"]["parallel"]] == [4]
    assert p.out_links("b")["sw"]["link"] == 3
    assert p.link_names == ("a->sw", "sw->a", "sw->b", "b->sw", "b<->sw#1")
    assert p.link_kind == ("x", "x", "y", "y", "z")
    assert list(p.capacity) == [1e9, 1e9, 2e9, 2e9, 4e9]
    assert sum(1 for _ in p.cables()) == 6
    assert p.graph.number_of_edges() == 4  # networkx keeps one edge per ordered pair


def test_platform_pickles_before_its_adjacency_is_made():
    p = pickle.loads(pickle.dumps(_small()))
    assert p._tables._adj is None  # noqa: SLF001
    assert p.route("a", "b") == (0, 4)  # the shared cable costs 1, the other 3
    assert p.out_links("sw")["a"]["link"] == 1


def test_a_list_of_resources_and_columns_give_the_same_platform():
    q = _small()
    res = [_LinkRes(n, c, lat, k, t) for n, c, lat, k, t in
           zip(q.link_names, q.capacity, q.latency, q.link_kind, q.link_transport)]
    for links in (res, LinkColumns(*map(list, zip(*((r.name, r.bandwidth, r.latency, r.kind,
                                                          r.transport) for r in res))))):
        p = Platform("again", q.graph, q.devices, links)
        assert p.link_names == q.link_names
        assert list(p.capacity) == list(q.capacity)
        assert p.route("b", "a") == q.route("b", "a")
