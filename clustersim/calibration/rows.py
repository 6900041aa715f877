"""Benchmark rows from microbenchmark trace events, with a choice of statistic.

The events are those ``realrun.microbench`` writes (and :mod:`.synthetic` imitates): one per
timed batch of ``meta.iters`` calls, ``meta.bench`` saying what was measured, ``meta.repeat``
numbering the batches of one point (docs/realrun.md, "Microbenchmarks").  Per batch the
per-call time is ``duration / iters`` (ping-pong: half of it, a round trip being two
messages); a collective batch counts its slowest rank.  Kernels measured in another context
(``meta.context``, e.g. ``peer_polling`` from :mod:`.contention`) are separate points.

``noise`` events (one per timed call of one GEMM, every rank at once) become one row per
shape with ``cv``, the coefficient of variation of a call's time: per rank and per batch of
calls (``meta.repeat``: one per ``calibrate --rounds`` round) ``stdev / mean``, then the
median over those samples (``cv_low``/``cv_high``: their range).  It is the compute jitter
the simulator draws per forward and backward pass (``workload.jitter``).

Why a statistic to choose: the simulator predicts *mean* times - an iteration time is a
span divided by a count - so on a machine where other jobs take the core now and then, the
parameters that predict means are fitted to means (``mean``: every batch weighs the same,
disturbances included at the rate they happened).  ``median`` (what ``realrun`` reports)
describes an undisturbed machine; ``min`` its best case.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from clustersim.trace import TraceEvent

__all__ = ["STATISTICS", "rows_from_events", "noise_rows"]

STATISTICS = ("mean", "median", "min")

_KEYS = {
    "pingpong": ("size",),
    "collective": ("op", "algorithm", "ranks", "size", "dtype"),
    "gemm": ("m", "n", "k", "dtype", "context"),
    "memory": ("kernel", "size", "dtype", "context"),
    "reduce": ("size", "dtype"),
}
#: meta fields copied into a row besides the key
_EXTRA = {"gemm": ("flops", "class"), "memory": ("bytes_moved",), "collective": ("count",)}


def noise_rows(events: Iterable[TraceEvent]) -> list[dict[str, Any]]:
    """One row per noise-bench shape: the coefficient of variation of a call (module docs)."""
    calls: dict[tuple, dict[tuple[int, int], list[tuple[int, float]]]] = defaultdict(
        lambda: defaultdict(list))
    for ev in events:
        m = ev.meta or {}
        if m.get("bench") != "noise":
            continue
        key = (m.get("m"), m.get("n"), m.get("k"), m.get("dtype"))
        calls[key][(int(m.get("repeat", 0)), ev.actor)].append((int(m.get("call", 0)),
                                                                ev.duration))
    rows = []
    for (m, n, k, dtype), samples in calls.items():
        cvs, means, count = [], [], 0
        for seq in samples.values():
            times = [t for _, t in sorted(seq)]
            if len(times) < 2:
                continue
            mean = statistics.fmean(times)
            cvs.append(statistics.pstdev(times) / mean if mean > 0 else 0.0)
            means.append(mean)
            count += len(times)
        if cvs:
            rows.append({"bench": "noise", "m": m, "n": n, "k": k, "dtype": dtype,
                         "cv": statistics.median(cvs), "cv_low": min(cvs),
                         "cv_high": max(cvs), "samples": len(cvs), "calls": count,
                         "time": statistics.median(means)})
    return rows


def rows_from_events(events: Iterable[TraceEvent], statistic: str = "mean"
                     ) -> list[dict[str, Any]]:
    """One row per measured point (order of first appearance), ``time`` by ``statistic``;
    noise rows (:func:`noise_rows`) last."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, "
                         f"not {statistic!r}")
    events = list(events)
    per: dict[tuple, dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    metas: dict[tuple, dict[str, Any]] = {}
    for ev in events:
        m = ev.meta or {}
        bench = m.get("bench")
        if bench not in _KEYS or not m.get("iters"):
            continue
        if bench == "pingpong" and ev.actor != (m.get("pair") or [0])[0]:
            continue
        key = (bench, *(m.get(k) for k in _KEYS[bench]))
        metas.setdefault(key, m)
        t = ev.duration / float(m["iters"])
        if bench == "pingpong":
            t /= 2.0
        per[key][int(m.get("repeat", 0))][ev.actor] = t
    rows = []
    for key, reps in per.items():
        m = metas[key]
        bench = key[0]
        agg = max if bench == "collective" else statistics.median
        times = [agg(by_rank.values()) for by_rank in reps.values()]
        if statistic == "mean":
            t = statistics.fmean(times)
        elif statistic == "median":
            t = statistics.median(times)
        else:
            t = min(times)
        row: dict[str, Any] = {"bench": bench, **{k: m.get(k) for k in _KEYS[bench]},
                               "time": t, "time_min": min(times), "repeats": len(times),
                               "iters": m["iters"], "statistic": statistic}
        for extra in _EXTRA.get(bench, ()):
            if extra in m:
                row[extra] = m[extra]
        if bench == "pingpong":
            row["ranks"] = 2
        rows.append(row)
    return rows + noise_rows(events)
