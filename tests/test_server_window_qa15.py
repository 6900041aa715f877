"""QA 15 HIGH-1: a real run's server spent 18-52 ms on its first update (the first touch of
its buffers) against 1.1 ms on the others, and its utilisation was taken from its compute
over the whole run - 15-23 % on two identical 30-step runs whose measured steps were 9.5 %
busy.  A server's compute per update is now taken after the warm-up (from its first update
after the last worker began its measured steps), in the trace reader and the engine."""

from __future__ import annotations

import pytest

from clustersim.trace import TraceEvent
from clustersim.trace_metrics import measured_metrics


def _ev(actor: int, kind: str, start: float, end: float, role: str = "worker") -> TraceEvent:
    return TraceEvent(actor, role, kind, start, end, kind)


def _rec(actor: int, key: str, t: float, value: float = 1.0, role: str = "worker"
         ) -> TraceEvent:
    return TraceEvent(actor, role, "record", t, t, key, value=value)


def _run(first: float) -> list[TraceEvent]:
    """One worker of 1 s steps and a server applying one update per step, 0.1 s each but
    the first, which takes ``first``; 6 steps, so the last five are measured after a
    one-step warm-up."""
    ev = []
    for k in range(6):
        t = float(k)
        ev += [_rec(0, "iteration", t, k), _ev(0, "compute", t, t + 0.9)]
        dur = first if k == 0 else 0.1
        ev += [_ev(1, "compute", t + 0.9, t + 0.9 + dur, role="server"),
               _rec(1, "update", t + 0.9 + dur, role="server")]
    ev += [_rec(0, "actor_end", 6.0, 1), _rec(1, "actor_end", 6.0, 0, role="server")]
    return ev


def test_a_slow_first_update_stays_out_of_the_utilisation() -> None:
    """(With the server's waits for pushes in its trace, as a real server's shows them: the
    utilisation is its busiest resource's, and a thread that never says it waits is busy.)"""
    even = measured_metrics(_waiting_run(0.1), algorithm="x", batch=4, warmup=1, iterations=6)
    slow = measured_metrics(_waiting_run(0.8), algorithm="x", batch=4, warmup=1, iterations=6)
    assert even.server_utilization == pytest.approx(0.1, rel=1e-9)  # 0.1 s of each 1 s step
    assert slow.server_utilization == pytest.approx(0.1, rel=1e-9)  # was (0.8 + 0.5) / 6
    # without a warm-up the whole run counts, as before
    whole = measured_metrics(_waiting_run(0.8), algorithm="x", batch=4, warmup=0,
                             iterations=6)
    assert whole.server_utilization == pytest.approx(1.3 / 6, rel=1e-9)


def _waiting_run(first: float) -> list[TraceEvent]:
    """:func:`_run` with the server blocked in a receive between its updates (waiting for
    the worker's push), as a real server's trace shows it."""
    ev = _run(first)
    prev = 0.0
    for k in range(6):
        ev.append(TraceEvent(1, "server", "recv", prev, k + 0.9, "push"))
        prev = k + 0.9 + (first if k == 0 else 0.1)
    return ev


def test_a_slow_first_update_stays_out_of_the_service_time() -> None:
    """The thread's time per update (service time, hence the saturation point) is taken
    between the first update after the warm-up and the last one, as the utilisation is:
    0.1 s per update, saturation at 1 s / 0.1 s = 10 workers.  Over the whole run it read
    (0.8 + 5 x 0.1) / 6 = 0.217 s and 4.6 workers."""
    for first in (0.1, 0.8):
        m = measured_metrics(_waiting_run(first), algorithm="x", batch=4, warmup=1,
                             iterations=6)
        assert m.service_time == pytest.approx(0.1, rel=1e-9)
        assert m.saturation_workers == pytest.approx(10.0, rel=1e-9)
    whole = measured_metrics(_waiting_run(0.8), algorithm="x", batch=4, warmup=0,
                             iterations=6)
    assert whole.service_time == pytest.approx(1.3 / 6, rel=1e-9)


def test_a_simulated_master_serves_at_its_update_cost_at_any_load() -> None:
    """knl_4253's masters apply an 18.19 ms centre update: the service time is that at 4
    workers as at 272 (it read 18.2-18.7 ms at light loads, from the warm-up round and the
    last answers' transfers), and a lock-free master's utilisation obeys the utilisation
    law U = W / W* (it counted one update too many: 63 % for 62 %)."""
    from clustersim.scenario.schema import PROJECT_ROOT, load_scenario
    from clustersim.sim.sweep import simulate_point

    scn = load_scenario(PROJECT_ROOT / "scenarios" / "knl_4253.yaml")
    algs = {a.name: a for a in scn.algorithms}
    for name in ("async_sgd", "async_easgd", "hogwild_easgd"):
        light = simulate_point(scn, algs[name], 4, 0)[0]
        assert light.service_time == pytest.approx(0.018188, rel=2e-4), name
    hog = simulate_point(scn, algs["hogwild_easgd"], 68, 0)[0]
    assert hog.server_utilization == pytest.approx(68 / hog.saturation_workers, rel=1e-3)


def test_the_trace_reader_gives_a_serving_masters_service_time_as_the_engine() -> None:
    """The round-robin EASGD master sits through each worker's push (``Recv.serving``):
    its trace carries those samples as records, so the reader of the run's own trace finds
    the engine's service time and saturation point (it counted the serving receives as
    idle: 23.8 ms and 86 workers against 29.4 ms and 69, review of 2026-11-29)."""
    from clustersim.scenario.schema import PROJECT_ROOT, load_scenario
    from clustersim.sim.sweep import simulate_point

    scn = load_scenario(PROJECT_ROOT / "scenarios" / "knl_unsaturated.yaml")
    alg = next(a for a in scn.algorithms if a.name == "easgd_round_robin")
    m, run = simulate_point(scn, alg, 17, 0, trace=True)
    # the engine's trace carries its iteration marks (tests/test_trace_engine_reader.py)
    read = measured_metrics(run.events, algorithm=alg.title, batch=m.batch_per_worker,
                            warmup=scn.run.warmup, iterations=scn.run.iterations)
    assert read.service_time == pytest.approx(m.service_time, rel=1e-9)
    assert read.saturation_workers == pytest.approx(m.saturation_workers, rel=1e-9)
