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
    import simpy

    from clustersim.network.flow import FlowNetwork

    plat = scn.platform
    key = (id(plat), scn.network, workers, float(nbytes))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is plat:
        return hit[1]
    routes, groups, flat_links, flat_route, crossed = _structure(plat, workers)
    net = FlowNetwork.for_platform(simpy.Environment(), plat, scn.network)
    rate = np.asarray(plat.capacity, dtype=float) * scn.network.efficiency
    times = np.zeros(len(routes))
    drains = np.zeros(len(routes))
    for members in groups:
        r = routes[members[0]]
        if not r:
            continue  # the same device: a local copy
        first, drain = net.message_plan(r, nbytes)
        times[members] = (first + drain / float(rate[list(r)].min())
                          + net.message_latency(r, 0.0))
        drains[members] = drain
    # each link's drain time over every route through it (the bottleneck law)
    demand = np.bincount(flat_links, weights=drains[flat_route] / rate[flat_links]) \
        if len(flat_links) else np.zeros(1)
    out = (times[:workers] + times[workers:], float(demand.max()) / workers, crossed)
    if len(_CACHE) >= 256:  # one page's platforms and counts, not a process's life
        _CACHE.clear()
    _CACHE[key] = (plat, out)
    return out


#: (the platform's route cache, its links' classes, workers) -> :func:`_structure`'s tuple:
#: the routes, and which of them are alike, do not change when every link is scaled alike
#: (the what-if page's cells share the route cache of the scenario's platform)
_STRUCTURE: dict[tuple, tuple[Any, tuple]] = {}


def _structure(plat: Any, workers: int) -> tuple:
    """The routes to and from the master (up, then down), their groups of alike routes
    (links of the same capacity, latency, class and transport, in any order: one route of
    a group is costed for all), every route's links flattened with their route's index,
    and whether a link away from the master carries routes both ways."""
    attr_of = _link_classes(plat)
    owner = getattr(plat, "_route_cache", plat)
    key = (id(owner), hash(attr_of), workers)
    hit = _STRUCTURE.get(key)
    if hit is not None and hit[0] is owner:
        return hit[1]
    src = np.arange(workers)
    dst = np.full(workers, workers)
    routes = plat.rank_routes(src, dst) + plat.rank_routes(dst, src)
    by_attrs: dict[tuple[int, ...], list[int]] = {}
    for i, r in enumerate(routes):
        by_attrs.setdefault(tuple(sorted(attr_of[k] for k in r)), []).append(i)
    groups = [np.array(m) for m in by_attrs.values()]
    flat_links = np.array([k for r in routes for k in r], dtype=np.int64)
    flat_route = np.repeat(np.arange(len(routes)), [len(r) for r in routes])
    up, down = routes[:workers], routes[workers:]
    own = {r[-1] for r in up if r} | {r[0] for r in down if r}
    crossed = bool(({k for r in up for k in r} & {k for r in down for k in r}) - own)
    out = (routes, groups, flat_links, flat_route, crossed)
    if len(_STRUCTURE) >= 64:
        _STRUCTURE.clear()
    _STRUCTURE[key] = (owner, out)
    return out


_CLASSES: dict[int, tuple[Any, tuple[int, ...]]] = {}


def _link_classes(plat: Any) -> tuple[int, ...]:
    """Per link, the number of its class of alike links (capacity, latency, class,
    transport), once per platform."""
    hit = _CLASSES.get(id(plat))
    if hit is not None and hit[0] is plat:
        return hit[1]
    n = len(plat.capacity)
    columns = zip(np.asarray(plat.capacity, dtype=float).tolist(),
                  np.asarray(plat.latency, dtype=float).tolist(),
                  getattr(plat, "link_kind", None) or [None] * n,
                  getattr(plat, "link_transport", None) or [None] * n)
    attrs: dict[tuple, int] = {}
    out = tuple(attrs.setdefault(a, len(attrs)) for a in columns)
    if len(_CLASSES) >= 64:
        _CLASSES.clear()
    _CLASSES[id(plat)] = (plat, out)
    return out
