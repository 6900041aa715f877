"""The platform: devices, switches and links as a networkx graph, plus routing.

``Platform.graph`` is a :class:`networkx.DiGraph`, built on first use from the platform's own
node table and its links (kept by the builder as columns; the dict-of-dicts adjacency networkx
keeps inside is itself made on first use, :class:`~clustersim.platform.builder.Tables`):
building, routing, costing and describing a platform read the columns, so a ``clustersim
predict`` does not import networkx at all (~0.1 s of start-up, a twentieth of the KNL
scenario's run), while anything that wants the graph - analyses, tests, retuning - gets a
real one.

Why a graph and link *resources*: the network model shares bandwidth per link direction, so a
route is a tuple of integer resource ids and capacities live in one numpy array.  A full-duplex
cable becomes two directed edges with two resources; a half-duplex one becomes two directed
edges that name the *same* resource, so traffic in both directions shares its capacity.

Node attributes: ``kind`` in {"device", "switch", "router", "nic", "cpu", "pcie", "bus"} (free
text is allowed for display, only "device" is special); devices also carry ``spec`` (a
:class:`~clustersim.catalog.DeviceSpec`) and ``host`` (the integer machine they sit in, used by
hierarchical collectives).  Edge attributes: ``bandwidth`` (bytes/s), ``latency`` (s), ``link``
(resource id), ``kind`` (link class name) and ``cost`` (integer routing cost, 1 per hop unless
a builder says otherwise).  Parallel cables between the same two nodes (two uplinks from a leaf
to one spine) are resources of their own: the first cable's attributes are the edge's, the
others sit in its ``parallel`` list (:meth:`Platform.cables` yields every one), and the router
treats each as its own next-hop choice.

Routing is deterministic minimal-cost (shortest-hop with unit costs) with ECMP: when several next
hops are equally good, the choice is a fixed hash of (source, destination, current node), like a
switch hashing a flow's 5-tuple with its own seed.  See :mod:`clustersim.platform.routing`.
That is the default policy; :meth:`Platform.with_routing` gives the same platform under
another (a seeded hash, d-mod-k, Valiant, UGAL: :mod:`clustersim.platform.policies`).
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from clustersim.catalog import DeviceSpec
from clustersim.errors import InputError
from clustersim.platform.builder import (  # noqa: F401 - re-exported, the old home
    MAX_DEVICES,
    MAX_LINKS,
    MAX_NODES,
    LinkColumns,
    PlatformBuilder,
    Tables,
    _LinkRes,
)
from clustersim.platform.coregraph import edge_columns
from clustersim.platform.policies import RoutingSpec, check_policy, route_function
from clustersim.platform.rankroutes import rank_routes
from clustersim.platform.routing import NoRoute, Router

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Platform", "PlatformBuilder", "Route", "Tables"]

Route = tuple[int, ...]


class Platform:
    """An immutable platform with deterministic ECMP routing between any two nodes."""

    #: the communication library its jobs use (platform field ``library:``), None if undeclared
    library: str | None = None

    def __init__(self, name: str, graph: nx.DiGraph | Tables, devices: Sequence[str],
                 resources: Sequence[_LinkRes] | LinkColumns,
                 edges: np.ndarray | None = None) -> None:
        """``graph``: a networkx DiGraph (kept as :attr:`graph`) or the :class:`Tables` of
        one (a builder's; the graph is then made on first use).  ``edges``: the builder's
        directed edges as rows ``(tail, head, link, cost)`` with nodes numbered in the order
        of ``graph``'s node table (read from the adjacency when not given)."""
        self.name = name
        if isinstance(graph, Tables):
            self._graph: nx.DiGraph | None = None
            self._tables = graph
        else:
            self._graph = graph
            self._tables = Tables(graph._node, graph._adj, graph.graph)
        self.devices: tuple[str, ...] = tuple(devices)
        if not isinstance(resources, LinkColumns):  # a list of resources: as columns
            resources = LinkColumns(*(list(map(attrgetter(f), resources)) for f in
                                      ("name", "bandwidth", "latency", "kind")),
                                    [getattr(r, "transport", None) for r in resources])
        self.link_names: tuple[str, ...] = tuple(resources.names)
        self.link_kind: tuple[str, ...] = tuple(resources.kind)
        #: catalog transport of each link resource (None: datasheet line rate, no overhead)
        self.link_transport: tuple[str | None, ...] = tuple(resources.transport)
        self.capacity = np.array(resources.bandwidth, dtype=float)
        self.latency = np.array(resources.latency, dtype=float)
        self.capacity.setflags(write=False)
        self.latency.setflags(write=False)
        nodes = self._tables.nodes
        # integer view of the graph for fast routing; node order = natural name order
        self._names: list[str] = sorted(nodes, key=_natural_key)
        self._index = {n: i for i, n in enumerate(self._names)}
        idx = self._index
        if edges is not None:  # a builder's: (tail, head, link, cost), nodes by insertion
            renumber = np.fromiter(map(idx.__getitem__, nodes), dtype=np.int64,
                                   count=len(nodes))
            cols = (renumber[edges[:, 0]], renumber[edges[:, 1]], edges[:, 2], edges[:, 3])
        else:
            rows = []
            add = rows.append
            for u, nbrs in self._tables.adj.items():  # self.cables(), without a generator
                iu = idx[u]
                for v, data in nbrs.items():
                    add((iu, idx[v], data["link"], data.get("cost", 1)))
                    for extra in data.get("parallel", ()):
                        add((iu, idx[v], extra["link"], extra.get("cost", 1)))
            cols = edge_columns(rows)
        #: every directed edge: (tail, head, link, cost) columns, nodes by index
        self._edge_cols: tuple[np.ndarray, ...] = cols
        self._router = Router(len(self._names), cols)
        #: the routing policy (:mod:`clustersim.platform.policies`); see :meth:`with_routing`
        self.routing = RoutingSpec()
        self._route_fn = self._router.route
        self._ugal: Any = None
        self._dev_index = list(map(idx.__getitem__, self.devices))
        self._route_cache: dict[tuple[str | int, str | int], Route] = {}
        dev_attrs = list(map(nodes.__getitem__, self.devices))  # C-level maps: 100,000 devices
        self.rank_hosts: tuple[int, ...] = tuple(map(itemgetter("host"), dev_attrs))
        #: ``spec(rank)`` without a networkx node lookup: a 4,000-worker point asks for the
        #: spec of every device several times (costs, job, actors)
        self.rank_specs: tuple[DeviceSpec, ...] = tuple(map(itemgetter("spec"), dev_attrs))
        #: what simulations derive from this (immutable) platform and reuse across runs in
        #: one process, keyed by its users (the engine: point-to-point message plans)
        self.memo: dict[Any, Any] = {}
        #: transport name -> catalog TransportSpec, attached by the platform's describer
        #: (clustersim.platform.describe) for the scenario's network parameters
        self.transport_specs: dict[str, Any] = {}

    # -- devices -------------------------------------------------------------------------
    @property
    def num_devices(self) -> int:
        return len(self.devices)

    @property
    def num_links(self) -> int:
        return len(self.capacity)

    @property
    def num_hosts(self) -> int:
        """Number of distinct machines the devices sit in."""
        return len(set(self.rank_hosts))

    @property
    def graph(self) -> nx.DiGraph:
        """The platform as a networkx DiGraph (node attributes ``kind``, ``spec``, ``host``;
        edge attributes ``bandwidth``, ``latency``, ``link``, ``kind``, ``cost``), made on
        first use.  Read it, do not change it: the platform is immutable (a retuned platform
        is a new one, see :mod:`clustersim.calibration.retune`)."""
        if self._graph is None:
            import networkx as nx

            t = self._tables
            g = nx.DiGraph()
            g.graph.update(t.meta)
            g.add_nodes_from(t.nodes.items())
            g.add_edges_from((u, v, d) for u, nbrs in t.adj.items() for v, d in nbrs.items())
            self._graph = g
        return self._graph

    @property
    def nodes(self) -> Mapping[str, dict[str, Any]]:
        """Node name -> attributes, without making the networkx graph."""
        return self._tables.nodes

    @property
    def meta(self) -> dict[str, Any]:
        """What the builder recorded (topology name, parameters, oversubscription, ...)."""
        return dict(self._tables.meta)

    def spec(self, device: str | int) -> DeviceSpec:
        if device.__class__ is int:
            return self.rank_specs[device]
        return self._tables.nodes[self._dev(device)]["spec"]

    def host(self, device: str | int) -> int:
        """The machine (node) a device sits in; hierarchical collectives group by it."""
        if device.__class__ is int:
            return self.rank_hosts[device]
        return self._tables.nodes[self._dev(device)]["host"]

    def out_links(self, node: str) -> dict[str, dict[str, Any]]:
        """Neighbour -> attributes of the links leaving ``node`` (by name)."""
        return self._tables.adj[node]

    def cables(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """Every directed link ``(u, v, attributes)``, parallel cables included (each is its
        own resource; :meth:`out_links` shows only the first cable of a pair, whose
        ``parallel`` attribute lists the others)."""
        for u, nbrs in self._tables.adj.items():
            for v, data in nbrs.items():
                yield u, v, data
                for extra in data.get("parallel", ()):
                    yield u, v, extra

    def _dev(self, device: str | int) -> str:
        return self.devices[device] if isinstance(device, (int, np.integer)) else device

    def _node_index(self, node: str | int) -> int:
        if isinstance(node, (int, np.integer)):
            if 0 <= node < len(self._dev_index):
                return self._dev_index[node]
            raise InputError(f"rank {node} is out of range: platform {self.name!r} has "
                             f"{len(self._dev_index)} devices")
        try:
            return self._index[node]
        except KeyError:
            raise InputError(f"unknown node {node!r} in platform {self.name!r}") from None

    # -- routing -------------------------------------------------------------------------
    def route(self, src: str | int, dst: str | int) -> Route:
        """Link resource ids from ``src`` to ``dst`` (devices by rank or any node by name)."""
        r = self._route_cache.get((src, dst))
        if r is None:
            s = self._node_index(src)
            t = self._node_index(dst)
            try:
                r = self._route_fn(s, t)
            except NoRoute:
                raise InputError(
                    f"no route from {self._names[s]!r} to {self._names[t]!r}") from None
            self._route_cache[(src, dst)] = r
        return r

    def with_routing(self, spec: RoutingSpec) -> Platform:
        """This platform under another routing policy (the graph and the router's searches
        are shared; routes, caches and :attr:`memo` are the new platform's own)."""
        spec = check_policy(spec, self._tables.meta.get("topology"))
        out = copy.copy(self)
        out.routing = spec
        out._route_cache = {}
        out.memo = {}
        out._route_fn = route_function(out, spec)
        out._ugal = None
        if spec.adaptive:
            from clustersim.platform.dragonfly_routing import Ugal, Valiant

            out._ugal = Ugal(out._route_fn, Valiant(out, spec.seed))
        return out

    @property
    def adaptive(self) -> bool:
        """True when a flow's route depends on the load when it starts (UGAL): the flow
        model then asks :meth:`choose_route`; :meth:`route` gives the minimal route."""
        return self._ugal is not None

    def choose_route(self, src: str | int, dst: str | int, load: Sequence[int]) -> Route:
        """The route a flow starting now takes, given ``load[link]`` active flows per link
        (adaptive policies; any other policy returns :meth:`route`)."""
        if self._ugal is None:
            return self.route(src, dst)
        return self._ugal.choose(self._node_index(src), self._node_index(dst), load)

    def routes(self, pairs: Iterable[tuple[str | int, str | int]]) -> list[Route]:
        """:meth:`route` for many ``(src, dst)`` pairs (e.g. every transfer of a step).

        Pairs of ranks in one machine (7 of 8 ring neighbours with 8 GPUs a node) take the
        router's tree walk straight away, uncached: it is cheaper than caching them.  Every
        policy routes such a pair the same way but Valiant (through a third group)."""
        if self.routing.policy == "valiant":
            return [self.route(s, t) for s, t in pairs]
        cache = self._route_cache
        dev = self._dev_index
        ndev = len(dev)
        tree = self._router.tree_route
        out = []
        for s, t in pairs:
            r = cache.get((s, t))
            if r is None:
                if s.__class__ is int and t.__class__ is int and 0 <= s < ndev and 0 <= t < ndev:
                    r = tree(dev[s], dev[t])
                if r is None:
                    r = self.route(s, t)
            out.append(r)
        return out

    def rank_routes(self, src: np.ndarray, dst: np.ndarray) -> list[Route]:
        """:meth:`routes` of the rank pairs ``(src[i], dst[i])`` (integer arrays), siblings
        built with array operations (:func:`~clustersim.platform.rankroutes.rank_routes`)."""
        return rank_routes(self, src, dst)

    def hops(self, src: str | int, dst: str | int) -> int:
        """Number of links on the route."""
        return len(self.route(src, dst))

    def route_cost(self, src: str | int, dst: str | int) -> int:
        """Minimal routing cost (= hop count when every link costs 1); -1 if unreachable."""
        return self._router.distance(self._node_index(src), self._node_index(dst))

    def route_nodes(self, src: str | int, dst: str | int) -> list[str]:
        """Node names along the route, both ends included (for display and tests)."""
        node = self._names[self._node_index(src)]
        out = [node]
        for lk in self.route(src, dst):
            nxt = self._link_end(node, lk)
            out.append(nxt)
            node = nxt
        return out

    def unreachable(self, node: str) -> list[str]:
        """Devices that ``node`` cannot reach or be reached from (ignoring direction).

        A breadth-first search over the router's neighbour table, a frontier at a time with
        array operations: every platform build runs it, and scipy's ``connected_components``
        would cost a scipy import (~0.2 s, more than the search on 4,500 nodes) at every
        start of the command."""
        ptr, nbr = self._router._nbr
        seen = np.zeros(len(self._names), dtype=bool)
        frontier = np.array([self._index[node]], dtype=np.int64)
        seen[frontier] = True
        while frontier.size:
            starts, ends = ptr[frontier], ptr[frontier + 1]
            sizes = ends - starts
            # the neighbour-table positions of every frontier node's neighbours, in one array
            offsets = np.repeat(starts - np.cumsum(sizes) + sizes, sizes)
            heads = nbr[offsets + np.arange(int(sizes.sum()))]
            frontier = np.unique(heads[~seen[heads]])
            seen[frontier] = True
        return [d for d, i in zip(self.devices, self._dev_index) if not seen[i]]

    def _link_end(self, node: str, link: int) -> str:
        for v, data in self._tables.adj[node].items():
            if data["link"] == link or any(x["link"] == link for x in data.get("parallel", ())):
                return v
        raise ValueError(f"link {link} does not leave {node!r}")  # an internal inconsistency

    def path_latency(self, route: Route) -> float:
        return float(sum(self.latency[i] for i in route))

    def path_bandwidth(self, route: Route) -> float:
        """Bandwidth a lone flow gets on this route: the narrowest link."""
        return float(min(self.capacity[i] for i in route)) if route else float("inf")

    @property
    def routing_core_size(self) -> int:
        """Nodes the router searches after collapsing one-neighbour nodes (devices)."""
        return self._router.num_core

    def describe(self) -> str:
        kinds = Counter(map(itemgetter("kind"), self._tables.nodes.values()))
        parts = ", ".join(f"{v} {_plural(k, v)}" for k, v in sorted(kinds.items()))
        edges = len(self._edge_cols[0])  # every directed cable, as cables() yields them
        return f"{self.name}: {parts}, {edges // 2} links"


def _plural(word: str, count: int) -> str:
    if count == 1:
        return word
    return word + ("es" if word.endswith(("s", "sh", "ch", "x")) else "s")


_DIGITS = re.compile(r"(\d+)")


def _natural_key(name: str) -> tuple:
    """Sort "n2" before "n10" so node indices follow the order people expect."""
    parts: list = _DIGITS.split(str(name))
    n = len(parts)
    # the captured digit runs sit at the odd places; names with one or two runs ("core7",
    # "h12.d3": nearly all nodes of a large platform) spelled out, a fifth faster
    if n == 5:
        return (parts[0], int(parts[1]), parts[2], int(parts[3]), parts[4])
    if n == 3:
        return (parts[0], int(parts[1]), parts[2])
    parts[1::2] = map(int, parts[1::2])
    return tuple(parts)
