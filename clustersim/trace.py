"""One trace schema for simulated and measured runs.

Why one schema: predicted-vs-measured must be a join, not a conversion project.  Both backends
emit :class:`TraceEvent` records (one per operation instance, with start and end in seconds
since the run's start) and write them as JSON Lines - flushed as they are written, so a run
that dies keeps what it measured - and as a Chrome/Perfetto trace (the format Horovod's
timeline and PyTorch's profiler use) for people to look at.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
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


def to_chrome(events: Iterable[TraceEvent], process_name: str = "clustersim") -> dict[str, Any]:
    """Chrome trace-event JSON: one thread per actor, complete ("X") events in microseconds."""
    out: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": process_name}},
    ]
    seen: set[int] = set()
    for ev in _sorted(events):
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
        out.append({
            "name": ev.label or ev.kind, "cat": ev.kind, "ph": "X", "pid": 0, "tid": ev.actor,
            "ts": ev.start * 1e6, "dur": max(ev.end - ev.start, 0.0) * 1e6, "args": args,
        })
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def write_chrome(path: str | Path, events: Iterable[TraceEvent], process_name: str = "clustersim"
                 ) -> None:
    Path(path).write_text(json.dumps(to_chrome(events, process_name)), encoding="utf-8")


def _sorted(events: Iterable[TraceEvent]) -> Iterator[TraceEvent]:
    return iter(sorted(events, key=lambda e: (e.start, e.actor, e.end)))
