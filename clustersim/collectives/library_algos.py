"""The schedules that MPICH, Open MPI, NCCL and Horovod really run, as registry entries.

Each entry names a schedule under its own name (the textbook ones in :mod:`.registry` keep
theirs): ``rabenseifner_mpich`` (nearest partners first), ``ring_segmented`` (Open MPI),
``bruck`` and ``neighbor_exchange`` allgathers, the ``bruck`` and ``direct`` all-to-alls,
``scatter_rd_allgather`` broadcast (MPICH), ``horovod_hierarchical``, and NCCL's
``nccl_ring`` / ``nccl_tree`` under each protocol (``_ll``, ``_ll128`` suffixes; no suffix is
Simple).  The selectors of :mod:`.selection` pick among these and the textbook ones.
NCCL's schedules carry ``meta["fused_reduce"]``: its kernels reduce while they copy, so their
reductions overlap their transfers (:mod:`.schedule`); the MPI ones reduce after receiving.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from clustersim.collectives.bruck import (
    bruck_allgather,
    bruck_alltoall,
    direct_alltoall,
    neighbor_exchange_allgather,
    segmented_ring_allreduce,
)
from clustersim.collectives.butterfly import near_first_rabenseifner
from clustersim.collectives.direct import asa_ompi_allreduce, check_direct_size
from clustersim.collectives.hierarchical_rs import shard_hierarchical_allreduce
from clustersim.collectives.nccl_sched import (
    DEFAULT_CHANNELS,
    SLOT_BYTES,
    WIRE_FACTOR,
    nccl_chain_bcast,
    nccl_ring,
    nccl_tree_allreduce,
    ring_loops,
    tree_chunks,
)
from clustersim.collectives.ompi_reduce import OMPI_REDUCE_ALGOS
from clustersim.collectives.plan import Plan, fold, fold_targets, pow2_floor
from clustersim.collectives.recursive import doubling_core
from clustersim.collectives.request import Algo, Request, fill
from clustersim.collectives.ring import ring_allgather
from clustersim.collectives.trees import binomial_scatter, rotate
from clustersim.errors import InputError

__all__ = ["LIBRARY_ALGOS", "OMPI_SEGSIZE"]

#: Open MPI 1.8-4.0's segment for the segmented ring allreduce (coll_tuned_decision_fixed.c)
OMPI_SEGSIZE = 1 << 20


def _wire(req: Request) -> float:
    return req.nbytes * (0.5 if req.fp16 else 1.0)


def _asa_ompi(req: Request) -> Plan:
    check_direct_size(req.ranks, "asa_ompi (pairwise alltoall-sum, ring allgather)")
    return fill(req, req.ranks, asa_ompi_allreduce)


def _ring_segmented(req: Request) -> Plan:
    p = req.ranks
    phases = max(1, math.ceil(_wire(req) / p / OMPI_SEGSIZE))
    plan = req.plan(p * phases)
    plan.meta["phases"] = phases
    segmented_ring_allreduce(plan, phases)
    return plan


def _neighbor(req: Request) -> Plan:
    # Open MPI's own neighbour exchange hands odd communicators to the ring
    fn = neighbor_exchange_allgather if req.ranks % 2 == 0 else ring_allgather
    return fill(req, req.ranks, fn)


def _direct_a2a(req: Request) -> Plan:
    check_direct_size(req.ranks, "direct alltoall")
    return fill(req, req.ranks, direct_alltoall, inplace=False)


def _scatter_rd(req: Request) -> Plan:
    """MPICH's scatter + recursive-doubling allgather broadcast (virtual v owns block v)."""
    p = req.ranks
    plan = req.plan(p)
    members = rotate(p, req.root)
    binomial_scatter(plan, req.root, block_of=lambda u: u, label="bcast scatter")
    core, pairs = fold(members)
    plan.add([plan.xfer(e, o, 2 * i, 1) for i, (e, o) in enumerate(pairs)],
             label="fold extra ranks in")
    doubling_core(plan, core, fold_targets(p))
    plan.add([plan.xfer(o, e) for e, o in pairs], label="hand results to folded ranks")
    return plan


def _horovod(req: Request) -> Plan:
    from clustersim.collectives.registry import inter_builder

    if req.hosts is None or len(req.hosts) != req.ranks:
        raise InputError("horovod_hierarchical needs hosts (the machine of every rank)",
                         path=("hosts",))
    plan = shard_hierarchical_allreduce(req.ranks, req.nbytes, req.fp16, req.hosts,
                                        inter_builder(req))
    plan.meta["inter"] = req.inter
    return plan


