"""Where a master-based method stops scaling: the master's saturation point.

A parameter server (or an EASGD centre) serves one exchange at a time.  With service time
``s`` per exchange and a worker computing for ``t`` per step, ``W`` workers ask for
``W / t`` exchanges per second of one server, which can serve ``1 / s``: the server is busy
all the time once ``W * s >= t``, so beyond

    W* = t / s

workers only queue and throughput stops growing (the utilisation law of queueing theory,
rho = lambda * s; Lazowska et al., *Quantitative System Performance*, 1984, ch. 3).  A sharded
server spreads one exchange over S shards, each serving its part of the parameters in about
``s / S``, and every worker step visits every shard: the same formula holds per shard with
that shard's measured ``s``, so W* grows with S.

Both figures come from the simulated run, not from a formula of the algorithm: ``s`` is the
time a server is occupied per update it applies - its compute (the update) plus the time its
answers are on the wire (a master's link is as much a server as its processor) - and ``t``
the worker's iteration time (compute and its own exchange).  Past the knee a worker's step
includes queueing at the master and the row's ``W*`` drifts up with ``W``: the summary takes
it at the smallest worker count of each group.  With full-duplex links a push and another
worker's pull overlap, so throughput still creeps up past ``W*`` towards ``batch / s`` - the
ceiling - rather than stopping flat.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["master_figures", "saturation_summary"]


def master_figures(run: Any, metrics: Any) -> dict[str, Any]:
    """``servers``, ``service_time`` (seconds one server is occupied per exchange: its
    compute plus the time its sends are on the wire, per update it applied; the busiest
    server) and ``saturation_workers`` (``W*`` above, with the worker's iteration time as the
    step); None where the method has no master or the master applied no update.  The two
    figures are the point's own (:func:`clustersim.sim.metrics.master_service_time`), so
    that ``predict`` and ``sweep`` print the same."""
    return {"servers": len(run.servers()), "service_time": metrics.service_time,
            "saturation_workers": metrics.saturation_workers}


def saturation_summary(rows: Sequence[Mapping[str, Any]], inputs: Sequence[str]
                       ) -> list[tuple[str, float, float, float, int]]:
    """One line per master-based group of the table (all input columns but ``workers``):
    (group label, W*, service time, step, the smallest worker count measured).  ``W*`` is
    taken at the group's smallest worker count, where the master queues least."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    keys = [k for k in inputs if k != "workers"]
    for r in rows:
        if r.get("saturation_workers") is None:
            continue
        groups.setdefault(tuple((k, r.get(k)) for k in keys), []).append(r)
    out = []
    for group, rs in groups.items():
        first = min(rs, key=lambda r: r["workers"])
        w_star = float(first["saturation_workers"])
        if not math.isfinite(w_star):
            continue
        label = ", ".join(f"{k}={v}" for k, v in group if v not in ("", None))
        out.append((label, w_star, float(first["service_time"]), float(first["iteration_time"]),
                    int(first["workers"])))
    return out
