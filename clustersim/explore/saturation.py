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

Past the knee a worker's step includes queueing at the master (``W * s`` is the step), so
``step / D`` with the step as measured is about the row's own worker count there - the
``saturation_workers`` column, which is that ratio.  The knee itself is taken
from the step *without* queueing (:func:`master_knee`): the worker's compute, its exchange
under way (``comm``) and, of its wait for the master, the master's own time on its exchange
``D`` (the whole wait where shorter); the rest of the wait is the master serving the others -
except what even all their exchanges, ``(W - 1) D``, cannot fill (one worker alone queues
behind nobody: all its wait is its own).  That is the asymptote
crossing of the closed-system bounds, ``W* = (Z + D) / D`` with ``Z`` the time a worker
spends away from the master (Lazowska et al. ch. 5), and it is the same below and past the
knee (Async EASGD on scenarios/knl_4253.yaml: 108.6-109.0 from 68 to 4,253 workers, where
the step as measured gave 111 to 4,253), so the summary does not depend on which worker
counts were swept.  It is ~1% under the measured crossing (the reply's transfer in the wait
counts as queueing).  Far past the knee (10x on knl_4253) a parameter server's pushes also
queue on the master's link, inside ``comm``, and raise the figure: where the smallest point
is past the knee the line says so, and that the knee is below it.  One case still bends
late: a master whose *link* is the bottleneck, with identical workers sharing it max-min
fairly, stays in lock step (everyone's push, then everyone's answer: one direction of the
link at a time) and creeps up towards ``batch / s`` only as the workers drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["master_figures", "master_knee", "mean_figures", "saturation_summary",
           "saturation_text", "creep", "summary_creep", "shown"]

#: the smallest point counts as past the knee when it has this many times the knee's workers:
#: nearer, the throughput curve is still bending (2% compute noise rounds the knee) and the
#: figure from it is as good as one from below the knee
PAST = 1.1


def master_figures(run: Any, metrics: Any) -> dict[str, Any]:
    """``servers``, ``service_time`` (the busiest server's capacity per update it applied:
    the slowest of its thread, processor and link, above) and ``saturation_workers`` (``W*``
    above, with the worker's iteration time as the step); None where the method has no
    master or the master applied no update.  The two
    figures are the point's own (:func:`clustersim.sim.metrics.master_service_time`), so
    that ``predict`` and ``sweep`` print the same."""
    return {"servers": len(run.servers()), "service_time": metrics.service_time,
            "saturation_workers": metrics.saturation_workers}


def _num(point: Any, key: str) -> float | None:
    """``point[key]`` of a table row or the attribute of a PointMetrics, as a float (None
    where it is missing or empty): the summary reads rows, predict reads points."""
    v = point.get(key) if isinstance(point, Mapping) else getattr(point, key, None)
    if v is None or v == "":
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def master_knee(point: Any) -> tuple[float, float, float, int] | None:
    """``(W*, service time, step without queueing, workers)`` of one point of a master-based
    method, None for a method without a saturation point.

    ``D``, the master's busy time per worker step, is the point's ``iteration_time /
    saturation_workers`` (that is how :func:`clustersim.sim.metrics.point_metrics` made the
    column); the step without queueing is ``compute + comm`` and, of the wait, ``D`` (or
    more where the wait exceeds the other workers' ``(W - 1) D``: at one worker all of it;
    module docstring), and ``W*`` that step over ``D``.  A row without the time columns (a
    hand-made one) keeps the column's figure, which is right below the knee only: where
    it is within :data:`PAST` of the point's own count (the master busy 91% of the time or
    more: at or past the knee) ``W*`` is NaN, which :func:`saturation_text` words as a
    knee below the point."""
    measured, it = _num(point, "saturation_workers"), _num(point, "iteration_time")
    service, workers = _num(point, "service_time"), _num(point, "workers")
    if measured is None or it is None or service is None or workers is None:
        return None
    if not (math.isfinite(measured) and measured > 0 and it > 0):
        return None
    demand = it / measured
    parts = [_num(point, k) for k in ("compute", "comm", "wait")]
    if any(v is None for v in parts):
        w_star = measured if measured > PAST * workers else math.nan
        return w_star, service, it, int(workers)
    compute, comm, wait = parts
    # of the wait, the master's own time on this worker's exchange (D) is part of its step;
    # the rest is the master serving the others - except what exceeds all of the other
    # workers' exchanges, which cannot be queueing (one worker alone queues behind nobody)
    own = max(min(wait, demand), wait - (workers - 1) * demand)
    step = compute + comm + own
    return step / demand, service, step, int(workers)


