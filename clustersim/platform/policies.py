"""Routing policies: which of the equal (or not so equal) routes a fabric really takes.

The router (:mod:`clustersim.platform.routing`) finds the minimal next hops; a policy decides
among them - or, for a dragonfly, whether to leave the minimal routes at all.  Why several:
measured collectives on a two-level fat tree differ by up to ~90% between hashed ECMP, where
several flows of one leaf can land on the same uplink, and InfiniBand's deterministic
destination-based routing, which spreads a leaf's destinations over its uplinks.

Policies (``routing: {policy: ..., seed: ...}`` on a platform):

* ``ecmp`` (default; ``minimal`` is the same policy under the name dragonfly papers use):
  minimal routes, the next hop chosen by a per-switch hash of (source, destination) with the
  ``seed`` mixed in.  Seed 0 is the hash the simulator always used, so existing results stay.
  Other seeds model other hash functions/salts: run several to see the spread.
* ``dmodk`` / ``smodk``: deterministic up-port selection of InfiniBand fat trees (Zahavi,
  "D-Mod-K Routing Providing Non-Blocking Traffic for Shift Permutations on Real Life Fat
  Trees", CCIT report 776, Technion 2010).  OpenSM's ``ftree`` engine assigns ports greedily,
  least loaded first over destinations in order, which gives the same spreading on a complete
  symmetric tree but not on a partly populated one, where this formula is not what OpenSM does.  At a
  switch with ``w`` minimal next hops to distinct switches (going up), the one taken is
  ``(d // W) mod w`` where ``d`` is the destination's (d-mod-k) or source's (s-mod-k) port
  index and ``W`` the product of the widths of the earlier such choices on the route (the
  mixed-radix digits of Zahavi's scheme: the edge uses ``d mod k1``, the next level
  ``(d // k1) mod k2``, ...).  Where all next hops are parallel cables to one switch (going
  down a multi-cable fabric), the cable is ``d mod cables``, the round robin over ports
  OpenSM applies to destinations.  Ports are numbered in node order (machine order).
* ``valiant`` and ``ugal`` (dragonfly only): see :mod:`clustersim.platform.dragonfly_routing`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clustersim.errors import InputError, unknown_name

if TYPE_CHECKING:
    from clustersim.platform.model import Platform
    from clustersim.platform.routing import Pick, Route, Router

__all__ = ["POLICIES", "RoutingSpec", "parse_routing", "route_function", "port_keys",
           "MAX_SEED"]

#: policy name -> (one-line description, topologies it applies to; None: every topology)
POLICIES: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "ecmp": ("minimal routes, next hop by a seeded per-switch hash of (source, destination)",
             None),
    "minimal": ("the same as ecmp (the name dragonfly papers use)", None),
    "dmodk": ("InfiniBand fat-tree routing: up-port = destination port index mod k",
              ("leaf_spine", "fat_tree", "star", "node", "explicit")),
    "smodk": ("as dmodk with the source port index (the mirror image of dmodk)",
              ("leaf_spine", "fat_tree", "star", "node", "explicit")),
    "valiant": ("dragonfly: minimal to a random intermediate group, then minimal on "
                "(seeded, deterministic)", ("dragonfly",)),
    "ugal": ("dragonfly: per flow, minimal or Valiant, whichever has the lower hops x load "
             "(flow fidelity; other models see minimal routes)", ("dragonfly",)),
}

MAX_SEED = 2**32 - 1
_FIELDS = ("policy", "seed")


@dataclass(frozen=True)
class RoutingSpec:
    """A platform's routing policy and the seed of its hash (or random choices)."""

    policy: str = "ecmp"
    seed: int = 0

    @property
    def adaptive(self) -> bool:
        """True when routes depend on the load at the time a flow starts."""
        return self.policy == "ugal"

    @property
    def is_default(self) -> bool:
        """The routes the simulator always took (ECMP with the unseeded hash)."""
        return self.policy in ("ecmp", "minimal") and self.seed == 0

    def describe(self) -> str:
        return self.policy if not self.seed else f"{self.policy} (seed {self.seed})"


