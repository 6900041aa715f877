"""Measured metrics from trace events, with the simulator's definitions.

Why here and not in realrun: the numbers a real run reports must mean exactly what the
simulator's mean (:mod:`clustersim.sim.metrics`), or predicted vs measured compares two
different things.  So this module rebuilds, from a run's :class:`~clustersim.trace.TraceEvent`
records, the per-actor counters the engine keeps (:class:`~clustersim.sim.engine.ActorStats`:
compute, comm, wait, comm_total, bytes, iteration starts, end, the warmup mark, records) and
hands them to the simulator's own :func:`~clustersim.sim.metrics.point_metrics`.  It reads
files only (no MPI), so traces recorded on another machine give the same numbers.

How each event is accounted (mirroring ``clustersim/sim/engine.py``):

* ``compute``: its duration is compute time (blocking or not).
* a blocking collective (``meta.nb`` false): the members' start times tell when the last
  member arrived (``last``: events matched by group id ``g`` and sequence ``seq``); time before
  ``last`` is *wait* (stragglers), the rest *comm*; ``comm_total`` gets the part after
  ``last``.  A non-blocking one adds only its busy part to ``comm_total`` (the exposed part
  shows up in its ``Wait``).  ``comm_total`` is the union of these spans and the sends'
  (:mod:`clustersim.sim.inflight`), not their sum: overlapping spans count once.  Bytes: the operation's ``nbytes``.
* ``send``: bytes sent; its duration is ``comm_total``, and ``comm`` when blocking.
* ``recv`` (blocking): *wait* - the actor waited for a peer; polled and non-blocking receives
  are accounted by the operation that waited (the ``Wait``).
* ``wait`` (``Wait`` on handles): the part before the last member of a waited collective
  arrived is *wait*, the rest *comm*.
* ``record``: ``iteration`` marks iteration starts (the warmup-th one is the mark),
  ``actor_end`` the actor's end; other keys (``staleness``, ``update``, ``loss``) become the
  actor's records.

Counters at the mark are sums over events that ended by the mark time (the engine adds to its
counters when an operation completes).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from clustersim.sim.engine import ActorStats, RunResult
from clustersim.sim.inflight import add_span
from clustersim.sim.metrics import PointMetrics, point_metrics
from clustersim.trace import TraceEvent

__all__ = ["COLLECTIVE_KINDS", "actor_stats", "run_from_events", "measured_metrics",
           "collective_arrivals"]

COLLECTIVE_KINDS = frozenset({"allreduce", "broadcast", "reduce", "allgather",
                              "reduce_scatter", "alltoall", "barrier", "gather", "scatter"})


def collective_arrivals(events: Iterable[TraceEvent]) -> dict[tuple[str, int], float]:
    """``(group id, sequence) -> last member's start``: when each collective could begin."""
    last: dict[tuple[str, int], float] = {}
    for ev in events:
        if ev.kind in COLLECTIVE_KINDS and "g" in ev.meta:
            key = (str(ev.meta["g"]), int(ev.meta["seq"]))
            last[key] = max(last.get(key, ev.start), ev.start)
    return last


class _Counters:
    __slots__ = ("compute", "comm", "wait", "comm_total", "bytes_sent", "spans")

    def __init__(self) -> None:
        self.compute = self.comm = self.wait = self.comm_total = self.bytes_sent = 0.0
        self.spans: list[list[float]] = []  # in flight, merged (sim/inflight.py)

    def as_mark(self, t: float) -> tuple[float, float, float, float, float, float]:
        return (self.compute, self.comm, self.wait, self.comm_total, self.bytes_sent, t)


def _account(ev: TraceEvent, c: _Counters, last: dict[tuple[str, int], float]) -> None:
    dur = max(ev.end - ev.start, 0.0)
    kind = ev.kind
    meta = ev.meta
    if kind == "compute":
        c.compute += dur
    elif kind in COLLECTIVE_KINDS:
        arrived = last.get((str(meta.get("g")), int(meta.get("seq", -1))), ev.start)
        busy = min(max(ev.end - max(arrived, ev.start), 0.0), dur)
        c.comm_total += add_span(c.spans, ev.end - busy, ev.end)
        c.bytes_sent += ev.nbytes
        if not meta.get("nb"):
            c.wait += dur - busy
            c.comm += busy
    elif kind == "send":
        c.bytes_sent += ev.nbytes
        c.comm_total += add_span(c.spans, ev.end - dur, ev.end)
        if not meta.get("nb"):
            c.comm += dur
    elif kind == "recv":
        if not meta.get("nb") and not meta.get("poll"):
            c.wait += dur
    elif kind == "wait":
        if "waited" in meta:  # the simulator's trace says how much of it was stragglers
            waited = min(max(float(meta["waited"]), 0.0), dur)
        else:  # a real run's: from the collectives' arrivals
            lasts = [last.get((str(g), int(s)), ev.start) for g, s in meta.get("colls", ())]
            waited = min(max(max(lasts, default=ev.start) - ev.start, 0.0), dur)
        c.wait += waited
        c.comm += dur - waited