def _groups(rows: Sequence[Mapping[str, Any]], inputs: Sequence[str]
            ) -> dict[str, list[Mapping[str, Any]]]:
    """The master-based rows by group (all input columns but ``workers``), labelled."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    keys = [k for k in inputs if k != "workers"]
    for r in rows:
        if r.get("saturation_workers") is None:
            continue
        groups.setdefault(tuple((k, r.get(k)) for k in keys), []).append(r)

    def label(group: tuple, show: Any) -> str:
        return ", ".join(f"{k}={show(v)}" for k, v in group if v not in ("", None))

    # floats at 4 significant digits, as the summary's other lines (a sampled axis's draws
    # read 1.6283025740689033e-05; audit C L1) - every digit where two groups would read alike
    short = {g: label(g, shown) for g in groups}
    alike = {t for t in short.values() if list(short.values()).count(t) > 1}
    return {(label(g, str) if short[g] in alike else short[g]): rs for g, rs in groups.items()}


def shown(value: Any) -> str:
    """An axis value as a summary's text prints it: a float at 4 significant digits
    (``network.overhead=1.149e-06``), anything else as it is.  Text only: the tables keep
    every digit."""
    if isinstance(value, float) and not isinstance(value, bool):
        return f"{value:.4g}"
    return str(value)


def creep(points: Sequence[Any], knee: tuple[float, float, float, int]) -> str | None:
    """Where the points go on well past the knee (2x) and the largest one's throughput is
    still under 90 % of the ceiling the master's time per step allows (``batch / D``), or
    over 110 % of it (the master's time per exchange fell as workers were added), the
    words for it: ``(workers, samples/s, share of the ceiling, ceiling)``; None otherwise.

    Why: the line said "throughput stops growing" at the knee for every master, and a
    master whose link is the bottleneck - pushes and answers taking turns on it, so that it
    is not kept busy - went on gaining: +51 % from 2 to 32 workers on a parameter server
    whose knee was printed at ~3, levelling off at 65 % of ``batch / s`` (QA 11 F2).  The
    simulated points say so where they reach that far; the knee stays where it is."""
    w_star, _, step, _ = knee
    if not (math.isfinite(w_star) and w_star > 0 and step > 0):
        return None
    top = max(points, key=lambda p: _num(p, "workers") or 0)
    workers, thr = _num(top, "workers"), _num(top, "throughput")
    batch = _num(top, "batch_per_worker")
    if workers is None or thr is None or batch is None or workers < 2 * w_star:
        return None
    ceiling = batch * w_star / step  # batch / D, D = step / W*
    if thr > 1.1 * ceiling:
        # the master's time per exchange is not the same at every count: the knee's figures
        # are the smallest point's, and the largest point beat the ceiling they give by 45%
        # on a parameter server whose farther workers share its machine (audit A M1)
        return (f"past it the simulated throughput still grows: {thr:,.0f} samples/s at "
                f"{workers:,.0f} workers, {thr / ceiling:.0%} of the {ceiling:,.0f} "
                f"samples/s the master's time per step at {knee[3]:,} "
                f"worker{'' if knee[3] == 1 else 's'} allows: the figures above are that "
                "point's, and the master's time per exchange is not the same at every worker "
                "count here)")
    if thr >= 0.9 * ceiling:
        return None
    busy = _num(top, "service_time")
    if busy is not None and busy > 1.1 * knee[1]:
        from clustersim.units import format_time

        # the master's time per exchange grew with the load: a prefetching master whose
        # pushes take longer than its update sits through the rest of each (a torus host's
        # 25 Gb/s link: 32.7 ms per push, 16.4 ms measured at 4 workers; audit D)
        return (f"past it the simulated throughput levels off lower: {thr:,.0f} samples/s at "
                f"{workers:,.0f} workers, {thr / ceiling:.0%} of the {ceiling:,.0f} "
                f"samples/s the knee's figures allow: there the master takes "
                f"{format_time(busy)} per exchange against {format_time(knee[1])} at "
                f"{knee[3]:,} worker{'' if knee[3] == 1 else 's'} (under load it waits out "
                "transfers its update does not cover; the figures above are that point's)")
    return (f"past it the simulated throughput still creeps up: {thr:,.0f} samples/s at "
            f"{workers:,.0f} workers, {thr / ceiling:.0%} of the {ceiling:,.0f} samples/s the "
            "master's time per step allows (it is not kept busy: a link-bound master's "
            "pushes and answers take turns on its link, docs/algorithms.md)")


def summary_creep(rows: Sequence[Mapping[str, Any]], inputs: Sequence[str]
                  ) -> dict[str, str]:
    """:func:`creep` per group label of :func:`saturation_summary` (groups without: absent)."""
    out = {}
    for label, rs in _groups(rows, inputs).items():
        knee = master_knee(min(rs, key=lambda r: r["workers"]))
        text = None if knee is None else creep(rs, knee)
        if text is not None:
            out[label] = text
    return out


def saturation_summary(rows: Sequence[Mapping[str, Any]], inputs: Sequence[str]
                       ) -> list[tuple[str, float, float, float, int]]:
    """One line per master-based group of the table (all input columns but ``workers``):
    (group label, W*, service time, step without queueing, the smallest worker count
    measured), from :func:`master_knee` at the group's smallest worker count - where the
    master queues least, so that its exchanges are the least likely to have queued on the
    master's link too; ``W*`` is about the same from any point below or just past the knee
    (``s`` too: within 0.5% on the KNL scenarios)."""
    out = []
    for label, rs in _groups(rows, inputs).items():
        knee = master_knee(min(rs, key=lambda r: r["workers"]))
        if knee is not None:
            out.append((label, *knee))
    return out


def saturation_text(w_star: float, service: float, step: float, workers: int,
                    creeps: str | None = None) -> str:
    """The line ``predict`` and ``sweep`` print for one master (:func:`master_knee`'s
    figures, and :func:`creep`'s words where the points show the throughput still
    growing past the knee): ``W*``, what the master spends per worker step (``step / W*``) and, where that
    differs from its service time per exchange (an exchange every ``tau`` steps, or through
    a group leader every ``k``), both.  Where the point it was measured at is past the knee
    (``workers`` over :data:`PAST` x ``W*``) it says so: that point's figure is a ceiling
    on the knee rather than the knee (its exchanges may have queued on the master's link),
    and a NaN ``W*`` (no time columns to take the queueing out) names no figure at all."""
    from clustersim.units import format_time

    past = (f"master already saturated at the smallest point ({workers} workers); the knee "
            "is below it")
    if not math.isfinite(w_star):
        return past
    per_step = step / w_star
    if abs(per_step - service) <= 0.01 * service:
        busy = f"service {format_time(service)} per exchange"
    else:
        busy = (f"busy {format_time(per_step)} per worker step (service "
                f"{format_time(service)} per exchange, not one exchange per step)")
    why = f"{busy} x workers > a step of {format_time(step)} without queueing"
    if workers > PAST * w_star:
        return f"{past}, at ~{w_star:,.0f} workers or fewer: {why}" + (
            f"; {creeps}" if creeps else "")
    tail = creeps or f"throughput stops growing beyond ~{w_star:,.0f} workers"
    return (f"master saturates at ~{w_star:,.0f} workers: {why} (measured at {workers} "
            f"worker{'' if workers == 1 else 's'}); {tail}")


def mean_figures(figs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The master's figures over the seeds: means, but a count the same in every seed
    (``servers``) stays that whole number (a mean made it 1.0, a float column)."""
    out: dict[str, Any] = {}
    for k in figs[0]:
        vals = [f[k] for f in figs if f[k] is not None]
        if len(vals) != len(figs):
            out[k] = None
        elif all(type(v) is int for v in vals) and len(set(vals)) == 1:
            out[k] = vals[0]
        else:
            out[k] = sum(vals) / len(vals)
    return out
