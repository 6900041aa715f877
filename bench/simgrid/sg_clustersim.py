"""clustersim's side of the SimGrid comparison: platforms, algorithm names, predictions.

Everything that depends on clustersim lives here:

* :func:`platform_dict` - the clustersim platform equivalent to a :class:`SgPlatform`.
  SimGrid's CM02 charges a message the *sum of the latencies* of the links on its route and
  shares every link max-min; clustersim's flow model does the same with one latency per link
  (hop).  So each SimGrid link becomes one clustersim link of the same bandwidth and latency,
  checked by the ``p2p`` rows (2 ranks, near and far hosts).  SimGrid's fat tree is a
  ``leaf_spine`` with ``cables: 2`` (each parallel cable its own link) and ``routing: dmodk``;
  its dragonfly an explicit graph routed minimally.  SimGrid's FAT_TREE routing is D-mod-K
  going up but picks the parallel cable going *down* by the source (``source % cables``,
  FatTreeZone.cpp), where D-mod-K (clustersim, OpenSM) uses the destination: see
  docs/fidelity.md for what that costs.
* :data:`ALGORITHMS` - SimGrid algorithm name -> clustersim algorithm name, with whether the
  two send the same messages between the same ranks in the same order (``exact``) or only
  implement the same idea (``approx``, e.g. a segmented ring against the plain ring).
  SMPI's selectors (``mpich``, ``ompi``) resolve per case (:func:`resolve_case`, tables in
  ``sg_selectors.py``) to the algorithm SMPI 3.32 really runs, compared with clustersim's
  schedule of that algorithm.  Where SMPI splits the data (``lr`` with ``count mod p``
  leftover elements) :func:`phases` lists the clustersim schedules whose times add up.
* :meth:`Predictor.predict_case` - clustersim's time for one case, at flow fidelity, on the
  placement the SimGrid run used (rank ``i`` on host ``placement[i]``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sg_platforms import SgPlatform
from sg_selectors import (
    OMPI_BCAST_NOTE,
    smpi_mpich_allgather,
    smpi_mpich_allreduce,
    smpi_mpich_alltoall,
    smpi_mpich_bcast,
    smpi_ompi_allgather,
    smpi_ompi_allreduce,
    smpi_ompi_alltoall,
)

#: Reductions cost nothing in SMPI with ``smpi/simulate-computation:no``; clustersim charges
#: ``bytes / reduce_bw``, so the device gets the highest rate clustersim accepts (1e16 B/s:
#: 7 ns for 64 MiB).
FREE_DEVICE: dict[str, Any] = {"like": "v100", "reduce_rate": "1e16 B/s"}


#: Routing cost of a dragonfly global link.  SimGrid's dragonfly routes take exactly one global
#: link (source group -> destination group); with unit costs a path through a third group
#: (global, green, global) is as short and clustersim's ECMP would take it for some pairs.
#: Cost 2 makes the one-global-hop path the only minimal one - what clustersim's own
#: ``dragonfly`` builder does for Aries minimal routing.  Latency is unaffected.
GLOBAL_COST = 2


@dataclass(frozen=True)
class AlgoMap:
    """How a SimGrid algorithm is compared: clustersim's name, and how close the match is."""

    clustersim: str
    exact: bool
    note: str = ""
    small_fallback: str | None = None  # clustersim name when SMPI falls back (count < ranks)
    #: count < ranks: SMPI sends no message for an empty block (clustersim sends n/p bytes)
    tiny_inexact: bool = False
    #: SMPI selectors: (ranks, bytes) -> (what SMPI 3.32 runs, clustersim algorithm, exact)
    resolve: Callable[[int, float], tuple[str, str, bool]] | None = None
    #: count % ranks != 0: SMPI runs the algorithm on the first ``count - count % ranks``
    #: elements, then this clustersim algorithm's equivalent on the leftover (see phases)
    leftover: str | None = None


