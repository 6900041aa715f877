"""Indirect (switched) networks: crossbar, leaf-spine, k-ary fat-tree, dragonfly, one node.

Each builder places machines (see :mod:`clustersim.platform.node`) on switch ports in machine
order, so rank ``r`` lives in machine ``r // devices_per_machine`` and neighbouring ranks share
a switch whenever possible - the placement MPI launchers use by default ("by slot").

Names are deterministic: machines ``h{i}`` (devices ``h{i}`` or ``h{i}.d{j}``), switches ``sw``,
``leaf{i}``/``spine{j}``, ``pod{p}.edge{e}``/``pod{p}.agg{a}``/``core{c}``, routers ``g{g}.r{r}``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from clustersim.catalog import DeviceSpec, LinkSpec
from clustersim.errors import InputError, unknown_name
from clustersim.platform.fabric import (
    MAX_COUNT,
    check_count,
    check_link,
    check_node,
    plug_machines,
)
from clustersim.platform.model import Platform, PlatformBuilder
from clustersim.platform.node import NodeSpec, add_machine

__all__ = ["star", "leaf_spine", "fat_tree", "dragonfly", "single_node", "dragonfly_global_links",
           "ARRANGEMENTS"]


def _ports_per_machine(node: NodeSpec) -> int:
    if node.layout == "ports":
        return node.devices
    return node.nics if node.has_nics else 1


def star(hosts: int, device: DeviceSpec, link: LinkSpec, *, node: NodeSpec | None = None,
         devices_per_host: int | None = None, name: str = "star") -> Platform:
    """``hosts`` machines on one non-blocking switch ``sw`` (a crossbar): the closed-form platform.

    ``devices_per_host`` is shorthand for ``node=NodeSpec(devices=n, layout="ports")``.
    """
    check_count("hosts", hosts)
    check_link("link", link)
    if devices_per_host is not None:
        check_count("devices_per_host", devices_per_host)
        if node is not None:
            raise InputError("give either node or devices_per_host", path=("devices_per_host",))
        if devices_per_host > 1:
            node = NodeSpec(devices=devices_per_host, layout="ports")
    node = check_node(node, fabric=True)
    b = PlatformBuilder(name)
    b.meta.update(topology="star", hosts=hosts)
    b.add_node("sw", "switch")
    plug_machines(b, hosts, device, node, link, lambda i: "sw")
    return b.build()


def leaf_spine(leaves: int, spines: int, hosts_per_leaf: int, device: DeviceSpec,
               host_link: LinkSpec, uplink: LinkSpec | None = None, *,
               oversubscription: float | None = None, hosts: int | None = None,
               cables: int = 1, node: NodeSpec | None = None,
               name: str = "leaf_spine") -> Platform:
    """Two-level Clos: every leaf joined to every spine by ``cables`` parallel ``uplink`` s.

    ``cables`` (default 1) parallel cables per leaf-spine pair are separate links, each its
    own capacity and its own routing choice (ECMP hashes over spines x cables up-ports).
    Oversubscription = (host ports per leaf x host bandwidth) /
    (spines x cables x uplink bandwidth).
    Give ``oversubscription`` instead of (or on top of) ``uplink`` to size the uplinks for
    that ratio; they keep ``uplink``'s latency (or ``host_link``'s when no uplink is given).
    ``hosts`` (default ``leaves * hosts_per_leaf``) fills leaves in order.
    """
    check_count("leaves", leaves)
    check_count("spines", spines)
    check_count("hosts_per_leaf", hosts_per_leaf)
    check_count("cables", cables, 1, 64)
    check_link("host_link", host_link)
    node = check_node(node, fabric=True)
    ports = hosts_per_leaf * _ports_per_machine(node) * host_link.bandwidth
    up_ports = spines * cables
    if oversubscription is not None:
        if isinstance(oversubscription, bool) or not isinstance(oversubscription, (int, float)) \
                or not 1e-3 <= oversubscription <= 1e3:
            raise InputError(f"oversubscription must be a positive number from 0.001 to 1000 (1 is "
                             f"non-blocking), not {oversubscription!r}",
                             path=("oversubscription",))
        base = uplink if uplink is not None else host_link
        check_link("uplink", base)
        uplink = replace(base, name=f"{base.name}_uplink",
                         bandwidth=ports / (up_ports * oversubscription))
    elif uplink is None:
        raise InputError("leaf_spine needs 'uplink' or 'oversubscription'", path=("uplink",))
    check_link("uplink", uplink)
    capacity = leaves * hosts_per_leaf
    hosts = capacity if hosts is None else check_count("hosts", hosts)
    if hosts > capacity:
        raise InputError(f"{hosts} hosts do not fit on {leaves} leaves x {hosts_per_leaf}",
                         path=("hosts",))
    b = PlatformBuilder(name)
    b.meta.update(topology="leaf_spine", leaves=leaves, spines=spines,
                  hosts_per_leaf=hosts_per_leaf, hosts=hosts,
                  oversubscription=ports / (up_ports * uplink.bandwidth))
    if cables > 1:
        b.meta["cables"] = cables
    for i in range(leaves):
        b.add_node(f"leaf{i}", "switch", tier=0)
    for j in range(spines):
        b.add_node(f"spine{j}", "switch", tier=1)
    for i in range(leaves):
        for j in range(spines):
            for _ in range(cables):
                b.add_link(f"leaf{i}", f"spine{j}", uplink)
    plug_machines(b, hosts, device, node, host_link, lambda h: f"leaf{h // hosts_per_leaf}")
    return b.build()


def fat_tree(k: int, device: DeviceSpec, link: LinkSpec, *, hosts: int | None = None,
             cables: int = 1, node: NodeSpec | None = None, name: str = "fat_tree") -> Platform:
    """k-ary fat-tree (Al-Fares et al., SIGCOMM 2008), every link of class ``link``.

    k pods of k/2 edge and k/2 aggregation switches (edge and aggregation switches of a pod
    fully connected), (k/2)^2 core switches; aggregation switch ``a`` of every pod connects to
    cores ``a*k/2 .. a*k/2 + k/2 - 1``.  Each edge switch has k/2 host ports: up to k^3/4
    hosts, filled edge switch by edge switch.  All switches are built even when fewer hosts
    are used, so the fabric stays non-blocking (full bisection) with equal links.
    ``cables`` (default 1) joins every pair of connected switches by that many parallel links
    (each its own resource and routing choice): ``cables`` times the bisection of the hosts.
    """
    check_count("k", k, 2, 64)  # k=64: 65,536 hosts and 5,120 switches
    check_count("cables", cables, 1, 64)
    if k % 2:
        raise InputError(f"k must be even (k/2 ports up, k/2 down), not {k}", path=("k",))
    check_link("link", link)
    node = check_node(node, fabric=True)
    half = k // 2
    capacity = k * half * half
    hosts = capacity if hosts is None else check_count("hosts", hosts)
    if hosts > capacity:
        raise InputError(f"a k={k} fat-tree holds at most k^3/4 = {capacity} hosts, not "
                         f"{hosts}", path=("hosts",))
    b = PlatformBuilder(name)
    b.meta.update(topology="fat_tree", k=k, hosts=hosts)
    if cables > 1:
        b.meta["cables"] = cables
    for c in range(half * half):
        b.add_node(f"core{c}", "switch", tier=2)
    for p in range(k):
        for a in range(half):
            b.add_node(f"pod{p}.agg{a}", "switch", tier=1, pod=p)
            for c in range(a * half, (a + 1) * half):
                for _ in range(cables):
                    b.add_link(f"pod{p}.agg{a}", f"core{c}", link)
        for e in range(half):
            b.add_node(f"pod{p}.edge{e}", "switch", tier=0, pod=p)
            for a in range(half):
                for _ in range(cables):
                    b.add_link(f"pod{p}.edge{e}", f"pod{p}.agg{a}", link)

    def edge_of(h: int) -> str:
        return f"pod{h // (half * half)}.edge{(h // half) % half}"

    plug_machines(b, hosts, device, node, link, edge_of)
    return b.build()


ARRANGEMENTS = {
    "relative": "global port j of group g goes to group (g + 1 + j mod (G-1)) mod G",
    "absolute": "global port j of group g goes to the (j mod (G-1))-th other group in order",
}


def dragonfly_global_links(groups: int, routers_per_group: int, global_links_per_router: int,
                           arrangement: str = "relative") -> list[tuple[int, int, int, int]]:
    """Global links as ``(group, router, other_group, other_router)`` with ``group < other``.

    Group ``g`` has ``P = routers_per_group * global_links_per_router`` global ports; port ``j``
    is on router ``j // global_links_per_router``.  Port ``j`` targets one of the ``G - 1``
    other groups, ``o = j mod (G-1)`` chosen by the arrangement (Camarero, Vallejo, Beivide,
    "Topological characterization of Hamming and dragonfly networks", ACM TACO 2014), and its
    copy number ``m = j // (G-1)``; it is cabled to the port of the target group that points
    back with the same copy number, if that port exists.  When ``P = G - 1`` every pair of
    groups gets exactly one link; larger ``P`` adds parallel links.
    """
    if arrangement not in ARRANGEMENTS:
        raise unknown_name("arrangement", arrangement, ARRANGEMENTS, path=("arrangement",))
    G, h = groups, global_links_per_router
    P = routers_per_group * h
    if G < 2:
        return []

    def target(g: int, o: int) -> int:
        if arrangement == "relative":
            return (g + 1 + o) % G
        return o if o < g else o + 1

    def back(g: int, t: int) -> int:  # the offset o' in group t that points to g
        if arrangement == "relative":
            return (g - t - 1) % G
        return g if g < t else g - 1

    out = []
    for g in range(G):
        for j in range(P):
            m, o = divmod(j, G - 1)
            t = target(g, o)
            if t <= g:
                continue
            jt = m * (G - 1) + back(g, t)
            if jt < P:
                out.append((g, j // h, t, jt // h))
    return out


def dragonfly(groups: int, routers_per_group: int, hosts_per_router: int, device: DeviceSpec,
              host_link: LinkSpec, local_link: LinkSpec, global_link: LinkSpec, *,
              global_links_per_router: int | None = None, arrangement: str = "relative",
              global_cost: int = 3, node: NodeSpec | None = None,
              name: str = "dragonfly") -> Platform:
    """Dragonfly (Kim, Dally, Scott, Abts, ISCA 2008): all-to-all groups joined by global links.

    Routers ``g{g}.r{r}`` of a group are fully connected by ``local_link``; each router has
    ``hosts_per_router`` host ports and ``global_links_per_router`` global ports (default: the
    fewest that reach every other group, ceil((G-1)/a)); see :func:`dragonfly_global_links`
    for the ``arrangement``.  Global links get routing cost ``global_cost`` (default 3 > 2
    local hops) so that minimal routes use exactly one global link between groups, as Cray
    Aries' minimal routing does; hop-count routing would sometimes take two global links
    through a third group to save a local hop.  Groups are all-to-all (one local hop), where an
    Aries group is a 2-D all-to-all of rows and columns (up to two local hops).  Valiant and
    UGAL routing are routing policies (:mod:`clustersim.platform.policies`).
    Parallel global cables between the same two routers are merged into one link with their
    summed bandwidth.
    """
    check_count("groups", groups)
    check_count("routers_per_group", routers_per_group)
    check_count("hosts_per_router", hosts_per_router)
    check_count("global_cost", global_cost)
    for nm, lk in (("host_link", host_link), ("local_link", local_link),
                   ("global_link", global_link)):
        check_link(nm, lk)
    node = check_node(node, fabric=True)
    a = routers_per_group
    if global_links_per_router is None:
        global_links_per_router = max(1, -(-(groups - 1) // a))
    check_count("global_links_per_router", global_links_per_router)
    if groups * a > MAX_COUNT or a * global_links_per_router > MAX_COUNT:
        raise InputError(f"{groups} groups x {a} routers x {global_links_per_router} global "
                         f"links is too large: routers and global ports per group must each "
                         f"stay <= {MAX_COUNT:,}", path=("groups",))
    if groups > 1 and a * global_links_per_router < groups - 1:
        raise InputError(
            f"{a} routers x {global_links_per_router} global links cannot reach the other "
            f"{groups - 1} groups; need global_links_per_router >= {-(-(groups - 1) // a)}",
            path=("global_links_per_router",))
    glinks = dragonfly_global_links(groups, a, global_links_per_router, arrangement)
    b = PlatformBuilder(name)
    b.meta.update(topology="dragonfly", groups=groups, routers_per_group=a,
                  hosts_per_router=hosts_per_router,
                  global_links_per_router=global_links_per_router, arrangement=arrangement,
                  global_links=len(glinks))
    for g in range(groups):
        for r in range(a):
            b.add_node(f"g{g}.r{r}", "router", group=g)
        for r in range(a):
            for s in range(r + 1, a):
                b.add_link(f"g{g}.r{r}", f"g{g}.r{s}", local_link)
    # parallel cables between the same two routers become one trunk of summed bandwidth
    trunks = Counter(glinks)
    for (g, r, t, s), count in sorted(trunks.items()):
        spec = global_link if count == 1 else replace(
            global_link, bandwidth=global_link.bandwidth * count)
        b.add_link(f"g{g}.r{r}", f"g{t}.r{s}", spec, cost=global_cost)
    per_group = a * hosts_per_router

    def router_of(h: int) -> str:
        return f"g{h // per_group}.r{(h % per_group) // hosts_per_router}"

    plug_machines(b, groups * per_group, device, node, host_link, router_of)
    return b.build()


def single_node(device: DeviceSpec, node: NodeSpec, *, name: str = "node") -> Platform:
    """One machine and no network (its NICs, if any, lead nowhere): Theano-MPI's K80 box."""
    if not isinstance(node, NodeSpec):
        raise InputError(f"node must be a node description, not {node!r}", path=("node",))
    if node.layout == "ports" and node.devices > 1:
        raise InputError("layout 'ports' joins devices only through a network; a lone machine "
                         "needs an internal layout", path=("node", "layout"))
    b = PlatformBuilder(name)
    b.meta.update(topology="node", layout=node.layout, devices=node.devices)
    add_machine(b, 0, node, device)
    return b.build()
