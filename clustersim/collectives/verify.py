"""Run a schedule on NumPy vectors and check that it computes its collective.

Why: a schedule's timing can be right while its data flow is wrong (a chunk sent before it
was reduced, a segment never delivered).  This executor follows the contract of
:mod:`clustersim.collectives.schedule` literally - segments, chunk shifts, snapshot reads,
deferred writes - so a schedule that passes here is one the MPI executor can run as is.

It is a reference, not a fast path: it expands every occurrence and works in pure Python
over NumPy slices.  Conflicting writes in one occurrence (an overwrite that meets another
write) are reported as errors, since a real executor would make the result order-dependent.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from clustersim.collectives.schedule import (
    Schedule,
    chunk_indices,
    mirror_segment,
    segment_bounds,
)

__all__ = ["ScheduleError", "execute", "expected", "check_schedule"]


class ScheduleError(AssertionError):
    """A schedule that does not compute its collective (or breaks the contract)."""


def execute(schedule: Schedule, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Final per-rank buffers (the receive buffers for out-of-place schedules)."""
    p = schedule.ranks
    if len(inputs) != p:
        raise ValueError(f"{len(inputs)} input vectors for {p} ranks")
    n = len(inputs[0])
    bounds = segment_bounds(n, schedule.segments)
    send = [np.array(x, dtype=float) for x in inputs]
    buf = send if schedule.inplace else [x.copy() for x in send]
    for step in schedule.expanded():
        payloads = []
        for t in step.transfers:
            src_buf = buf[t.src] if schedule.inplace else send[t.src]
            data = src_buf[chunk_indices(t.chunk, bounds)].copy()
            if schedule.fp16:
                data = data.astype(np.float16).astype(float)
            payloads.append(data)
        written: dict[int, np.ndarray] = {}
        overwritten: dict[int, np.ndarray] = {}
        for t, data in zip(step.transfers, payloads):
            idx = chunk_indices(t.dst_chunk if t.dst_chunk is not None else t.chunk, bounds)
            if len(buf[t.dst][idx]) != len(data):
                raise ScheduleError(f"{t}: payload of {len(data)} elements does not fit")
            w = written.setdefault(t.dst, np.zeros(n, dtype=int))
            o = overwritten.setdefault(t.dst, np.zeros(n, dtype=int))
            w[idx] += 1
            if t.reduce:
                buf[t.dst][idx] += data
            else:
                o[idx] += 1
                buf[t.dst][idx] = data
        for r, o in overwritten.items():
            if np.any((o > 0) & (written[r] > 1)):
                raise ScheduleError(f"step {step.label!r}: rank {r} has an overwritten element "
                                    "that also receives another write in the same occurrence")
    if schedule.mirror:
        seg = schedule.segments
        for r in range(p):
            old = buf[r].copy()
            for j in range(seg):
                k = mirror_segment(r, j, seg)
                buf[r][bounds[k]:bounds[k + 1]] = old[bounds[j]:bounds[j + 1]]
    return buf


def _blocks(n: int, k: int) -> list[slice]:
    b = segment_bounds(n, k)
    return [slice(int(b[i]), int(b[i + 1])) for i in range(k)]


def expected(schedule: Schedule, inputs: Sequence[np.ndarray]) -> list[list[tuple[slice, np.ndarray]]]:
    """Per rank, the ``(elements, values)`` the collective defines there (the rest is free)."""
    p, op = schedule.ranks, schedule.op
    x = [np.asarray(v, dtype=float) for v in inputs]
    n = len(x[0])
    whole = slice(0, n)
    total = np.sum(x, axis=0)
    root = schedule.meta.get("root", 0)
    out: list[list[tuple[slice, np.ndarray]]] = [[] for _ in range(p)]
    blocks = _blocks(n, p)
    if op == "allreduce":
        for r in range(p):
            out[r].append((whole, total))
    elif op == "reduce":
        out[root].append((whole, total))
    elif op == "broadcast":
        for r in range(p):
            out[r].append((whole, x[root]))
    elif op == "reduce_scatter":
        for r in range(p):
            out[r].append((blocks[r], total[blocks[r]]))
    elif op == "allgather":
        for r in range(p):
            out[r].extend((blocks[i], x[i][blocks[i]]) for i in range(p))
    elif op == "alltoall":
        for j in range(p):
            out[j].extend((blocks[i], x[i][blocks[j]]) for i in range(p))
    elif op == "gather":
        out[root].extend((blocks[i], x[i][blocks[i]]) for i in range(p))
    elif op == "scatter":
        for r in range(p):
            out[r].append((blocks[r], x[root][blocks[r]]))
    elif op == "p2p":
        out[1].append((whole, x[0]))
    elif op in ("ps_push", "ps_pull"):
        servers = list(schedule.meta["servers"])
        shards = _blocks(n, len(servers))
        workers = [r for r in range(p) if r not in servers]
        for s, srv in enumerate(servers):
            sh = shards[s]
            if op == "ps_push":
                out[srv].append((sh, x[srv][sh] + sum(x[w][sh] for w in workers)))
            else:
                for w in workers:
                    out[w].append((sh, x[srv][sh]))
    else:
        raise ValueError(f"no reference semantics for op {op!r}")
    return out


def check_schedule(schedule: Schedule, elements: int | None = None, seed: int = 0) -> None:
    """Run ``schedule`` on random small-integer vectors; raise :class:`ScheduleError` if wrong.

    Integers keep sums exact (also through fp16 for the sizes used), so the comparison is
    exact.  The default length ``3*S + 5`` leaves segments of unequal size on purpose; an
    alltoall (or mirrored) schedule gets ``3*S``, since moving block ``j`` into block ``i``
    needs equal blocks, as MPI_Alltoall's single count does.
    """
    schedule.validate()
    if elements is None:
        equal = schedule.op == "alltoall" or schedule.mirror or not schedule.inplace
        elements = 3 * schedule.segments + (0 if equal else 5)
    n = elements
    rng = np.random.default_rng(seed)
    inputs = [rng.integers(-8, 9, size=n).astype(float) for _ in range(schedule.ranks)]
    got = execute(schedule, inputs)
    for r, parts in enumerate(expected(schedule, inputs)):
        for idx, want in parts:
            if not np.array_equal(got[r][idx], want):
                bad = np.flatnonzero(got[r][idx] != want)[:5]
                raise ScheduleError(
                    f"{schedule.op}/{schedule.algorithm} on {schedule.ranks} ranks: rank {r} "
                    f"elements {idx} differ at offsets {bad.tolist()}")
