"""How much of a recorded run its traces hold, and the events of its complete iterations.

Why: a run that was stopped, failed or timed out leaves readable traces of the iterations it
got through.  :func:`clustersim.trace_metrics.measured_metrics` divides each worker's counters
by the number of measured iterations it is told; told the scenario's count (say 3,000) for a
trace that holds 340, it reports an iteration ten times too short.  So the launcher side first
finds out what the traces really hold (:func:`coverage`): which actors wrote anything, which
reached their ``actor_end`` record, and how many iterations *every* worker completed.  A
partial run is then measured over exactly those iterations (:func:`cut_to`): each worker's
events are cut at the start of its first unfinished iteration, so the counters and the
divisor describe the same iterations.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from clustersim.trace import TraceEvent
from realrun.verdict import format_ranks

__all__ = ["Coverage", "coverage", "cut_to"]


@dataclass(frozen=True)
class Coverage:
    """What a run's traces hold, against what its scenario asked for."""

    asked: int  #: iterations the scenario asked for (run.iterations)
    warmup: int  #: warm-up iterations before the measured ones
    completed: int  #: iterations every worker completed (the fewest of any worker)
    missing: tuple[int, ...] = ()  #: ranks that traced nothing at all
    unfinished: tuple[int, ...] = ()  #: ranks without their ``actor_end`` record

    @property
    def complete(self) -> bool:
        return not self.missing and not self.unfinished and self.completed >= self.asked

    @property
    def measured(self) -> int:
        """Iterations after the warm-up that every worker completed."""
        return max(self.completed - self.warmup, 0)

    def describe(self) -> str:
        """One phrase saying what is missing (empty for a complete run)."""
        if self.complete:
            return ""
        parts = []
        if self.missing:
            parts.append(f"rank(s) {format_ranks(self.missing)} traced nothing")
        if self.unfinished:
            parts.append(f"rank(s) {format_ranks(self.unfinished)} did not finish (no actor_end "
                         f"record: the run was stopped, failed or timed out)")
        parts.append(f"every worker completed {self.completed} of {self.asked} iteration(s), "
                     f"{self.measured} of them after the {self.warmup} warm-up")
        return "; ".join(parts)


def coverage(events: Sequence[TraceEvent], *, np: int, workers: Sequence[int], asked: int,
             warmup: int) -> Coverage:
    """The :class:`Coverage` of a run of ``np`` ranks whose workers are ``workers``."""
    started: dict[int, int] = defaultdict(int)
    ended: set[int] = set()
    seen: set[int] = set()
    for ev in events:
        seen.add(ev.actor)
        if ev.kind == "record":
            if ev.label == "iteration":
                started[ev.actor] += 1
            elif ev.label == "actor_end":
                ended.add(ev.actor)
    # an iteration record marks a start: without actor_end the last one started never ended
    done = [started[w] if w in ended else max(started[w] - 1, 0) for w in workers]
    return Coverage(asked, warmup, min(done, default=0),
                    tuple(r for r in range(np) if r not in seen),
                    tuple(r for r in range(np) if r in seen and r not in ended))


def cut_to(events: Sequence[TraceEvent], workers: Sequence[int],
           iterations: int) -> list[TraceEvent]:
    """``events`` as if every worker had stopped after ``iterations`` iterations.

    Each worker's events are kept up to the start of its iteration ``iterations`` (those that
    ended by then: the engine counts an operation when it completes, as the warm-up mark
    does), and an ``actor_end`` record is put there; the other actors are cut at the latest of
    those times.  The result measures iterations ``0 .. iterations-1`` of every worker.
    """
    wset = set(workers)
    cuts: dict[int, float] = {}
    for ev in events:
        if (ev.actor in wset and ev.kind == "record" and ev.label == "iteration"
                and int(ev.value or 0) == iterations):
            cuts[ev.actor] = min(cuts.get(ev.actor, ev.start), ev.start)
    last = max((ev.end for ev in events), default=0.0)
    for w in wset:
        if w not in cuts:  # finished exactly there: its actor_end (or last event) is the cut
            ends = [ev.start for ev in events if ev.actor == w and ev.kind == "record"
                    and ev.label == "actor_end"]
            cuts[w] = min(ends) if ends else max((ev.end for ev in events if ev.actor == w),
                                                 default=last)
    other = max(cuts.values(), default=last)
    out: list[TraceEvent] = []
    roles: dict[int, str] = {}
    for ev in events:
        roles.setdefault(ev.actor, ev.role)
        cut = cuts.get(ev.actor, other)
        if ev.kind == "record" and ev.label in ("iteration", "actor_end"):
            if ev.label == "actor_end" or ev.start >= cut:
                continue
        elif ev.end > cut:
            continue
        out.append(ev)
    for actor, role in sorted(roles.items()):
        cut = cuts.get(actor, other)
        out.append(TraceEvent(actor, role, "record", cut, cut, label="actor_end",
                              iteration=iterations, value=float(iterations)))
    return out
