"""The Dask executor of :mod:`clustersim.explore.executors`: a ``LocalCluster`` or a user's
scheduler (``tcp://host:port``).

Why the address is probed before the ``Client`` is made: Dask bounds only the TCP connect
with its timeout; the handshake that follows waits for ever by design.  A port that is not
a scheduler's (its dashboard, a web server, a proxy) then hung the command, or answered
bytes that Dask read as a frame of exabytes (``MemoryError``).  The probe does the
connect, the handshake and one ``identity`` call under one deadline, in a thread of its own
that always ends by that deadline.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import logging
import re
import signal
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from clustersim._signals import deferred
from clustersim.errors import InputError, RunFailed
from clustersim.explore.executors import Result, chunks
from clustersim.explore.points import Point, Study, run_chunk

__all__ = ["DASK_FORMS", "DASK_TIMEOUT", "check_dask_address", "run_dask"]

DASK_FORMS = "'local' or a scheduler address tcp://host:port (e.g. tcp://10.0.0.5:8786)"
_TCP = re.compile(r"tcp://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d+)/?")
#: seconds to reach a scheduler, and for a reached scheduler to have a worker
DASK_TIMEOUT = 10.0


def check_dask_address(address: str) -> str:
    """``address`` if it is ``local`` or ``tcp://host:port``; else the input error naming
    the accepted forms (a TLS or UCX scheduler needs a security or transport configuration
    that the command does not take: refused here rather than as a traceback from Dask)."""
    m = _TCP.fullmatch(address)
    if address == "local" or (m and 0 < int(m.group(2)) < 65536):
        return address
    raise InputError(f"--dask {address!r}: not an address this command can use; give "
                     f"{DASK_FORMS}")


def _dask_task(chunk: Sequence[Point], study: Study) -> tuple[str, str, Result]:
    """The chunk's rows, with the code version and address of the worker that ran them: the
    driver refuses rows made by other code (they would be cached under its version)."""
    return _worker_version(), _worker_address(), run_chunk(study, chunk)


def _worker_version() -> str:
    from clustersim.explore.cache import code_version

    return code_version()


def _worker_address() -> str:
    try:
        from dask.distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return "?"


def _mismatch(bad: Sequence[str]) -> RunFailed:
    names = ", ".join(sorted(bad)[:8]) + (f" and {len(bad) - 8} more" if len(bad) > 8 else "")
    return RunFailed(f"--dask: worker(s) {names} run different clustersim code than this "
                     "command (its code version differs); their rows would be cached as "
                     "this version's - install the same clustersim on every worker")


def _lost(address: str) -> RunFailed:
    """A chunk's future cancelled by the scheduler: its workers (and with them the scattered
    study) are gone - ``as_completed`` hands the cancellation over as the chunk's result.
    (Dask's reason, e.g. "already forgotten", says nothing to the user: left out.)"""
    return RunFailed(f"--dask {address}: the Dask cluster failed: the scheduler cancelled "
                     "the chunks (workers lost); the rows finished before are in the cache")


def run_dask(study: Study, points: Sequence[Point], address: str, jobs: int,
             chunk: int | None) -> Iterator[Result]:
    """``iter_results`` on Dask (see there); :class:`RunFailed` when the cluster cannot be
    reached or fails."""
    check_dask_address(address)
    try:
        from dask.distributed import CancelledError, Client, KilledWorker, LocalCluster
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise InputError("--dask needs dask.distributed (pip install "
                         "'clustersim[explore]')") from None
    from distributed.utils import silence_logging_cmgr

    from clustersim.explore.cache import code_version

    _quiet_close_at_exit()

    cluster = client = futs = None
    done = False
    # Dask's log lines below ERROR off while the command runs (silence_logs=40 does it for
    # a LocalCluster's own loggers): a lost worker made the client log "Couldn't gather 1
    # keys, rescheduling" above the command's one ``failed:`` line
    quiet = contextlib.ExitStack()
    quiet.enter_context(silence_logging_cmgr(logging.ERROR))
    # asyncio's "Task exception was never retrieved" (a nanny whose start a SIGTERM cut
    # short) is logged when the task is freed - while the exception unwinds the cluster's
    # start, before the ``finally`` below could quiet it (ci79): quiet from the start,
    # restored with the rest when the run is done
    aio = logging.getLogger("asyncio")
    quiet.callback(aio.setLevel, aio.level)
    aio.setLevel(logging.CRITICAL)
    try:
        if address == "local":
            # dashboard on a free port: the default 8787 may be taken ("Port 8787 is
            # already in use" warnings); nobody looks at this cluster's dashboard.  Its
            # worker processes log nothing below CRITICAL: stopped by a signal, a worker
            # whose heartbeat met the closed scheduler printed an ERROR with a traceback
            # under the command's one line (a task's own error reaches the client anyway)
            # no more worker processes than tasks (each is a process started up front)
            tasks = len(chunks(points, max(1, jobs), chunk))
            # a SIGTERM is held until the start is done (deferred): cut short, a worker
            # process still reading its start-up data from this one had printed a
            # traceback (EOFError) under the command's one line (ci88); once started, the
            # cluster is bound to a name and closed below as after any signal
            with _sigint_ignored(), _children_stopped_on_failure(), deferred():
                cluster = LocalCluster(n_workers=max(1, min(jobs, tasks)), **LOCAL_CLUSTER)
            client = Client(cluster)
        else:
            client = _connect(Client, address)
        mine = code_version()
        if cluster is None:  # a LocalCluster runs this very install
            _check_versions(client, address, mine)
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        if cluster is None and study.file:
            # a user's workers run in folders of their own: a relative scenario path (and
            # the platform and constants files found beside it) had been looked up there,
            # simulating other files than the driver keyed (audit B H4)
            study = dataclasses.replace(study, file=str(Path(study.file).resolve()))
        fut = client.scatter(study, broadcast=True)
        futs = client.map(_dask_task, chunks(points, workers, chunk), study=fut, pure=False)
        for f, out in dask_completed(futs, with_results=True):
            if f.status != "finished":  # cancelled: ``out`` is the exception, not rows
                raise _lost(address)
            version, where, res = out
            if version != mine:
                raise _mismatch([where])
            yield res
        done = True
    except CancelledError:  # (raised by a future's own result())
        raise _lost(address) from None
    except (OSError, RuntimeError, KilledWorker) as exc:  # a lost scheduler or worker
        raise RunFailed(f"--dask {address}: the Dask cluster failed: "
                        f"{str(exc).strip() or type(exc).__name__}") from None
    finally:
        if futs is not None and not done and client is not None:
            with contextlib.suppress(Exception):  # stopping anyway: the close counts
                client.cancel(futs)
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        if done:
            quiet.close()
        else:
            # after a failure or a signal, Dask stays quiet below CRITICAL: the command is
            # ending, and a half-started cluster's exit hooks logged "reaping stray process"
            # and "Worker process ... was killed" under its one line; and asyncio's "Task
            # exception was never retrieved" for a nanny whose worker was killed while it
            # started (_children_stopped_on_failure)
            logging.getLogger("distributed").setLevel(logging.CRITICAL)
            logging.getLogger("asyncio").setLevel(logging.CRITICAL)


#: how ``--dask local`` starts its LocalCluster (besides the worker count; see run_dask)
LOCAL_CLUSTER: dict[str, Any] = {"threads_per_worker": 1, "processes": True,
                                 "dashboard_address": ":0", "silence_logs": logging.CRITICAL}


def _quiet_close_at_exit() -> None:
    """Dask's exit hook that closes the clusters left open, with its errors kept quiet.

    Why: a SIGTERM during the LocalCluster's start ends the command before the cluster is
    bound to a name the ``finally`` could close; Dask's own ``atexit`` hook then closed the
    half-started cluster and failed (``AssertionError: Status.init``), which Python printed
    as "Exception ignored in atexit callback" with a traceback under the command's one
    ``terminated by SIGTERM`` line.  The hook still runs (its worker processes are stopped
    as before), inside a ``suppress``."""
    from distributed.deploy import spec

    close = spec.close_clusters
    if getattr(close, "clustersim_quiet", False):
        return

    def quietly() -> None:
        with contextlib.suppress(Exception):
            close()

    quietly.clustersim_quiet = True  # type: ignore[attr-defined]
    atexit.unregister(close)
    atexit.register(quietly)
    spec.close_clusters = quietly


@contextlib.contextmanager
def _children_stopped_on_failure() -> Iterator[None]:
    """Any worker process the LocalCluster had spawned is killed at once when its start
    fails or is signalled, before this process starts to exit.

    Why: a worker spawned just before a SIGTERM was still unpickling its start-up data,
    which names the parent's semaphores; the exiting parent removed them, and the child
    printed a ``FileNotFoundError`` traceback under the command's one ``terminated by
    SIGTERM`` line.  Killed now (SIGKILL: the child runs no handler and prints nothing),
    no child outlives the semaphores it reads.  Only the cluster's own start is covered:
    once it has started, its nannies stop their workers on close as usual."""
    import multiprocessing

    before = set(multiprocessing.active_children())
    try:
        yield
    except BaseException:
        started = [c for c in multiprocessing.active_children() if c not in before]
        for child in started:
            with contextlib.suppress(Exception):
                child.kill()
        for child in started:
            with contextlib.suppress(Exception):
                child.join(5)
        raise


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while the LocalCluster starts its worker processes, which inherit it.

    Why: Ctrl-C reaches the whole process group; a LocalCluster worker hit by it dies with a
    KeyboardInterrupt and its nanny (in this process) prints tracebacks while the command
    is already closing the cluster.  Only the driver should act on Ctrl-C, as with the
    local pool (``executors._pool_init``).  The price: a Ctrl-C during the cluster's start
    (a second or two; 5 s and more on a loaded 2-core machine) is not seen; SIGTERM still
    is.  Holding it instead (SIGINT blocked and ignored: a blocked signal stays pending)
    does not work: the process-directed signal goes to a thread that does not block it -
    the BLAS library's, started when numpy was imported - and is dropped there."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old if old is not None else signal.SIG_DFL)


def _connect(client_cls: Any, address: str) -> Any:
    """A client of the scheduler at ``address`` with at least one worker, or a failed run
    (exit 1: the address is well formed; the cluster is not there or not ready)."""
    _probe(address)
    try:
        client = client_cls(address, timeout=f"{DASK_TIMEOUT:.0f}s")
    except (OSError, ValueError, TypeError) as exc:
        raise RunFailed(f"--dask: cannot reach the Dask scheduler at {address} "
                        f"({str(exc).strip() or type(exc).__name__})") from None
    try:
        client.wait_for_workers(1, timeout=DASK_TIMEOUT)
    except (OSError, TimeoutError):
        client.close()
        raise RunFailed(f"--dask: the Dask scheduler at {address} has no workers (waited "
                        f"{DASK_TIMEOUT:.0f} s; start some with `dask worker {address}`)"
                        ) from None
    return client


def _probe(address: str) -> None:
    """Return when a Dask scheduler answers at ``address``; else a failed run saying what is
    there.  The TCP connect gets ``DASK_TIMEOUT`` (Dask retries it until then); the whole
    exchange a little more, so that a connect failing at its timeout is told apart from a
    service that accepted the connection and then said nothing a Dask client can read."""
    import asyncio

    from distributed.comm import CommClosedError, connect

    _refused(address)

    async def ask() -> Any:
        comm = await connect(address, timeout=DASK_TIMEOUT)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    wait = DASK_TIMEOUT + max(1.0, DASK_TIMEOUT / 5)
    outcome: list[Any] = []

    def run() -> None:  # a loop of its own: the caller's thread may be running one
        try:
            outcome.append(asyncio.run(asyncio.wait_for(ask(), wait)))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as is
            outcome.append(exc)

    worker = threading.Thread(target=run, name="clustersim-dask-probe", daemon=True)
    worker.start()
    worker.join(wait + 5)  # wait_for ends it by ``wait``; the margin is for its clean-up
    answer = outcome[0] if outcome else TimeoutError()
    not_dask = f"--dask {address}: no Dask scheduler answered there"
    hint = "(is it the dashboard or another service?)"
    if isinstance(answer, TimeoutError):  # (before OSError: it is one)
        raise RunFailed(f"{not_dask} within {wait:.0f} s {hint}")
    if isinstance(answer, CommClosedError):  # (an OSError too) it hung up on the handshake
        raise RunFailed(f"{not_dask}: the service there closed the connection {hint}")
    if isinstance(answer, OSError):  # the TCP connect itself: nothing listening, no route
        raise RunFailed(f"--dask: cannot reach the Dask scheduler at {address} "
                        f"({str(answer).strip() or type(answer).__name__})")
    if isinstance(answer, KeyboardInterrupt):
        raise answer
    if isinstance(answer, BaseException):  # bytes that are not Dask's: MemoryError, ...
        raise RunFailed(f"{not_dask}: what answered is not the Dask protocol {hint}")
    kind = answer.get("type") if isinstance(answer, dict) else None
    if kind == "Worker":
        raise RunFailed(f"--dask {address}: that is a Dask worker; give its scheduler's "
                        "address (tcp://host:port as `dask scheduler` prints it)")
    if kind != "Scheduler":
        raise RunFailed(f"{not_dask}: what answered is a Dask service but not a scheduler "
                        f"({kind or 'no type'})")


def _refused(address: str) -> None:
    """A failed run at once when nothing listens at ``address`` (the connection refused).

    Why: Dask's connect retries a refused connection until its timeout, so a scheduler that
    is not running (a typo in the port, a job whose scheduler died) cost ``DASK_TIMEOUT``
    before the same message.  Anything else (no answer, a name that does not resolve) is
    left to the probe, which tells those cases apart."""
    import socket

    m = _TCP.fullmatch(address)
    if m is None:
        return
    try:
        socket.create_connection((m.group(1).strip("[]"), int(m.group(2))),
                                 timeout=DASK_TIMEOUT).close()
    except ConnectionRefusedError:
        raise RunFailed(f"--dask: cannot reach the Dask scheduler at {address} (connection "
                        "refused: nothing listens on that port; is the scheduler running?)"
                        ) from None
    except OSError:
        return


def _check_versions(client: Any, address: str, mine: str) -> None:
    """Every worker of the cluster runs the code this command runs (see :func:`_mismatch`);
    workers that join later are checked per chunk (:func:`_dask_task`)."""
    try:
        versions = client.run(_worker_version)
    except Exception as exc:  # noqa: BLE001 - a worker without clustersim: any error
        raise RunFailed(f"--dask {address}: the workers cannot run clustersim "
                        f"({type(exc).__name__}: {str(exc).strip()[:200]}); install the same "
                        "clustersim on every worker") from None
    bad = [w for w, v in versions.items() if v != mine]
    if bad:
        raise _mismatch(bad)
