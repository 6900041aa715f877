"""Pipelined algorithms: a buffer cut into C chunks that stream along the edges of a graph.

A *stream* is one directed edge of a pipeline: from step ``start`` on, for ``C`` consecutive
steps, it carries chunk ``c = t - start`` (segment ``base + c``).  Chain broadcast and NCCL's
tree allreduce are sets of streams with staggered starts.  Between two consecutive start or
end times the set of active streams does not change and every chunk moves up by one per step -
exactly one :class:`Step` with ``chunk_shift = +1`` - so a pipeline compresses to a number of
steps proportional to the number of distinct start times, not to C.

Default chunk count: NCCL's Simple protocol moves data through a 4 MiB buffer
(``NCCL_BUFFSIZE`` default) in 8 slots (``NCCL_STEPS``), i.e. 512 KiB per pipeline step, so
the default is ``ceil(bytes / 512 KiB)`` chunks, at least 1 and at most a cap (1024 for trees,
where C costs nothing to build; 64 for the chain, whose fill phase is written out step by step).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import repeat
from typing import NamedTuple

from clustersim.collectives.plan import Plan, new_transfer
from clustersim.collectives.schedule import Transfer
from clustersim.collectives.trees import rotate

__all__ = ["Stream", "pipeline", "default_chunks", "chain_bcast", "CHUNK_BYTES"]

#: NCCL Simple-protocol pipeline slot: 4 MiB buffer / 8 steps
CHUNK_BYTES = 512 * 1024


class Stream(NamedTuple):
    """One directed pipeline edge ``src -> dst``: at step ``t`` from ``start`` on it carries
    chunk ``t - start`` into segment ``base + t - start``, summed into the receiver's when
    ``reduce``."""

    src: int
    dst: int
    start: int
    base: int
    reduce: bool = False


def default_chunks(nbytes: float, cap: int) -> int:
    """``ceil(nbytes / 512 KiB)`` clamped to ``[1, cap]``."""
    return max(1, min(cap, math.ceil(nbytes / CHUNK_BYTES)))


def pipeline(plan: Plan, streams: Sequence[Stream], chunks: int, label: str) -> None:
    """Append the steps of ``streams`` each carrying ``chunks`` one-segment chunks.

    Streams are grouped by start time; a step lists the active groups in start order and,
    within a group, the streams in the order given (deterministic output).
    """
    if not streams:
        return
    groups: dict[int, list[Stream]] = {}
    for st in streams:
        groups.setdefault(st.start, []).append(st)
    starts = sorted(groups)
    cols = {g: ([s.src for s in v], [s.dst for s in v], [s.reduce for s in v],
                [s.base for s in v]) for g, v in groups.items()}
    events = sorted(set(starts) | {t + chunks for t in starts})
    nb = float(plan.seg_bytes)
    for t0, t1 in zip(events, events[1:]):
        trs: list[Transfer] = []
        for g in starts:
            if g <= t0 < g + chunks:
                c = t0 - g
                srcs, dsts, reds, bases = cols[g]
                shared = {b: (b + c, b + c + 1) for b in set(bases)}   # few distinct bases
                chunk = [shared[b] for b in bases]
                trs.extend(map(new_transfer, zip(srcs, dsts, repeat(nb), reds, chunk,
                                                 repeat(None))))
        plan.add(trs, repeat=t1 - t0, shift=1, label=f"{label} (steps {t0}-{t1 - 1})")


def chain_bcast(plan: Plan, root: int, chunks: int) -> None:
    """Pipelined chain root -> root+1 -> ...: ``(C + p - 2)(alpha + n/(C B))`` (segments = C)."""
    members = rotate(plan.ranks, root)
    streams = [Stream(members[v], members[v + 1], v, 0) for v in range(plan.ranks - 1)]
    pipeline(plan, streams, chunks, "chain broadcast")
