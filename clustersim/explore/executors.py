"""Where the points run: this process, a local process pool, Dask distributed, or MPI.

None of them is home-made: the pool is :class:`concurrent.futures.ProcessPoolExecutor`,
Dask is ``dask.distributed`` (a ``LocalCluster`` or a user's scheduler), MPI is
``mpi4py.futures.MPIPoolExecutor`` (start the command under
``mpiexec -n N python -m mpi4py.futures -m clustersim sweep ... --mpi``).  All of them get
the :class:`~clustersim.explore.points.Study` once (the pool's and MPI's initializer;
``Client.scatter`` for Dask), run *chunks* of consecutive points (one task per chunk: the
per-task overhead of Dask, ~ms, is paid per chunk, and consecutive points share their parsed
scenario), and hand results back as they finish.  The caller orders the rows by point
index, so the table does not depend on the executor, the worker count or the finishing order.

Stopping (Ctrl-C, SIGTERM, an error): the pool's pending chunks are cancelled and its
processes terminated at once - a ``with ProcessPoolExecutor`` would wait for every queued
chunk, and the results computed meanwhile would be thrown away.  Pool workers ignore SIGINT:
a Ctrl-C reaches the whole process group, and only the driver should act on it (a worker
would turn it into a failed chunk and carry on).  What finished before the stop is already
in the caller's cache (results are yielded per chunk).
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import re
import signal
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from clustersim._pool import stop_pool
from clustersim.errors import InputError, RunFailed
from clustersim.explore.points import Point, Study, run_chunk

__all__ = ["EXECUTORS", "check_dask_address", "chunks", "iter_results"]

EXECUTORS = ("local", "dask", "mpi")
Result = list[tuple[int, dict[str, Any]]]

MPI_HINT = ("run under `mpiexec -n N python -m mpi4py.futures -m clustersim sweep ... --mpi`")

_STUDY: Study | None = None  # the study of this worker process (pool and MPI initializer)


def _init(study: Study) -> None:
    global _STUDY
    _STUDY = study


def _pool_init(study: Study) -> None:
    # Ctrl-C signals the whole process group: the driver stops the pool; a worker that
    # raised KeyboardInterrupt would only fail its chunk and take the next one
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _init(study)


def _task(chunk: Sequence[Point]) -> Result:
    assert _STUDY is not None, "worker process started without its study"
    return run_chunk(_STUDY, chunk)


def chunks(points: Sequence[Point], workers: int, size: int | None = None
           ) -> list[list[Point]]:
    """Consecutive runs of points: about 4 tasks per worker (load balance at the end), at
    most 64 points each (results stream back often enough for the progress bar and the
    cache)."""
    if size is None:
        size = max(1, min(64, math.ceil(len(points) / (4 * max(1, workers)))))
    return [list(points[i:i + size]) for i in range(0, len(points), size)]


def _futures(ex: Executor, parts: list[list[Point]]) -> Iterator[Result]:
    futs = [ex.submit(_task, c) for c in parts]
    for f in as_completed(futs):
        yield f.result()


def iter_results(study: Study, points: Sequence[Point], executor: str = "local",
                 jobs: int = 1, address: str | None = None, chunk: int | None = None
                 ) -> Iterator[Result]:
    """Run ``points`` and yield ``[(index, row), ...]`` per finished chunk.

    ``executor``: ``local`` (``jobs`` processes; 1 = this process), ``dask`` (``address``:
    ``"local"`` starts a LocalCluster of ``jobs`` single-threaded worker processes, or a
    scheduler's ``tcp://host:port``), ``mpi`` (the MPI pool of the ``mpiexec`` that started
    this process; ``jobs`` is ignored, the pool has the world's other ranks).  Close the
    generator (``contextlib.closing``) when the caller stops early: that stops the workers.
    Raises :class:`RunFailed` when the workers cannot be started or die."""
    if not points:
        return
    if executor == "local":
        if jobs <= 1 or len(points) < 2:
            for c in chunks(points, 1):
                yield run_chunk(study, c, freeze=False)
            return
        yield from _local(study, points, jobs, chunk)
    elif executor == "mpi":
        yield from _mpi(study, points, chunk)
    elif executor == "dask":
        yield from _dask(study, points, address or "local", jobs, chunk)
    else:
        raise InputError(f"unknown executor {executor!r}; allowed: {', '.join(EXECUTORS)}")


def _local(study: Study, points: Sequence[Point], jobs: int, chunk: int | None
           ) -> Iterator[Result]:
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    ex = ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_pool_init, initargs=(study,))
    done = False
    try:
        yield from _futures(ex, chunks(points, jobs, chunk))
        done = True
    except BrokenProcessPool:
        raise RunFailed("a sweep process died before its chunk was done (killed from "
                        "outside, or out of memory); the rows finished before are in the "
                        "cache") from None
    finally:
        if done:
            ex.shutdown(wait=True)
        else:
            stop_pool(ex)


def _mpi(study: Study, points: Sequence[Point], chunk: int | None) -> Iterator[Result]:
    try:
        from mpi4py import MPI
        from mpi4py.futures import MPIPoolExecutor
    except ImportError:
        raise InputError("--mpi needs mpi4py (pip install 'clustersim[mpi]')") from None
    size = MPI.COMM_WORLD.Get_size()
    _check_spawn(size)
    workers = max(1, size - 1)
    ex = MPIPoolExecutor(initializer=_init, initargs=(study,))
    done = False
    try:
        yield from _futures(ex, chunks(points, workers, chunk))
        done = True
    finally:
        # on a stop, queued chunks are dropped (a running one ends with its rank, which
        # mpiexec stops): shutdown(wait=True) would run every one of them first
        ex.shutdown(wait=done, cancel_futures=not done)


#: environment variables set by a process manager (MPICH hydra, PMI-1/2, PMIx, Open MPI)
_LAUNCHED = ("PMI_RANK", "PMI_FD", "PMI_PORT", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
             "HYDI_CONTROL_FD")


def _check_spawn(world: int) -> None:
    """Refuse a pool that cannot start: a singleton process (not started by ``mpiexec``)
    whose workers would be spawned, with no ``mpiexec`` on PATH.

    Why before the pool: MPICH's singleton spawns by running ``mpiexec`` from PATH; without
    it, the spawn's process-manager call blocks for ever inside MPI while holding Python's
    lock, so no timeout, Ctrl-C or SIGTERM handler can run any more (seen: ran > 10 min
    until SIGKILL)."""
    import os
    import shutil

    if world > 1 or any(k in os.environ for k in _LAUNCHED) or shutil.which("mpiexec"):
        return
    raise RunFailed("--mpi: mpi4py.futures could not start its workers (this process was "
                    "not started by mpiexec, and there is no mpiexec on PATH to spawn them "
                    "with); " + MPI_HINT)


# --- Dask ---------------------------------------------------------------------------------

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


def _dask(study: Study, points: Sequence[Point], address: str, jobs: int,
          chunk: int | None) -> Iterator[Result]:
    check_dask_address(address)
    try:
        from dask.distributed import Client, KilledWorker, LocalCluster
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise InputError("--dask needs dask.distributed (pip install "
                         "'clustersim[explore]')") from None
    from clustersim.explore.cache import code_version

    cluster = client = futs = None
    done = False
    try:
        if address == "local":
            # dashboard on a free port: the default 8787 may be taken ("Port 8787 is
            # already in use" warnings); nobody looks at this cluster's dashboard
            with _sigint_ignored():
                cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1,
                                       processes=True, dashboard_address=":0",
                                       silence_logs=40)
            client = Client(cluster)
        else:
            client = _connect(Client, address)
        mine = code_version()
        if cluster is None:  # a LocalCluster runs this very install
            _check_versions(client, address, mine)
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        fut = client.scatter(study, broadcast=True)
        futs = client.map(_dask_task, chunks(points, workers, chunk), study=fut, pure=False)
        for _f, (version, where, res) in dask_completed(futs, with_results=True):
            if version != mine:
                raise _mismatch([where])
            yield res
        done = True
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


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while the LocalCluster starts its worker processes, which inherit it.

    Why: Ctrl-C reaches the whole process group; a LocalCluster worker hit by it dies with a
    KeyboardInterrupt and its nanny (in this process) prints tracebacks while the command
    is already closing the cluster.  Only the driver should act on Ctrl-C, as with the
    local pool (:func:`_pool_init`).  The price: a Ctrl-C during the cluster's start (about
    a second) is not seen; SIGTERM still is."""
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
