"""NCCL's algorithm x protocol choice, by NCCL's own cost model (NCCL 2.7.5).

NCCL picks, for every call, the (algorithm, protocol) pair whose predicted time
``latency + nbytes / bandwidth`` is smallest (``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime``
in ``src/graph/tuning.cc``; ``getAlgoInfo`` in ``src/enqueue.cc``).  This module evaluates
that model with its published constants (2.7.5):

* latency = ``baseLat[algo][proto]`` plus per-hop ``hwLat[link][algo][proto]`` (NVLink, PCI or
  network): the ring pays ``(nsteps - nInterSteps)`` intra-node hops and ``nInterSteps``
  network hops (allreduce: ``2(p-1)`` and ``2(nodes-1)``); the tree
  ``2 ((p/nodes - 1) intra + log2(nodes) net)``;
* bus bandwidth = ``nChannels x per-channel speed``, then LL: ring ``/4`` (``/3`` for
  single-node allgather/reduce_scatter/broadcast), tree ``x0.9 /3.8``; LL128: ring ``x0.92``
  (``x0.7`` with one rank per node), tree ``x0.9 x7/9`` (one node) or ``x0.915``, both capped
  by ``ll128MaxBwPerCh``; tree capped at 110 GB/s (<= 2 nodes) or 80 GB/s; algorithm bandwidth
  = bus x ``p / nsteps`` (ring) or x 0.5 (tree);
* the tree's per-size correction factors, and the ring/Simple x1.9 latency "plateau" across
  nodes above ``p/16 x 64 KiB``.

NCCL measures its per-channel speeds and link types from the machine (its topology search);
this model takes them from the scenario's platform (:func:`.nccl_machine.machine_of`: NVLink
or PCI inside a node, the network's speed rounded down to the search's ``speedArray``,
LL128 only on compute capability 7.0 or 8.0 over NVLink, as 2.7.5 enables it), and from a
reference node where no platform is given (:data:`REFERENCE`: V100 NVLink, 21 GB/s per
channel inside a node, EDR InfiniBand's 12 GB/s between nodes, 2 channels, LL128 on).  As in
``tuning.cc`` a job of one or two nodes is rated at the graphs' ``speedIntra`` and one of
three or more at ``speedInter``; as the search (``search.cc``) builds them, a ring graph
across nodes has ``speedIntra == speedInter`` and a tree's ``speedIntra`` is raised through
``speedArray`` towards twice ``speedInter`` where the node allows (two nodes: rings at the
network's speed, trees faster - the step that makes NCCL prefer trees there).  The rings are
taken as not ``sameChannels`` (NCCL's broadcast/reduce ring latency is one hop when they
are): the broadcast ring pays ``nsteps`` hops.  The *choice* follows NCCL's model; the
*time* is simulated on the platform.  This is NCCL 2.7.5's model (2020): later versions
changed the latency constants, the caps and the ring plateau factor and added NVLS and
CollNet (docs/collectives.md).  NCCL 2.7 has no native alltoall, gather or scatter
(2.28 added them): nccl-tests runs them as grouped send/recv, i.e. all messages at once
(``direct``/``linear``).  NCCL also models reduce (ring only); clustersim has no NCCL
reduce and refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustersim.collectives.selection import Choice, Context

__all__ = ["decide", "predicted_times", "REFERENCE", "NcclMachine", "SPEED_ARRAY"]

ALGOS = ("tree", "ring")
PROTOS = ("LL", "LL128", "Simple")
#: baseLat[algo][proto] (us), tuning.cc 2.7.5
BASE_LAT = {"tree": (4.4, 4.4, 0.0), "ring": (3.6, 10.0, 8.4)}
#: hwLat[hw][algo][proto] (us)
HW_LAT = {
    "nvlink": {"tree": (0.52, 1.2, 28.0), "ring": (0.47, 1.9, 3.4)},
    "pci": {"tree": (1.0, 1.9, 28.0), "ring": (1.0, 2.5, 5.7)},
    "net": {"tree": (5.0, 8.5, 50.0), "ring": (2.7, 4.0, 9.6)},
}
#: LL128 max bandwidth per channel: broadcast, reduce, allgather, reduce_scatter, allreduce
LL128_MAX_BW = {"broadcast": 18.8, "reduce": 12.0, "allgather": 18.3, "reduce_scatter": 15.2,
                "allreduce": 16.7}
TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0,
           1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8,
              .9, .9, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7,
               .8, .9),
}
#: the per-channel speeds (GB/s) the topology search tries, fastest first (search.cc 2.7.5)
SPEED_ARRAY = (42.0, 24.0, 21.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4,
               1.2, 0.24, 0.12)


@dataclass(frozen=True)
class NcclMachine:
    """What NCCL's search found: the in-node link type (``nvlink`` or ``pci``), the graphs'
    per-channel speeds in GB/s (``speed_intra``: a one-node ring's; ``speed_inter``: the
    network's), the channels, and whether LL128 is enabled."""

    intra: str
    speed_intra: float
    speed_inter: float
    channels: int
    ll128: bool
    about: str = ""

    def speeds(self, nodes: int) -> tuple[float, float]:
        """(ring, tree) per-channel speed ``tuning.cc`` rates a job of ``nodes`` nodes at."""
        if nodes <= 1:
            return self.speed_intra, self.speed_intra
        ring = min(self.speed_inter, self.speed_intra)  # a ring graph: intra == inter
        if nodes > 2:
            return ring, ring
        tree = ring  # search.cc: raise the tree's speedIntra while below 2 x speedInter
        for s in sorted(v for v in SPEED_ARRAY if ring < v <= self.speed_intra):
            if tree >= 2 * ring:
                break
            tree = s
        return ring, tree


#: the node the model is evaluated for where no platform is given (module docstring)
REFERENCE = NcclMachine("nvlink", 21.0, 12.0, 2, True, "reference: V100 NVLink, EDR")
_NCCL_OPS = ("allreduce", "allgather", "reduce_scatter", "broadcast")
#: getAlgoInfo (enqueue.cc) drops channels while ``nBytes < nc x nt x threadThreshold``:
#: maxThreads (LL and Simple 512 - Simple 256 where speedIntra x nChannels <= 12 - LL128
#: 640) and threadThresholds (8, 8, 64 bytes per thread; ring LL
#: x nRanks), tuning.cc / comm.h 2.7.5
_THREADS = {"LL": 512, "LL128": 640, "Simple": 512}
_THREAD_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}


