"""One trace schema for simulated and measured runs.

Why one schema: predicted-vs-measured must be a join, not a conversion project.  Both backends
emit :class:`TraceEvent` records (one per operation instance, with start and end in seconds
since the run's start) and write them as JSON Lines - flushed as they are written, so a run
that dies keeps what it measured - and as a Chrome/Perfetto trace (the format Horovod's
timeline and PyTorch's profiler use) for people to look at.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

__all__ = ["TraceEvent", "TraceWriter", "read_jsonl", "to_chrome", "write_chrome"]

SCHEMA_VERSION = 1


@dataclass(slots=True)
class TraceEvent:
    """One operation instance.

    ``kind``: compute / allreduce / broadcast / ... / send / recv / wait / idle / record.
    ``label``: finer name (phase, bucket, algorithm).  ``iteration``: the actor's iteration
    counter when known.  ``peer``: the other rank of a point-to-point operation.
    ``value``: payload of ``record`` events (e.g. staleness).
    """

    actor: int
    role: str
    kind: str
    start: float
    end: float
    label: str = ""
    nbytes: float = 0.0
    iteration: int | None = None
    peer: int | None = None
    value: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def duration(self) -> float:
        return self.end - self.start

    def to_dict(self) -> dict[str, Any]:
        # field by field: dataclasses.asdict deep-copies and costs ~40 us per event
        d: dict[str, Any] = {"actor": self.actor, "role": self.role, "kind": self.kind,
                             "start": self.start, "end": self.end, "nbytes": self.nbytes}
        if self.label:
            d["label"] = self.label
        for key in ("iteration", "peer", "value"):
            v = getattr(self, key)
            if v is not None:
                d[key] = v
        if self.meta:
            d["meta"] = dict(self.meta)
        return d


class TraceWriter:
    """Appends events to a JSON Lines file, flushing each line (crash-safe)."""

    def __init__(self, path: str | Path, header: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self._fh: IO[str] = self.path.open("w", encoding="utf-8")
        head = {"schema": SCHEMA_VERSION, **(header or {})}
        self._fh.write(json.dumps({"header": head}, sort_keys=True) + "\n")
        self._fh.flush()

    def write(self, event: TraceEvent) -> None:
        self._fh.write(json.dumps(event.to_dict(), sort_keys=True) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_jsonl(path: str | Path) -> tuple[dict[str, Any], list[TraceEvent]]:
    """(header, events) of a JSON Lines trace; a truncated last line is ignored."""
    header: dict[str, Any] = {}
    events: list[TraceEvent] = []
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                break  # a rank died mid-line: keep what is complete
            if "header" in obj:
                header.update(obj["header"])
            else:
                events.append(TraceEvent(**obj))
    return header, events


#: a lane's thread id is the actor's plus this times the lane number (lane 0: the actor's own)
LANE_STRIDE = 1_000_000
#: kinds that are the actor's own time line and go first at one instant, so that what runs
#: beside them (a bucket's all-reduce, a non-blocking send) is what moves to another lane
_OWN = ("compute", "wait", "recv")


def to_chrome(events: Iterable[TraceEvent], process_name: str = "clustersim") -> dict[str, Any]:
    """Chrome trace-event JSON: one thread per actor, complete ("X") events in microseconds.

    An event that overlaps another of its actor without nesting in it (a bucket's
    all-reduce that starts in one backward layer and ends in the next, two buckets' all-reduces
    at once, a master's reply in flight during its update) goes to a lane of its own, a thread
    named ``worker 3 · lane 1`` sorted beside the actor's: trace viewers draw the complete
    events of one thread as a stack and misdraw or drop ones that overlap without nesting -
    exactly the overlap an overlapped run's trace is there to show (QA 13 F4).  Runs whose
    events nest or follow one another keep one thread per actor."""
    out: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": process_name}},
    ]
    seen: set[int] = set()
    lanes: dict[int, list[list[float]]] = {}  # actor -> per lane, the ends of open events
    for ev in sorted(events, key=_order):
        if ev.actor not in seen:
            seen.add(ev.actor)
            out.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": ev.actor,
                        "args": {"name": f"{ev.role} {ev.actor}"}})
        args: dict[str, Any] = {}
        if ev.nbytes:
            args["bytes"] = ev.nbytes
        if ev.iteration is not None:
            args["iteration"] = ev.iteration
        if ev.peer is not None:
            args["peer"] = ev.peer
        if ev.kind == "record":
            out.append({"name": ev.label or "value", "ph": "C", "pid": 0, "tid": ev.actor,
                        "ts": ev.start * 1e6, "args": {ev.label or "value": ev.value}})
            continue
        lane = _lane(lanes.setdefault(ev.actor, []), ev.start, ev.end)
        tid = ev.actor + lane * LANE_STRIDE
        if lane and tid not in seen:
            seen.add(tid)
            out.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": tid,
                        "args": {"name": f"{ev.role} {ev.actor} · lane {lane}"}})
            out.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": tid,
                        "args": {"sort_index": ev.actor * 64 + lane}})
        out.append({
            "name": ev.label or ev.kind, "cat": ev.kind, "ph": "X", "pid": 0, "tid": tid,
            "ts": ev.start * 1e6, "dur": max(ev.end - ev.start, 0.0) * 1e6, "args": args,
        })
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def _order(e: TraceEvent) -> tuple:
    """Start, actor, the actor's own time line first, then the longer (a parent before the
    events it holds)."""
    return (e.start, e.actor, e.kind not in _OWN, -e.end)


def _lane(stacks: list[list[float]], start: float, end: float) -> int:
    """The first lane where ``[start, end]`` follows or nests in what is open there (events
    come in order of their starts); opens it there."""
    for k, open_ends in enumerate(stacks):
        while open_ends and open_ends[-1] <= start:
            open_ends.pop()
        if not open_ends or end <= open_ends[-1]:
            open_ends.append(end)
            return k
    stacks.append([end])
    return len(stacks) - 1


def write_chrome(path: str | Path, events: Iterable[TraceEvent], process_name: str = "clustersim"
                 ) -> None:
    Path(path).write_text(json.dumps(to_chrome(events, process_name)), encoding="utf-8")
