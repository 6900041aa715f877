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

Both figures come from the simulated run, not from a formula of the algorithm
(:func:`clustersim.sim.metrics.master_service_time`): ``s`` is the master's capacity per
update - the slowest of its thread (the time it is not waiting for work), its processor
(updates that run beside the thread, as Hogwild's) and its link (its answers on the wire) -
and ``t`` the worker's iteration time (compute and its own exchange).  Not their sum: a
master's non-blocking answer overlaps the next push on the other direction of a full-duplex
link, and a prefetching master (Async EASGD) takes the next push in during its update, so
once workers queue the update is all it spends per exchange; on scenarios/knl_unsaturated.yaml
``batch / s`` is the plateau the throughput reaches, to within 1%, and ``W*`` the knee
(tests/test_saturation.py).  A master without a prefetch (the original, round-robin EASGD;
Hogwild EASGD's receive loop) sits through each worker's push at any load: those receives are
marked (``Recv(serving=True)``) and count as busy.

Past the knee a worker's step includes queueing at the master, so a row's ``W*`` is about its
own worker count there (``W * s`` is the step): the summary takes it at the smallest worker
count of each group, where the step is the worker's own.  One case still bends late: a master
whose *link* is the bottleneck, with identical workers sharing it max-min fairly, stays in
lock step (everyone's push, then everyone's answer: one direction of the link at a time) and
creeps up towards ``batch / s`` only as the workers drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["master_figures", "saturation_summary", "saturation_text"]


def master_figures(run: Any, metrics: Any) -> dict[str, Any]:
    """``servers``, ``service_time`` (the busiest server's capacity per update it applied:
    the slowest of its thread, processor and link, above) and ``saturation_workers`` (``W*``
    above, with the worker's iteration time as the step); None where the method has no
    master or the master applied no update.  The two
    figures are the point's own (:func:`clustersim.sim.metrics.master_service_time`), so
    that ``predict`` and ``sweep`` print the same."""
    return {"servers": len(run.servers()), "service_time": metrics.service_time,
            "saturation_workers": metrics.saturation_workers}


def saturation_summary(rows: Sequence[Mapping[str, Any]], inputs: Sequence[str]
                       ) -> list[tuple[str, float, float, float, int]]:
    """One line per master-based group of the table (all input columns but ``workers``):
    (group label, W*, service time, step, the smallest worker count measured).  ``W*`` is
    taken at the group's smallest worker count, where the master queues least: there the
    step is a worker's own, while past the knee it is ``W * s`` and ``W*`` is just ``W``
    (``s`` itself is about the same at every point: within 0.5% on the KNL scenarios)."""
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


def saturation_text(w_star: float, service: float, step: float, workers: int) -> str:
    """The line ``predict`` and ``sweep`` print for one master: ``W*``, what the master
    spends per worker step (``step / W*``) and, where that differs from its service time
    per exchange (an exchange every ``tau`` steps, or through a group leader every ``k``),
    both."""
    from clustersim.units import format_time

    per_step = step / w_star
    if abs(per_step - service) <= 0.01 * service:
        busy = f"service {format_time(service)} per exchange"
    else:
        busy = (f"busy {format_time(per_step)} per worker step (service "
                f"{format_time(service)} per exchange, not one exchange per step)")
    return (f"master saturates at ~{w_star:,.0f} workers: {busy} x workers > a step of "
            f"{format_time(step)} (measured at {workers} workers); throughput stops "
            f"growing beyond")
