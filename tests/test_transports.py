"""Transports (catalog): a message limited by a link of transport T costs overhead_T + the hop
latencies + n / (B * efficiency_T); an explicit network.overhead / efficiency wins."""

from dataclasses import replace

import pytest
import simpy

from clustersim.catalog import builtin_catalog
from clustersim.errors import InputError
from clustersim.network.flow import FlowNetwork
from clustersim.network.params import NetworkParams
from clustersim.scenario.schema import parse_scenario

MB = 1e6


def _scenario(network=None, link=None, catalog=None):
    """Two GPUs joined by one explicit link (default: 25 GbE, transport tcp_25g)."""
    raw = {
        "platform": {"topology": "explicit",
                     "nodes": [{"name": "a", "kind": "device", "device": "v100"},
                               {"name": "b", "kind": "device", "device": "v100"}],
                     "links": [{"between": ["a", "b"], "link": link or "eth25g"}]},
        "benchmark": {"op": "allreduce", "algorithms": ["ring"], "ranks": [2], "sizes": ["1 MB"]},
    }
    if network is not None:
        raw["network"] = network
    if catalog is not None:
        raw["catalog"] = catalog
    return parse_scenario(raw)


def _one_message(scn, nbytes):
    env = simpy.Environment()
    net = FlowNetwork.for_platform(env, scn.platform, scn.network)
    route = scn.platform.route(0, 1)
    ev = net.transfer(route, nbytes)
    env.run(ev)
    return env.now, scn.platform.path_latency(route)


def test_catalog_transports_have_sources_and_links_name_them():
    cat = builtin_catalog()
    for name in ("tcp_10g", "tcp_25g", "tcp_100g", "roce", "ib_verbs", "omnipath", "nvlink1",
                 "nvlink2", "nvlink3", "nccl_nvlink3", "nccl_nvlink4", "pcie_switch_p2p",
                 "pcie_rc_p2p", "socket_link"):
        t = cat.transport(name)
        assert 0 < t.efficiency <= 1 and t.overhead >= 0 and t.source
    assert cat.link("eth25g").transport == "tcp_25g"
    assert cat.link("pcie3x16").cpu_transport == "pcie_rc_p2p"


@pytest.mark.parametrize("link, transport", [("eth25g", "tcp_25g"), ("ib_edr", "ib_verbs"),
                                             ("nvlink2", "nvlink2"), ("opa100", "omnipath")])
def test_lone_flow_closed_form(link, transport):
    scn = _scenario(link=link)
    cat = builtin_catalog()
    t, lk = cat.transport(transport), cat.link(link)
    n = 8 * MB
    got, hops = _one_message(scn, n)
    fetch = t.dma_read if n > t.inline else 0.0  # an RDMA NIC reads a large payload first
    assert got == pytest.approx(t.overhead + fetch + hops + n / (lk.bandwidth * t.efficiency),
                                rel=1e-9)


def test_rdma_message_above_the_inline_size_pays_the_dma_read():
    """InfiniBand verbs: up to ``inline`` bytes the payload rides in the work request; one
    byte more and the HCA must read it across PCIe first - a lone message then takes exactly
    ``dma_read`` (and one byte's transfer) longer, and the first-byte latency that the
    analytic point-to-point model charges (``message_plan``) grows by ``dma_read``."""
    scn = _scenario(link="ib_edr")
    t = builtin_catalog().transport("ib_verbs")
    assert t.inline == 188 and t.dma_read == pytest.approx(0.45e-6)
    small, _ = _one_message(scn, t.inline)
    large, _ = _one_message(scn, t.inline + 1)
    byte = 1 / (builtin_catalog().link("ib_edr").bandwidth * t.efficiency)
    assert large - small == pytest.approx(t.dma_read + byte, rel=1e-6)
    net = FlowNetwork.for_platform(simpy.Environment(), scn.platform, scn.network)
    route = scn.platform.route(0, 1)
    lat = [net.message_plan(route, n)[0] for n in (t.inline, t.inline + 1)]
    assert lat[1] - lat[0] == pytest.approx(t.dma_read, rel=1e-9)


