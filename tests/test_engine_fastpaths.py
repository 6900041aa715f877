"""The engine's fast paths change how much Python runs, never what is simulated.

Each fast path has a straightforward reference that the engine used before it; a run with the
fast path must equal a run with the reference in everything it reports - per-actor counters,
iteration marks, records, makespan and the number of scheduled events:

* the lane (``_Environment``): events scheduled for "now" at NORMAL priority wait in a FIFO
  beside the heap; the reference pushes them onto the heap like every other event;
* the hand-off (``Engine._arrived``): a message for an actor blocked in a matching ``Recv``
  goes straight to it; the reference files it in the mailbox and lets the wake-up take it;
* per-process memos (message plans on the platform, jitter streams, shared operations): the
  second run in a process must equal the first;
* routing's plain-Python breadth-first search must give scipy's distances.
"""

from __future__ import annotations

from heapq import heappop, heappush
from pathlib import Path

import numpy as np
import pytest

from clustersim.scenario.schema import load_scenario
from clustersim.sim import engine as engine_mod
from clustersim.sim.sweep import simulate_point

ROOT = Path(__file__).resolve().parents[1]

# async master (rendezvous, polling receive, non-blocking replies), parameter servers, sync
METHODS = ("sync_easgd", "easgd_round_robin", "async_easgd", "hogwild_easgd", "async_sgd",
           "hogwild_sgd")


def _scenario(workers: int, jitter: float = 0.02):
    return load_scenario(ROOT / "scenarios" / "knl_4253.yaml", [
        f"sweep.workers=[{workers}]", "run.iterations=3", f"workload.jitter={jitter}"])


def _summary(res) -> tuple:
    actors = tuple((a.rank, a.compute, a.comm, a.wait, a.comm_total, a.bytes_sent, a.end,
                    tuple(a.iterations), a.mark, tuple(sorted(
                        (k, tuple(v)) for k, v in a.records.items())))
                   for a in res.actors)
    return res.makespan, res.sim_events, res.flows, actors


def _reference_run(self, until=None):
    """The event loop without the lane: every event through the heap."""
    if until is not None:
        return super(engine_mod._Environment, self).run(until)
    queue = self._queue
    while queue:
        self._now, _, _, event = heappop(queue)
        callbacks, event.callbacks = event.callbacks, None
        for callback in callbacks:
            callback(event)
    return None


def _use_reference(monkeypatch) -> None:
    """Lane and hand-off off: events on the heap only, every message through the mailbox."""
    monkeypatch.setattr(engine_mod._Environment, "run", _reference_run)
    original_init = engine_mod.Engine.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.env.push_now = lambda item, q=self.env._queue: heappush(q, item)
        self._nb_recv = [1] * len(self.actors)  # "a non-blocking Recv is under way": no hand-off

    monkeypatch.setattr(engine_mod.Engine, "__init__", init)


# 16 workers: point-to-point messages as max-min flows; 96: as FIFO link queues
@pytest.mark.parametrize("workers", [16, 96])
def test_fast_paths_simulate_the_same_run(workers, monkeypatch):
    scn = _scenario(workers)
    algs = [a for a in scn.algorithms if a.name in METHODS]
    assert {a.name for a in algs} == set(METHODS)
    fast = [_summary(simulate_point(scn, a, workers, 0)[1]) for a in algs]
    _use_reference(monkeypatch)
    for alg, got in zip(algs, fast):
        assert got == _summary(simulate_point(scn, alg, workers, 0)[1]), alg.name


def test_a_second_run_in_the_process_equals_the_first():
    """Message plans (Platform.memo), jitter streams and shared operations are reused by
    later runs: reusing them changes nothing."""
    scn = _scenario(96)
    algs = [a for a in scn.algorithms if a.name in METHODS]
    first = [_summary(simulate_point(scn, a, 96, 0)[1]) for a in algs]
    again = [_summary(simulate_point(scn, a, 96, 0)[1]) for a in reversed(algs)][::-1]
    assert first == again
    fresh = _scenario(96)  # a new platform: nothing memoised
    assert first == [_summary(simulate_point(fresh, a, 96, 0)[1])
                     for a in fresh.algorithms if a.name in METHODS]


def test_plain_python_search_equals_scipy(monkeypatch):
    from clustersim.platform import routing
    from clustersim.platform.searches import bfs_py

    scn = _scenario(16)
    router = scn.platform._router
    for ct in range(router._ncore):
        py = bfs_py(router._radj, router._nexp, router._ncore, ct)
        monkeypatch.setattr(routing, "PY_SEARCH_EDGES", -1)
        monkeypatch.setattr(routing, "PY_SEARCH_WORK", 0)
        c = router._bfs(ct)
        monkeypatch.undo()
        assert np.array_equal(py, c)
