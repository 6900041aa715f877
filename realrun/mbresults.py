"""Microbenchmark result rows from trace events: what calibration fits.

The benchmarks (:mod:`realrun.microbench`) run on the MPI ranks and record trace events; this
module runs afterwards, in the launching process or on recorded traces, and turns the events of
all ranks into one row per measured point (median over repeats, the slowest rank for
collectives).  Apart from the benchmarks because it needs no MPI and no arrays.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from clustersim.trace import TraceEvent
from realrun.collectives import busbw_factor

__all__ = ["results_from_events"]

_KEYS = {
    "pingpong": ("size",),
    "collective": ("op", "algorithm", "ranks", "size", "dtype"),
    "gemm": ("m", "n", "k", "dtype"),
    "memory": ("kernel", "size", "dtype"),
    "reduce": ("size", "dtype"),
}


def results_from_events(events: Iterable[TraceEvent]) -> list[dict[str, Any]]:
    """Result rows from microbenchmark trace events of all ranks (order of first appearance).

    Per batch the per-iteration time is ``duration / iters``; a collective batch's time is the
    slowest rank's in that repeat; a row takes the median over repeats.  Ping-pong keeps the
    first rank of the pair (its loop is the round trip) and halves it.
    """
    groups: dict[tuple, dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    metas: dict[tuple, dict[str, Any]] = {}
    for ev in events:
        m = ev.meta
        bench = m.get("bench")
        if bench not in _KEYS or "iters" not in m:
            continue
        if bench == "pingpong" and ev.actor != m.get("pair", [0])[0]:
            continue
        key = (bench, *(m.get(k) for k in _KEYS[bench]))
        metas.setdefault(key, m)
        per_iter = ev.duration / m["iters"]
        if bench == "pingpong":
            per_iter /= 2.0
        groups[key][int(m.get("repeat", 0))][ev.actor] = per_iter
    rows: list[dict[str, Any]] = []
    for key, reps in groups.items():
        m = metas[key]
        bench = key[0]
        if bench == "collective":
            times = [max(by_rank.values()) for by_rank in reps.values()]
        else:
            times = [statistics.median(by_rank.values()) for by_rank in reps.values()]
        t = statistics.median(times)
        row: dict[str, Any] = {"bench": bench, **{k: m.get(k) for k in _KEYS[bench]},
                               "time": t, "time_min": min(times), "repeats": len(times),
                               "iters": m["iters"]}
        if bench == "pingpong":
            row["bandwidth"] = m["size"] / t if t > 0 else 0.0
            row["ranks"] = 2
        elif bench == "collective":
            algbw = m["size"] / t if t > 0 else 0.0
            row.update(count=m.get("count"), algbw=algbw,
                       busbw=algbw * busbw_factor(m["op"], m["ranks"]))
            if "messages" in m:
                row["messages"] = m["messages"]
        elif bench == "gemm":
            row.update(flops=m["flops"], flop_rate=m["flops"] / t if t > 0 else 0.0)
        elif bench == "memory":
            row.update(bytes_moved=m["bytes_moved"],
                       bandwidth=m["bytes_moved"] / t if t > 0 else 0.0)
        else:
            row["rate"] = m["size"] / t if t > 0 else 0.0
        rows.append(row)
    return rows

