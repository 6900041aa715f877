"""Direct networks: every machine is a router (ring, 2D/3D torus).

Without a node spec the device itself routes (a cable joins neighbouring devices, as in a
TPU-style torus or a chain of GPUs), so a neighbour transfer is one hop and a ring allreduce
on a ring costs ``2(p-1)(l + n/(pB))`` with ``l`` the link latency.  With a node spec the
machine's single NIC is its router and devices reach it through the node's internal layout.

Machine ``i`` sits at coordinates ``unravel(i, dims)`` (last dimension fastest), stored as the
node attribute ``coord``.  A dimension of size 2 gets one link between its two machines, not
two parallel ones; a dimension of size 1 gets none.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

from clustersim.catalog import DeviceSpec, LinkSpec
from clustersim.errors import InputError
from clustersim.platform.fabric import MAX_COUNT, check_count, check_link, check_node
from clustersim.platform.model import Platform, PlatformBuilder
from clustersim.platform.node import NodeSpec, add_machine

__all__ = ["ring", "torus", "torus_distance"]


def ring(hosts: int, device: DeviceSpec, link: LinkSpec, *, node: NodeSpec | None = None,
         name: str = "ring") -> Platform:
    """``hosts`` machines in a bidirectional ring (a 1-D torus)."""
    check_count("hosts", hosts)
    return _direct((hosts,), device, link, node, name, "ring")


def torus(dims: Sequence[int], device: DeviceSpec, link: LinkSpec, *,
          node: NodeSpec | None = None, name: str = "torus") -> Platform:
    """A torus with wraparound links, ``dims`` like ``(4, 4)`` or ``(4, 4, 4)``."""
    if isinstance(dims, (str, bytes)) or not isinstance(dims, Sequence) or not dims:
        raise InputError(f"dims must be a list of sizes like [4, 4] or [4, 4, 4], not "
                         f"{dims!r}", path=("dims",))
    for i, d in enumerate(dims):
        if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= MAX_COUNT:
            raise InputError(f"torus sizes must be integers >= 1 and <= {MAX_COUNT:,}, not {d!r}",
                             path=("dims", i))
    if _size(tuple(dims)) > MAX_COUNT:
        raise InputError(f"a torus of {' x '.join(map(str, dims))} hosts is larger than "
                         f"{MAX_COUNT:,}", path=("dims",))
    return _direct(tuple(dims), device, link, node, name, "torus")


def torus_distance(a: Sequence[int], b: Sequence[int], dims: Sequence[int]) -> int:
    """Hops between two coordinates: Manhattan distance with wraparound."""
    return sum(min(abs(x - y), n - abs(x - y)) for x, y, n in zip(a, b, dims))


def _direct(dims: tuple[int, ...], device: DeviceSpec, link: LinkSpec, node: NodeSpec | None,
            name: str, topology: str) -> Platform:
    check_link("link", link)
    node = check_node(node, fabric=_size(dims) > 1, direct=True)
    b = PlatformBuilder(name)
    b.meta.update(topology=topology, dims=dims)
    coords = list(product(*(range(d) for d in dims)))
    index = {c: i for i, c in enumerate(coords)}
    routers = []
    for i, c in enumerate(coords):
        m = add_machine(b, i, node, device)
        port = m.ports[0] if m.ports else None  # no port: a lone machine without a NIC
        if port is not None:
            b.nodes[port]["coord"] = c
            if b.nodes[port]["kind"] == "nic":
                b.nodes[port]["kind"] = "router"
        routers.append(port)
    for i, c in enumerate(coords):
        for dim, size in enumerate(dims):
            if size == 1 or (size == 2 and c[dim] == 1):
                continue
            nxt = list(c)
            nxt[dim] = (c[dim] + 1) % size
            b.add_link(routers[i], routers[index[tuple(nxt)]], link)
    return b.build()


def _size(dims: tuple[int, ...]) -> int:
    out = 1
    for d in dims:
        out *= d
    return out
