"""What a route costs a message in the flow model: first-byte latency (per-message overhead,
protocol segment, hop latencies) and the lone-flow rate, cached per distinct route.

A mixin of :class:`clustersim.network.flow.FlowNetwork` (which owns ``params``,
``_route_info``, ``_cap_list``, ``_lat_list``, ``_kinds``, ``_weights``, ``_protocols``):
costing a route is independent of the flows in flight, so it is kept apart from the engine
that moves them; the analytic point-to-point model asks the same questions through
:meth:`RouteCosting.message_plan`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from clustersim.network.flowrecords import _RouteInfo

__all__ = ["RouteCosting"]


class RouteCosting:
    """Route latency and protocol costs of the flow network (a mixin)."""

    def message_latency(self, route: Sequence[int], nbytes: float = 0.0) -> float:
        """Time before the first byte of an ``nbytes`` message on ``route`` arrives: the
        per-message overhead (the protocol segment's, if any) plus the hop latencies.
        An empty route (local copy) costs nothing."""
        route = route if type(route) is tuple else tuple(route)
        if not route:
            return 0.0
        info = self._info(route)
        if self._protocols:
            return self._message(info, float(nbytes))[0]
        return info.latency

    def message_plan(self, route: Sequence[int], nbytes: float) -> tuple[float, float]:
        """(time before the first byte arrives, bytes to drain at ``capacity * efficiency``)
        of one point-to-point message: the same protocol costs the analytic point-to-point
        model (:mod:`clustersim.network.queueing`) must charge."""
        route = route if type(route) is tuple else tuple(route)
        if not route:
            return 0.0, 0.0
        return self._message(self._info(route), float(nbytes))

    def _message(self, info: _RouteInfo, size: float, collective: bool = False
                 ) -> tuple[float, float]:
        """(latency incl. overhead, bytes to drain) of one message under the protocol table
        and the collective efficiency."""
        ovh, charge = self.params.message_cost(size, info.link_class, collective)
        return info.hops + ovh, size * charge

    def _info(self, route: tuple[int, ...]) -> _RouteInfo:
        """Latency (overhead included) and lone-flow rate of a route, cached.

        Plain loops rather than generator expressions: a 4,000-worker parameter server meets
        8,000 distinct routes per run, so this is on the set-up path of every large point."""
        info = self._route_info.get(route)
        if info is None:
            if not route:
                info = _RouteInfo(route, 0.0, math.inf)
            else:
                nlinks = len(self._cap_list)
                cap = self._cap_list
                lat = self._lat_list
                lone = math.inf
                narrowest = -1  # first link of the lowest capacity (the bottleneck's class)
                hop_lat = []
                for lk in route:
                    if not 0 <= lk < nlinks:
                        raise ValueError(f"route {route} names a link outside 0..{nlinks - 1}")
                    c = cap[lk]
                    share = c / route.count(lk)
                    if share < lone:
                        lone = share
                    if narrowest < 0 or c < cap[narrowest]:
                        narrowest = lk
                    hop_lat.append(lat[lk])
                hops = math.fsum(hop_lat)
                kinds = self._kinds
                if self._weights and kinds is not None:  # narrowest achievable bandwidth
                    w = self._weights
                    narrowest = min(route, key=lambda lk: (cap[lk] * w.get(kinds[lk], 1.0),
                                                           route.index(lk)))
                kind = kinds[narrowest] if kinds is not None else None
                info = _RouteInfo(route, self.params.overhead + hops, lone, hops, kind)
            self._route_info[route] = info
        return info
