"""Non-minimal and adaptive dragonfly routing: Valiant and UGAL at flow level.

Why: a dragonfly's minimal routes use the one global link between two groups, so traffic
from group to group (a ring all-reduce over groups, a shift permutation) piles onto a few
global links while the others idle.  Kim, Dally, Scott and Abts ("Technology-Driven,
Highly-Scalable Dragonfly Topology", ISCA 2008) route such traffic through a random
intermediate group (Valiant: twice the global hops, but spread over all of them) and choose
per packet between the two by comparing queue occupancy times hop count (UGAL, Singh's
"Load-Balanced Routing in Interconnection Networks", PhD thesis, Stanford 2005).

At flow level (this simulator has flows, not packets) the choice is made once, when a flow
starts: the cost of a route is ``hops x load`` where ``load`` is the number of active flows
on the route's most-loaded link (the flow model keeps those counts:
:class:`clustersim.network.adaptive.AdaptiveFlowNetwork`); the minimal route wins ties, so an
idle network routes minimally.  Counting every link of the route (not just the first
router's queues, as UGAL-L does) makes this closer to UGAL-G.

Valiant routes here: minimal from the source to a random router of a random intermediate
group other than the source's and the destination's (seeded, deterministic), cut at the
first router of that group the minimal route reaches, then minimal to the destination - at
most two global hops and five router-to-router links (local, global, local, global, local).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clustersim.platform.routing import mix

if TYPE_CHECKING:
    from collections.abc import Sequence

    from clustersim.platform.model import Platform
    from clustersim.platform.routing import Route

__all__ = ["Valiant", "Ugal", "VALIANT_SALT"]

#: mixed with the seed so that Valiant's choices are not the ECMP hash of the same pair
VALIANT_SALT = 0x5A17A9


class Valiant:
    """Valiant routes between node indices of a dragonfly platform."""

    def __init__(self, platform: Platform, seed: int = 0) -> None:
        router = platform._router
        self._router = router
        self._seed = seed
        names = platform._names
        nodes = platform.nodes
        n = len(names)
        group = [-1] * n
        by_group: dict[int, list[int]] = {}
        for i, name in enumerate(names):
            g = nodes[name].get("group") if nodes[name].get("kind") == "router" else None
            if g is not None:
                group[i] = int(g)
                by_group.setdefault(int(g), []).append(i)
        for i in range(n):  # hosts, NICs and devices: the group of their router
            if group[i] < 0:
                group[i] = group[router._chain(i)[-1]]
        self._group = group
        self._groups = sorted(by_group)
        self._routers = by_group
        tail, head, link, _ = platform._edge_cols
        self._head: dict[tuple[int, int], int] = {
            (u, lk): v for u, v, lk in zip(tail.tolist(), head.tolist(), link.tolist())}

    def intermediate(self, s: int, t: int) -> tuple[int, int] | None:
        """(group, router) the Valiant route from ``s`` to ``t`` goes through; None when no
        third group exists (the route is then minimal)."""
        gs, gt = self._group[s], self._group[t]
        others = [g for g in self._groups if g != gs and g != gt]
        if not others:
            return None
        h = mix(mix(s, t), self._seed ^ VALIANT_SALT)
        g = others[h % len(others)]
        routers = self._routers[g]
        return g, routers[mix(h, g) % len(routers)]

    def route(self, s: int, t: int) -> Route:
        """The Valiant route (link ids) from node ``s`` to node ``t``."""
        if s == t:
            return ()
        mid = self.intermediate(s, t)
        router = self._router
        if mid is None:
            return router.route(s, t, self._seed)
        g, r = mid
        first = router.route(s, r, self._seed)
        head, group = self._head, self._group
        u = s
        cut = len(first)
        for i, lk in enumerate(first):
            u = head[(u, lk)]
            if group[u] == g:
                cut = i + 1
                break
        return first[:cut] + router.route(u, t, self._seed)

    def group_of(self, node: int) -> int:
        return self._group[node]


class Ugal:
    """UGAL at flow start: minimal or Valiant, the lower ``hops x load`` (ties: minimal)."""

    def __init__(self, minimal, valiant: Valiant) -> None:
        self._minimal = minimal
        self._valiant = valiant.route
        self._cache: dict[tuple[int, int], tuple[Route, Route]] = {}
        self.choices = [0, 0]  # flows routed minimally, non-minimally

    def pair(self, s: int, t: int) -> tuple[Route, Route]:
        """(minimal, Valiant) routes of a pair, computed once."""
        both = self._cache.get((s, t))
        if both is None:
            both = self._cache[(s, t)] = (self._minimal(s, t), self._valiant(s, t))
        return both

    def choose(self, s: int, t: int, load: Sequence[int]) -> Route:
        """The route a flow from ``s`` to ``t`` takes given ``load[link]`` active flows."""
        m, v = self.pair(s, t)
        if not m or m == v:
            return m
        qm = max(load[lk] for lk in m)
        qv = max(load[lk] for lk in v)
        if len(v) * qv < len(m) * qm:
            self.choices[1] += 1
            return v
        self.choices[0] += 1
        return m
