"""Stopping a process pool now, for the sweeps' two pools (``sim.pool_run.run_tasks``, the
explore executors' local pool).

Why not ``with ProcessPoolExecutor``: its exit waits for every queued task, so an error, a
Ctrl-C or a SIGTERM would first run the rest of a sweep (minutes to hours) and then throw
those results away.
"""

from __future__ import annotations

from typing import Any

__all__ = ["stop_pool"]


def stop_pool(ex: Any) -> None:
    """Stop a :class:`concurrent.futures.ProcessPoolExecutor` at once: its processes
    terminated, pending tasks cancelled."""
    # the manager thread, taken before shutdown() drops the executor's reference to it
    manager = getattr(ex, "_executor_manager_thread", None)
    for proc in list((getattr(ex, "_processes", None) or {}).values()):
        proc.terminate()  # as Pool.__exit__ did: on an error or a signal, stop now
    ex.shutdown(wait=False, cancel_futures=True)
    # Let that thread finish closing its wake-up pipe before this process can exit:
    # CPython 3.11's exit hook (concurrent.futures.process._python_exit) checks the pipe is
    # open, then writes to it - if the thread closes it in between, an OSError traceback
    # follows our one-line error (seen once in a CI run after SIGTERM).
    if manager is not None:
        manager.join(timeout=10)
