"""The shipped topology files: they load, and they are the machines their comments describe."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from clustersim.platform import Platform, load_platform

TOPO = Path(__file__).resolve().parents[1] / "topologies"
FILES = sorted(TOPO.glob("*.yaml"))


def load(name: str) -> Platform:
    return load_platform(TOPO / f"{name}.yaml")


def kinds(p: Platform, a: int | str, b: int | str) -> list[str]:
    return [p.link_kind[i] for i in p.route(a, b)]


def test_expected_files_exist():
    names = {f.stem for f in FILES}
    assert {"theano_mpi_k80", "cori_knl", "supercloud_v100_eth25", "supercloud_v100_opa100",
            "fattree_k16", "crossbar16"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda f: f.stem)
def test_every_file_loads_and_documents_itself(path):
    text = path.read_text()
    assert text.startswith("#"), "a topology file opens with its sources and assumptions"
    assert "about:" in text
    p = load_platform(path)
    assert p.name == path.stem
    assert p.num_devices >= 1


def test_theano_mpi_k80_node():
    p = load("theano_mpi_k80")
    assert p.num_devices == 8 and p.num_hosts == 1
    assert all(p.spec(r).name == "k80" for r in range(8))
    node_kinds = Counter(d["kind"] for _, d in p.graph.nodes(data=True))
    assert node_kinds == {"device": 8, "pcie": 4, "cpu": 2}
    # 4 boards x 2 dies; boards 0-1 on socket 0, boards 2-3 on socket 1
    for a, b in itertools.combinations(range(8), 2):
        hops = kinds(p, a, b)
        if a // 2 == b // 2:
            assert hops == ["pcie3x16"] * 2
        elif a // 4 == b // 4:
            assert hops == ["pcie3x16"] * 4
        else:
            assert hops == ["pcie3x16"] * 2 + ["qpi"] + ["pcie3x16"] * 2
    assert p.path_bandwidth(p.route(0, 1)) == pytest.approx(15.75e9)


def test_cori_knl_dragonfly():
    p = load("cori_knl")
    assert p.meta["topology"] == "dragonfly"
    assert p.num_devices >= 256 and p.num_devices >= -(-4253 // 68)
    assert all(p.spec(r).name == "knl7250" for r in (0, p.num_devices - 1))
    routers = Counter(p.route_nodes(r, "g0.r0")[1] for r in range(p.num_devices))
    assert set(routers.values()) == {4}
    # 8 groups, 2 cables between every pair of groups
    assert p.meta["global_links"] == 2 * 8 * 7 // 2
    r = p.route(0, p.num_devices - 1)
    assert kinds(p, 0, p.num_devices - 1).count("aries_global") == 1
    # 2 injection links at 0.6 us + 3 router hops at 0.1 us: the ~1.5 us Aries MPI latency
    assert p.path_latency(r) == pytest.approx(1.5e-6)


def test_cori_knl_cores_holds_the_4253_core_run():
    p = load("cori_knl_cores")
    assert p.num_devices >= 4253
    assert p.num_hosts == 64
    assert Counter(p.rank_hosts) == {h: 68 for h in range(64)}
    assert p.spec(0).peak == pytest.approx(6.1e12 / 68, rel=1e-3)
    assert kinds(p, 0, 1) == ["knl_shm", "knl_shm"]
    assert kinds(p, 67, 68)[2] == "aries"


@pytest.mark.parametrize("name,bw,gpudirect", [
    ("supercloud_v100_eth25", 25e9 / 8, False),
    ("supercloud_v100_opa100", 12.5e9, True),
])
def test_supercloud_nodes_and_fabric(name, bw, gpudirect):
    p = load(name)
    assert p.meta["topology"] == "leaf_spine"
    assert p.meta["oversubscription"] == pytest.approx(1.0)
    assert Counter(Counter(p.rank_hosts).values()) == {2: p.num_hosts}
    assert p.spec(0).name == "v100_pcie"
    route = p.route_nodes(0, 2)  # GPU 0 of machine 0 to GPU 0 of machine 1
    assert ("h0.cpu0" in route) is not gpudirect
    assert p.path_bandwidth(p.route(0, 2)) == pytest.approx(bw)
    assert kinds(p, 0, 1) == ["pcie3x16", "pcie3x16"]


def test_fattree_k16():
    p = load("fattree_k16")
    node_kinds = Counter(d["kind"] for _, d in p.graph.nodes(data=True))
    assert node_kinds == {"device": 1024, "switch": 320}
    assert set(p.capacity) == {10e9 / 8}
    assert len(p.route(0, 1023)) == 6


def test_crossbar16():
    p = load("crossbar16")
    assert p.num_devices == 16
    for a, b in itertools.permutations(range(16), 2):
        r = p.route(a, b)
        assert p.path_latency(r) == pytest.approx(2e-6)
        assert p.path_bandwidth(r) == pytest.approx(1.25e9)


def test_dgx1_cluster():
    p = load("dgx1_edr8")
    assert p.num_devices == 64 and p.num_hosts == 8
    assert kinds(p, 0, 4) == ["nvlink1"]
    assert kinds(p, 0, 5) == ["nvlink1", "nvlink1"]
    assert "h0.cpu0" not in p.route_nodes(0, 8)
