"""Find and stop every process of one real run, without psutil.

Why a marker instead of a process tree: MPICH's hydra puts its proxy and every rank in a new
session (``setsid``), so killing ``mpiexec``'s process group does not reach the ranks, and a
rank whose parent died is re-parented to init - the tree is gone exactly when we need it.
Every process we launch inherits the environment variable ``REALRUN_RUN_ID=<id>``;
``/proc/<pid>/environ`` keeps it for the life of the process, so a scan finds all of them
(mpiexec, proxies, the shell wrappers, the Python ranks) whatever happened to their parents.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MARKER", "MarkedProcess", "die_with_parent", "find_marked", "kill_marked",
           "signal_marked"]

MARKER = "REALRUN_RUN_ID"

_RANK_VARS = (b"PMI_RANK", b"OMPI_COMM_WORLD_RANK", b"PMIX_RANK", b"SLURM_PROCID")


@dataclass(frozen=True)
class MarkedProcess:
    """A live process of the run: its pid, command line and MPI rank when it has one."""

    pid: int
    cmdline: str
    rank: int | None


def _environ(pid: int) -> dict[bytes, bytes] | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # gone, or another user's process
        return None
    out: dict[bytes, bytes] = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key] = value
    return out


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    # the state letter follows the command name, which is in parentheses and may hold spaces
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


def find_marked(run_id: str) -> list[MarkedProcess]:
    """Live (non-zombie) processes whose environment carries ``REALRUN_RUN_ID=run_id``."""
    want = run_id.encode()
    me = os.getpid()
    found: list[MarkedProcess] = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        env = _environ(pid)
        if env is None or env.get(MARKER.encode()) != want or _is_zombie(pid):
            continue
        rank = None
        for var in _RANK_VARS:
            if var in env and env[var].isdigit():
                rank = int(env[var])
                break
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace").strip()
        except OSError:
            cmd = ""
        found.append(MarkedProcess(pid, cmd, rank))
    return found


def signal_marked(run_id: str, sig: int, *, ranks_only: bool = False) -> int:
    """Send ``sig`` to every marked process (only those with a rank if ``ranks_only``)."""
    n = 0
    for proc in find_marked(run_id):
        if ranks_only and proc.rank is None:
            continue
        try:
            os.kill(proc.pid, sig)
            n += 1
        except OSError:
            pass
    return n


def kill_marked(run_id: str, *, wait: float = 5.0) -> list[MarkedProcess]:
    """SIGKILL every marked process until none is left (or ``wait`` seconds pass).

    Returns the processes that had to be killed (empty when everything had already exited),
    so callers can report strays.
    """
    killed: dict[int, MarkedProcess] = {}
    deadline = time.monotonic() + wait
    while True:
        procs = find_marked(run_id)
        if not procs:
            return list(killed.values())
        for proc in procs:
            try:
                os.kill(proc.pid, signal.SIGKILL)
                killed.setdefault(proc.pid, proc)
            except OSError:
                pass
        if time.monotonic() > deadline:
            return list(killed.values())
        time.sleep(0.02)


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get ``sig`` when this process dies (Linux's
    ``PR_SET_PDEATHSIG``), or None where that does not exist.

    Why: the launcher stops ``mpiexec`` in a ``finally`` - which a SIGKILL of the launcher
    (the OOM killer, a batch system's ``kill -9`` after its grace period) never runs; mpiexec,
    in a session of its own, then kept its ranks running past ``--timeout``, a hung one
    spinning forever (QA 10 H8).  With the parent-death signal the kernel itself sends
    ``sig`` to mpiexec when the launcher goes; SIGTERM (not SIGKILL) so that hydra still ends
    its proxies and ranks, as it does when the launcher stops it.  The ranks keep their own
    ``REALRUN_RUN_ID`` marker for :func:`kill_marked` when the launcher is alive.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def _preexec() -> None:  # runs in the child between fork and exec: no allocation-heavy work
        prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the launcher died before prctl took effect
            os.kill(os.getpid(), int(sig))

    return _preexec
