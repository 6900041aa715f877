"""run_tasks' follow-ups: a done point's next points join the same pool, taken by ``order``.

The what-if page decides a master-based case's next worker count from the count before it
(clustersim/report/whatif_chains.py); these tests pin what it relies on, with a stand-in
simulation (forked pool processes inherit the monkeypatched module attribute) that logs
when each point starts.
"""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from clustersim.sim import pool_run
from clustersim.sim import sweep as sweep_mod

HEAD = (0, 1, 0, 7)            # a chain's first point: small, run first
NEXT = (0, 60, 0, 7)           # what follows it: heavy
FILLERS = [(1, 30, r, 7) for r in range(8)]


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """simulate_point that sleeps ``workers`` ms and appends "case workers repeat" to a log
    (O_APPEND writes of a line are atomic, whichever process writes)."""
    log = tmp_path / "starts.log"

    def simulate_point(scn, alg, workers, seed, trace):
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"{scn} {workers} {seed}\n".encode())
        os.close(fd)
        time.sleep(workers / 1000)
        return {"case": scn, "workers": workers, "seed": seed}, None

    monkeypatch.setattr(sweep_mod, "simulate_point", simulate_point)
    return log


def _run(jobs: int, follow_calls: list) -> dict:
    cases = [("chain", 0, None), ("other", 1, None)]
    results: dict = {}
    done: list = []

    def follow(key):
        follow_calls.append(key)
        return [NEXT] if key == HEAD[:3] else []

    pool_run.run_tasks(cases, [*FILLERS, HEAD], results, jobs, lambda n=1: done.append(n),
                       follow=follow, order=lambda t: (t[0] != 0, -t[1]))
    assert len(done) == len(results) == 10  # every point once, follow-up included
    return results


@pytest.mark.parametrize("jobs", [1, 2])
def test_follow_ups_run_once_and_every_point_is_followed(fake, jobs):
    if jobs > 1 and "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("the pool needs fork")
    calls: list = []
    results = _run(jobs, calls)
    assert results[NEXT[:3]] == {"case": 0, "workers": 60, "seed": 7}
    assert sorted(calls) == sorted(t[:3] for t in [*FILLERS, HEAD, NEXT])
    starts = fake.read_text().split()
    assert len(starts) == 30  # ten points started, none twice


def test_a_follow_up_overtakes_the_points_not_yet_started(fake):
    """On the pool, the follow-up starts before the last of the points queued before it
    (the old waves ran it only after all of them)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("the pool needs fork")
    _run(2, [])
    lines = fake.read_text().splitlines()
    order = [tuple(map(int, line.split()[:2])) for line in lines]
    assert order[0] == (0, 1)  # the chain's head first, by ``order``
    assert order.index((0, 60)) < len(order) - 1 - 2, order  # three fillers still waited
