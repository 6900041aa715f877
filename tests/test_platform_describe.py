"""Platforms from YAML mappings: every topology, inline specs, and every error's field path."""

from __future__ import annotations

import inspect

import pytest
import yaml

from clustersim.catalog import builtin_catalog
from clustersim.errors import InputError
from clustersim.platform import build_platform, fat_tree, list_topologies, load_platform
from clustersim.platform.builders import TOPOLOGIES

CAT = builtin_catalog()


def build(text: str):
    return build_platform(yaml.safe_load(text), CAT)


def error(text: str) -> InputError:
    with pytest.raises(InputError) as e:
        build(text)
    return e.value


def test_list_topologies_describes_every_builder():
    names = list_topologies()
    assert set(names) == {"star", "leaf_spine", "fat_tree", "dragonfly", "ring", "torus",
                          "node", "explicit"}
    assert all(isinstance(d, str) and 10 < len(d) < 100 for d in names.values())
    assert set(names) == set(TOPOLOGIES)


def test_yaml_matches_python_builder():
    p = build("""
        topology: fat_tree
        k: 4
        device: k80
        link: eth10g
    """)
    q = fat_tree(4, CAT.device("k80"), CAT.link("eth10g"))
    assert p.devices == q.devices and p.link_names == q.link_names
    assert [p.route(0, d) for d in range(16)] == [q.route(0, d) for d in range(16)]
    assert p.name == "fat_tree"


@pytest.mark.parametrize("text,devices", [
    ("{topology: star, hosts: 3, device: k80, link: eth10g}", 3),
    ("{topology: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 3, device: k80, "
     "host_link: eth10g, uplink: eth25g}", 6),
    ("{topology: ring, hosts: 5, device: k80, link: eth10g}", 5),
    ("{topology: torus, dims: [2, 3, 2], device: k80, link: eth10g}", 12),
    ("{topology: dragonfly, groups: 3, routers_per_group: 2, hosts_per_router: 2, device: k80, "
     "host_link: aries, local_link: aries_local, global_link: aries_global}", 12),
    ("{topology: node, device: k80, node: {devices: 4, layout: nvlink_mesh, nics: 0}}", 4),
])
def test_every_topology_builds_from_yaml(text, devices):
    assert build(text).num_devices == devices


def test_inline_specs_units_and_like():
    p = build("""
        topology: star
        hosts: 2
        device: {like: k80, name: k80_boost, peak: 4.37 TFLOP/s}
        link: {bandwidth: 100 Gb/s, latency: 2 us}
        name: mine
    """)
    assert p.name == "mine"
    assert p.spec(0).peak == pytest.approx(4.37e12)
    assert p.spec(0).mem_bw == CAT.device("k80").mem_bw
    assert p.spec(0).name == "k80_boost"
    r = p.route(0, 1)
    assert p.path_bandwidth(r) == pytest.approx(12.5e9)
    assert p.path_latency(r) == pytest.approx(4e-6)
    q = build("{topology: star, hosts: 2, device: k80, link: {like: eth10g, latency: 1 us}}")
    assert q.path_bandwidth(q.route(0, 1)) == CAT.link("eth10g").bandwidth
    assert q.path_latency(q.route(0, 1)) == pytest.approx(2e-6)


def test_node_fields_and_catalog_section():
    p = build("""
        topology: star
        hosts: 2
        device: k80
        link: eth10g
        catalog:
          links:
            myqpi: {bandwidth: 10 GB/s, latency: 0.5 us}
        node:
          devices: 4
          layout: pcie_tree
          sockets: 2
          devices_per_switch: 1
          gpudirect: true
          intersocket: myqpi
          pcie: {like: pcie3x16, bandwidth: 8 GB/s}
          device: p100
    """)
    assert p.num_devices == 8 and p.num_hosts == 2
    assert p.spec(0).name == "p100"
    kinds = [p.link_kind[i] for i in p.route(0, 3)]
    assert "myqpi" in kinds
    assert p.path_bandwidth(p.route(0, 1)) == pytest.approx(8e9)