def test_explicit_overhead_drops_the_dma_read_step():
    """A hand-fitted per-message cost is every message's (it already contains the read)."""
    scn = _scenario({"overhead": "2 us"}, link="ib_edr")
    small, hops = _one_message(scn, 100)
    large, _ = _one_message(scn, 1000)
    bw = builtin_catalog().link("ib_edr").bandwidth * builtin_catalog().transport(
        "ib_verbs").efficiency
    assert small == pytest.approx(2e-6 + hops + 100 / bw, rel=1e-9)
    assert large == pytest.approx(2e-6 + hops + 1000 / bw, rel=1e-9)


@pytest.mark.parametrize("field, value, words", [("inline", "many", "size"),
                                                 ("dma_read", "-1 us", "time"),
                                                 ("dma_read", "fast", "time")])
def test_bad_rdma_fields_are_input_errors(field, value, words):
    cat = {"transports": {"mine": {"efficiency": 0.9, "overhead": "1 us", field: value}}}
    with pytest.raises(InputError) as exc:
        _scenario(catalog=cat)
    assert field in str(exc.value) and words in str(exc.value)


def test_transport_rows_of_three_or_five():
    base = NetworkParams(transports=(("x", 1e-6, 0.9),))
    full = NetworkParams(transports=(("x", 1e-6, 0.9, 0.0, 0.0),))
    assert base.transports == full.transports and base.table("@x") == full.table("@x")
    two = NetworkParams(transports=(("x", 1e-6, 0.9, 100.0, 5e-7),))
    assert [s.overhead for s in two.table("@x")] == pytest.approx([1e-6, 1.5e-6])
    assert two.segment(100, "@x").overhead == pytest.approx(1e-6)
    assert two.segment(100.5, "@x").overhead == pytest.approx(1.5e-6)
    with pytest.raises(ValueError):
        NetworkParams(transports=(("x", 1e-6, 0.9, 100.0),))
    with pytest.raises(ValueError):
        NetworkParams(transports=(("x", 1e-6, 0.9, -1.0, 1e-7),))


def test_explicit_network_fields_win():
    n = 8 * MB
    bw = builtin_catalog().link("eth25g").bandwidth
    tr = builtin_catalog().transport("tcp_25g")
    both, hops = _one_message(_scenario({"overhead": "2 us", "efficiency": 0.5}), n)
    assert both == pytest.approx(2e-6 + hops + n / (bw * 0.5), rel=1e-9)
    eff_only, _ = _one_message(_scenario({"efficiency": 0.5}), n)
    assert eff_only == pytest.approx(tr.overhead + hops + n / (bw * 0.5), rel=1e-9)
    ovh_only, _ = _one_message(_scenario({"overhead": "2 us"}), n)
    assert ovh_only == pytest.approx(2e-6 + hops + n / (bw * tr.efficiency), rel=1e-9)
    off, _ = _one_message(_scenario({"transports": False}), n)
    assert off == pytest.approx(hops + n / bw, rel=1e-9)


def test_link_and_catalog_override_the_transport():
    n = 8 * MB
    bw = builtin_catalog().link("eth25g").bandwidth
    roce = builtin_catalog().transport("roce")
    per_link, hops = _one_message(_scenario(link={"like": "eth25g", "transport": "roce"}), n)
    assert per_link == pytest.approx(roce.overhead + roce.dma_read + hops
                                     + n / (bw * roce.efficiency))
    mine = {"transports": {"fast": {"efficiency": 1.0, "overhead": "0 us"}},
            "links": {"eth25g": {"transport": "fast"}}}
    by_class, _ = _one_message(_scenario(catalog=mine), n)
    assert by_class == pytest.approx(hops + n / bw)


def test_calibrated_protocol_table_beats_the_transport():
    from clustersim.network.params import Segment
    scn = _scenario()
    tr = builtin_catalog().transport("tcp_25g")
    params = NetworkParams(transports=(("tcp_25g", tr.overhead, tr.efficiency),),
                           protocols={"eth25g": (Segment(0, 1e-6, 0.7),)})
    keys = params.platform_keys(scn.platform)
    assert set(keys) == {"eth25g"}


