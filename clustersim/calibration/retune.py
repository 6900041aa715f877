"""A built platform with some device specs and link classes replaced.

Why not rebuild the platform from its description: a scenario keeps the merged platform
mapping, but not the catalog entries a platform *file* brought along (they were consumed when
it was built), and topology builders may derive link parameters themselves.  The built
platform, on the other hand, holds exactly what the simulator uses - a spec on every device
node, a bandwidth and latency on every link resource, each resource tagged with its link
class - so replacing values there is exact and works for every topology.  Routing does not
depend on bandwidth or latency (unit costs), so routes stay the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from clustersim.platform.model import Platform

__all__ = ["retune_platform", "DEVICE_FIELDS", "LINK_FIELDS"]

DEVICE_FIELDS = ("peak", "efficiency", "mem_bw", "mem_efficiency", "overhead", "reduce_rate",
                 "pack_rate", "share_efficiency")
LINK_FIELDS = ("bandwidth", "latency", "duplex")


@dataclass
class _Resource:
    """What :class:`Platform` reads of a link resource."""

    name: str
    bandwidth: float
    latency: float
    kind: str
    transport: str | None = None


def retune_platform(platform: Platform, devices: Mapping[str, Mapping[str, Any]] | None = None,
                    links: Mapping[str, Mapping[str, float]] | None = None) -> Platform:
    """A new platform: ``devices[spec name]`` fields replace the specs' (``DEVICE_FIELDS``),
    ``links[link class]`` fields replace every resource of that class (``LINK_FIELDS``).

    ``duplex: false`` makes both directions of every cable of the class one shared resource
    (``true`` splits them): what a memory-copy transport is, whose two directions compete
    for the same memory bandwidth.  Resources are renumbered in their original order.
    """
    devices = dict(devices or {})
    links = dict(links or {})
    for name, fields in devices.items():
        bad = set(fields) - set(DEVICE_FIELDS)
        if bad:
            raise ValueError(f"device {name!r}: cannot retune {sorted(bad)}")
    for name, fields in links.items():
        bad = set(fields) - set(LINK_FIELDS)
        if bad:
            raise ValueError(f"link class {name!r}: cannot retune {sorted(bad)}")
    graph = platform.graph.copy()
    for _, data in graph.nodes(data=True):
        spec = data.get("spec")
        if spec is not None and spec.name in devices:
            data["spec"] = replace(spec, **devices[spec.name])
    by_rid: dict[int, list[tuple[str, str, dict]]] = {}
    for u, v, first in graph.edges(data=True):
        if "parallel" in first:  # the copy shares the list: parallel cables get their own
            first["parallel"] = [dict(x) for x in first["parallel"]]
        for data in (first, *first.get("parallel", ())):
            new = links.get(data.get("kind"))
            if new:
                data.update({k: float(x) for k, x in new.items() if k != "duplex"})
            by_rid.setdefault(data["link"], []).append((u, v, data))
    resources: list[_Resource] = []

    def add(name: str, rid: int, kind: str) -> int:
        new = links.get(kind, {})
        resources.append(_Resource(name, float(new.get("bandwidth", platform.capacity[rid])),
                                   float(new.get("latency", platform.latency[rid])), kind,
                                   getattr(platform, "link_transport", (None,) * (rid + 1))[rid]))
        return len(resources) - 1

    done: set[int] = set()  # resources already merged into an earlier one
    for rid, (name, kind) in enumerate(zip(platform.link_names, platform.link_kind)):
        edges = sorted(by_rid.get(rid, []), key=lambda e: (str(e[0]), str(e[1])))
        want = links.get(kind, {}).get("duplex")
        if want is None or (want and len(edges) == 1) or (not want and len(edges) == 2):
            new_id = add(name, rid, kind)
            for _, _, data in edges:
                data["link"] = new_id
        elif want:  # a shared cable becomes two directions
            tag = _cable_tag(name)
            for u, v, data in edges:
                data["link"] = add(f"{u}->{v}{tag}", rid, kind)
        else:  # two directions become one shared cable
            u, v, data = edges[0]
            if rid in done:
                continue
            new_id = add(f"{u}<->{v}{_cable_tag(name)}", rid, kind)
            data["link"] = new_id
            fwd = graph.get_edge_data(u, v)
            back = graph.get_edge_data(v, u)
            if back is not None:  # the reverse of the same cable (parallel cables pair up)
                k = next(i for i, x in enumerate((fwd, *fwd.get("parallel", ()))) if x is data)
                back = (back, *back.get("parallel", ()))[k]
                done.add(back["link"])  # its old resource id, met later in this loop
                back["link"] = new_id
    return Platform(platform.name, graph, platform.devices, resources)


def _cable_tag(name: str) -> str:
    """``#k`` of the k-th parallel cable's resource name (``a->b#1``), else ``""``."""
    head, sep, k = name.rpartition("#")
    return f"#{k}" if sep and head and k.isdigit() else ""
