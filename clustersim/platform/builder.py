"""Assembling a platform: :class:`PlatformBuilder` accumulates nodes and links (the topology
functions of :mod:`clustersim.platform.builders` drive it), checks each as it comes, and
freezes the result into a :class:`~clustersim.platform.model.Platform`.

Kept apart from the platform itself so that each module holds one topic: what may be built
(bounds, link checks, parallel cables) here, what a built platform answers (routes, devices,
capacities) there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from clustersim.catalog import DeviceSpec, LinkSpec
from clustersim.errors import InputError

if TYPE_CHECKING:
    from clustersim.platform.model import Platform

__all__ = ["LinkColumns", "PlatformBuilder", "Tables", "MAX_DEVICES", "MAX_NODES", "MAX_LINKS"]


class Tables:
    """A directed graph as networkx stores one: ``nodes[n]`` the attributes of node ``n``,
    ``adj[u][v]`` those of edge u->v (insertion order kept), ``meta`` the graph's own.

    ``adj`` may be given as a function that makes it on first use (picklable: platforms go
    to worker processes): a builder keeps its links as columns and a prediction never reads
    the dict-of-dicts (a 100,000-GPU platform would spend ~0.5 s and ~90 MiB on 314,000 edge
    dicts nobody asks for)."""

    __slots__ = ("nodes", "meta", "_adj", "_make")

    def __init__(self, nodes: dict[str, dict[str, Any]],
                 adj: dict[str, dict[str, dict[str, Any]]] | Callable[[], dict],
                 meta: dict[str, Any]) -> None:
        self.nodes = nodes
        self.meta = meta
        self._adj = None if callable(adj) else adj
        self._make = adj if callable(adj) else None

    @property
    def adj(self) -> dict[str, dict[str, dict[str, Any]]]:
        if self._adj is None:
            self._adj = self._make()  # type: ignore[misc]
            self._make = None
        return self._adj


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


def size_error(what: str) -> InputError:
    """The error for a platform past one of its bounds (``what``: devices, nodes or links)."""
    bound, hint = {"devices": (MAX_DEVICES, "fewer hosts or devices per machine"),
                   "nodes": (MAX_NODES, "fewer hosts, switches or devices per machine"),
                   "links": (MAX_LINKS, "fewer hosts, switches or devices per machine")}[what]
    return InputError(f"the platform would have more than {bound:,} {what}; make it smaller "
                      f"({hint})")


class LinkColumns(NamedTuple):
    """The link resources of a platform as columns, one entry per resource id (what a
    builder hands :class:`~clustersim.platform.model.Platform`; a list of :class:`_LinkRes`
    is accepted too)."""

    names: list[str]
    bandwidth: list[float]
    latency: list[float]
    kind: list[str]
    transport: list[str | None]


class PlatformBuilder:
    """Accumulates nodes and links; :meth:`build` validates and freezes a :class:`Platform`.

    ``nodes[name]`` holds each node's attributes as it is added (builders may annotate
    them).  Links are kept as columns - each resource's name, bandwidth, latency, class and
    transport, and every directed edge as ``(tail, head, resource, cost)`` - not as the
    adjacency dicts networkx keeps: why, in :class:`Tables`.  The platform makes those dicts
    (and a networkx graph from them) only if someone asks (:attr:`Platform.graph`).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: dict[str, dict[str, Any]] = {}
        self.meta: dict[str, Any] = {}
        self._devices: list[str] = []
        self._links = LinkColumns([], [], [], [], [])
        # cables so far between each pair of nodes (ids, smaller first): a second one is a
        # parallel link, a resource of its own with a ``#k`` tag in its name
        self._cables: dict[tuple[int, int], int] = {}
        # every directed edge as (tail, head, link, cost), nodes by insertion number, flat:
        # the platform's router takes them as arrays instead of walking the adjacency dicts
        self._ids: dict[str, int] = {}
        self._edges: list[int] = []

    def add_device(self, name: str, spec: DeviceSpec, host: int, **attrs: object) -> str:
        if len(self._devices) >= MAX_DEVICES:
            raise size_error("devices")
        self._new_node(name, {"kind": "device", "spec": spec, "host": host, **attrs})
        self._devices.append(name)
        return name

    def add_node(self, name: str, kind: str = "switch", **attrs: object) -> str:
        self._new_node(name, {"kind": kind, **attrs})
        return name

    def _new_node(self, name: str, attrs: dict[str, Any]) -> None:
        if len(self.nodes) >= MAX_NODES:
            raise size_error("nodes")
        if name in self.nodes:
            raise InputError(f"duplicate node {name!r}")
        self.nodes[name] = attrs
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
        ids = self._ids
        ia = ids.get(a)
        ib = ids.get(b)
        if ia is None or ib is None:
            missing = a if ia is None else b
            raise InputError(f"link {a}-{b} names unknown node {missing!r}")
        if a == b:
            raise InputError(f"link {a}-{b} connects a node to itself")
        cols = self._links
        rid = len(cols.names)
        if rid >= MAX_LINKS:
            raise size_error("links")
        pair = (ia, ib) if ia < ib else (ib, ia)
        cable = self._cables.get(pair, 0)
        self._cables[pair] = cable + 1
        tag = f"#{cable}" if cable else ""
        if dup:  # one resource per direction
            cols.names.extend((f"{a}->{b}{tag}", f"{b}->{a}{tag}"))
            cols.bandwidth.extend((bw, bw))
            cols.latency.extend((lat, lat))
            cols.kind.extend((kd, kd))
            cols.transport.extend((tr, tr))
            self._edges += (ia, ib, rid, cost, ib, ia, rid + 1, cost)
        else:  # both directions share one
            cols.names.append(f"{a}<->{b}{tag}")
            cols.bandwidth.append(bw)
            cols.latency.append(lat)
            cols.kind.append(kd)
            cols.transport.append(tr)
            self._edges += (ia, ib, rid, cost, ib, ia, rid, cost)

    def build(self, devices: Sequence[str] | None = None) -> Platform:
        """Freeze.  ``devices`` orders the ranks (default: insertion order)."""
        order = tuple(devices) if devices is not None else tuple(self._devices)
        if not order:
            raise InputError(f"platform {self.name!r} has no devices")
        from clustersim.platform.model import Platform

        edges = np.array(self._edges, dtype=np.int64).reshape(-1, 4)
        links = LinkColumns(*(list(c) for c in self._links))  # links added later stay out
        names = list(self._ids)  # by insertion number
        tables = Tables(self.nodes, partial(adjacency, names, links, edges), dict(self.meta))
        platform = Platform(self.name, tables, order, links, edges)
        lost = platform.unreachable(order[0])
        if lost:
            raise InputError(
                f"platform {self.name!r} is disconnected: device {lost[0]!r} cannot reach "
                f"{order[0]!r} ({len(lost)} device(s) unreachable)"
            )
        return platform


def adjacency(names: list[str], links: LinkColumns, edges: np.ndarray
              ) -> dict[str, dict[str, dict[str, Any]]]:
    """Links as networkx's adjacency dicts: ``adj[u][v]`` the attributes of the first cable
    u->v, later cables in its ``parallel`` list; ``edges`` rows ``(tail, head, resource,
    cost)`` with nodes numbered as in ``names``, in the order they were added."""
    adj: dict[str, dict[str, dict[str, Any]]] = {n: {} for n in names}
    bw, lat, kind = links.bandwidth, links.latency, links.kind
    for t, h, rid, cost in edges.tolist():
        u = names[t]
        v = names[h]
        data = {"bandwidth": bw[rid], "latency": lat[rid], "link": rid, "kind": kind[rid],
                "cost": cost}
        first = adj[u].get(v)
        if first is None:
            adj[u][v] = data
        else:
            first.setdefault("parallel", []).append(data)
    return adj
