"""The ``nccl`` selector evaluates NCCL 2.7.5's model for the scenario's own node (audit G).

Evaluated on one fixed V100-NVLink reference whatever the platform, it chose LL128 on
PCIe-only nodes - a protocol NCCL 2.7.5 switches off there (``tuning.cc`` lines 172-177) -
and rated two-node rings at the in-node speed, where NCCL's search gives a ring graph the
network's speed and raises only the trees' (``search.cc``).  The expected choices below are
the audit's, from its own evaluator of ``tuning.cc`` 2.7.5 with the machine's graph speeds,
not from ``select_nccl.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.collectives import build_schedule
from clustersim.collectives.nccl_machine import machine_of
from clustersim.collectives.select_nccl import REFERENCE, NcclMachine
from clustersim.collectives.selection import select
from clustersim.platform.describe import load_platform
from clustersim.scenario.schema import load_scenario

ROOT = Path(__file__).resolve().parent.parent
MiB = 1 << 20


def _platform(tmp: Path, platform: str) -> object:
    path = tmp / "s.yaml"
    path.write_text(f"name: m\nplatform: {platform}\n"
                    "benchmark: {op: allreduce, algorithms: [nccl], ranks: [2], sizes: [1 MiB]}\n",
                    encoding="utf-8")
    return load_scenario(path).platform


def _label(plat: object, p: int, nbytes: int, op: str = "allreduce") -> str:
    hosts = [plat.host(d) for d in range(p)]
    sched = build_schedule(op, "nccl", p, nbytes, hosts=hosts,
                           machine=machine_of(plat, range(p)))
    return sched.algorithm.split("→")[1].split("×")[0]


def test_pcie_nodes_on_25gbe_read_pci_3gbs_and_no_ll128() -> None:
    plat = load_platform(str(ROOT / "topologies/supercloud_v100_eth25.yaml"))
    m = machine_of(plat, range(128))
    assert (m.intra, m.speed_intra, m.speed_inter, m.ll128) == ("pci", 12.0, 3.0, False)
    # the audit's H2 example: 64 nodes x 2 V100 PCIe, 25 GbE
    assert _label(plat, 128, 25 * MiB) == "ring/Simple"   # was ring/LL128
    assert _label(plat, 128, 1 * MiB) == "tree/Simple"    # was tree/LL128
    for n in (4096, 64 * 1024, MiB, 16 * MiB, 256 * MiB):
        assert "LL128" not in _label(plat, 128, n)


def test_dgx1_is_nvlink_edr_but_p100_has_no_ll128() -> None:
    plat = load_platform(str(ROOT / "topologies/dgx1_edr8.yaml"))
    m = machine_of(plat, range(16))
    assert (m.intra, m.speed_intra, m.speed_inter) == ("nvlink", 21.0, 12.0)
    assert m.ll128 is False  # P100 is compute capability 6.0: 2.7.5 enables LL128 on 7.0/8.0


def test_v100_nvlink_nodes_keep_ll128(tmp_path: Path) -> None:
    plat = _platform(tmp_path, "{topology: star, hosts: 4, device: v100, link: {bandwidth: "
                               "100 Gb/s, latency: 1 us}, node: {devices: 8, layout: nvlink_mesh}}")
    m = machine_of(plat, range(32))
    assert (m.intra, m.speed_inter, m.ll128) == ("nvlink", 12.0, True)
    assert m.speeds(4) == (12.0, 12.0)
    assert m.speeds(2) == (12.0, 21.0)  # two nodes: the tree's in-node speed raised
    assert m.speeds(1) == (21.0, 21.0)


def test_eight_pcie_gpus_per_node_on_edr(tmp_path: Path) -> None:
    """The audit's third example: 8 nodes of 8 PCIe GPUs on EDR, 1 MiB: ring/LL (the
    reference had said tree/LL128)."""
    plat = _platform(tmp_path, "{topology: star, hosts: 8, device: v100_pcie, link: "
                               "{bandwidth: 100 Gb/s, latency: 1 us}, node: {devices: 8, "
                               "layout: pcie_tree}}")
    m = machine_of(plat, range(64))
    assert (m.intra, m.speed_inter, m.ll128) == ("pci", 12.0, False)
    assert _label(plat, 64, MiB) == "ring/LL"


def test_one_device_per_host_and_unknown_devices(tmp_path: Path) -> None:
    plat = _platform(tmp_path, "{topology: star, hosts: 4, device: a100, link: {bandwidth: "
                               "200 Gb/s, latency: 1 us}}")
    m = machine_of(plat, range(4))
    assert m.ll128 is True and m.speed_inter == 24.0  # 25 GB/s: speedArray's 24
    plat = _platform(tmp_path, "{topology: star, hosts: 4, device: h100, link: {bandwidth: "
                               "200 Gb/s, latency: 1 us}}")
    assert machine_of(plat, range(4)).ll128 is False  # 9.0: not enabled by 2.7.5


def test_no_platform_is_the_reference() -> None:
    assert select("allreduce", "nccl", 8, MiB, [0] * 8)[1].label == \
        select("allreduce", "nccl", 8, MiB, [0] * 8, machine=REFERENCE)[1].label
    assert NcclMachine("nvlink", 21.0, 12.0, 2, True, REFERENCE.about) == REFERENCE


@pytest.mark.parametrize("nbytes", [64 * 1024, MiB, 64 * MiB])
def test_ll128_off_never_chosen(nbytes: int) -> None:
    off = NcclMachine("nvlink", 21.0, 12.0, 2, False)
    for p, nodes in ((8, 1), (16, 2), (64, 8)):
        hosts = [i * nodes // p for i in range(p)]
        assert "LL128" not in select("allreduce", "nccl", p, nbytes, hosts, machine=off)[1].label


def test_the_benchmark_uses_the_platform(tmp_path: Path) -> None:
    """A scenario's benchmark passes its platform's machine: no LL128 on PCIe nodes."""
    from clustersim.sim.collective_bench import run_benchmark

    path = tmp_path / "b.yaml"
    path.write_text("name: b\nplatform: {topology: star, hosts: 4, device: v100_pcie, link: "
                    "{bandwidth: 25 Gb/s, latency: 1 us}, node: {devices: 2, layout: pcie_tree}}\n"
                    "benchmark: {op: allreduce, algorithms: [nccl], ranks: [8], "
                    "sizes: [64 KiB, 1 MiB, 25 MiB]}\nrun: {fidelity: analytic}\n",
                    encoding="utf-8")
    rows = run_benchmark(load_scenario(path))
    assert rows and all("LL128" not in r.selected for r in rows), [r.selected for r in rows]
