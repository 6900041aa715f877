"""What each rank is doing right now, readable from outside - and who to blame for a hang.

Why: when a run hangs, every rank looks the same from the outside (alive, maybe spinning), yet
the culprit is usually the *one* rank that is not inside a communication call - it is stuck in
its own code while the others wait for it in a collective.  Each rank keeps a tiny
fixed-size state record in the log directory, overwritten in place through a shared memory
map (no system call, no fsync: the page cache makes it visible to the launcher at once; about
a microsecond per update).  The launcher reads the records when the timeout strikes and names
the rank.

File layout: ``rank<r>.state`` holds one JSON object padded with spaces to ``RECORD_SIZE``
bytes: ``state`` (``init`` / ``run`` / ``compute`` / ``comm`` / ``done`` / ``failed``),
``op`` (what it is in), ``since`` (wall-clock seconds when it entered that state), ``n``
(operations completed so far) and ``pid`` (so the launcher can ask that process for its
stack).
"""

from __future__ import annotations

import json
import mmap
import os
import time
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from pathlib import Path

__all__ = ["LOG_DIR_VAR", "WORLD_VAR", "check_world", "RECORD_SIZE", "RankState", "StateFile", "blame_hang", "read_states",
           "state_path"]

RECORD_SIZE = 256
LOG_DIR_VAR = "REALRUN_LOG_DIR"  # set by the launcher: where logs and state records go
#: set by the launcher: how many ranks it started (a rank in a smaller world has the wrong MPI)
WORLD_VAR = "REALRUN_WORLD"
WAITING = "comm"


_DOING = {
    "run": "running its own code (outside any traced operation)",
    "compute": "computing",
    "init": "starting up",
    "failed": "failing",
}


def state_path(log_dir: str | Path, rank: int) -> Path:
    return Path(log_dir) / f"rank{rank}.state"


@dataclass(frozen=True)
class RankState:
    rank: int
    state: str
    op: str
    since: float
    n: int
    pid: int = 0


class StateFile:
    """Rank side: overwrite the record on every state change (cheap enough per operation).

    The file is memory-mapped (shared): an update is a memory copy, no system call, and the
    launcher sees it through the page cache at once.
    """

    def __init__(self, path: str | Path, rank: int) -> None:
        self.rank = rank
        self.n = 0
        self._pid = os.getpid()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.ftruncate(fd, RECORD_SIZE)
            self._map: mmap.mmap | None = mmap.mmap(fd, RECORD_SIZE)
        finally:
            os.close(fd)
        self.set("init", "")

    def set(self, state: str, op: str = "", *, count: bool = False) -> None:
        """Enter ``state``; ``count`` marks the end of one operation (progress counter)."""
        if count:
            self.n += 1
        op = op[:100]
        while True:  # formatted by hand: this runs twice per operation, json.dumps is slow
            rec = (f'{{"state": {encode_basestring_ascii(state)}, '
                   f'"op": {encode_basestring_ascii(op)}, "since": {time.time()!r}, '
                   f'"n": {self.n}, "pid": {self._pid}}}').encode()
            if len(rec) <= RECORD_SIZE or not op:
                break
            op = op[: len(op) // 2]  # escapes made it too long: keep the record valid JSON
        if self._map is not None:
            self._map[:] = rec.ljust(RECORD_SIZE)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None


def read_states(log_dir: str | Path, np: int) -> dict[int, RankState | None]:
    """Launcher side: every rank's last record (``None`` if it never wrote one)."""
    out: dict[int, RankState | None] = {}
    for r in range(np):
        try:
            obj = json.loads(state_path(log_dir, r).read_bytes().decode().strip() or "null")
        except (OSError, ValueError):
            obj = None
        out[r] = (RankState(r, obj["state"], obj.get("op", ""), float(obj["since"]),
                            int(obj.get("n", 0)), int(obj.get("pid", 0))) if obj else None)
    return out


def blame_hang(states: dict[int, RankState | None]) -> tuple[int | None, str]:
    """The rank most likely responsible for a hang, and why.

    Rules, in order: a rank that never wrote a state (stuck before or in ``MPI_Init``); a rank
    that is *not* waiting in communication (the others wait for it) - the one in that state
    longest; if every live rank waits in communication, a deadlock - the least advanced rank
    (fewest completed operations, then lowest rank).
    """
    missing = [r for r, s in states.items() if s is None]
    if missing:
        return missing[0], "never reported its state (stuck before or during MPI start-up)"
    live = [s for s in states.values() if s is not None and s.state != "done"]
    if not live:
        return None, "every rank had finished; the launcher itself did not end"
    busy = [s for s in live if s.state != WAITING]
    if busy:
        s = min(busy, key=lambda s: (s.since, s.rank))
        others = sum(1 for x in live if x.state == WAITING)
        what = _DOING.get(s.state, f"in state {s.state!r}") + (f" ({s.op})" if s.op else "")
        return s.rank, (f"was {what} for {time.time() - s.since:.1f} s while {others} other "
                        f"rank(s) waited for it in communication")
    s = min(live, key=lambda s: (s.n, s.rank))
    # a predicate, as the other reasons are: the caller writes "rank N <reason>" (audit E L2)
    return s.rank, (f"is the least advanced of ranks all waiting in communication "
                    f"(deadlock?): {s.n} operations done, waiting in {s.op or '?'}")


def check_world(size: int, library: str) -> None:
    """Fail at once when this rank's world is not the one the launcher started.

    Why: when mpi4py loads another MPI library than the ``mpiexec`` that started the ranks
    (a machine with a system Open MPI besides the pip MPICH, say), every rank comes up as
    rank 0 of a world of one; the ranks then wait for peers that do not exist until the
    run's time limit.  Seen on a GPU machine whose image carried Debian's Open MPI.
    """
    want = os.environ.get(WORLD_VAR)
    if want is None or not want.isdigit() or int(want) == size:
        return
    lib = library.strip().splitlines()[0] if library.strip() else "unknown"
    raise RuntimeError(
        f"this rank is in an MPI world of {size} but the launcher started {want} ranks: "
        f"mpi4py loaded another MPI library ({lib}) than the mpiexec that started it. "
        f"Point mpi4py at the library of that mpiexec with MPI4PY_LIBMPI=<its libmpi.so>, "
        f"or give --mpiexec the launcher of {lib} (docs/realrun.md, second H200 session)")
