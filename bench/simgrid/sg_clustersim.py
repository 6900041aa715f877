"""clustersim's side of the SimGrid comparison: platforms, algorithm names, predictions.

Everything that depends on clustersim lives here, so that new clustersim features (library
selectors ``mpich``/``openmpi``, routing policies, parallel links) change only this module:

* :func:`platform_dict` - the clustersim platform equivalent to a :class:`SgPlatform`.
  SimGrid's CM02 charges a message the *sum of the latencies* of the links on its route and
  shares every link max-min; clustersim's flow model does the same with one latency per link
  (hop).  So each SimGrid link becomes one clustersim link of the same bandwidth and latency,
  checked by the ``p2p`` rows (2 ranks, near and far hosts).  SimGrid's fat tree has two
  parallel cables per leaf-spine pair, which clustersim's platforms cannot express yet (a
  graph holds one edge per node pair): each cable becomes a path leaf - ``cable node`` -
  spine of two links with half the latency each (same latency sum, same capacity).
* :data:`ALGORITHMS` - SimGrid algorithm name -> clustersim algorithm name, with whether the
  two send the same messages between the same ranks in the same order (``exact``) or only
  implement the same idea (``approx``, e.g. a segmented ring against the plain ring).
* :func:`predict` - clustersim's time for one case, at flow fidelity, on the placement the
  SimGrid run used (rank ``i`` on host ``placement[i]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sg_platforms import SgPlatform

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


#: SMPI's selectors are its own re-implementations of the libraries' decision logic (e.g. its
#: ``mpich`` allreduce runs ``mvapich2_two_level`` for commutative ops, and its thresholds
#: are those of the MPICH/Open MPI versions SMPI copied), so they are compared, not required
#: to match.
SELECTOR_NOTE = "SMPI 3.32's selector logic (its mpich allreduce is mvapich2_two_level)"

#: (op, SimGrid algorithm) -> mapping.  SimGrid names: ``smpirun --help-coll`` /
#: SimGrid 3.32 docs "SMPI_use_colls"; clustersim names: ``clustersim list collectives``.
ALGORITHMS: dict[tuple[str, str], AlgoMap] = {
    ("p2p", "send"): AlgoMap("direct", True, "MPI_Send rank 0 -> rank 1"),
    ("allreduce", "rdb"): AlgoMap("recursive_doubling", True),
    ("allreduce", "lr"): AlgoMap(
        "ring", True, "SMPI 3.32's lr runs redbcast when count < ranks (reduce and bcast "
        "pinned to binomial)", small_fallback="binomial_tree"),
    ("allreduce", "rab_rdb"): AlgoMap(
        "rabenseifner", False, "MPICH order: the reduce-scatter starts at distance 1 (n/2 to "
        "the nearest rank), clustersim's at distance p/2"),
    ("allreduce", "rab1"): AlgoMap(
        "rabenseifner", False, "recursive-halving reduce-scatter, then the selected allgather"),
    ("allreduce", "redbcast"): AlgoMap(
        "binomial_tree", True, "run with smpi/reduce:binomial, smpi/bcast:binomial_tree"),
    ("allreduce", "ompi_ring_segmented"): AlgoMap(
        "ring", False, "Open MPI's segmented ring against the plain ring"),
    ("allreduce", "mpich"): AlgoMap("mpich", False, SELECTOR_NOTE),
    ("allreduce", "ompi"): AlgoMap("openmpi", False, SELECTOR_NOTE),
    ("bcast", "binomial_tree"): AlgoMap("binomial", True),
    ("bcast", "scatter_LR_allgather"): AlgoMap("scatter_allgather", True),
    ("bcast", "scatter_rdb_allgather"): AlgoMap(
        "scatter_allgather", False, "allgather by recursive doubling, clustersim's by ring"),
    ("bcast", "mpich"): AlgoMap("mpich", False, SELECTOR_NOTE),
    ("bcast", "ompi"): AlgoMap("openmpi", False, SELECTOR_NOTE),
    ("allgather", "NTSLR"): AlgoMap("ring", True, "logical ring: forward to r+1"),
    ("allgather", "ring"): AlgoMap(
        "ring", False, "SMPI's 'ring' allgather sends its own block to r+k in round k "
        "(pairwise), clustersim's ring forwards to r+1"),
    ("allgather", "rdb"): AlgoMap("recursive_doubling", True),
    ("allgather", "mpich"): AlgoMap("mpich", False, SELECTOR_NOTE),
    ("allgather", "ompi"): AlgoMap("openmpi", False, SELECTOR_NOTE),
    ("alltoall", "ring"): AlgoMap("pairwise", True, "round k: send to r+k, receive from r-k"),
    ("alltoall", "pair"): AlgoMap("pairwise", False, "partner r xor k, clustersim's r+k"),
    ("alltoall", "mpich"): AlgoMap("mpich", False, SELECTOR_NOTE),
    ("alltoall", "ompi"): AlgoMap("openmpi", False, SELECTOR_NOTE),
}

#: SimGrid op name -> clustersim op name
OPS = {"p2p": "p2p", "allreduce": "allreduce", "bcast": "broadcast",
       "allgather": "allgather", "alltoall": "alltoall"}


def clustersim_algorithm(op: str, sg_alg: str, ranks: int, size: float) -> str:
    """The clustersim algorithm that does what SMPI runs for this case (size in bytes)."""
    m = ALGORITHMS[(op, sg_alg)]
    if m.small_fallback and size / 4 < ranks:
        return m.small_fallback
    return m.clustersim


def available(op: str, cs_alg: str) -> bool:
    """Whether this clustersim has the algorithm (selectors are being added in parallel)."""
    from clustersim.collectives import list_algorithms
    return cs_alg in list_algorithms().get(OPS[op], [])


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
    """Two-level fat tree; each parallel cable is a path through its own ``cable`` node."""
    m = p.meta
    if m["levels"] != 2 or m["up"][0] != 1 or m["cables"][0] != 1:
        raise ValueError("only 2-level fat trees with one host uplink are mapped")
    per_leaf, leaves = m["down"]
    spines, cables = m["up"][1], m["cables"][1]
    nodes: list[dict] = [{"name": f"h{i}", "host": i} for i in range(per_leaf * leaves)]
    nodes += [{"name": f"leaf{j}", "kind": "switch"} for j in range(leaves)]
    nodes += [{"name": f"spine{s}", "kind": "switch"} for s in range(spines)]
    links: list[list] = [[f"h{i}", f"leaf{i // per_leaf}"] for i in range(per_leaf * leaves)]
    half = {"link": _link(p, p.lat_s / 2)}
    for j in range(leaves):
        for s in range(spines):
            for c in range(cables):
                mid = f"cable{j}.{s}.{c}"
                nodes.append({"name": mid, "kind": "bus"})
                links.append({"between": [f"leaf{j}", mid], **half})
                links.append({"between": [mid, f"spine{s}"], **half})
    return {"topology": "explicit", "name": p.name, "device": FREE_DEVICE, "link": _link(p),
            "nodes": nodes, "links": links}


def _dragonfly(p: SgPlatform) -> dict[str, Any]:
    """SimGrid's DRAGONFLY graph with one chassis per group: routers all-to-all in a group
    (green links), group ``g``'s router ``g'`` joined to group ``g'``'s router ``g``."""
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
            "nodes": nodes, "links": links}


class Predictor:
    """Builds each platform once and costs schedules on it (flow model, no overheads)."""

    def __init__(self) -> None:
        self._plats: dict[str, Any] = {}

    def _scenario(self, p: SgPlatform) -> Any:
        if p.name not in self._plats:
            from clustersim.scenario.schema import parse_scenario
            raw = {"name": f"simgrid_{p.name}", "platform": platform_dict(p),
                   "network": {"overhead": "0 us", "efficiency": 1.0},
                   "benchmark": {"op": "p2p", "algorithms": ["direct"], "ranks": [2],
                                 "sizes": ["4 B"]},
                   "run": {"fidelity": "flow", "seed": 0}}
            self._plats[p.name] = parse_scenario(raw)
        return self._plats[p.name]

    def scenario_yaml(self, p: SgPlatform) -> dict[str, Any]:
        """The scenario as a mapping (for ``clustersim predict`` by hand)."""
        return {"name": f"simgrid_{p.name}", "platform": platform_dict(p),
                "network": {"overhead": "0 us", "efficiency": 1.0},
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
