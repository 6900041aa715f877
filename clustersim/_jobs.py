"""How many worker processes a command may start: ``-j N`` and ``CLUSTERSIM_JOBS``.

Why a bound: each pool worker (or ``--dask local`` worker) is a whole Python process with
the simulator imported, ~100 MB.  ``-j 16384`` on a 16,384-point sweep forked that many and
filled the machine's memory before a point had run.  More processes than cores only share
the cores, so the bound is the one ``--oversubscribe`` puts on MPI ranks: 8 per core.
"""

from __future__ import annotations

import argparse
import os

__all__ = ["PER_CORE", "usable_cores", "max_jobs", "parse_count", "parse_jobs", "check_jobs"]

#: worker processes allowed per core (as realrun.launch.OVERSUBSCRIBE_LIMIT for MPI ranks)
PER_CORE = 8


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity mask where the system has one,
    else the machine's cores.

    Why not ``os.cpu_count()``: a batch job (Slurm, ``taskset``, a container's cpuset) that
    is given 2 cores of a 64-core node would otherwise start 64 pool processes on those 2,
    and the bound on ``-j`` would allow 512 of them."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def max_jobs() -> int:
    """The most worker processes here: :data:`PER_CORE` x the usable cores."""
    return PER_CORE * usable_cores()


def check_jobs(n: int) -> str | None:
    """Why ``n`` processes are refused, or None when they are allowed."""
    if n < 1:
        return (f"must be a whole number >= 1 (1 = this process; the pool never uses more "
                f"processes than there are points), not {n}")
    if n > max_jobs():
        cores = usable_cores()
        return (f"at most {max_jobs():,} on this machine ({PER_CORE} per core, "
                f"{cores} usable core{'' if cores == 1 else 's'}): each is a whole Python process, and more "
                f"than there are cores only share them; not {n:,}")
    return None


def parse_count(text: str, hint: str = "") -> int:
    """A count on the command line (an argparse ``type``: ``--chunk``, ``--iterations``):
    a whole number >= 1.  ``hint``: what 1 means, said in the refusal."""
    t = text.strip()
    if t.isdigit() and len(t) > 18:  # past any count, and int() stops at 4,300 digits
        raise argparse.ArgumentTypeError(f"a number of {len(t):,} digits is past any count")
    if not t.isdigit() or int(t) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1{hint}, not {text!r}")
    return int(t)


def parse_jobs(text: str) -> int:
    """``-j N`` (an argparse ``type``): a whole number from 1 to :func:`max_jobs`."""
    n = parse_count(text, " (1 = this process; the pool never uses more processes than "
                          "there are points)")
    why = check_jobs(n)
    if why is not None:
        raise argparse.ArgumentTypeError(why)
    return n