def _nccl_ring(proto: str) -> Callable[[Request], Plan]:
    def build(req: Request) -> Plan:
        c = DEFAULT_CHANNELS
        # NCCL runs ``loops`` loops, but they stream through its 8-slot FIFOs: a rank starts
        # the next loop's chunk while the previous ones are in flight, so the ring pays its
        # 2(p-1) step latencies once (the pipeline's fill) and the loops only add bytes.  A
        # step model that ran the loops one after another charged 2(p-1)*loops latencies
        # (32-46% below published nccl-tests busbw on 8 A100/H100, docs/collectives.md), so
        # the cost is of one pass over the same bytes; ``loops`` stays in meta as NCCL's count.
        loops = ring_loops(_wire(req), req.ranks, c, proto)
        plan = req.plan(req.ranks * c, wire_factor=WIRE_FACTOR[proto])
        plan.meta.update({"protocol": proto, "channels": c, "loops": loops, "fused_reduce": True})
        nccl_ring(plan, req.op, c, 1)
        return plan
    return build


def _nccl_chain(proto: str) -> Callable[[Request], Plan]:
    def build(req: Request) -> Plan:
        c = req.chunks or max(1, min(64, math.ceil(_wire(req) / SLOT_BYTES[proto])))
        plan = req.plan(c, wire_factor=WIRE_FACTOR[proto])
        plan.meta.update({"protocol": proto, "chunks": c, "fused_reduce": True})
        nccl_chain_bcast(plan, req.root, c)
        return plan
    return build


def _nccl_tree(proto: str) -> Callable[[Request], Plan]:
    def build(req: Request) -> Plan:
        c = req.chunks or tree_chunks(_wire(req), proto)
        plan = req.plan(2 * c, wire_factor=WIRE_FACTOR[proto])
        plan.meta.update({"protocol": proto, "chunks": c, "fused_reduce": True})
        nccl_tree_allreduce(plan, c)
        return plan
    return build


_SUFFIX = {"Simple": "", "LL": "_ll", "LL128": "_ll128"}


def _nccl_entries(op: str) -> dict[str, Algo]:
    out: dict[str, Algo] = {}
    for proto, sfx in _SUFFIX.items():
        if op == "broadcast":
            out[f"nccl_ring{sfx}"] = Algo(_nccl_chain(proto), f"NCCL ring broadcast ({proto}): "
                                          "pipelined chain in protocol slots", uses_root=True)
            continue
        out[f"nccl_ring{sfx}"] = Algo(_nccl_ring(proto), f"NCCL ring ({proto}): "
                                      f"{DEFAULT_CHANNELS} channels, loops of p slot-sized "
                                      "chunks")
        if op == "allreduce":
            out[f"nccl_tree{sfx}"] = Algo(_nccl_tree(proto), f"NCCL double binary tree "
                                          f"({proto}), pipelined in slot-sized chunks")
    return out


LIBRARY_ALGOS: dict[str, dict[str, Algo]] = {
    "allreduce": {
        "rabenseifner_mpich": Algo(
            lambda r: fill(r, pow2_floor(r.ranks), near_first_rabenseifner),
            "Rabenseifner in MPICH/Open MPI order: halving with distance 1, 2, 4, ... then "
            "doubling back (nearest partners move the most data)"),
        "ring_segmented": Algo(_ring_segmented, "Open MPI segmented ring: reduce-scatter in "
                               "1 MiB phases, then a ring allgather"),
        "horovod_hierarchical": Algo(_horovod, "Horovod: ring reduce-scatter in the node, "
                                     "allreduce of each shard across nodes (inter), allgather",
                                     needs_hosts=True),
        "asa_ompi": Algo(_asa_ompi, "Theano-MPI asa as Open MPI 1.8 ran it: pairwise "
                               "alltoall + sum, ring allgather"),
        "asa_ompi16": Algo(_asa_ompi, "asa_ompi with fp16 transfers (Theano-MPI asa16)",
                           fp16=True),
        **_nccl_entries("allreduce"),
    },
    "allgather": {
        "bruck": Algo(lambda r: fill(r, r.ranks, bruck_allgather),
                      "Bruck: ceil(log2 p) steps, step k sends min(2^k, p-2^k) blocks"),
        "neighbor_exchange": Algo(_neighbor, "Open MPI neighbour exchange: p/2 steps of "
                                  "2 blocks (ring for odd p)"),
        **_nccl_entries("allgather"),
    },
    "reduce_scatter": {**_nccl_entries("reduce_scatter")},
    "reduce": dict(OMPI_REDUCE_ALGOS),
    "alltoall": {
        "bruck": Algo(lambda r: fill(r, r.ranks, bruck_alltoall),
                      "Bruck: ceil(log2 p) steps, step k forwards the blocks whose index has "
                      "bit k set (one packed message)"),
        "direct": Algo(_direct_a2a, "all sends posted at once (MPICH scattered, Open MPI "
                       "basic_linear): one step of p(p-1) messages"),
    },
    "broadcast": {
        "scatter_rd_allgather": Algo(_scatter_rd, "MPICH: binomial scatter, then "
                                     "recursive-doubling allgather", uses_root=True),
        **_nccl_entries("broadcast"),
    },
}
