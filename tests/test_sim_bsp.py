"""The simulated backend on synchronous training, checked against closed forms.

On a uniform crossbar (B bytes/s per link and direction, latency l per hop, alpha = 2l), one BSP
iteration without overlap is exactly forward + backward + update + the all-reduce's closed form;
with a ring: 2(p-1)(alpha + n/(pB)) + (p-1)(n/p)/R, R the device's reduction bandwidth.
"""

from __future__ import annotations

import copy

import pytest

from clustersim.algorithms.base import get_algorithm
from clustersim.scenario.schema import parse_scenario
from clustersim.sim.costs import CostModel
from clustersim.sim.sweep import run_sweep, simulate_point

B = 10e9 / 8  # 10 Gb/s
LAT = 1e-6

BASE = {
    "name": "t",
    "platform": {"topology": "star", "hosts": 8, "device": "v100",
                 "link": {"bandwidth": "10 Gb/s", "latency": "1 us"}},
    "workload": {"model": {"name": "toy", "params": 2_000_000, "fwd_flops": 4e9, "split": 8},
                 "batch_per_worker": 32},
    "algorithm": {"name": "bsp", "strategy": "ring"},
    "sweep": {"workers": [1, 2, 4, 8]},
    "run": {"iterations": 6, "warmup": 1, "fidelity": "flow"},
}


def scenario(**changes):
    raw = copy.deepcopy(BASE)
    for key, value in changes.items():
        section, _, field = key.partition("__")
        if field:
            raw[section][field] = value
        else:
            raw[section] = value
    return parse_scenario(raw)


def compute_parts(scn, batch=32):
    prof = CostModel(scn, batch, 0).profile(0)
    return prof.forward_time + prof.backward_time + prof.update_time, prof


def ring_closed_form(p, n, reduce_bw):
    if p == 1:
        return 0.0
    return 2 * (p - 1) * (2 * LAT + n / (p * B)) + (p - 1) * (n / p) / reduce_bw


@pytest.mark.parametrize("fidelity", ["flow", "analytic"])
def test_bsp_iteration_is_compute_plus_ring_allreduce(fidelity):
    scn = scenario(run={"iterations": 6, "warmup": 1, "fidelity": fidelity})
    comp, _ = compute_parts(scn)
    n = scn.workload.model.grad_bytes
    r = scn.platform.spec(0).reduce_bw
    res = run_sweep(scn)
    for pt in res.points["bsp"]:
        expect = comp + ring_closed_form(pt.workers, n, r)
        assert pt.iteration_time == pytest.approx(expect, rel=1e-6)
        assert pt.compute == pytest.approx(comp, rel=1e-9)
        assert pt.compute + pt.comm + pt.wait == pytest.approx(pt.iteration_time, rel=1e-9)
        assert pt.wait == pytest.approx(0.0, abs=1e-12)


def test_weak_scaling_speedup_and_efficiency():
    scn = scenario()
    pts = run_sweep(scn).points["bsp"]
    assert pts[0].speedup == 1.0 and pts[0].efficiency == 1.0
    for p in pts[1:]:
        assert p.speedup == pytest.approx(p.throughput / pts[0].throughput)
        assert p.efficiency == pytest.approx(p.speedup / p.workers)
        assert 0 < p.efficiency < 1
    # efficiency falls as the ring grows (its bandwidth term tends to 2n/B)
    effs = [p.efficiency for p in pts]
    assert effs == sorted(effs, reverse=True)


def test_strong_scaling_splits_the_global_batch():
    scn = scenario(workload={"model": "lenet5", "global_batch": 256},
                   sweep={"workers": [1, 2, 4], "scaling": "strong"})
    pts = run_sweep(scn).points["bsp"]
    assert [p.batch_per_worker for p in pts] == [256, 128, 64]


def test_overlap_hides_communication_behind_backward():
    plain = scenario(workload__bucket="1 MiB")
    over = scenario(workload__bucket="1 MiB", algorithm={"name": "bsp", "overlap": True})
    p8 = run_sweep(plain).points["bsp"][-1]
    o8 = run_sweep(over).points["bsp"][-1]
    comp, _ = compute_parts(plain)
    assert o8.iteration_time < p8.iteration_time
    assert o8.iteration_time >= comp * (1 - 1e-9)
    assert o8.comm_share < p8.comm_share
    # the total time communication was in flight is at least the exposed part
    assert o8.comm_share_total >= o8.comm_share


def test_weight_averaging_every_k_cuts_communication_by_k():
    every1 = scenario(algorithm={"name": "bsp", "exchange": "weights", "every": 1},
                      run={"iterations": 9, "warmup": 1, "fidelity": "analytic"})
    every4 = scenario(algorithm={"name": "bsp", "exchange": "weights", "every": 4},
                      run={"iterations": 9, "warmup": 1, "fidelity": "analytic"})
    c1 = run_sweep(every1).points["bsp"][-1].comm
    c4 = run_sweep(every4).points["bsp"][-1].comm
    # 8 measured iterations: 8 exchanges vs 2
    assert c4 == pytest.approx(c1 / 4, rel=1e-9)


def test_host_staged_allreduce_pays_two_copies():
    staged = scenario(algorithm={"name": "bsp", "strategy": "ar"})
    direct = scenario(algorithm={"name": "bsp", "strategy": "rabenseifner"})
    n = staged.workload.model.grad_bytes
    a = run_sweep(staged).points["bsp"][-1]
    d = run_sweep(direct).points["bsp"][-1]
    # star hosts' only link is the 10 Gb/s one: copy in and out; plus a barrier
    assert a.iteration_time - d.iteration_time == pytest.approx(2 * n / B, rel=0.01)


