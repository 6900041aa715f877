"""A platform from an explicit node and link list (a machine no builder describes).

Rank order is machine order, then listing order: devices are sorted by ``host`` (stable).  A
device without a ``host`` is a machine of its own, numbered after the largest host given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clustersim.catalog import DeviceSpec, LinkSpec
from clustersim.errors import InputError, unknown_name
from clustersim.platform.model import Platform, PlatformBuilder

__all__ = ["ExplicitNode", "ExplicitLink", "explicit"]


@dataclass(frozen=True)
class ExplicitNode:
    """A node; ``kind="device"`` needs ``device`` and may name its machine with ``host``."""

    name: str
    kind: str = "switch"
    device: DeviceSpec | None = None
    host: int | None = None


@dataclass(frozen=True)
class ExplicitLink:
    """A cable between nodes ``a`` and ``b`` of link class ``spec``."""

    a: str
    b: str
    spec: LinkSpec
    cost: int = 1


def explicit(nodes: Sequence[ExplicitNode], links: Sequence[ExplicitLink], *,
             name: str = "explicit") -> Platform:
    """Build the platform; errors point at ``nodes[i]`` or ``links[i]``."""
    b = PlatformBuilder(name)
    b.meta.update(topology="explicit")
    given = [n.host for n in nodes if n.kind == "device" and n.host is not None]
    next_host = max(given) + 1 if given else 0
    devices: list[tuple[int, int, str]] = []
    for i, n in enumerate(nodes):
        if not isinstance(n.name, str) or not n.name:
            raise InputError(f"node name must be a non-empty string, not {n.name!r}",
                             path=("nodes", i, "name"))
        if n.name in b.nodes:
            raise InputError(f"duplicate node name {n.name!r}", path=("nodes", i, "name"))
        if n.kind == "device":
            if n.device is None:
                raise InputError(f"device node {n.name!r} needs a 'device'",
                                 path=("nodes", i, "device"))
            host = n.host
            if host is None:
                host, next_host = next_host, next_host + 1
            elif isinstance(host, bool) or not isinstance(host, int) or host < 0:
                raise InputError(f"host must be an integer >= 0, not {host!r}",
                                 path=("nodes", i, "host"))
            b.add_device(n.name, n.device, host=host)
            devices.append((host, i, n.name))
        else:
            if n.device is not None:
                raise InputError(f"node {n.name!r} of kind {n.kind!r} cannot hold a device "
                                 "(use kind: device)", path=("nodes", i, "kind"))
            b.add_node(n.name, n.kind)
    if not devices:
        raise InputError("an explicit platform needs at least one device node", path=("nodes",))
    for i, lk in enumerate(links):
        for end in (lk.a, lk.b):
            if end not in b.nodes:
                raise unknown_name("node", end, list(b.nodes), path=("links", i))
        try:
            b.add_link(lk.a, lk.b, lk.spec, cost=lk.cost)
        except InputError as exc:
            raise InputError(exc.message, path=("links", i)) from None
    try:
        return b.build([d for _, _, d in sorted(devices)])
    except InputError as exc:
        raise InputError(exc.message, path=("links",)) from None
