"""The platform: devices, switches and links as a networkx graph, plus routing.

Why a graph and link *resources*: the network model shares bandwidth per link direction, so a
route is a tuple of integer resource ids and capacities live in one numpy array.  A full-duplex
cable becomes two directed edges with two resources; a half-duplex one becomes two directed
edges that name the *same* resource, so traffic in both directions shares its capacity.

Node attributes: ``kind`` in {"device", "switch", "nic", "cpu", "pcie"} (free text is allowed
for display, only "device" is special); devices also carry ``spec`` (a
:class:`~clustersim.catalog.DeviceSpec`) and ``host`` (the integer machine they sit in, used by
hierarchical collectives).  Edge attributes: ``bandwidth`` (bytes/s), ``latency`` (s), ``link``
(resource id) and ``kind`` (link class name).

Routing is deterministic shortest-hop with ECMP: when several next hops are equally short, the
choice is a fixed hash of (source, destination), like a switch hashing a flow's 5-tuple.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from clustersim.catalog import DeviceSpec, LinkSpec
from clustersim.errors import InputError

__all__ = ["Platform", "PlatformBuilder", "Route"]

Route = tuple[int, ...]


def _mix(a: int, b: int) -> int:
    """A small deterministic integer hash (Python's str hash is salted per process)."""
    x = (a * 0x9E3779B1 + b * 0x85EBCA77 + 0x165667B1) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
    x ^= x >> 12
    return x


@dataclass
class _LinkRes:
    name: str
    bandwidth: float
    latency: float
    kind: str


class PlatformBuilder:
    """Accumulates nodes and links; :meth:`build` validates and freezes a :class:`Platform`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.graph = nx.DiGraph()
        self._devices: list[str] = []
        self._res: list[_LinkRes] = []

    def add_device(self, name: str, spec: DeviceSpec, host: int, **attrs: object) -> str:
        if name in self.graph:
            raise ValueError(f"duplicate node {name!r}")
        self.graph.add_node(name, kind="device", spec=spec, host=host, **attrs)
        self._devices.append(name)
        return name

    def add_node(self, name: str, kind: str = "switch", **attrs: object) -> str:
        if name in self.graph:
            raise ValueError(f"duplicate node {name!r}")
        self.graph.add_node(name, kind=kind, **attrs)
        return name

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
    ) -> None:
        """Connect ``a`` and ``b``; explicit values override the link class ``spec``."""
        bw = bandwidth if bandwidth is not None else (spec.bandwidth if spec else None)
        lat = latency if latency is not None else (spec.latency if spec else 0.0)
        kd = kind or (spec.name if spec else "link")
        dup = duplex if duplex is not None else (spec.duplex if spec else True)
        if bw is None or not bw > 0:
            raise InputError(f"link {a}-{b} needs a positive bandwidth, got {bw!r}")
        if lat < 0:
            raise InputError(f"link {a}-{b} needs a non-negative latency, got {lat!r}")
        for n in (a, b):
            if n not in self.graph:
                raise InputError(f"link {a}-{b} names unknown node {n!r}")
        if self.graph.has_edge(a, b):
            raise InputError(f"duplicate link {a}-{b}")
        rid = len(self._res)
        self._res.append(_LinkRes(f"{a}->{b}", bw, lat, kd))
        self.graph.add_edge(a, b, bandwidth=bw, latency=lat, link=rid, kind=kd)
        if dup:
            rid = len(self._res)
            self._res.append(_LinkRes(f"{b}->{a}", bw, lat, kd))
        else:
            self._res[rid].name = f"{a}<->{b}"
        self.graph.add_edge(b, a, bandwidth=bw, latency=lat, link=rid, kind=kd)

    def build(self, devices: Sequence[str] | None = None) -> Platform:
        """Freeze.  ``devices`` orders the ranks (default: insertion order)."""
        order = tuple(devices) if devices is not None else tuple(self._devices)
        if not order:
            raise InputError(f"platform {self.name!r} has no devices")
        und = self.graph.to_undirected(as_view=True)
        comp = nx.node_connected_component(und, order[0])
        lost = [d for d in order if d not in comp]
        if lost:
            raise InputError(
                f"platform {self.name!r} is disconnected: device {lost[0]!r} cannot reach "
                f"{order[0]!r} ({len(lost)} device(s) unreachable)"
            )
        return Platform(self.name, self.graph, order, self._res)


class Platform:
    """An immutable platform with deterministic ECMP routing between any two nodes."""

    def __init__(self, name: str, graph: nx.DiGraph, devices: Sequence[str],
                 resources: Sequence[_LinkRes]) -> None:
        self.name = name
        self.graph = graph
        self.devices: tuple[str, ...] = tuple(devices)
        self.link_names: tuple[str, ...] = tuple(r.name for r in resources)
        self.link_kind: tuple[str, ...] = tuple(r.kind for r in resources)
        self.capacity = np.array([r.bandwidth for r in resources], dtype=float)
        self.latency = np.array([r.latency for r in resources], dtype=float)
        self.capacity.setflags(write=False)
        self.latency.setflags(write=False)
        # integer view of the graph for fast routing
        self._names: list[str] = sorted(graph.nodes, key=_natural_key)
        self._index = {n: i for i, n in enumerate(self._names)}
        n = len(self._names)
        self._succ: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self._pred: list[list[int]] = [[] for _ in range(n)]
        for u, v, data in graph.edges(data=True):
            iu, iv = self._index[u], self._index[v]
            self._succ[iu].append((iv, data["link"]))
            self._pred[iv].append(iu)
        for lst in self._succ:
            lst.sort()
        self._dist_cache: dict[int, np.ndarray] = {}
        self._route_cache: dict[tuple[int, int], Route] = {}

    # -- devices -------------------------------------------------------------------------
    @property
    def num_devices(self) -> int:
        return len(self.devices)

    @property
    def num_links(self) -> int:
        return len(self.capacity)

    def spec(self, device: str | int) -> DeviceSpec:
        return self.graph.nodes[self._dev(device)]["spec"]

    def host(self, device: str | int) -> int:
        """The machine (node) a device sits in; hierarchical collectives group by it."""
        return self.graph.nodes[self._dev(device)]["host"]

    def _dev(self, device: str | int) -> str:
        return self.devices[device] if isinstance(device, (int, np.integer)) else device

    # -- routing -------------------------------------------------------------------------
    def _dist_to(self, dst: int) -> np.ndarray:
        d = self._dist_cache.get(dst)
        if d is None:
            d = np.full(len(self._names), -1, dtype=np.int64)
            d[dst] = 0
            q = deque([dst])
            pred = self._pred
            while q:
                u = q.popleft()
                du = d[u] + 1
                for w in pred[u]:
                    if d[w] < 0:
                        d[w] = du
                        q.append(w)
            self._dist_cache[dst] = d
        return d

    def route(self, src: str | int, dst: str | int) -> Route:
        """Link resource ids from ``src`` to ``dst`` (devices by rank or any node by name)."""
        s = self._index[self._dev(src)]
        t = self._index[self._dev(dst)]
        key = (s, t)
        r = self._route_cache.get(key)
        if r is not None:
            return r
        if s == t:
            r = ()
        else:
            dist = self._dist_to(t)
            if dist[s] < 0:
                raise InputError(f"no route from {self._names[s]!r} to {self._names[t]!r}")
            h = _mix(s, t)
            links = []
            u = s
            while u != t:
                want = dist[u] - 1
                cands = [(v, lk) for v, lk in self._succ[u] if dist[v] == want]
                v, lk = cands[h % len(cands)] if len(cands) > 1 else cands[0]
                links.append(lk)
                u = v
            r = tuple(links)
        self._route_cache[key] = r
        return r

    def path_latency(self, route: Route) -> float:
        return float(sum(self.latency[i] for i in route))

    def path_bandwidth(self, route: Route) -> float:
        """Bandwidth a lone flow gets on this route: the narrowest link."""
        return float(min(self.capacity[i] for i in route)) if route else float("inf")

    def describe(self) -> str:
        kinds: dict[str, int] = {}
        for _, data in self.graph.nodes(data=True):
            kinds[data["kind"]] = kinds.get(data["kind"], 0) + 1
        parts = ", ".join(f"{v} {k}" + ("s" if v != 1 else "") for k, v in sorted(kinds.items()))
        return f"{self.name}: {parts}, {self.graph.number_of_edges() // 2} links"


def _natural_key(name: str) -> tuple:
    """Sort "n2" before "n10" so node indices follow the order people expect."""
    import re

    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(name)))