def _log2i(n: int) -> int:
    return max(0, int(n).bit_length() - 1)


def _model(c: Context, algo: str, pi: int) -> tuple[float, float]:
    """(latency us, algorithm bandwidth GB/s) of ``algo`` x ``PROTOS[pi]`` (0 bw: disabled)."""
    p, nodes, op = c.ranks, c.nodes, c.op
    proto = PROTOS[pi]
    mach = c.machine or REFERENCE
    if proto == "LL128" and not mach.ll128:
        return 0.0, 0.0  # tuning.cc 172-177: off but on Volta/Ampere over NVLink
    nch = mach.channels
    ppn = p / nodes
    nsteps = 2 * (p - 1) if op == "allreduce" else p - 1 if op in (
        "reduce_scatter", "allgather") else p
    inter = 2 * (nodes - 1) if op == "allreduce" else nodes - 1 if op in (
        "reduce_scatter", "allgather") else nodes
    # tuning.cc: ``nNodes <= 2 ? speedIntra : speedInter`` of the algorithm's graph
    ring_speed, tree_speed = mach.speeds(nodes)
    bus = nch * (tree_speed if algo == "tree" else ring_speed)
    if algo == "ring" and proto == "LL":
        bus *= 1 / 4 if (nodes > 1 or op in ("allreduce", "reduce")) else 1 / 3
    if algo == "ring" and proto == "LL128":
        bus = min(bus * (0.7 if ppn < 2 else 0.92), LL128_MAX_BW[op] * nch)
    if algo == "tree":
        bus = min(bus * 0.9, 80.0 if nodes > 2 else 110.0)
        if proto == "LL":
            bus *= 1 / 3.8
        if proto == "LL128":
            bus = min(bus * (7 / 9 if nodes == 1 else 0.915), LL128_MAX_BW[op] * nch * 7 / 9)
    bw = bus * (0.5 if algo == "tree" else p / nsteps)
    intra_hw = mach.intra
    hw = intra_hw if nodes == 1 else "net"
    lat = BASE_LAT[algo][pi]
    intra_lat = HW_LAT[intra_hw][algo][pi] * (1.8 if nodes > 1 and proto == "LL" else 1.0)
    inter_lat = HW_LAT["net"][algo][pi]
    if algo == "ring":
        if op == "broadcast":
            hop = HW_LAT[hw]["tree" if proto == "Simple" else "ring"][pi]
            lat += nsteps * hop
        else:
            lat += (nsteps - inter) * intra_lat + inter * inter_lat
    else:
        lat += 2 * ((p // nodes - 1) * intra_lat + _log2i(nodes) * inter_lat)
    return lat, bw


def predicted_times(c: Context) -> dict[tuple[str, str], float]:
    """NCCL's predicted time (us) of every enabled (algorithm, protocol) for ``c``."""
    out: dict[tuple[str, str], float] = {}
    nbytes = int(c.nbytes)
    for algo in ALGOS:
        if algo == "tree" and c.op != "allreduce":
            continue
        for pi, proto in enumerate(PROTOS):
            lat, bw = _model(c, algo, pi)
            if bw <= 0:
                continue
            log_size = _log2i(nbytes >> 6)
            if algo == "tree" and log_size < 22:
                bw *= TREE_CORRECTION[proto][log_size]
            if (algo == "ring" and proto == "Simple" and c.nodes > 1 and c.op == "allreduce"
                    and nbytes >= c.ranks / 16.0 * 65536):
                lat *= 1.9
            out[(algo, proto)] = lat + nbytes / (1000 * bw)
    return out


_SUFFIX = {"Simple": "", "LL": "_ll", "LL128": "_ll128"}


def channels(c: Context, algo: str, proto: str) -> int:
    """Channels NCCL runs ``algo`` x ``proto`` on for ``c`` (reference: at most 2).

    Small messages get fewer: a channel is dropped while the buffer is below ``nc`` channels'
    worth of per-thread work.  Only the label shows it: the ring schedule keeps 2 channels,
    which the step model costs as 1 (each step moves ``n/p`` bytes per link either way)."""
    mach = c.machine or REFERENCE
    threads = _THREADS[proto]
    if proto == "Simple" and mach.speeds(c.nodes)[0] * mach.channels <= 12.0:
        threads = 256  # tuning.cc: a ring no faster than PCI_WIDTH gets 256 threads
    per = threads * _THREAD_THRESHOLD[proto] * (
        c.ranks if (algo, proto) == ("ring", "LL") else 1)
    nc = mach.channels
    while nc >= 2 and c.nbytes < nc * per:
        nc -= 1
    return nc


def decide(c: Context) -> Choice:
    """The fastest pair by NCCL's model (first in NCCL's order on a tie: tree before ring,
    LL before LL128 before Simple)."""
    if c.op not in _NCCL_OPS:
        alg = "direct" if c.op in ("alltoall", "p2p") else "linear"
        return Choice(alg, f"send/recv {alg}")
    if c.ranks < 2:
        return Choice("nccl_ring", "ring/Simple")
    times = predicted_times(c)
    algo, proto = min(times, key=lambda k: (times[k], ALGOS.index(k[0]), PROTOS.index(k[1])))
    ch = channels(c, algo, proto)
    return Choice(f"nccl_{algo}{_SUFFIX[proto]}", f"{algo}/{proto}" + (
        f"×{ch}ch" if algo == "ring" else ""))
