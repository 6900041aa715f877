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

DEVICE_FIELDS = ("peak", "efficiency", "mem_bw", "mem_efficiency", "overhead", "reduce_rate")
LINK_FIELDS = ("bandwidth", "latency")


@dataclass
class _Resource:
    """What :class:`Platform` reads of a link resource."""

    name: str
    bandwidth: float
    latency: float
    kind: str


def retune_platform(platform: Platform, devices: Mapping[str, Mapping[str, Any]] | None = None,
                    links: Mapping[str, Mapping[str, float]] | None = None) -> Platform:
    """A new platform: ``devices[spec name]`` fields replace the specs' (``DEVICE_FIELDS``),
    ``links[link class]`` fields replace every resource of that class (``LINK_FIELDS``)."""
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
    for _, _, data in graph.edges(data=True):
        new = links.get(data.get("kind"))
        if new:
            data.update({k: float(v) for k, v in new.items()})
    resources = []
    for rid, (name, kind) in enumerate(zip(platform.link_names, platform.link_kind)):
        new = links.get(kind, {})
        resources.append(_Resource(name, float(new.get("bandwidth", platform.capacity[rid])),
                                   float(new.get("latency", platform.latency[rid])), kind))
    return Platform(platform.name, graph, platform.devices, resources)