#: (op, SimGrid algorithm) -> mapping.  SimGrid names: ``smpirun --help-coll`` /
#: SimGrid 3.32 docs "SMPI_use_colls"; clustersim names: ``clustersim list collectives``.
ALGORITHMS: dict[tuple[str, str], AlgoMap] = {
    ("p2p", "send"): AlgoMap("direct", True, "MPI_Send rank 0 -> rank 1"),
    ("allreduce", "rdb"): AlgoMap("recursive_doubling", True),
    ("allreduce", "lr"): AlgoMap(
        "ring", True, "SMPI 3.32's lr runs redbcast when count < ranks (reduce and bcast "
        "pinned to binomial)", small_fallback="binomial_tree", leftover="binomial_tree"),
    ("allreduce", "rab_rdb"): AlgoMap(
        "rabenseifner_mpich", True, "MPICH order: reduce-scatter at distance 1, 2, 4, ... "
        "(n/2 to the nearest rank), allgather back"),
    ("allreduce", "rab1"): AlgoMap(
        "rabenseifner", False, "recursive-halving reduce-scatter (farthest first), then the "
        "selected (SMPI default) allgather"),
    ("allreduce", "redbcast"): AlgoMap(
        "binomial_tree", True, "run with smpi/reduce:binomial, smpi/bcast:binomial_tree"),
    ("allreduce", "ompi_ring_segmented"): AlgoMap(
        "ring_segmented", False, "Open MPI's segmented ring (1 MiB segments); below p "
        "segments SMPI runs lr (redbcast with SMPI's default reduce when count < ranks)",
        small_fallback="binomial_tree"),
    ("allreduce", "mpich"): AlgoMap("mpich-3.2", True, "", resolve=smpi_mpich_allreduce),
    ("allreduce", "ompi"): AlgoMap("openmpi-4.1", True, "", resolve=smpi_ompi_allreduce),
    ("reduce", "ompi_basic_linear"): AlgoMap(
        "ompi_linear", True, "the root's blocking receives from p-1 down to 1"),
    ("reduce", "ompi_in_order_binary"): AlgoMap("ompi_in_order_binary", True,
                                                "SMPI's port runs it unsegmented too"),
    ("bcast", "binomial_tree"): AlgoMap("binomial", True),
    ("bcast", "scatter_LR_allgather"): AlgoMap("scatter_allgather", True),
    ("bcast", "scatter_rdb_allgather"): AlgoMap(
        "scatter_rd_allgather", True, "binomial scatter, recursive-doubling allgather",
        tiny_inexact=True),
    ("bcast", "mpich"): AlgoMap("mpich-3.2", True, "", resolve=smpi_mpich_bcast),
    ("bcast", "ompi"): AlgoMap("openmpi-4.1", False, OMPI_BCAST_NOTE),
    ("allgather", "NTSLR"): AlgoMap("ring", True, "logical ring: forward to r+1"),
    ("allgather", "ring"): AlgoMap(
        "ring", False, "SMPI's 'ring' allgather sends its own block to r+k in round k "
        "(pairwise), clustersim's ring forwards to r+1"),
    ("allgather", "rdb"): AlgoMap("recursive_doubling", True),
    ("allgather", "mpich"): AlgoMap("mpich-3.2", True, "", resolve=smpi_mpich_allgather),
    ("allgather", "ompi"): AlgoMap("openmpi-4.1", True, "", resolve=smpi_ompi_allgather),
    ("alltoall", "ring"): AlgoMap("pairwise", True, "round k: send to r+k, receive from r-k"),
    ("alltoall", "pair"): AlgoMap("pairwise", False, "partner r xor k, clustersim's r+k"),
    ("alltoall", "mpich"): AlgoMap("mpich-3.2", True, "", resolve=smpi_mpich_alltoall),
    ("alltoall", "ompi"): AlgoMap("openmpi-4.1", True, "", resolve=smpi_ompi_alltoall),
}

