"""How much the time of one exchange's messages differs between the workers of a
master-based point and its master - the check that keeps the saturated-master extension
(:mod:`clustersim.sim.saturated`) to points whose added workers reach the master as the
others do.

Why: the master takes the next free device after the workers (device ``W``), so which
workers share its machine changes with ``W``.  On a machine of 8 GPUs the workers beside
the master exchange over NVLink, the others through the NIC; a master that sits through each
transfer (the round-robin EASGD's rendezvous) serves the two kinds at different speeds, and
the mix of a round - hence the master's rate - differs between 8 and 12 workers by 13 %
(audit M).  A saturated master serves each worker once a round, so what its rate sees is
the workers' mean exchange time: where it is the same at both counts within
:data:`MAX_ROUTE_SPREAD`, the mix does not matter (knl_4253's 37 cores beside the master at
4,253 workers, the others across the Aries).

The time of a message is the engine's own costing (:meth:`~clustersim.network.routecost.
RouteCosting.message_plan`: hop latencies, per-message overhead, the transport's and the
protocol table's charges) plus its bytes drained at the route's narrowest link.  Routes are
grouped first by the links they use, as attributes (capacity, latency, class, transport),
so that one route per group is costed: knl_4253's 8,506 routes at 4,253 workers form a
handful of groups.  An exchange is costed as its two messages of weights plus two
header-only ones (the rendezvous' "ready" and "go"), whose latency differs more between
routes than the weights' time does.

Equal times are not enough for a master bound by its links: on a ring of 200 hosts the
workers of a 64-worker point all reach the master through one of its two ring links, those
of a 120-worker point through both, so the busiest link carries a sixth less per exchange
and the master serves faster - equal message times, and extended points 50 % off (audit N).
So the busiest link's demand per exchange (every worker's two messages drained at each
link's rate, summed per link, over the workers: the bottleneck law of
:mod:`clustersim.sim.linkdemand`) must be the same at both counts too.  Nor may a link away
from the master carry messages both to and from it (a half-duplex uplink, Valiant's random
detours on a dragonfly: the answer to one worker and the next worker's push meet there in
an order that changes with the count, 1.3 to 25 % off in audit O), and routes chosen from
the load (adaptive routing) are not known beforehand at all.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MAX_ROUTE_SPREAD", "exchange_profile", "same_exchanges"]

#: the workers' mean exchange time must be the same at both counts within this share, and
#: the busiest link's demand per exchange too (knl_4253's 37 cores beside the master at
#: 4,253 workers move the mean by 0.006 % at 10x latency; a leaf-spine of 300 us links let
#: a 0.98 % difference through a 1 % bound and its extended points were 1.4 % off: audit N)
MAX_ROUTE_SPREAD = 0.0025

_CACHE: dict[tuple, tuple[Any, tuple[np.ndarray, float, bool]]] = {}


def same_exchanges(scn: Any, w1: int, w2: int, nbytes: float) -> bool:
    """Whether the workers' exchanges with the master take as long on average at both
    counts (a round of a saturated master serves each worker once: the mean is what its
    rate sees) and the master's busiest link carries the same per exchange at both, within
    :data:`MAX_ROUTE_SPREAD`, on routes fixed beforehand that no link away from the master
    shares between messages to it and from it."""
    plat = scn.platform
    if getattr(plat, "adaptive", False) or getattr(plat.routing, "policy", "") == "valiant":
        return False  # routes chosen from the load, or through random detours
    t1, d1, crossed1 = exchange_profile(scn, w1, nbytes)
    t2, d2, crossed2 = exchange_profile(scn, w2, nbytes)
    if crossed1 or crossed2:
        return False
    m1, m2 = float(t1.mean()), float(t2.mean())
    return max(m1, m2) <= (1.0 + MAX_ROUTE_SPREAD) * min(m1, m2) and \
        max(d1, d2) <= (1.0 + MAX_ROUTE_SPREAD) * min(d1, d2)


def exchange_profile(scn: Any, workers: int, nbytes: float
                     ) -> tuple[np.ndarray, float, bool]:
    """Per worker, the seconds of one exchange with the master on device ``workers`` (where
    the sweep puts a lone server): a message of ``nbytes`` each way and a header-only one
    each way; the busiest link's seconds of draining per exchange, averaged over the
    workers' exchanges; and whether a link away from the master carries messages to it and
    from it (a half-duplex link, a detour): there the master's answer to one worker and the
    next worker's push can meet, in an order that depends on the count."""
    plat = scn.platform
    key = (id(plat), scn.network, workers, float(nbytes))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is plat:
        return hit[1]
    src = np.arange(workers)
    dst = np.full(workers, workers)
    routes = plat.rank_routes(src, dst) + plat.rank_routes(dst, src)
    times, headers, busiest = _route_times(plat, scn.network, routes, float(nbytes))
    both = times + headers
    up, down = routes[:workers], routes[workers:]
    own = {r[-1] for r in up if r} | {r[0] for r in down if r}
    crossed = bool(({k for r in up for k in r} & {k for r in down for k in r}) - own)
    out = (both[:workers] + both[workers:], busiest / workers, crossed)
    if len(_CACHE) >= 256:  # one page's platforms and counts, not a process's life
        _CACHE.clear()
    _CACHE[key] = (plat, out)
    return out


def _route_times(plat: Any, params: Any, routes: list, nbytes: float
                 ) -> tuple[np.ndarray, np.ndarray, float]:
    """One message's time on each route and a header-only message's, costed once per group
    of equivalent routes; and the busiest link's drain time summed over all the routes."""
    import simpy

    from clustersim.network.flow import FlowNetwork

    cap = np.asarray(plat.capacity, dtype=float)
    lat = np.asarray(plat.latency, dtype=float)
    kinds = list(getattr(plat, "link_kind", None) or [None] * len(cap))
    transports = list(getattr(plat, "link_transport", None) or [None] * len(cap))
    attrs: dict[tuple, int] = {}
    attr_of = [attrs.setdefault((cap[k], lat[k], kinds[k], transports[k]), len(attrs))
               for k in range(len(cap))]
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, r in enumerate(routes):
        groups.setdefault(tuple(sorted(attr_of[k] for k in r)), []).append(i)
    net = FlowNetwork.for_platform(simpy.Environment(), plat, params)
    rate = cap * params.efficiency
    out = np.zeros(len(routes))
    heads = np.zeros(len(routes))
    drains = np.zeros(len(routes))
    for members in groups.values():
        r = routes[members[0]]
        if not r:
            continue  # the same device: a local copy
        first, drain = net.message_plan(r, nbytes)
        out[members] = first + drain / float(rate[list(r)].min())
        heads[members] = net.message_latency(r, 0.0)
        drains[members] = drain
    # each link's drain time over every route through it (the bottleneck law)
    links = [k for r in routes for k in r]
    weights = [d / rate[k] for r, d in zip(routes, drains.tolist()) for k in r]
    busiest = float(np.bincount(links, weights=weights).max()) if links else 0.0
    return out, heads, busiest
