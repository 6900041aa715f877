"""SIGTERM and SIGHUP end the command the way Ctrl-C does: as an exception, so cleanup runs.

Why: Python's default action for SIGTERM and SIGHUP is to die on the spot - no ``finally``, no
``with`` exit.  A real run then leaves ``mpiexec`` and its ranks behind (they live in their own
sessions, re-parented to init, spinning), a process pool its workers, an output its temporary
file.  SIGINT already raises :class:`KeyboardInterrupt` and everything unwinds; raising
:class:`Terminated` - a ``KeyboardInterrupt`` - for the other two reuses every cleanup path that
Ctrl-C already exercises (``multiprocessing.Pool`` terminates its workers on it, the launcher
stops its processes).  The command then exits ``128 + signal`` (143, 129), as a shell reports a
process killed by that signal.

:func:`deferred` shields a cleanup from a second signal (an impatient ``kill`` or Ctrl-C while
the run's processes are being stopped would otherwise abandon them half-way).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Terminated", "CATCH", "as_interrupt", "deferred", "drop_stdout"]

#: the signals turned into :class:`Terminated` (SIGINT keeps raising KeyboardInterrupt)
CATCH = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by ``signum`` (SIGTERM, SIGHUP).

    ``signum`` may also be the signal's name, the exception's ``args``: SimPy and the
    engine's loop re-raise a process's exception as ``type(exc)(*exc.args)``, and a
    SIGTERM that landed inside a simulated process had ended the command in a traceback
    ("'SIGTERM' is not a valid Signals") instead of "terminated by SIGTERM"."""

    def __init__(self, signum: int | str) -> None:
        sig = signal.Signals[signum] if isinstance(signum, str) else signal.Signals(signum)
        super().__init__(sig.name)
        self.signum = int(sig)


#: SIGTERM/SIGHUP raised as :class:`Terminated` and not yet handled by ``main``
_RAISED: list[int] = []


def _raise(signum: int, _frame: Any) -> None:
    _RAISED.append(signum)
    raise Terminated(signum)


def check() -> None:
    """Raise again a :class:`Terminated` that was swallowed.

    Why: the handler raises wherever the main thread is, and Python drops an exception
    raised inside a weakref callback or ``__del__`` ("Exception ignored in ...").  A SIGTERM
    that landed there during ``--dask local``'s start was lost, and the sweep ran to the end
    with exit 0.  Long loops call this between their steps; ``main`` calls it when the
    command returns."""
    if _RAISED:
        raise Terminated(_RAISED[-1])


def handled() -> None:
    """``main`` has reported the signal: nothing is pending any more."""
    _RAISED.clear()


def _hold_before_fork() -> None:
    """SIGTERM/SIGHUP blocked in the forking thread while it forks (see
    :func:`_default_in_child`); the child inherits the mask, the parent undoes it at once.

    The mask is recorded *before* the block: CPython runs pending handlers inside
    ``pthread_sigmask`` after applying it, and a ``Terminated`` raised there (it is only
    printed, inside an at-fork hook) had left both processes blocked for good - a child
    that ``Pool.terminate()`` cannot stop, a parent ``kill`` cannot reach (review 19).  A
    signal caught here stays in :data:`_RAISED`; :func:`check` raises it in the loop."""
    if not any(signal.getsignal(sig) is _raise for sig in CATCH):
        return
    with contextlib.suppress(Terminated):
        _HELD.mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
        signal.pthread_sigmask(signal.SIG_BLOCK, CATCH)


