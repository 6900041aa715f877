"""Assembling a platform: :class:`PlatformBuilder` accumulates nodes and links (the topology
functions of :mod:`clustersim.platform.builders` drive it), checks each as it comes, and
freezes the result into a :class:`~clustersim.platform.model.Platform`.

Kept apart from the platform itself so that each module holds one topic: what may be built
(bounds, link checks, parallel cables) here, what a built platform answers (routes, devices,
capacities) there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from clustersim.catalog import DeviceSpec, LinkSpec
from clustersim.errors import InputError

if TYPE_CHECKING:
    from clustersim.platform.model import Platform

__all__ = ["PlatformBuilder", "Tables", "MAX_DEVICES", "MAX_NODES", "MAX_LINKS"]


@dataclass
class Tables:
    """A directed graph as networkx stores one: ``nodes[n]`` the attributes of node ``n``,
    ``adj[u][v]`` those of edge u->v (insertion order kept), ``meta`` the graph's own."""

    nodes: dict[str, dict[str, Any]]
    adj: dict[str, dict[str, dict[str, Any]]]
    meta: dict[str, Any]


@dataclass
class _LinkRes:
    name: str
    bandwidth: float
    latency: float
    kind: str
    transport: str | None = None


#: Bounds on a platform's size.  Why: a typo (``hosts: 1e12``, a 1024-device NVLink mesh) must
#: end in a clear error, not in minutes of building and gigabytes of memory.  The largest
#: shipped platform is scenarios/bsp_100k.yaml's (the design-space target of one BSP point at
#: 100,000 GPUs): 100,000 devices, ~127,000 nodes and ~314,000 link resources (two per
#: full-duplex cable).  These leave ~30% room above it (131,072 devices: 16,384 nodes of 8
#: GPUs) while keeping a build at a few seconds and a few hundred MiB.
MAX_DEVICES = 131_072
MAX_NODES = 200_000
MAX_LINKS = 500_000


class PlatformBuilder:
    """Accumulates nodes and links; :meth:`build` validates and freezes a :class:`Platform`.

    ``nodes[name]`` holds each node's attributes as it is added (builders may annotate
    them); links go into plain adjacency dicts - the platform builds a networkx graph from
    both only if someone asks for it (:attr:`Platform.graph`).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: dict[str, dict[str, Any]] = {}
        self.meta: dict[str, Any] = {}
        self._adj: dict[str, dict[str, dict[str, Any]]] = {}
        self._devices: list[str] = []
        self._res: list[_LinkRes] = []
        # every directed edge as (tail, head, link, cost), nodes by insertion number, flat:
        # the platform's router takes them as arrays instead of walking the adjacency dicts
        self._ids: dict[str, int] = {}
        self._edges: list[int] = []

    def add_device(self, name: str, spec: DeviceSpec, host: int, **attrs: object) -> str:
        if len(self._devices) >= MAX_DEVICES:
            raise InputError(f"the platform would have more than {MAX_DEVICES:,} devices; make "
                             f"it smaller (fewer hosts or devices per machine)")
        self._new_node(name, {"kind": "device", "spec": spec, "host": host, **attrs})
        self._devices.append(name)
        return name

    def add_node(self, name: str, kind: str = "switch", **attrs: object) -> str:
        self._new_node(name, {"kind": kind, **attrs})
        return name

    def _new_node(self, name: str, attrs: dict[str, Any]) -> None:
        if len(self.nodes) >= MAX_NODES:
            raise InputError(f"the platform would have more than {MAX_NODES:,} nodes "
                             f"(devices, NICs, switches); make it smaller")
        if name in self.nodes:
            raise InputError(f"duplicate node {name!r}")
        self.nodes[name] = attrs
        self._adj[name] = {}
        self._ids[name] = len(self._ids)

    def add_link(
        self,
        a: str,
        b: str,
        spec: LinkSpec | None = None,
        *,
        bandwidth: float | None = None,
        latency: float | None = None,
        kind: str | None = None,
        duplex: bool | None = None,
        cost: int = 1,
        transport: str | None = None,
    ) -> None:
        """Connect ``a`` and ``b``; explicit values override the link class ``spec``.

        ``cost`` is the routing cost of crossing the link (a positive integer).
        ``transport``: the catalog transport of this link (default: the class's).
        """
        bw = bandwidth if bandwidth is not None else (spec.bandwidth if spec else None)
        lat = latency if latency is not None else (spec.latency if spec else 0.0)
        kd = kind or (spec.name if spec else "link")
        dup = duplex if duplex is not None else (spec.duplex if spec else True)
        tr = transport if transport is not None else (spec.transport if spec else None)
        if bw is None or not bw > 0:
            raise InputError(f"link {a}-{b} needs a positive bandwidth, got {bw!r}")
        if lat < 0:
            raise InputError(f"link {a}-{b} needs a non-negative latency, got {lat!r}")
        if cost.__class__ is not int or cost < 1:
            raise InputError(f"link {a}-{b} needs a positive integer routing cost, got {cost!r}")
        adj = self._adj
        if a not in adj or b not in adj:
            missing = a if a not in adj else b
            raise InputError(f"link {a}-{b} names unknown node {missing!r}")
        if a == b:
            raise InputError(f"link {a}-{b} connects a node to itself")
        rid = len(self._res)
        if rid >= MAX_LINKS:
            raise InputError(f"the platform would have more than {MAX_LINKS:,} links; make "
                             f"it smaller (fewer hosts, switches or devices per machine)")
        # a second cable between the same two nodes is a parallel link: a resource of its own,
        # kept in the first cable's ``parallel`` list (the tables stay networkx's DiGraph shape)
        cable = len(adj[a][b].get("parallel", ())) + 1 if b in adj[a] else 0
        tag = f"#{cable}" if cable else ""
        self._res.append(_LinkRes(f"{a}->{b}{tag}", bw, lat, kd, tr))
        self._put(a, b, {"bandwidth": bw, "latency": lat, "link": rid, "kind": kd, "cost": cost})
        ia, ib = self._ids[a], self._ids[b]
        self._edges += (ia, ib, rid, cost, ib, ia, rid + 1 if dup else rid, cost)
        if dup:
            rid += 1
            self._res.append(_LinkRes(f"{b}->{a}{tag}", bw, lat, kd, tr))
        else:
            self._res[rid].name = f"{a}<->{b}{tag}"
        self._put(b, a, {"bandwidth": bw, "latency": lat, "link": rid, "kind": kd, "cost": cost})

    def _put(self, a: str, b: str, data: dict[str, Any]) -> None:
        first = self._adj[a].get(b)
        if first is None:
            self._adj[a][b] = data
        else:
            first.setdefault("parallel", []).append(data)

    def build(self, devices: Sequence[str] | None = None) -> Platform:
        """Freeze.  ``devices`` orders the ranks (default: insertion order)."""
        order = tuple(devices) if devices is not None else tuple(self._devices)
        if not order:
            raise InputError(f"platform {self.name!r} has no devices")
        from clustersim.platform.model import Platform

        tables = Tables(self.nodes, self._adj, dict(self.meta))
        edges = np.array(self._edges, dtype=np.int64).reshape(-1, 4)
        platform = Platform(self.name, tables, order, self._res, edges)
        lost = platform.unreachable(order[0])
        if lost:
            raise InputError(
                f"platform {self.name!r} is disconnected: device {lost[0]!r} cannot reach "
                f"{order[0]!r} ({len(lost)} device(s) unreachable)"
            )
        return platform
