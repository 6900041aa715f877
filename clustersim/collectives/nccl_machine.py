"""The machine NCCL's cost model is evaluated for: what NCCL 2.7.5's topology search would
find on the scenario's own platform (audit G, H2 and M1).

NCCL decides (:mod:`.select_nccl`) from per-channel speeds and link types that its
topology search measures on the machine (``src/graph/search.cc``, ``topo.h``,
``tuning.cc``, v2.7.5-1).  Evaluated on one fixed V100-NVLink reference whatever the
platform, the selector printed choices NCCL cannot make - LL128 on PCIe-only nodes, which
2.7.5 switches off (``tuning.cc`` lines 172-177) - and rated two-node rings at the in-node
speed, where the search gives a ring graph ``speedIntra == speedInter`` and raises only the
trees' in-node speed.  What is read from the platform, and why:

* **in-node link type** (``nvlink`` or ``pci``): NVLink when the route between two devices of
  one host crosses only NVLink-class links (``nvlink1``..``nvlink3`` in the link catalog),
  else PCI - ``typeIntra`` of the graphs, which picks the per-hop latencies and LL128;
* **in-node speed per channel**: NCCL's widths, 21 GB/s for an NVLink (``VOLTA_NVLINK_WIDTH``;
  2.7.5 rates Ampere's links the same) and 12 GB/s for PCI (``PCI_WIDTH``), not the catalog's
  link rates (the search rates links by these constants, not by measurement);
* **network speed per channel**: the slowest link of a route between two hosts (NIC, PCIe
  or fabric), rounded down to the search's ``speedArray``: EDR's 12.5 GB/s gives 12, 25 GbE's
  3.125 gives 3;
* **LL128**: on only where every device is compute capability 7.0 or every one 8.0 and the
  nodes are NVLink (or one device each), by the device's catalog name (``v100``, ``a100``;
  ``h100``/``h200`` are 9.0, which 2.7.5 does not enable - current NCCL does, see
  docs/collectives.md).  A device the table does not know gets LL128 off, as NCCL's default
  for an untested architecture;
* **channels**: 2, as the reference (``connect.cc`` doubles the searched channels).

Without a platform (``build_schedule`` called bare) the reference node
(:data:`.select_nccl.REFERENCE`) is used, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clustersim.collectives.select_nccl import SPEED_ARRAY, NcclMachine

__all__ = ["machine_of", "machine_for", "COMPUTE_CAPABILITY"]

#: compute capability x 10 by catalog device name (NVIDIA's tables)
COMPUTE_CAPABILITY = {"k20": 35, "k20x": 35, "k40": 35, "k80": 37, "p100": 60, "p100_pcie": 60,
                      "v100": 70, "v100_pcie": 70, "t4": 75, "a100": 80, "h100": 90, "h200": 90}
NVLINK_WIDTH = 21.0  # topo.h VOLTA_NVLINK_WIDTH (2.7.5)
PCI_WIDTH = 12.0     # topo.h PCI_WIDTH


def _link_kinds(platform: Any) -> dict[int, str]:
    """Resource id -> link class, built once per platform object."""
    memo = getattr(platform, "memo", {})
    kinds = memo.get("nccl_link_kinds")
    if kinds is None:
        kinds = memo["nccl_link_kinds"] = {int(d["link"]): str(d.get("kind") or "")
                                           for _u, _v, d in platform.cables()}
    return kinds


def _searched(speed: float) -> float:
    """The search's speed for a path of ``speed`` GB/s: the largest ``speedArray`` entry
    not above it."""
    for s in SPEED_ARRAY:
        if s <= speed:
            return s
    return SPEED_ARRAY[-1]


def machine_of(platform: Any, devices: Sequence[int]) -> NcclMachine:
    """What NCCL 2.7.5 would find for ranks on ``devices`` of ``platform`` (module docstring)."""
    by_host: dict[int, list[int]] = {}
    for d in devices:
        by_host.setdefault(int(platform.host(d)), []).append(int(d))
    kinds = _link_kinds(platform)
    pair = next((ds[:2] for ds in by_host.values() if len(ds) >= 2), None)
    if pair is None:
        intra = "pci"  # one device per host: no in-node hop (typeIntra is local)
        nvl = True
    else:
        route = platform.route(pair[0], pair[1])
        nvl = bool(route) and all(kinds.get(lk, "").startswith("nvlink") for lk in route)
        intra = "nvlink" if nvl else "pci"
    speed_intra = NVLINK_WIDTH if intra == "nvlink" else PCI_WIDTH
    speed_inter = speed_intra
    if len(by_host) > 1:
        a, b = (ds[0] for ds in list(by_host.values())[:2])
        speed_inter = _searched(platform.path_bandwidth(platform.route(a, b)) / 1e9)
    caps = {COMPUTE_CAPABILITY.get(platform.spec(d).name) for d in devices}
    ll128 = nvl and (caps == {70} or caps == {80})
    names = sorted({platform.spec(d).name for d in devices})
    return NcclMachine(intra=intra, speed_intra=speed_intra, speed_inter=speed_inter,
                       channels=2, ll128=ll128,
                       about=f"{'/'.join(names)}, {intra} in node, {speed_inter:g} GB/s "
                             f"per channel across nodes, LL128 {'on' if ll128 else 'off'}")


def machine_for(algorithm: str, platform: Any, devices: Sequence[int]) -> NcclMachine | None:
    """:func:`machine_of` where ``algorithm`` may run NCCL's selector (``nccl``, or ``auto`` on
    a platform that declares ``library: nccl``), else None - the callers' one line."""
    if algorithm == "nccl" or (algorithm == "auto"
                               and getattr(platform, "library", None) == "nccl"):
        return machine_of(platform, devices)
    return None