def test_same_seed_same_numbers_and_jitter_varies_with_seed():
    scn = scenario(workload__jitter=0.1, run={"iterations": 6, "warmup": 1, "seed": 3,
                                              "fidelity": "analytic"})
    alg = scn.algorithm
    a, _ = simulate_point(scn, alg, 8, 3)
    b, _ = simulate_point(scn, alg, 8, 3)
    c, _ = simulate_point(scn, alg, 8, 4)
    assert a.to_dict() == b.to_dict()
    assert a.iteration_time != c.iteration_time
    # stragglers: with jitter synchronous workers wait for each other
    assert a.wait > 0


def test_repeats_give_mean_and_interval():
    scn = scenario(workload__jitter=0.1, run={"iterations": 5, "warmup": 1, "repeats": 4,
                                              "fidelity": "analytic"})
    pts = run_sweep(scn).points["bsp"]
    p = pts[-1]
    assert p.seeds == 4
    lo, hi = p.interval["iteration_time"]
    assert lo <= p.iteration_time <= hi


def test_heterogeneous_devices_make_the_fast_one_wait():
    raw = copy.deepcopy(BASE)
    raw["platform"] = {
        "topology": "explicit",
        "nodes": [{"name": "sw", "kind": "switch"},
                  {"name": "fast", "device": "v100", "host": 0},
                  {"name": "slow", "device": "k80", "host": 1}],
        "link": {"bandwidth": "10 Gb/s", "latency": "1 us"},
        "links": [["fast", "sw"], ["slow", "sw"]],
    }
    raw["sweep"] = {"workers": [2]}
    scn = parse_scenario(raw)
    m, run = simulate_point(scn, scn.algorithm, 2, 0)
    fast, slow = run.actors
    assert fast.wait > 0 and slow.wait == pytest.approx(0.0, abs=1e-12)
    assert slow.compute > fast.compute


def test_bsp_worker_yields_the_expected_operations():
    from clustersim.algorithms.base import JobInfo
    from clustersim.algorithms.ops import Collective, Compute, Handle, Record, Wait, drive

    defn = get_algorithm("bsp")
    job = JobInfo(workers=4, iterations=2, grad_bytes=300.0, num_layers=3,
                  buckets=((2, 3, 100.0), (1, 2, 100.0), (0, 1, 100.0)), hosts=(0, 0, 1, 1),
                  params=defn.resolve_params({"overlap": True}))
    actor = defn.actors(job)[0]
    counter = iter(range(100))
    ops = drive(actor.start(job), lambda op: Handle(next(counter))
                if isinstance(op, Collective) and not op.blocking else None)
    kinds = [type(o).__name__ + ":" + getattr(o, "phase", getattr(o, "op", "")) for o in ops
             if not isinstance(o, Record)]
    per_iter = ["Compute:forward", "Compute:backward", "Collective:allreduce",
                "Compute:backward", "Collective:allreduce", "Compute:backward",
                "Collective:allreduce", "Wait:", "Compute:update"]
    assert kinds == per_iter * 2
    ars = [o for o in ops if isinstance(o, Collective)]
    assert all(o.nbytes == 100.0 and not o.blocking for o in ars)
    assert [o.layers for o in ops if isinstance(o, Compute) and o.phase == "backward"][:3] == \
        [(2, 3), (1, 2), (0, 1)]
    assert sum(isinstance(o, Wait) for o in ops) == 2


def test_equal_groups_built_separately_meet_in_one_collective():
    """Each actor builds its own (equal) group tuple: they must still rendezvous."""
    from clustersim.algorithms.base import REGISTRY, ActorSpec, AlgorithmDef
    from clustersim.algorithms.ops import AllReduce, Compute, Record

    def body(ctx):
        for it in range(ctx.iterations):
            yield Record("iteration", it)
            yield Compute("forward")
            yield AllReduce(1e6, group=tuple(range(ctx.job.workers)))  # a new tuple each time

    defn = AlgorithmDef("separate_groups", "sync", "test", {},
                        lambda job: [ActorSpec(w, "worker", w, body) for w in range(job.workers)])
    REGISTRY["separate_groups"] = defn
    try:
        scn = scenario(algorithm={"name": "separate_groups"})
        pts = run_sweep(scn).points["separate_groups"]
        assert pts[-1].comm > 0 and pts[-1].iteration_time < 1.0
    finally:
        del REGISTRY["separate_groups"]


def test_collectives_of_one_group_run_in_order():
    """Two non-blocking all-reduces issued together take the sum of their times."""
    from clustersim.algorithms.base import REGISTRY, ActorSpec, AlgorithmDef
    from clustersim.algorithms.ops import AllReduce, Record, Wait

    def body(ctx):
        for it in range(ctx.iterations):
            yield Record("iteration", it)
            a = yield AllReduce(8e6, blocking=False)
            b = yield AllReduce(8e6, blocking=False)
            yield Wait([a, b])

    defn = AlgorithmDef("two_at_once", "sync", "test", {},
                        lambda job: [ActorSpec(w, "worker", w, body) for w in range(job.workers)])
    REGISTRY["two_at_once"] = defn
    try:
        scn = scenario(algorithm={"name": "two_at_once"})
        p = run_sweep(scn).points["two_at_once"][-1]
        r = scn.platform.spec(0).reduce_bw
        assert p.iteration_time == pytest.approx(2 * ring_closed_form(8, 8e6, r), rel=1e-6)
    finally:
        del REGISTRY["two_at_once"]