def test_explicit_topology():
    p = build("""
        topology: explicit
        device: k80
        link: pcie3x16
        nodes:
          - {name: g1, host: 1}
          - {name: g0, device: p100, host: 0}
          - {name: sw, kind: pcie}
          - {name: g2, kind: device}
        links:
          - [g0, sw]
          - [g1, sw, {bandwidth: 5 GB/s, latency: 1 us}]
          - {between: [g2, sw], link: eth10g, cost: 2}
    """)
    # ranks by host, then listing order; g2 has no host: a machine of its own after host 1
    assert p.devices == ("g0", "g1", "g2")
    assert [p.host(r) for r in range(3)] == [0, 1, 2]
    assert p.spec(0).name == "p100" and p.spec(1).name == "k80"
    assert p.path_bandwidth(p.route(0, 1)) == pytest.approx(5e9)
    assert p.route_cost(0, 2) == 3


@pytest.mark.parametrize("text,path,words", [
    ("{topology: fat_tre, k: 4, device: k80, link: eth10g}",
     ("platform", "topology"), ["did you mean 'fat_tree'", "star"]),
    ("{k: 4, device: k80, link: eth10g}", ("platform", "topology"), ["missing", "fat_tree"]),
    ("{topology: fat_tree, k: 4, device: k8O, link: eth10g}",
     ("platform", "device"), ["did you mean 'k80'"]),
    ("{topology: fat_tree, k: 4, device: k80, link: eth10G}",
     ("platform", "link"), ["did you mean 'eth10g'"]),
    ("{topology: fat_tree, k: 4, device: k80, link: {bandwidth: 0 Gb/s, latency: 1 us}}",
     ("platform", "link", "bandwidth"), ["positive"]),
    ("{topology: fat_tree, k: 4, device: k80, link: {bandwidth: -5 GB/s, latency: 1 us}}",
     ("platform", "link", "bandwidth"), ["positive"]),
    ("{topology: fat_tree, k: 4, device: k80, link: {latency: 1 us}}",
     ("platform", "link"), ["bandwidth"]),
    ("{topology: fat_tree, k: 4, device: k80, link: 10}", ("platform", "link"), ["catalog"]),
    ("{topology: fat_tree, k: sixteen, device: k80, link: eth10g}",
     ("platform", "k"), ["integer"]),
    ("{topology: fat_tree, k: 5, device: k80, link: eth10g}", ("platform", "k"), ["even"]),
    ("{topology: fat_tree, device: k80, link: eth10g}", ("platform", "k"), ["needs field 'k'"]),
    ("{topology: fat_tree, k: 4, device: k80, link: eth10g, host: 3}",
     ("platform", "host"), ["did you mean 'hosts'"]),
    ("{topology: fat_tree, k: 4, device: k80, link: eth10g, node: {layout: pcie-tree}}",
     ("platform", "node", "layout"), ["did you mean 'pcie_tree'", "hybrid_cube_mesh"]),
    ("{topology: star, hosts: 2, device: k80, link: eth10g, node: {devices: 4, "
     "layout: hybrid_cube_mesh}}", ("platform", "node", "devices"), ["8"]),
    ("{topology: star, hosts: 2, device: k80, link: eth10g, node: {layout: crossbar, "
     "devices: 2, gpudirect: yes please}}", ("platform", "node", "gpudirect"), ["true or false"]),
    ("{topology: star, hosts: 2, device: k80, link: eth10g, node: {layout: crossbar, "
     "devices: 2, pcie: pcie9}}", ("platform", "node", "pcie"), ["did you mean"]),
    ("{topology: star, hosts: 2, device: k80, link: eth10g, node: {socks: 2}}",
     ("platform", "node", "socks"), ["did you mean 'sockets'"]),
    ("{topology: star, hosts: 2, device: k80, link: eth10g, node: [1, 2]}",
     ("platform", "node"), ["mapping"]),
    ("{topology: torus, dims: [4, -1], device: k80, link: eth10g}",
     ("platform", "dims", 1), [">= 1"]),
    ("{topology: torus, dims: 4, device: k80, link: eth10g}", ("platform", "dims"), ["list"]),
    ("{topology: dragonfly, groups: 9, routers_per_group: 2, hosts_per_router: 1, device: k80, "
     "host_link: aries, local_link: aries_local, global_link: aries_global, "
     "global_links_per_router: 1}", ("platform", "global_links_per_router"), [">= 4"]),
    ("{topology: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 2, device: k80, "
     "host_link: eth10g, oversubscription: -1}", ("platform", "oversubscription"), ["positive"]),
    ("{topology: explicit, device: k80, link: eth10g, nodes: [{name: a, kind: device}, "
     "{name: b, kind: device}, {name: s}], links: [[a, s]]}", ("platform", "links"),
     ["disconnected"]),
    ("{topology: explicit, device: k80, link: eth10g, nodes: [{name: a, host: 0}, {name: s}], "
     "links: [[a, s], [a, t]]}", ("platform", "links", 1), ["unknown node 't'"]),
    ("{topology: explicit, device: k80, nodes: [{name: a}, {name: s, kind: switch}], "
     "links: [[a, s]]}", ("platform", "links", 0), ["link class"]),
    ("{topology: explicit, device: k80, link: eth10g, nodes: [{name: a}, {name: a}], "
     "links: []}", ("platform", "nodes", 1, "name"), ["duplicate"]),
    ("{topology: explicit, link: eth10g, nodes: [{name: a, kind: device}], links: []}",
     ("platform", "nodes", 0, "device"), ["device"]),
    ("{topology: explicit, device: k80, link: eth10g, nodes: [{name: a}], links: [], "
     "switches: 2}", ("platform", "switches"), ["allowed"]),
    ("[1, 2]", ("platform",), ["mapping"]),
    ("{topology: star, hosts: 2, device: k80, link: eth10g, catalog: {links: {x: "
     "{bandwidth: 0}}}}", ("platform", "catalog", "links", "x", "bandwidth"), ["positive"]),
])
def test_errors_name_the_field(text, path, words):
    err = error(text)
    assert err.path == path, str(err)
    for w in words:
        assert w in str(err), str(err)