def check_policy(spec: RoutingSpec, topology: str | None, path: tuple = ("routing",)
                 ) -> RoutingSpec:
    """``spec`` if its policy exists and applies to ``topology``; else an InputError."""
    if spec.policy not in POLICIES:
        raise unknown_name("routing policy", str(spec.policy), POLICIES, path=(*path, "policy"))
    where = POLICIES[spec.policy][1]
    if where is not None and topology is not None and topology not in where:
        raise InputError(f"routing policy {spec.policy!r} applies to {', '.join(where)} "
                         f"platforms, not {topology!r} (every platform takes: ecmp, minimal)",
                         path=(*path, "policy"))
    seed = spec.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise InputError(f"seed must be an integer from 0 to {MAX_SEED}, not {seed!r}",
                         path=(*path, "seed"))
    return spec


def parse_routing(raw: Any, topology: str | None, path: tuple = ("routing",)) -> RoutingSpec:
    """``routing: dmodk`` or ``routing: {policy: ecmp, seed: 3}`` into a checked spec."""
    if isinstance(raw, str):
        return check_policy(RoutingSpec(raw), topology, path)
    if not isinstance(raw, dict):
        raise InputError(f"routing must be a policy name ({', '.join(POLICIES)}) or a mapping "
                         f"like {{policy: ecmp, seed: 0}}, not {raw!r}", path=path)
    for key in raw:
        if key not in _FIELDS:
            raise unknown_name("routing field", str(key), _FIELDS, path=(*path, key))
    policy = raw.get("policy", "ecmp")
    if not isinstance(policy, str):
        raise unknown_name("routing policy", str(policy), POLICIES, path=(*path, "policy"))
    seed = raw.get("seed", 0)
    if isinstance(seed, float) and seed.is_integer():
        seed = int(seed)
    return check_policy(RoutingSpec(policy, seed), topology, path)


def port_keys(router: Router) -> list[int]:
    """Per node: the index of the fabric port its traffic enters the fabric by - the node
    hanging directly off a core switch in its stub chain (a host, a NIC; InfiniBand's LID),
    numbered in node order.  Core nodes (switches, direct-network hosts) get indices after
    the ports, so every node has a key."""
    attach = router._attach
    n = len(attach)
    port = [-1] * n
    k = 0
    for u in range(n):
        a = attach[u]
        if a >= 0 and attach[a] < 0:
            port[u] = k
            k += 1
    keys = []
    for u in range(n):
        chain = router._chain(u)
        keys.append(port[chain[-2]] if len(chain) >= 2 else k + u)
    return keys


def mod_k_pick(key: int) -> Pick:
    """The d-mod-k choice for one route (``key``: the destination's or source's port)."""
    div = 1

    def pick(_u: int, cands: tuple[tuple[int, int], ...]) -> int:
        nonlocal div
        w = len(cands)
        v0 = cands[0][0]
        if all(c[0] == v0 for c in cands):  # parallel cables to one switch: round robin
            return key % w
        i = (key // div) % w
        div *= w
        return i

    return pick


def route_function(platform: Platform, spec: RoutingSpec) -> Callable[[int, int], Route]:
    """``route(s, t)`` over node indices for ``spec`` (the static routes: for ``ugal``, the
    minimal ones that models without flows see)."""
    router = platform._router
    seed = spec.seed
    if spec.policy in ("ecmp", "minimal", "ugal"):
        return router.route if not seed else _Seeded(router, seed)
    if spec.policy in ("dmodk", "smodk"):
        return _ModK(router, port_keys(router), spec.policy == "smodk")
    from clustersim.platform.dragonfly_routing import Valiant

    return Valiant(platform, seed).route


class _Seeded:
    """ECMP with a seed (a class, not a closure: platforms are pickled by process pools)."""

    def __init__(self, router: Router, seed: int) -> None:
        self.router, self.seed = router, seed

    def __call__(self, s: int, t: int) -> Route:
        return self.router.route(s, t, self.seed)


class _ModK:
    """d-mod-k (or s-mod-k with ``by_source``) routes."""

    def __init__(self, router: Router, keys: list[int], by_source: bool) -> None:
        self.router, self.keys, self.by_source = router, keys, by_source

    def __call__(self, s: int, t: int) -> Route:
        key = self.keys[s if self.by_source else t]
        return self.router.route(s, t, pick=mod_k_pick(key))
