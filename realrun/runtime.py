"""The rank side of a real run: communicator, clock, trace, state record, arrays.

Every program that ``realrun.launch`` starts builds one :class:`RankContext`.  It is the place
an operation interpreter (the algorithm ops of :mod:`clustersim.algorithms.ops`) will plug
into: each operation runs inside :meth:`RankContext.op`, which marks the rank's state (so a
hang can be blamed), times the operation and appends one :class:`~clustersim.trace.TraceEvent`
to the rank's JSON Lines trace - flushed at once, so a rank that dies keeps what it measured.

Clock: ``perf_counter`` seconds since a barrier at start-up, so the ranks of one run share a
time origin to within one barrier's skew (microseconds on one node) - good enough to line
traces up next to each other and next to simulated ones.
"""

from __future__ import annotations

import faulthandler
import json
import math
import mmap
import os
import signal
import socket
import sys
import time
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

from clustersim.trace import SCHEMA_VERSION, TraceEvent
from realrun.arrays import Backend, get_backend
from realrun.rankstate import LOG_DIR_VAR, StateFile, check_world, state_path

__all__ = ["RankContext", "TraceFile", "event_line", "trace_path", "trim_padding",
           "trim_traces", "write_json"]


def trace_path(out_dir: str | Path, rank: int) -> Path:
    return Path(out_dir) / f"trace.rank{rank}.jsonl"


def _trace_note(log_dir: str | Path, rank: int) -> Path:
    """``rank<r>.trace`` in the log directory: the path of the rank's trace, for the launcher."""
    return Path(log_dir) / f"rank{rank}.trace"


def trim_padding(path: str | Path) -> bool:
    """Cut a trace left open by a dead rank back to its last complete line; True if cut.

    Why: :class:`TraceFile` pads the file with NULs up to its mapping size while it is open;
    a rank killed before :meth:`TraceFile.close` leaves up to 1 MiB of NULs (and possibly half
    a line) that a line-by-line JSON reader chokes on.  A cleanly closed file (ending in a
    newline) is not touched.
    """
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        end = size
        while end > 0:  # the padding is at most one CHUNK, but do not assume it
            start = max(0, end - TraceFile.CHUNK)
            block = os.pread(fd, end - start, start).rstrip(b"\0")
            if block:
                end = start + len(block)
                break
            end = start
        if end == size and (size == 0 or os.pread(fd, 1, size - 1) == b"\n"):
            return False
        keep = 0
        pos = end
        while pos > 0:  # back to the last newline: a half-written line is not data
            start = max(0, pos - 65536)
            nl = os.pread(fd, pos - start, start).rfind(b"\n")
            if nl >= 0:
                keep = start + nl + 1
                break
            pos = start
        os.ftruncate(fd, keep)
        return True
    finally:
        os.close(fd)


def trim_traces(log_dir: str | Path, np: int) -> list[Path]:
    """Launcher side, after a run: :func:`trim_padding` every rank's trace; the ones cut."""
    cut = []
    for r in range(np):
        try:
            path = Path(_trace_note(log_dir, r).read_text().strip())
        except OSError:
            continue
        if path.is_file() and trim_padding(path):
            cut.append(path)
    return cut


_ENC = json.JSONEncoder(sort_keys=True)


def _num(v: Any) -> str:
    if type(v) is float and math.isfinite(v):
        return repr(v)
    if type(v) is int:
        return str(v)
    return _ENC.encode(v)


def event_line(ev: TraceEvent) -> str:
    """``json.dumps(ev.to_dict(), sort_keys=True)`` - the same text - without ``asdict``.

    Why: ``dataclasses.asdict`` deep-copies and the generic encoder sorts on every call;
    together ~60 us per event on this machine, which a real run pays per operation.  This
    writes the fields in sorted order by hand, applying ``to_dict``'s rule (drop ``None``,
    empty ``meta`` and empty strings); a test checks the text is identical.
    """
    esc = encode_basestring_ascii
    out = f'{{"actor": {_num(ev.actor)}, "end": {_num(ev.end)}'
    if ev.iteration is not None:
        out += f', "iteration": {_num(ev.iteration)}'
    if ev.kind != "":
        out += f', "kind": {esc(ev.kind)}'
    if ev.label != "":
        out += f', "label": {esc(ev.label)}'
    if ev.meta:
        out += f', "meta": {_ENC.encode(ev.meta)}'
    if ev.nbytes is not None:
        out += f', "nbytes": {_num(ev.nbytes)}'
    if ev.peer is not None:
        out += f', "peer": {_num(ev.peer)}'
    if ev.role != "":
        out += f', "role": {esc(ev.role)}'
    out += f', "start": {_num(ev.start)}'
    if ev.value is not None:
        out += f', "value": {_num(ev.value)}'
    return out + "}\n"