@pytest.mark.parametrize("rc_efficiency", [None, 0.6, 0.95])
def test_bottleneck_is_the_lowest_achievable_bandwidth(rc_efficiency):
    """GPUs under one PCIe switch: the switch transport; across the root complex the path has
    switch links and root-port links, and the one with the lower achievable rate decides -
    with the catalog's figures (0.86 vs 0.87: the switch), and with the root complex made
    slower (0.6: older chipsets) or faster (0.95) by a catalog override."""
    raw = {"platform": {"topology": "node", "device": "v100_pcie",
                        "node": {"devices": 4, "layout": "pcie_tree", "sockets": 1,
                                 "devices_per_switch": 2, "nics": 0}},
           "benchmark": {"op": "allreduce", "algorithms": ["ring"], "ranks": [2],
                         "sizes": ["1 MB"]}}
    cat = builtin_catalog()
    sw, rc = cat.transport("pcie_switch_p2p"), cat.transport("pcie_rc_p2p")
    if rc_efficiency is not None:
        raw["catalog"] = {"transports": {"pcie_rc_p2p": {
            "efficiency": rc_efficiency, "overhead": f"{rc.overhead * 1e6} us"}}}
        rc = replace(rc, efficiency=rc_efficiency)
    scn = parse_scenario(raw)
    bw = cat.link("pcie3x16").bandwidth
    n = 16 * MB
    for dst, t in ((1, sw), (2, min(sw, rc, key=lambda x: x.efficiency))):
        env = simpy.Environment()
        net = FlowNetwork.for_platform(env, scn.platform, scn.network)
        route = scn.platform.route(0, dst)
        env.run(net.transfer(route, n))
        want = t.overhead + scn.platform.path_latency(route) + n / (bw * t.efficiency)
        assert env.now == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("catalog, where", [
    ({"links": {"eth25g": {"transport": "tcp_52g"}}}, "unknown transport"),
    ({"transports": {"x": {"efficiency": 1.5, "overhead": "1 us"}}}, "efficiency"),
    ({"transports": {"x": {"efficiency": 0.5}}}, "needs fields"),
    ({"transports": {"x": {"eficiency": 0.5, "overhead": "1 us"}}}, "did you mean"),
])
def test_bad_transports(catalog, where):
    with pytest.raises(InputError, match=where) as exc:
        _scenario(catalog=catalog)
    assert "catalog" in str(exc.value)


def test_omnipath_efficiency_is_the_published_stream_rate():
    """The catalog's Omni-Path efficiency is the one measured figure it cites: osu_mbw_mr,
    1 pair, window 64, 4 MiB messages, 12,380.57 MB/s (10^6 B/s) on a 12.5 GB/s link
    (H. Pritchard's LANL Omni-Path run, docs/references.md), within 0.5%."""
    cat = builtin_catalog()
    published = 12_380.57e6 / cat.link("opa100").bandwidth
    assert cat.transport("omnipath").efficiency == pytest.approx(published, rel=5e-3)
    assert "hppritcha" in cat.transport("omnipath").source


def test_tcp_100g_efficiency_is_inside_the_published_single_stream_range():
    """ESnet's 'Performance Expectations for a 100G Host': one TCP stream gets 15-35 Gb/s
    (docs/references.md); the catalog takes the middle, and a value outside the range would
    be a figure nobody measured."""
    cat = builtin_catalog()
    eff = cat.transport("tcp_100g").efficiency
    line = cat.link("eth100g").bandwidth * 8  # bit/s
    assert 15e9 <= eff * line <= 35e9
    assert eff == pytest.approx((15e9 + 35e9) / 2 / line)


def test_explicit_efficiency_keeps_the_transports_own_rates_for_the_bottleneck():
    """An explicit efficiency sets what every message drains at, but which link limits a
    route is still decided on the transports' own achievable rates (a scenario's efficiency
    is one number for all links; the ranking between transports is the catalog's)."""
    params = NetworkParams(efficiency=0.8, explicit=("efficiency",),
                           transports=(("a", 1e-6, 0.5), ("b", 1e-6, 0.9, 100.0, 5e-7)))
    assert params.weights == {"@a": 0.5, "@b": 0.9}
    assert [s.efficiency for s in params.table("@b")] == [0.8, 0.8]
    assert [s.overhead for s in params.table("@b")] == pytest.approx([1e-6, 1.5e-6])
