"""NCCL's own schedules: rings over channels in chunked loops, and the double binary tree,
each under one of NCCL's three protocols.

Rings (NCCL ``src/collectives/device/all_reduce.h``, ``prims_*.h``, 2.7-2.19): the buffer is
split among ``nChannels`` channels; each channel runs its own ring over its share, in *loops*
of ``nranks`` chunks, one chunk per rank, each chunk as big as a pipeline slot of the protocol
(below).  A loop of an allreduce is a full ring allreduce of ``p`` chunks (``2(p-1)`` steps),
loops run one after another, channels at the same time.  So ``L = ceil(n / (C p slot))``
loops cost ``2(p-1) L`` latency terms and ``2(p-1)/p n`` bytes: for large buffers NCCL pays
more latency than the textbook ring, which is why its Simple protocol has a 512 KiB slot.
All channels here use the same ring order (NCCL builds different rings per channel across
NICs; on one link class that makes no difference to the step model).

Protocols (NCCL ``src/include/devcomm.h``): what the schedule carries differs, not the shape.

* ``Simple``: data as is; slot = 4 MiB buffer / 8 steps = 512 KiB (as :mod:`.pipeline`).
* ``LL`` (low latency): every 8-byte line is 4 bytes of data and a 4-byte flag, so the wire
  carries **2x** the payload (``wire_factor = 2``); slot = 512 KiB LL buffer / 8 = 64 KiB of
  lines = 32 KiB of data.
* ``LL128``: 128-byte lines with an 8-byte flag, **128/120** of the payload on the wire
  (~94% efficiency); slot = 4,915,200 B buffer / 8 = 614,400 B of lines = 576,000 B of data.

The smaller LL slot makes more, smaller steps (more latency terms) and the flags cost
bandwidth - so on the simulated platform LL loses to Simple for big buffers on its own.  What
the step model cannot show is NCCL's per-protocol software latency (``hwLat`` in
``tuning.cc``: LL's ~0.5 us per hop against Simple's ~3-9 us); it enters the *choice*
(:mod:`.select_nccl`), not the simulated time, which uses the platform's link latencies.

Tree: the double binary tree of :mod:`.dbt` over all ranks (NCCL chains the GPUs of a node
under one tree node; over one rank per node the two agree), pipelined in slot-sized chunks.
"""

from __future__ import annotations

import math

from clustersim.collectives.dbt import dbt_allreduce
from clustersim.collectives.pipeline import chain_bcast
from clustersim.collectives.plan import Plan, make_transfers

__all__ = ["PROTOCOLS", "WIRE_FACTOR", "SLOT_BYTES", "DEFAULT_CHANNELS", "MAX_LOOPS",
           "ring_loops", "nccl_ring", "nccl_tree_allreduce", "nccl_chain_bcast"]

PROTOCOLS = ("LL", "LL128", "Simple")
#: wire bytes per payload byte
WIRE_FACTOR = {"LL": 2.0, "LL128": 128.0 / 120.0, "Simple": 1.0}
#: payload bytes of one pipeline slot (one ring step of one channel)
SLOT_BYTES = {"LL": 32 * 1024, "LL128": 576_000, "Simple": 512 * 1024}
#: channels: 2, as NCCL has with one searched ring per NIC (``connect.cc`` doubles the searched
#: channels: ``nChannels = min(MAXCHANNELS, nChannels * 2)``)
DEFAULT_CHANNELS = 2
#: loops beyond this are merged (bigger chunks): keeps a 10 GB buffer to a bounded schedule
MAX_LOOPS = 256


def ring_loops(nbytes: float, ranks: int, channels: int, protocol: str) -> int:
    """``ceil(n / (C p slot))`` clamped to ``[1, MAX_LOOPS]``."""
    per_loop = channels * ranks * SLOT_BYTES[protocol]
    return max(1, min(MAX_LOOPS, math.ceil(nbytes / per_loop)))


def nccl_ring(plan: Plan, op: str, channels: int, loops: int) -> None:
    """Ring allreduce / reduce_scatter / allgather over ``channels`` x ``loops`` blocks.

    Segments ``S = p K`` with ``K = channels * loops``; block ``b`` of ring position ``v`` is
    segment ``v K + b``, so moving one position back is a chunk shift of ``-K`` and every
    phase of every loop compresses to one :class:`Step` repeated ``p-1`` times.  For
    reduce_scatter / allgather each rank ``r`` owns (ends with / starts with) the ``K``
    segments ``[r K, (r+1) K)`` - its block of the nccl-tests buffer.
    """
    p, k = plan.ranks, channels * loops
    if p < 2:
        return
    if plan.segments != p * k:
        raise ValueError("an NCCL ring needs p * channels * loops segments")
    dsts = list(range(1, p)) + [0]
    phases = {"allreduce": [(0, True, "reduce-scatter"), (1, False, "allgather")],
              "reduce_scatter": [(-1, True, "reduce-scatter")],
              "allgather": [(0, False, "allgather")]}[op]
    for loop in range(loops):
        for first, reduce, what in phases:
            chunks = [(((v + first) % p) * k + loop * channels + c,
                       ((v + first) % p) * k + loop * channels + c + 1)
                      for c in range(channels) for v in range(p)]
            srcs = [v for _ in range(channels) for v in range(p)]
            dst = [d for _ in range(channels) for d in dsts]
            plan.add(make_transfers(srcs, dst, plan.seg_bytes, reduce, chunks), repeat=p - 1,
                     shift=-k, label=f"ring {what} (loop {loop + 1}/{loops}, {channels} ch)")


def tree_chunks(nbytes: float, protocol: str, cap: int = 1024) -> int:
    """Chunks per tree: each tree carries half the buffer, in slot-sized chunks."""
    return max(1, min(cap, math.ceil(nbytes / 2 / SLOT_BYTES[protocol])))


def nccl_tree_allreduce(plan: Plan, chunks: int) -> None:
    """The double binary tree of :mod:`.dbt` (segments = 2 * chunks)."""
    dbt_allreduce(plan, chunks)


def nccl_chain_bcast(plan: Plan, root: int, chunks: int) -> None:
    """NCCL's ring broadcast: a pipelined chain from the root around the ring."""
    chain_bcast(plan, root, chunks)
