"""Running a sweep's points on a local process pool, heaviest first, with follow-up points.

Split from :mod:`clustersim.sim.sweep` when follow-ups came: the what-if page learns only
from a master-based case's simulated point whether its next worker count must be simulated
or may be extended (:mod:`clustersim.report.whatif_chains`).  It used to run such counts in
waves, one pool each, every wave waiting for the previous one's last point: on the page of
``scenarios/knl_4253.yaml`` the two waves' tails, a second pool start and the route checks
between them, made while both pool processes sat idle, were ~0.5 s of its ~4.5 s.  Now a
point's follow-ups (``follow``) go into the same pool the moment the point is done, behind
the points already queued, and the checks run while the pool works.  Which points are run
does not depend on the order they finish in, only on their results, so the page is the same
bytes.

The pool forks, so the cases are inherited (``_POOL_CASES``), never pickled; where fork is
unavailable, or for a handful of points, they run in this process.
"""

from __future__ import annotations

import gc
import heapq
import multiprocessing
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from clustersim import _signals
from clustersim._pool import stop_pool
from clustersim.errors import RunFailed

__all__ = ["run_tasks"]

Task = tuple[int, int, int, int]  # (case index, workers, repeat, seed)
Key = tuple[int, int, int]  # (case index, workers, repeat)

#: the cases of the sweep being run, inherited by forked pool workers (never pickled)
_POOL_CASES: list[Any] = []


def _simulate(case: Any, w: int, seed: int) -> Any:
    """One point's metrics, through the sweep module's ``simulate_point`` looked up now
    (imported here, not at the top: the sweep module imports this one)."""
    from clustersim.sim import sweep

    return sweep.simulate_point(case[1], case[2], w, seed, False)[0]


def _pool_task(task: Task) -> tuple[int, int, int, Any]:
    """One point in a pool process.

    The cyclic collector is off during the point (``simulate_point``) and what survives it is
    then frozen (``gc.freeze``): a point leaves tens of thousands of objects in per-process
    caches (message plans, routes, jitter streams, shared operations), and the first
    collection after a point would otherwise walk all of them - ~10 ms per point, a tenth of
    a second per pool process on the KNL sweep.  A run's own objects are freed by reference
    counting (see Engine.run), so freezing keeps no garbage worth mentioning; the process
    ends with the pool."""
    ci, w, r, seed = task
    m = _simulate(_POOL_CASES[ci], w, seed)
    gc.freeze()
    return ci, w, r, m


def _heaviest_first(t: Task) -> Any:
    return -t[1]


def run_tasks(cases: Sequence[Any], todo: Sequence[Task], results: dict[Key, Any],
              jobs: int | None, advance: Callable[..., Any],
              store: Callable[[Key, Any], Any] | None = None,
              follow: Callable[[Key], Sequence[Task]] | None = None,
              order: Callable[[Task], Any] = _heaviest_first) -> None:
    """Simulate ``todo`` (indices into ``cases``) into ``results``, on the pool or here.

    ``store(key, metrics)`` is given each point as soon as it is done, so that a cache
    keeps what an interrupted run had finished; ``follow(key)``, called once the point is
    in ``results`` (and stored), returns more points to run; ``order`` is the key the points
    not yet started are taken by, follow-ups among them (default: most workers first, so
    the pool's last straggler is a small point)."""
    from clustersim.sim.sweep import default_jobs

    jobs = default_jobs() if jobs is None else max(1, jobs)
    todo = sorted(todo, key=order)

    def done(ci: int, w: int, r: int, m: Any) -> Sequence[Task]:
        results[(ci, w, r)] = m
        if store is not None:
            store((ci, w, r), m)
        advance(1)
        return () if follow is None else follow((ci, w, r))

    use_pool = (jobs > 1 and len(todo) >= 4
                and "fork" in multiprocessing.get_all_start_methods())
    if not use_pool:
        queue = deque(todo)
        while queue:
            ci, w, r, seed = queue.popleft()
            queue.extend(done(ci, w, r, _simulate(cases[ci], w, seed)))
        return
    global _POOL_CASES
    _POOL_CASES = list(cases)
    # concurrent.futures, not multiprocessing.Pool: a worker killed from outside (the
    # out-of-memory killer, a stray kill) breaks the executor (BrokenProcessPool) where a
    # Pool would wait for its result forever
    procs = min(jobs, len(todo))
    ex = ProcessPoolExecutor(procs, mp_context=multiprocessing.get_context("fork"))
    # the points wait here, not in the executor's first-in-first-out queue, so that a
    # follow-up point takes its place by ``order`` among those not yet started; two per
    # process are in the executor, so no process waits for this one to hand it the next
    waiting = [(order(t), k, t) for k, t in enumerate(todo)]
    heapq.heapify(waiting)
    count = len(waiting)
    running: set[Any] = set()
    try:
        while waiting or running:
            while waiting and len(running) < 2 * procs:
                running.add(ex.submit(_pool_task, heapq.heappop(waiting)[2]))
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            _signals.check()  # a SIGTERM caught inside a fork hook (_signals) stops here
            for fut in finished:
                for t in done(*fut.result()):
                    heapq.heappush(waiting, (order(t), count, t))
                    count += 1
    except BrokenProcessPool:
        raise RunFailed("a simulation process died before its point was done (killed "
                        "from outside, or out of memory); nothing was written") from None
    finally:
        _POOL_CASES = []
        stop_pool(ex)