def _restore_mask() -> None:
    """The forking thread's mask back (the parent's side of a fork).  A signal that
    arrived during the fork is handled here, inside the hook, where an exception would
    only be printed: it is kept in :data:`_RAISED` for :func:`check` instead."""
    mask = getattr(_HELD, "mask", None)
    if mask is None:
        return
    _HELD.mask = None
    with contextlib.suppress(Terminated):
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _default_in_child() -> None:
    """A forked child (a process-pool worker) gets the default SIGTERM/SIGHUP back at once.

    Why: a Python-level handler runs only between bytecodes.  A signal that lands after the
    interpreter's last check and before a blocking call (a pool worker entering ``sem_wait`` on
    its task queue) is recorded and never acted on, so ``Pool.terminate()`` waited forever for
    that worker (seen here: 2 in 12 runs of ``predict --uncertainty 16 -j 2``).  The default
    disposition is acted on by the kernel, with no such window (and a worker dies of the
    signal quietly, as it would by default, rather than with a traceback).

    The fork itself was a window too: a SIGTERM that reached a worker between ``fork()`` and
    this reset was either dropped by the interpreter (it clears the signals it had recorded
    when a child starts) or run by the inherited handler inside the at-fork hooks, where its
    exception is only printed - either way the worker lived on, idle, and ``Pool.terminate()``
    waited for it (1 in 6 runs of a 40-pool loop, tests/test_processes_hardening.py).  So the
    forking thread blocks both signals across the fork (:func:`_hold_before_fork`): one sent
    to the child meanwhile stays pending in the kernel and kills it the moment this function
    unblocks them, with the default action in place; one the inherited handler still caught
    here (``signal.signal`` runs pending handlers first) is sent again once it is default."""
    caught: list[int] = []
    for sig in CATCH:
        while signal.getsignal(sig) is _raise:
            try:
                signal.signal(sig, signal.SIG_DFL)
            except Terminated as exc:  # the handler ran first: not yet reset, try again
                caught.append(exc.signum)
    _RAISED.clear()  # the parent's, not this process's
    _restore_mask()  # no Python handler left to raise: a pending signal kills now
    for signum in caught:
        os.kill(os.getpid(), signum)


#: per thread: its signal mask before :func:`_hold_before_fork` blocked SIGTERM/SIGHUP
#: (a pool forks from its maintenance thread too)
_HELD = threading.local()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_hold_before_fork, after_in_parent=_restore_mask,
                        after_in_child=_default_in_child)


def _main_thread() -> bool:
    # signal handlers can only be set from the main thread of the main interpreter
    return threading.current_thread() is threading.main_thread()


@contextmanager
def as_interrupt() -> Iterator[None]:
    """SIGTERM/SIGHUP raise :class:`Terminated` in the block; the previous handlers after.

    A signal the parent told us to ignore (``nohup`` ignores SIGHUP) stays ignored.
    """
    if not _main_thread():
        yield
        return
    old = {sig: signal.getsignal(sig) for sig in CATCH}
    try:
        for sig, prev in old.items():
            if prev is not signal.SIG_IGN:
                signal.signal(sig, _raise)
        yield
    finally:
        for sig, prev in old.items():
            signal.signal(sig, prev if prev is not None else signal.SIG_DFL)


@contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP off until the block is done, then act on the first one.

    If the block is left by an exception (typically the :class:`Terminated` that started the
    cleanup) a signal that arrived meanwhile is dropped: the command is ending anyway.
    """
    if not _main_thread():
        yield
        return
    sigs = (signal.SIGINT, *CATCH)
    got: list[int] = []
    old = {sig: signal.getsignal(sig) for sig in sigs}

    def _hold(signum: int, _frame: Any) -> None:
        got.append(signum)

    for sig, prev in old.items():
        if prev is not signal.SIG_IGN:
            signal.signal(sig, _hold)
    ok = False
    try:
        yield
        ok = True
    finally:
        for sig, prev in old.items():
            signal.signal(sig, prev if prev is not None else signal.SIG_DFL)
        if ok and got:
            if got[0] == signal.SIGINT:
                raise KeyboardInterrupt
            raise Terminated(got[0])


def drop_stdout() -> None:
    """Point stdout at /dev/null after its reader went away (SIGPIPE's stand-in in Python,
    which ignores SIGPIPE and raises BrokenPipeError): the interpreter's final flush would
    fail again and print "Exception ignored ... BrokenPipeError" on the way out."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):  # stdout replaced (tests) or closed
        pass


#: errors of a stream that cannot take more output: a full disk or quota, an I/O error
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG)


def output_failed(exc: OSError) -> int:
    """The exit of a command whose output could not be written (``main``'s handler).

    A reader that went away (``clustersim predict ... | head``): stop quietly, exit 141, as
    Unix tools do when SIGPIPE kills them.  Standard output on a full disk (``> /dev/full``,
    a quota): one ``failed:`` line, exit 1 - it was a traceback, after the files had been
    written.  Either way stdout goes to /dev/null first, so that the interpreter's final
    flush does not fail again ("Exception ignored ...").  Any other OSError is a bug to
    show: it is raised again."""
    if isinstance(exc, BrokenPipeError):
        drop_stdout()
        return 128 + 13  # 141, SIGPIPE
    if exc.errno not in _FULL:
        raise exc
    drop_stdout()
    with contextlib.suppress(OSError):  # a named file (exit 2 in main) is the user's: error
        print(f"{'error' if exc.filename else 'failed'}: cannot write "
              f"{exc.filename or 'the standard output'}: {exc.strerror or exc}",
              file=sys.stderr)
    return 1