def test_required_fields_come_from_builder_signatures():
    """The YAML layer reads allowed and required fields from the builders themselves."""
    for name, (fn, _) in TOPOLOGIES.items():
        if name == "explicit":
            continue
        params = inspect.signature(fn).parameters
        required = [n for n, p in params.items() if p.default is inspect.Parameter.empty]
        err = error(f"{{topology: {name}}}")
        assert err.path == ("platform", required[0])
        assert all(r in str(err) for r in required)


def test_load_platform_reports_file_and_line(tmp_path):
    good = tmp_path / "mine.yaml"
    good.write_text("topology: ring\nhosts: 3\ndevice: k80\nlink: eth10g\n")
    assert load_platform(good).name == "mine"
    bad = tmp_path / "bad.yaml"
    bad.write_text("topology: ring\nhosts: 3\ndevice: k80\nnode:\n  layout: pcie-tree\n"
                   "link: eth10g\n")
    with pytest.raises(InputError) as e:
        load_platform(bad)
    assert e.value.file == str(bad) and e.value.line == 5
    assert str(e.value).startswith(f"{bad}:5, node.layout: unknown layout 'pcie-tree'")
    broken = tmp_path / "broken.yaml"
    broken.write_text("topology: ring\nhosts: [3\n")
    with pytest.raises(InputError) as e:
        load_platform(broken)
    assert e.value.file == str(broken) and e.value.line is not None
    with pytest.raises(InputError, match="cannot read"):
        load_platform(tmp_path / "missing.yaml")


@pytest.mark.parametrize("topo", sorted(TOPOLOGIES))
def test_the_listed_fields_are_the_ones_the_reader_takes(topo: str) -> None:
    """``clustersim list topologies`` shows each topology's fields (audit 22: the docs sent
    users there, and it showed none).  They are the reader's: an unknown field's refusal
    allows exactly the listed ones and the common ones, and a file without any field names
    the listed required ones."""
    from clustersim.platform.describe import COMMON_FIELDS, topology_fields

    listed = topology_fields(topo)
    names = {f.split("=")[0] for f in listed}
    required = [f for f in listed if "=" not in f]
    with pytest.raises(InputError) as bad:
        build_platform({"topology": topo, "zzz": 1}, builtin_catalog())
    allowed = bad.value.message.split("(allowed: ")[1].rstrip(")").split(", ")
    assert set(allowed) - {"topology"} == names | set(COMMON_FIELDS)
    with pytest.raises(InputError) as missing:
        build_platform({"topology": topo}, builtin_catalog())
    assert f"needs field {required[0]!r}" in missing.value.message
    if "(required: " in missing.value.message:
        assert missing.value.message.split("(required: ")[1].rstrip(")").split(", ") == required
