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
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, as_completed
from typing import Any

from clustersim.errors import InputError
from clustersim.explore.points import Point, Study, run_chunk

__all__ = ["EXECUTORS", "chunks", "iter_results"]

EXECUTORS = ("local", "dask", "mpi")
Result = list[tuple[int, dict[str, Any]]]

_STUDY: Study | None = None  # the study of this worker process (pool and MPI initializer)


def _init(study: Study) -> None:
    global _STUDY
    _STUDY = study


def _task(chunk: Sequence[Point]) -> Result:
    assert _STUDY is not None, "worker process started without its study"
    return run_chunk(_STUDY, chunk)


def _dask_task(chunk: Sequence[Point], study: Study) -> Result:
    return run_chunk(study, chunk)


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
    this process; ``jobs`` is ignored, the pool has the world's other ranks)."""
    if not points:
        return
    if executor == "local":
        if jobs <= 1 or len(points) < 2:
            for c in chunks(points, 1):
                yield run_chunk(study, c, freeze=False)
            return
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init,
                                 initargs=(study,)) as ex:
            yield from _futures(ex, chunks(points, jobs, chunk))
    elif executor == "mpi":
        try:
            from mpi4py import MPI
            from mpi4py.futures import MPIPoolExecutor
        except ImportError:
            raise InputError("--mpi needs mpi4py (pip install 'clustersim[mpi]')") from None
        workers = max(1, MPI.COMM_WORLD.Get_size() - 1)
        with MPIPoolExecutor(initializer=_init, initargs=(study,)) as ex:
            yield from _futures(ex, chunks(points, workers, chunk))
    elif executor == "dask":
        yield from _dask(study, points, address or "local", jobs, chunk)
    else:
        raise InputError(f"unknown executor {executor!r}; allowed: {', '.join(EXECUTORS)}")


def _dask(study: Study, points: Sequence[Point], address: str, jobs: int,
          chunk: int | None) -> Iterator[Result]:
    try:
        from dask.distributed import Client, LocalCluster
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise InputError("--dask needs dask.distributed (pip install "
                         "'clustersim[explore]')") from None
    cluster = None
    if address == "local":
        cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=40)
        client = Client(cluster)
    else:
        if not address.startswith(("tcp://", "tls://", "ucx://", "inproc://")):
            raise InputError(f"--dask takes 'local' or a scheduler address like "
                             f"tcp://host:8786, not {address!r}")
        try:
            client = Client(address, timeout="10s")
        except OSError as exc:
            raise InputError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        fut = client.scatter(study, broadcast=True)
        parts = chunks(points, workers, chunk)
        futs = client.map(_dask_task, parts, study=fut, pure=False)
        for _f, res in dask_completed(futs, with_results=True):
            yield res
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