#: SimGrid op name -> clustersim op name
OPS = {"p2p": "p2p", "allreduce": "allreduce", "reduce": "reduce", "bcast": "broadcast",
       "allgather": "allgather", "alltoall": "alltoall"}


def resolve_case(op: str, sg_alg: str, ranks: int, size: float) -> tuple[str, bool, str]:
    """(clustersim algorithm, exact, note) compared with SMPI for this case (size in bytes).

    Selectors resolve to the algorithm SMPI 3.32 runs for the case and clustersim's schedule
    of that algorithm (the note names SMPI's choice)."""
    m = ALGORITHMS[(op, sg_alg)]
    if m.resolve is not None:
        smpi, cs, exact = m.resolve(ranks, size)
        return cs, exact, f"SMPI {sg_alg} runs {smpi}"
    if m.small_fallback and size / 4 < ranks:
        return m.small_fallback, m.exact, m.note
    if m.leftover and (size // 4) % ranks:
        return (f"{m.clustersim}+{m.leftover}", m.exact,
                f"SMPI's {sg_alg} adds a reduce+bcast of the count mod p leftover elements: "
                f"{m.clustersim} on count - count mod p, then {m.leftover} on the rest")
    if m.tiny_inexact and size / 4 < ranks:
        return m.clustersim, False, "count < ranks: SMPI skips the empty blocks"
    return m.clustersim, m.exact, m.note


def phases(op: str, sg_alg: str, ranks: int, size: float) -> list[tuple[str, float]]:
    """What clustersim costs for this case: (clustersim algorithm, bytes) run one after the
    other, their times summed.

    One phase, except where SMPI splits the data: SMPI 3.32's ``lr`` all-reduce runs its
    logical ring on ``count // p`` elements per block only, and then hands the ``count mod p``
    leftover elements to the *selected* all-reduce - ``lr`` again, which below ``p`` elements
    falls back to reduce + bcast (pinned to binomial trees here).  Measured: lr of 1024 floats
    on 6 ranks = lr of 1020 floats + redbcast of 16 B, to the nanosecond.  Summing the two
    costs assumes the reduce starts when the ring has ended everywhere: SMPI's ring ends on
    every rank at once on the crossbar (the ring's steps are all alike)."""
    cs = resolve_case(op, sg_alg, ranks, size)[0]
    if "+" not in cs:
        return [(cs, size)]
    main, rest = cs.split("+")
    left = (int(size) // 4) % ranks * 4
    return [(main, size - left), (rest, float(left))]


def clustersim_algorithm(op: str, sg_alg: str, ranks: int, size: float) -> str:
    """The clustersim algorithm that does what SMPI runs for this case (size in bytes)."""
    return resolve_case(op, sg_alg, ranks, size)[0]


def case_exact(op: str, sg_alg: str, ranks: int, size: float) -> bool:
    """Whether SMPI and clustersim send the same messages in the same order for this case."""
    return resolve_case(op, sg_alg, ranks, size)[1]


def selector_of(op: str, sg_alg: str) -> str | None:
    """clustersim's own selector for SMPI selector ``sg_alg`` (None: not a selector)."""
    # SMPI's mpich selector follows MPICH 3.2's rules (allreduce: 2048 B), not today's MPICH
    return {"mpich": "mpich-3.2", "ompi": "openmpi-4.1"}.get(sg_alg)


def available(op: str, cs_alg: str) -> bool:
    """Whether this clustersim has the algorithm (selectors are being added in parallel)."""
    from clustersim.collectives import list_algorithms
    have = list_algorithms().get(OPS[op], [])
    return all(part in have for part in cs_alg.split("+"))


def _link(p: SgPlatform, latency: float | None = None) -> dict[str, str]:
    lat = p.lat_s if latency is None else latency
    return {"bandwidth": f"{p.bw_bytes:.0f} B/s", "latency": f"{lat * 1e6:g} us"}


def platform_dict(p: SgPlatform) -> dict[str, Any]:
    """The clustersim platform (a scenario's ``platform:`` mapping) for SimGrid's cluster."""
    if p.kind == "crossbar":
        return {"topology": "star", "hosts": p.hosts, "device": FREE_DEVICE, "link": _link(p)}
    if p.kind == "fat_tree":
        return _fat_tree(p)
    if p.kind == "dragonfly":
        return _dragonfly(p)
    raise ValueError(f"unknown platform kind {p.kind!r}")


def _fat_tree(p: SgPlatform) -> dict[str, Any]:
    """SimGrid's two-level FAT_TREE as clustersim's ``leaf_spine`` with its parallel cables
    (``cables``: each its own link) and D-mod-K routing (``routing: dmodk``)."""
    m = p.meta
    if m["levels"] != 2 or m["up"][0] != 1 or m["cables"][0] != 1:
        raise ValueError("only 2-level fat trees with one host uplink are mapped")
    per_leaf, leaves = m["down"]
    link = _link(p)
    return {"topology": "leaf_spine", "name": p.name, "device": FREE_DEVICE,
            "leaves": leaves, "spines": m["up"][1], "hosts_per_leaf": per_leaf,
            "cables": m["cables"][1], "host_link": link, "uplink": link,
            "routing": {"policy": "dmodk"}}


def _dragonfly(p: SgPlatform) -> dict[str, Any]:
    """SimGrid's DRAGONFLY graph with one chassis per group: routers all-to-all in a group
    (green links), group ``g``'s router ``g'`` joined to group ``g'``'s router ``g``; routed
    minimally (SimGrid's dragonfly routing: local hop, the one global link, local hop).
    clustersim's ``dragonfly`` builder places global links by arrangement (relative/absolute
    port numbering, parallel links when ports exceed groups - 1), not SimGrid's router-g
    rule, hence the explicit graph."""
    m = p.meta
    if m["chassis"] != 1:
        raise ValueError("only one chassis per group is mapped (unique minimal routes)")
    groups, routers, per_router = m["groups"], m["routers"], m["nodes"]
    if routers < groups:
        raise ValueError("SimGrid attaches group g's global link to router g: routers >= groups")
    nodes: list[dict] = []
    links: list[list] = []
    for g in range(groups):
        for b in range(routers):
            nodes.append({"name": f"r{g}.{b}", "kind": "router"})
    for h in range(groups * routers * per_router):
        g, b = h // (routers * per_router), (h // per_router) % routers
        nodes.append({"name": f"h{h}", "host": h})
        links.append([f"h{h}", f"r{g}.{b}"])
    for g in range(groups):
        for b in range(routers):
            for b2 in range(b + 1, routers):
                links.append([f"r{g}.{b}", f"r{g}.{b2}"])
        for g2 in range(g + 1, groups):
            links.append({"between": [f"r{g}.{g2}", f"r{g2}.{g}"], "cost": GLOBAL_COST})
    return {"topology": "explicit", "name": p.name, "device": FREE_DEVICE, "link": _link(p),
            "nodes": nodes, "links": links, "routing": {"policy": "minimal"}}


class SimGridFatTreeRoutes:
    """Diagnostic, not a clustersim policy: the routes SimGrid 3.32's FatTreeZone takes on a
    two-level tree - up by D-mod-K over SimGrid's parent ports (port ``d mod (spines x
    cables)`` is spine ``port mod spines``, cable ``port // spines``), down over the parallel
    cables by the *source* (``s mod cables``).  clustersim's ``dmodk`` uses ``d`` both ways.
    Used to show that the fat-tree gap is this routing difference and nothing else."""

    def __init__(self, platform: Any) -> None:
        from clustersim.platform.policies import port_keys
        self.router = platform._router
        self.keys = port_keys(self.router)

    def __call__(self, s: int, t: int) -> Any:
        ks, kd = self.keys[s], self.keys[t]

        def pick(_u: int, cands: tuple[tuple[int, int], ...]) -> int:
            cores = list(dict.fromkeys(c[0] for c in cands))
            if len(cores) == 1:  # parallel cables down to one switch: SimGrid keys the source
                return ks % len(cands)
            spines, cables = len(cores), len(cands) // len(cores)  # cands: spine-major
            port = kd % len(cands)
            return (port % spines) * cables + port // spines

        return self.router.route(s, t, pick=pick)


def with_simgrid_fat_tree_routes(platform: Any) -> Any:
    """A copy of ``platform`` routed as SimGrid's FAT_TREE (:class:`SimGridFatTreeRoutes`)."""
    import copy
    out = copy.copy(platform)
    out._route_cache = {}
    out.memo = {}
    out._route_fn = SimGridFatTreeRoutes(platform)
    return out


#: SMPI's model: no software overheads, line rate, each rank on as its own messages are done
_NETWORK = {"overhead": "0 us", "efficiency": 1.0, "execution": "dependencies"}


class Predictor:
    """Builds each platform once and costs schedules on it (flow model, no overheads).

    Collectives run dependency-driven (``network.execution: dependencies``), as SMPI runs
    the libraries' code: each rank goes on as soon as its own messages are done.
    ``simgrid_routes``: route the fat tree as SimGrid does (a diagnostic: docs/fidelity.md)."""

    def __init__(self, simgrid_routes: bool = False) -> None:
        self._plats: dict[str, Any] = {}
        self.simgrid_routes = simgrid_routes

    def _scenario(self, p: SgPlatform) -> Any:
        if p.name not in self._plats:
            from clustersim.scenario.schema import parse_scenario
            raw = {"name": f"simgrid_{p.name}", "platform": platform_dict(p),
                   "network": _NETWORK,
                   "benchmark": {"op": "p2p", "algorithms": ["direct"], "ranks": [2],
                                 "sizes": ["4 B"]},
                   "run": {"fidelity": "flow", "seed": 0}}
            scn = parse_scenario(raw)
            if self.simgrid_routes and p.kind == "fat_tree":
                import dataclasses
                scn = dataclasses.replace(scn, platform=with_simgrid_fat_tree_routes(
                    scn.platform))
            self._plats[p.name] = scn
        return self._plats[p.name]

    def scenario_yaml(self, p: SgPlatform) -> dict[str, Any]:
        """The scenario as a mapping (for ``clustersim predict`` by hand)."""
        return {"name": f"simgrid_{p.name}", "platform": platform_dict(p),
                "network": _NETWORK,
                "run": {"fidelity": "flow", "seed": 0}}

    def predict(self, p: SgPlatform, op: str, cs_alg: str, size: float,
                placement: list[int]) -> float:
        """clustersim's time (s) for ``op``/``cs_alg`` of ``size`` bytes, rank i on host
        ``placement[i]`` (the host index is the device index on these platforms)."""
        from clustersim.collectives import build_schedule
        from clustersim.network.fidelity import cost_collective
        scn = self._scenario(p)
        plat = scn.platform
        hosts = [plat.host(d) for d in placement]
        sched = build_schedule(OPS[op], cs_alg, len(placement), size, hosts=hosts, root=0)
        cost = cost_collective(sched, plat, placement, scn.network, fidelity="flow")
        return float(cost.time)

    def predict_case(self, p: SgPlatform, op: str, sg_alg: str, size: float,
                     placement: list[int]) -> float:
        """clustersim's time (s) for what SMPI runs for ``op``/``sg_alg`` of ``size`` bytes:
        the sum over :func:`phases` (one phase but for lr's count mod p leftover)."""
        return sum(self.predict(p, op, cs, part, placement)
                   for cs, part in phases(op, sg_alg, len(placement), size))