def actor_stats(events: Sequence[TraceEvent], warmup: int) -> list[ActorStats]:
    """One :class:`ActorStats` per actor seen in ``events`` (rank order), as the engine would
    have filled it.  ``warmup``: iterations before the mark."""
    last = collective_arrivals(events)
    by_actor: dict[int, list[TraceEvent]] = defaultdict(list)
    for ev in events:
        by_actor[ev.actor].append(ev)
    out = []
    for actor in sorted(by_actor):
        evs = sorted(by_actor[actor], key=lambda e: (e.end, e.start))
        role = evs[0].role
        st = ActorStats(actor, role, device=-1)
        c = _Counters()
        mark_time = None
        end = None
        # counters when the mark was passed: everything that ended by then
        for ev in evs:
            if ev.kind == "record":
                if ev.label == "iteration":
                    st.iterations.append(ev.start)
                    if int(ev.value or 0) == warmup and mark_time is None:
                        mark_time = ev.start
                elif ev.label == "actor_end":
                    end = ev.start
                elif ev.label != "unreceived":
                    st.records[ev.label].append(float(ev.value or 0.0))
                continue
            if mark_time is None:
                _account(ev, c, last)
        if mark_time is not None:
            st.mark = c.as_mark(mark_time)
            for ev in evs:
                if ev.kind != "record" and ev.end > mark_time:
                    _account(ev, c, last)
        else:
            st.mark = (0.0,) * 6
        st.compute, st.comm, st.wait = c.compute, c.comm, c.wait
        st.comm_total, st.bytes_sent = c.comm_total, c.bytes_sent
        st.end = end if end is not None else max(e.end for e in evs)
        st.iterations.append(st.end)
        out.append(st)
    if warmup > 0:  # no warm-up: the whole run counts
        _mark_servers(out, by_actor, last)
    return out


def _mark_servers(stats: list[ActorStats], by_actor: dict[int, list[TraceEvent]],
                  last: dict[tuple[str, int], float]) -> None:
    """Each server's ``after_warmup`` (compute ended, updates recorded, the clock and the
    time waited by its first update after the last worker began its measured steps), and
    every actor's ``records_from`` (its samples recorded before that), as the engine notes
    them (``Engine.mark_warmup_done``)."""
    marks = [st.mark[5] for st in stats if st.role == "worker" and st.mark is not None]
    if not marks:
        return
    t = max(marks)
    for st in stats:
        before: dict[str, int] = defaultdict(int)
        for e in by_actor[st.rank]:
            if e.kind == "record" and e.label in st.records and e.start < t:
                before[e.label] += 1
        st.records_from = {k: before[k] for k in st.records}
    for st in stats:
        if st.role == "worker":
            continue
        evs = by_actor[st.rank]
        # at its first update at or after t, as the engine notes it: the compute of the
        # updates recorded so far, that one included
        marks = sorted(e.start for e in evs if e.kind == "record" and e.label == "update")
        at = next((i for i, m in enumerate(marks) if m >= t), None)
        if at is None:
            continue
        c = _Counters()  # what had ended by then, accounted as the whole run is
        for e in evs:
            if e.kind != "record" and e.end <= marks[at]:
                _account(e, c, last)
        served = [e for e in evs if e.kind == "record" and e.label == "serving"]
        idle = c.wait - math.fsum(float(e.value or 0.0) for e in served
                                  if e.start <= marks[at])
        st.after_warmup = (c.compute, at + 1, marks[at], idle)
        end = _Counters()  # and by its last update
        for e in evs:
            if e.kind != "record" and e.end <= marks[-1]:
                _account(e, end, last)
        st.last_update = (end.compute, len(marks), marks[-1], end.wait,
                          sum(1 for e in served if e.start <= marks[-1]))


def run_from_events(events: Sequence[TraceEvent], warmup: int) -> RunResult:
    """A :class:`RunResult` (the simulator's run record) rebuilt from measured events."""
    actors = actor_stats(events, warmup)
    makespan = max((a.end for a in actors), default=0.0)
    return RunResult(makespan, actors, list(events), flows=0, sim_events=0)


def measured_metrics(events: Sequence[TraceEvent], *, algorithm: str,
                     batch: Sequence[float] | float, warmup: int,
                     iterations: int | None = None) -> PointMetrics:
    """:class:`PointMetrics` of a measured run, by :func:`point_metrics` itself.

    ``batch``: per worker (or one number for all); ``iterations``: per worker, default the
    number of ``iteration`` records of the first worker.
    """
    run = run_from_events(events, warmup)
    workers = [a for a in run.actors if a.role == "worker"]
    if iterations is None:
        iterations = max((len(a.iterations) - 1 for a in workers), default=0)
    sizes: list[Any] = (list(batch) if isinstance(batch, Sequence)
                        else [float(batch)] * len(workers))
    return point_metrics(algorithm, len(workers), sizes, run, iterations - warmup)
