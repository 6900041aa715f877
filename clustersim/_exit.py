"""Ending the ``clustersim`` process without freeing its objects one by one.

Why: a prediction at 100,000 GPUs leaves ~600 MiB of small Python objects behind (the
platform's tables, routes, caches).  At a normal exit the interpreter tears its modules down
and frees every one of them by reference counting - 0.6-0.8 s measured here, an eighth of the
whole command - only for the operating system to reclaim the same pages at once.  Compilers
skip this for the same reason (clang's ``-disable-free``).

What a normal exit does that matters is kept: standard streams flushed, ``atexit`` handlers
run (multiprocessing joins its children, ``logging`` flushes, ``weakref.finalize`` removes
temporary directories).  Where that cannot be done safely (a flush fails, e.g. the reader of
a pipe went away; another thread is still running and the interpreter would wait for it; MPI
was loaded and must be finalized by the interpreter's own exit), the process takes the normal
path instead.  Only the console script ends this way; ``main()``
called in-process returns as before.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

__all__ = ["exit_now", "exiting_fast", "fast_exit", "retain"]

#: objects that live until the process ends (see :func:`retain`)
_RETAINED: list[object] = []
_FAST = False


def fast_exit() -> None:
    """Called by the console script before it runs a command: the process will end by
    :func:`exit_now`, so :func:`retain` may keep objects."""
    global _FAST
    _FAST = True


def exiting_fast() -> bool:
    """Whether the process will end by :func:`exit_now` once the command returns: then a
    command that paused the cyclic garbage collector leaves it off.  Turned back on, its
    first collection would walk every object the run left (a full collection of a
    100,000-GPU platform's ~600 MiB: 0.6 s measured) just before the process ends."""
    return _FAST


def retain(obj: object) -> None:
    """Keep ``obj`` until the process ends, when the console script will end it by
    :func:`exit_now`: a command's large structures (a 100,000-GPU platform: 0.3-0.4 s to
    free) are then never freed one by one when the command returns.  In-process callers of
    ``main()`` are unaffected: nothing is kept for them."""
    if _FAST:
        _RETAINED.append(obj)


def _flushed() -> bool:
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or a closed stream: take the slow path
            return False
    return True


def exit_now(code: int) -> int:
    """End the process with ``code`` at once (see the module docstring); returns ``code``
    only where the normal exit must run instead."""
    global _FAST
    _FAST = False
    if threading.active_count() > 1 or not _flushed() or "mpi4py.MPI" in sys.modules:
        # mpi4py finalizes MPI when the interpreter ends (Py_AtExit), which os._exit skips;
        # a singleton that spawned workers (``sweep --mpi`` outside mpiexec) and exits
        # without MPI_Finalize gets its whole process group - the user's job script, the
        # shell - killed by the mpiexec it started
        return code
    atexit._run_exitfuncs()  # what Py_Finalize would call, in the same (reverse) order
    if not _flushed():
        return code
    os._exit(code)
