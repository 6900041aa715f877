"""The platforms of the SimGrid comparison, described once for both simulators.

A :class:`SgPlatform` is what SimGrid calls a ``<cluster>``: every link (host link, switch
link, global link) has the same bandwidth and latency, as SimGrid's cluster tag gives them.
This module writes SimGrid's side (platform XML and hostfile); ``sg_clustersim.py`` builds
the equivalent clustersim platform from the same object, so the two cannot drift apart.

Why these three: the crossbar is clustersim's closed-form platform (every algorithm should
agree exactly); the fat tree is SimGrid's documented example (4 leaves x 4 hosts, 2 spines,
2 cables per leaf-spine pair), where the routings differ (SimGrid: D-mod-K up, down cable by
source; clustersim: D-mod-K both ways); the dragonfly has one chassis per group, so that its
minimal route is unique and SimGrid's and clustersim's routes coincide - only the algorithms
are compared there.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SgPlatform:
    """One SimGrid cluster.  ``bw`` and ``lat`` are SimGrid strings (``10Gbps`` = 1.25 GB/s)."""

    name: str
    kind: str  # crossbar | fat_tree | dragonfly
    hosts: int
    bw_bytes: float  # bytes/s, the same number as ``bw``
    lat_s: float
    topo_parameters: str = ""
    ranks: tuple[int, ...] = ()
    quick_ranks: tuple[int, ...] = ()
    about: str = ""
    meta: dict = field(default_factory=dict, compare=False)

    @property
    def bw(self) -> str:
        return f"{self.bw_bytes * 8 / 1e9:g}Gbps"

    @property
    def lat(self) -> str:
        return f"{self.lat_s * 1e6:g}us"


CROSSBAR16 = SgPlatform(
    "crossbar16", "crossbar", 16, 1.25e9, 1e-6, ranks=(4, 8, 16), quick_ranks=(8,),
    about="topologies/crossbar16.yaml: 16 hosts, one 10 Gb/s 1 us link each, non-blocking")

FATTREE16 = SgPlatform(
    "fattree16", "fat_tree", 16, 1.25e9, 1e-6, topo_parameters="2;4,4;1,2;1,2",
    ranks=(8, 16), quick_ranks=(16,),
    about="2-level fat tree: 4 leaves x 4 hosts, 2 spines, 2 cables per leaf-spine pair, "
          "10 Gb/s 1 us per cable",
    meta={"levels": 2, "down": (4, 4), "up": (1, 2), "cables": (1, 2)})

DRAGONFLY64 = SgPlatform(
    "dragonfly64", "dragonfly", 64, 1.25e9, 1e-6, topo_parameters="4,1;1,1;4,1;4",
    ranks=(16, 64), quick_ranks=(64,),
    about="dragonfly: 4 groups (1 global link per pair) x 1 chassis x 4 routers "
          "(all-to-all) x 4 hosts, 10 Gb/s 1 us per link",
    meta={"groups": 4, "chassis": 1, "routers": 4, "nodes": 4})

PLATFORMS: dict[str, SgPlatform] = {p.name: p for p in (CROSSBAR16, FATTREE16, DRAGONFLY64)}


def host_name(i: int) -> str:
    return f"node-{i}"


def platform_xml(p: SgPlatform) -> str:
    """SimGrid platform XML: one ``<cluster>``, split-duplex links (one capacity per direction,
    like clustersim's full-duplex links), hosts fast enough that nothing is computed."""
    topo = ""
    if p.kind == "fat_tree":
        topo = f' topology="FAT_TREE" topo_parameters="{p.topo_parameters}"'
    elif p.kind == "dragonfly":
        topo = f' topology="DRAGONFLY" topo_parameters="{p.topo_parameters}"'
    elif p.kind != "crossbar":
        raise ValueError(f"unknown platform kind {p.kind!r}")
    return (
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        '<platform version="4.1">\n'
        '  <zone id="world" routing="Full">\n'
        f'    <cluster id="{p.name}" prefix="node-" radical="0-{p.hosts - 1}" suffix=""'
        f' speed="1Pf" bw="{p.bw}" lat="{p.lat}" sharing_policy="SPLITDUPLEX"{topo}/>\n'
        "  </zone>\n"
        "</platform>\n")


def hostfile(placement: list[int]) -> str:
    """Rank ``i`` runs on host ``placement[i]`` (smpirun maps ranks to hostfile lines)."""
    return "".join(host_name(h) + "\n" for h in placement)


def far_pair(p: SgPlatform) -> list[int]:
    """Two hosts as far apart as the platform allows (the ping-pong of the latency check)."""
    return [0, p.hosts - 1]
