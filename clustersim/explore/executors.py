"""Where the points run: this process, a local process pool, Dask distributed, or MPI.

None of them is home-made: the pool is :class:`concurrent.futures.ProcessPoolExecutor`,
Dask is ``dask.distributed`` (a ``LocalCluster`` or a user's scheduler; in
:mod:`clustersim.explore.dask_exec`), MPI is
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

import math
import multiprocessing
import signal
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from clustersim._pool import stop_pool
from clustersim.errors import InputError, RunFailed
from clustersim.explore.points import Point, Study, run_chunk

__all__ = ["EXECUTORS", "check_mpi_launch", "chunks", "iter_results"]

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
        from clustersim.explore.dask_exec import run_dask

        yield from run_dask(study, points, address or "local", jobs, chunk)
    else:
        raise InputError(f"unknown executor {executor!r}; allowed: {', '.join(EXECUTORS)}")


def _local(study: Study, points: Sequence[Point], jobs: int, chunk: int | None
           ) -> Iterator[Result]:
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    parts = chunks(points, jobs, chunk)
    # never more processes than tasks: a fork pool starts all of them up front (a 2-point
    # sweep at -j 16 forked 16 processes for 2 tasks)
    ex = ProcessPoolExecutor(max(1, min(jobs, len(parts))), mp_context=ctx,
                             initializer=_pool_init, initargs=(study,))
    done = False
    try:
        yield from _futures(ex, parts)
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


def check_mpi_launch() -> None:
    """Refuse ``--mpi`` in a world of several ranks that ``mpi4py.futures`` did not set up.

    Why: ``mpiexec -n N python -m clustersim sweep --mpi`` (without ``-m mpi4py.futures``)
    starts N copies of the whole command - each spawned a pool of its own, all N wrote the
    same ``--out`` at once, exit 0.  Under ``-m mpi4py.futures`` only rank 0 runs the
    command, inside the shared pool it set up (``mpi4py.futures._core.SharedPool``); a
    singleton (one rank) spawns its workers.  Every rank exits 2 before anything is read or
    written, rank 0 with the message and the others silently.  MPI is finalized here, so
    that the refusal does not depend on how the process ends (an exit that skips
    ``MPI_Finalize`` makes MPICH's process manager treat the job as failed)."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise InputError("--mpi needs mpi4py (pip install 'clustersim[mpi]')") from None
    world = MPI.COMM_WORLD.Get_size()
    if world == 1:
        return
    from mpi4py.futures import _core

    if getattr(_core, "SharedPool", None) is not None:
        return
    rank = MPI.COMM_WORLD.Get_rank()
    if not MPI.Is_finalized():
        MPI.Finalize()
    if rank:  # rank 0 says it for the job: N copies of one message bury it in a batch log
        raise SystemExit(2)
    raise InputError(f"--mpi: mpiexec started {world} copies of this command without "
                     "mpi4py.futures, so every rank would run the whole sweep; " + MPI_HINT)


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