class TraceFile:
    """Rank-side JSON Lines trace in the schema of :class:`clustersim.trace.TraceWriter`.

    Same header line and event lines (readable by :func:`clustersim.trace.read_jsonl`; the
    final file is byte-identical to what ``TraceWriter`` writes), but appended through a
    shared memory map instead of a ``write`` + ``flush`` per event.  Why: a system call per
    operation is a chance for the scheduler to preempt the rank while its peers spin in MPI -
    on a busy machine that, not the microseconds of the call, is what perturbs the
    measurement.  Crash safety is the same as a flush: the bytes are in the page cache the
    moment they are copied, and survive the process being killed.  While the file is open it
    is padded with NUL bytes up to the mapped size; ``read_jsonl`` stops at that "line", and
    :meth:`close` truncates the padding away.
    """

    CHUNK = 1 << 20  # the mapping grows by this much (one ftruncate + mmap per ~5,000 events)

    def __init__(self, path: str | Path, header: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self._map: mmap.mmap | None = None
        self._size = 0
        self._pos = 0
        head = {"schema": SCHEMA_VERSION, **(header or {})}
        self._append((json.dumps({"header": head}, sort_keys=True) + "\n").encode())

    def _append(self, data: bytes) -> None:
        end = self._pos + len(data)
        if end > self._size:
            size = -(-end // self.CHUNK) * self.CHUNK
            os.ftruncate(self._fd, size)
            if self._map is not None:
                self._map.close()
            self._map = mmap.mmap(self._fd, size)
            self._size = size
        assert self._map is not None
        self._map[self._pos:end] = data
        self._pos = end

    def write(self, event: TraceEvent) -> None:
        self._append(event_line(event).encode())

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        if self._fd < 0:
            return
        if self._map is not None:
            self._map.close()
            self._map = None
        os.ftruncate(self._fd, self._pos)
        os.close(self._fd)
        self._fd = -1


class RankContext:
    """One rank's view of the run.

    ``comm`` defaults to ``MPI.COMM_WORLD``; ``role`` goes into every trace event (worker,
    server, bench).  The trace header records what is needed to interpret the numbers later
    (library, host, array backend, world size).  ``keep_events`` also keeps the events in
    :attr:`events` (for gathering results at the end of a benchmark run).
    """

    def __init__(self, out_dir: str | Path, *, role: str = "worker", comm: Any = None,
                 backend: Backend | str = "auto", header: dict[str, Any] | None = None,
                 keep_events: bool = False) -> None:
        from mpi4py import MPI  # lazy: importing mpi4py.MPI initialises MPI

        self.MPI = MPI
        self.comm = comm if comm is not None else MPI.COMM_WORLD
        self.rank: int = self.comm.Get_rank()
        self.size: int = self.comm.Get_size()
        if comm is None:
            check_world(self.size, MPI.Get_library_version())
        self.role = role
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        log_dir = Path(os.environ.get(LOG_DIR_VAR) or self.out_dir)
        log_dir.mkdir(parents=True, exist_ok=True)
        self.state = StateFile(state_path(log_dir, self.rank), self.rank)
        # On SIGUSR1 (sent by the launcher at a timeout) write every thread's stack to stderr,
        # i.e. the rank's .err log, then carry on until killed.
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
        self.backend = backend if isinstance(backend, Backend) else get_backend(backend)
        self._groups: dict[tuple[int, ...], Any] = {}
        self._hosts: tuple[int, ...] | None = None
        self.events: list[TraceEvent] = []
        self._keep = keep_events
        head = {
            "backend": "real",
            "rank": self.rank,
            "world": self.size,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "mpi": MPI.Get_library_version().strip().splitlines()[0],
            "mpi4py": _mpi4py_version(),
            "arrays": self.backend.name,
            "clock": "perf_counter seconds since a start-up barrier",
            **(header or {}),
        }
        self.comm.Barrier()
        self._t0 = time.perf_counter()
        head["wall0"] = time.time()
        tpath = trace_path(self.out_dir, self.rank)
        if os.environ.get(LOG_DIR_VAR):  # under realrun.launch: it trims the trace after
            _trace_note(log_dir, self.rank).write_text(f"{tpath.resolve()}\n")
        self.trace = TraceFile(tpath, header=head)
        self.state.set("run")

    # --- time and trace ---------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the run's common origin."""
        return time.perf_counter() - self._t0

    def emit(self, kind: str, label: str, start: float, end: float, *, nbytes: float = 0.0,
             iteration: int | None = None, peer: int | None = None, value: float | None = None,
             meta: dict[str, Any] | None = None) -> TraceEvent:
        """Write one event (times in seconds since the run's origin) to the trace."""
        ev = TraceEvent(self.rank, self.role, kind, start, end, label, nbytes, iteration, peer,
                        value, meta if meta is not None else {})
        self.trace.write(ev)
        if self._keep:
            self.events.append(ev)
        return ev

    def op(self, kind: str, label: str = "", *, state: str = "comm", nbytes: float = 0.0,
           iteration: int | None = None, peer: int | None = None,
           meta: dict[str, Any] | None = None) -> _TimedOp:
        """Context manager timing the enclosed block as one operation, traced at its end.

        ``state`` is what the rank is doing meanwhile (``comm`` when it waits for others,
        ``compute`` for local work) - the launcher uses it to blame hangs.  ``with ... as m``
        gives the event's ``meta`` dict, which the block may fill.  A block that raises is not
        traced (the rank's failure record says what happened).
        """
        return _TimedOp(self, kind, label, state, nbytes, iteration, peer, meta)

    def record(self, key: str, value: float, iteration: int | None = None) -> None:
        """A metric sample (``Record`` op): zero duration, ``value`` set."""
        t = self.now()
        self.emit("record", key, t, t, value=float(value), iteration=iteration)

    # --- communicators ----------------------------------------------------------------------
    def group_comm(self, group: tuple[int, ...] | None) -> Any:
        """Communicator of ``group`` (ranks of ``comm``); ``None`` = the whole world.

        Built with ``Create_group`` - collective over the members only, so ranks outside the
        group need not take part - and cached, since creating one is itself a collective.
        """
        if group is None or tuple(group) == tuple(range(self.size)):
            return self.comm
        key = tuple(group)
        if key not in self._groups:
            if self.rank not in key:
                raise ValueError(f"rank {self.rank} is not a member of group {key}")
            grp = self.comm.Get_group().Incl(list(key))
            self._groups[key] = self.comm.Create_group(grp)
            grp.Free()
        return self._groups[key]

    def host_ids(self, ranks_per_host: int | None = None) -> tuple[int, ...]:
        """Machine id of every rank (first-seen order of host names).

        ``ranks_per_host`` pretends hosts of that many consecutive ranks instead - how a
        hierarchical schedule is exercised on one machine.
        """
        if ranks_per_host:
            return tuple(r // ranks_per_host for r in range(self.size))
        if self._hosts is None:
            ids: dict[str, int] = {}
            names = self.comm.allgather(socket.gethostname())
            self._hosts = tuple(ids.setdefault(n, len(ids)) for n in names)
        return self._hosts

    # --- end --------------------------------------------------------------------------------
    def close(self) -> None:
        """Mark the rank done and close its trace (call before leaving the program)."""
        self.state.set("done")
        self.trace.close()
        self.state.close()
        for c in self._groups.values():
            c.Free()
        self._groups.clear()

    def __enter__(self) -> RankContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _TimedOp:
    """What :meth:`RankContext.op` returns: a slotted context manager (cheaper than a
    generator-based one - it wraps every real operation)."""

    __slots__ = ("ctx", "kind", "label", "state", "nbytes", "iteration", "peer", "meta", "t")

    def __init__(self, ctx: RankContext, kind: str, label: str, state: str, nbytes: float,
                 iteration: int | None, peer: int | None, meta: dict[str, Any] | None) -> None:
        self.ctx = ctx
        self.kind = kind
        self.label = label
        self.state = state
        self.nbytes = nbytes
        self.iteration = iteration
        self.peer = peer
        self.meta = dict(meta) if meta else {}
        self.t = 0.0

    def __enter__(self) -> dict[str, Any]:
        self.ctx.state.set(self.state, self.label or self.kind)
        self.t = time.perf_counter()
        return self.meta

    def __exit__(self, exc_type: object, *rest: object) -> None:
        end = time.perf_counter()
        if exc_type is not None:
            return
        ctx = self.ctx
        t0 = ctx._t0
        ctx.emit(self.kind, self.label, self.t - t0, end - t0, nbytes=self.nbytes,
                 iteration=self.iteration, peer=self.peer, meta=self.meta)
        ctx.state.set("run", count=True)


def _mpi4py_version() -> str:
    import mpi4py

    return str(mpi4py.__version__)


def write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as pretty JSON atomically (rename), for result files next to traces."""
    p = Path(path)
    tmp = p.with_suffix(p.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(p)


def inject_fault(fault: str, who: str) -> None:
    """Fail on purpose (``exit``, ``kill``, ``hang`` or an exception): how the failure
    handling of real runs is tested (``REALRUN_FAULT`` / ``selftest --fault``)."""
    print(f"{who}: injecting fault {fault!r}", file=sys.stderr, flush=True)
    if fault == "exit":
        os._exit(3)
    if fault == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if fault == "hang":
        while True:
            time.sleep(3600)
    raise RuntimeError(f"{who}: injected failure")
