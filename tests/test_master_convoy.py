"""Faster links, a slower Async EASGD run: the master's answers end together (audit D).

Audit D found a few 8-GPU-node points of the master-based methods 2-8 % slower at 80 Gb/s
than at 40 Gb/s, and left the cause open.  It is the max-min sharing of the master's
outbound link by its non-blocking answers, not a bookkeeping error: on a ``pcie_tree`` star
at 80 Gb/s half of the workers' routes drain at 10 GB/s and half at 5 GB/s, the master's
cycle per fast exchange (10.2 ms) is shorter than its answer to a slow worker (20.5 ms), so
its non-blocking answers overlap and share its link: a fast worker's answer takes 27.8 ms
instead of 9.7 and ends at the same instant as the slow worker's sent before it - the two
come back for their next exchange together and one queues behind the other (a convoy),
while the master idles a third of the time.  At 40 Gb/s the link, not the routes, sets every
push (20.4 ms), the master is saturated (91 %) and each answer drains alone; at 160 Gb/s the
answers are short enough not to pile up.
docs/algorithms.md ("Faster links, slower run") quotes these figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.scenario.schema import load_scenario
from clustersim.sim.sweep import simulate_point, sweep_cases

SCENARIO = """name: ea{bw}
platform: {{topology: star, hosts: 4, device: v100, link: {{bandwidth: {bw} Gb/s, latency: 2 us}},
           node: {{devices: 4, layout: pcie_tree}}}}
workload: {{model: resnet50, batch_per_worker: 32}}
algorithm: {{name: async_easgd, tau: 1, label: ea}}
sweep: {{workers: [8]}}
run: {{iterations: 16, warmup: 4}}
"""


def _point(tmp: Path, bw: int, trace: bool = False) -> tuple:
    path = tmp / f"ea{bw}.yaml"
    path.write_text(SCENARIO.format(bw=bw), encoding="utf-8")
    (_title, s, alg), = sweep_cases(load_scenario(path))
    return simulate_point(s, alg, 8, 0, trace=trace)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple]:
    tmp = Path(tmp_path_factory.mktemp("convoy"))
    return {bw: _point(tmp, bw, trace=bw == 80) for bw in (40, 80, 160)}


def test_the_80_gbps_run_is_the_slowest(runs: dict[int, tuple]) -> None:
    thr = {bw: m.throughput for bw, (m, _res) in runs.items()}
    assert thr[80] < 0.95 * thr[40] < 0.95 * thr[160], thr
    m40, m80 = runs[40][0], runs[80][0]
    assert m40.server_utilization > 0.85  # saturated: the order of service does not matter
    assert m80.server_utilization < 0.70  # idle a third of the time ...
    assert m80.wait > 1.5 * m40.wait  # ... while its workers queue longer


def test_the_answers_overlap_and_pair_the_workers(runs: dict[int, tuple]) -> None:
    """At 80 Gb/s a fast worker's answer (9.7 ms alone) is sent while a slow worker's
    (20.5 ms alone, sent one exchange earlier) still drains: they share the master's
    outbound link and end at one instant, so the two workers come back together and one
    queues behind the other, in every measured round."""
    res = runs[80][1]
    got: dict[int, list[tuple[float, float]]] = {}
    for e in res.events:
        if e.role == "worker" and e.kind == "recv" and e.label == "centre":
            got.setdefault(e.actor, []).append((e.start, e.end))
    assert sorted(got) == list(range(8))
    alone = 102_228_128 / 10.5e9  # a fast route's drain, 10 GB/s less the protocol: ~9.7 ms
    for k in range(4, 15):  # the measured exchanges (worker 7 is served at a round's end)
        (s0, e0), (s7, e7) = got[0][k + 1], got[7][k]
        assert s7 < s0 and abs(e0 - e7) < 5e-5, (k, got[0][k + 1], got[7][k])
        assert e0 - s0 > 2.5 * alone, (k, e0 - s0)
