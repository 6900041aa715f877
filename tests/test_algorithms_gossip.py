"""GOSGD: the push plan, the merge rule's invariants, the schedule by hand, end to end."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from clustersim.algorithms.base import ActorContext, JobInfo
from clustersim.algorithms.gossip import (
    ALPHA_BYTES,
    TAG_GOSSIP,
    GossipPlan,
    gosgd_worker,
    gossip_plan,
    merge,
    push_weight,
)
from clustersim.algorithms.ops import Compute, Message, Record, Recv, Send, drive
from clustersim.scenario.schema import parse_scenario
from clustersim.sim.costs import CostModel
from clustersim.sim.sweep import simulate_point

GRAD = 8_000_000.0
BASE = {
    "name": "t",
    "platform": {"topology": "star", "hosts": 8, "device": "v100",
                 "link": {"bandwidth": "10 Gb/s", "latency": "1 us"}},
    "network": {"overhead": "0 us", "efficiency": 1.0},
    "workload": {"model": {"name": "toy", "params": 2_000_000, "fwd_flops": 4e9, "split": 8},
                 "batch_per_worker": 32},
    "algorithm": {"name": "gosgd", "p": 0.3},
    "sweep": {"workers": [8]},
    "run": {"iterations": 30, "warmup": 2, "seed": 0},
}


def scenario(**alg):
    raw = copy.deepcopy(BASE)
    raw["algorithm"].update(alg)
    return parse_scenario(raw)


# -- the plan ---------------------------------------------------------------------------------
def test_plan_draws_bernoulli_pushes_to_uniform_other_peers():
    w, t, p = 50, 400, 0.1
    plan = gossip_plan(w, t, p, seed=5)
    pushes = [(i, it, j) for i, mine in enumerate(plan.pushes) for it, j in mine]
    n = len(pushes)
    mean, sd = w * t * p, np.sqrt(w * t * p * (1 - p))
    assert abs(n - mean) < 5 * sd
    assert all(i != j for i, _, j in pushes)
    # peers uniform over the other 49: chi-square over destinations of all pushes, 5 sigma
    counts = np.bincount([j for _, _, j in pushes], minlength=w)
    chi2 = ((counts - n / w) ** 2 / (n / w)).sum()
    assert chi2 < (w - 1) + 5 * np.sqrt(2 * (w - 1))
    # every push is in exactly one inbox, in the sender's order
    inbox = sorted((s, it) for j in range(w) for s, it in plan.inbox[j])
    assert inbox == sorted((i, it) for i, it, _ in pushes)
    for j in range(w):
        for s in range(w):
            its = [it for src, it in plan.inbox[j] if src == s]
            assert its == sorted(its)


def test_plan_extremes_and_seed():
    assert all(not x for x in gossip_plan(6, 50, 0.0, 1).pushes)
    full = gossip_plan(6, 50, 1.0, 1)
    assert all([it for it, _ in x] == list(range(50)) for x in full.pushes)
    assert gossip_plan(6, 50, 0.2, 1) == gossip_plan(6, 50, 0.2, 1)
    assert gossip_plan(6, 50, 0.2, 1) != gossip_plan(6, 50, 0.2, 2)
    assert gossip_plan(1, 50, 1.0, 1).pushes == ((),)


# -- the merge rule -----------------------------------------------------------------------------
def test_push_and_merge_keep_the_weighted_consensus():
    """Sum of alphas stays 1; the alpha-weighted mean of the replicas is invariant."""
    rng = np.random.default_rng(0)
    m = 5
    xs = [rng.normal(size=7) for _ in range(m)]
    al = [1.0 / m] * m
    consensus = sum(a * x for a, x in zip(al, xs))
    for _ in range(40):
        i, j = rng.choice(m, size=2, replace=False)
        al[i] = push_weight(al[i])               # sender keeps half, sends half
        xs[j], al[j] = merge(xs[j], al[j], xs[i].copy(), al[i])
        assert sum(al) == pytest.approx(1.0)
        assert np.allclose(sum(a * x for a, x in zip(al, xs)), consensus)
    x, a = merge(np.ones(3), 0.25, np.ones(3), 0.5)
    assert np.allclose(x, 1.0) and a == 0.75


# -- the schedule by hand -----------------------------------------------------------------------
def test_worker_merges_arrivals_first_then_steps_then_pushes():
    # worker 0 pushes to 2 after iterations 1 and 2; it receives from 1 (sent at its it 0)
    # and from 2 (sent at 2's it 3, still in flight when worker 0 finishes)
    plan = GossipPlan(pushes=(((1, 2), (2, 2)), ((0, 0),), ((3, 0),)),
                      inbox=(((1, 0), (2, 3)), (), ((0, 1), (0, 2))))
    job = JobInfo(workers=3, iterations=3, grad_bytes=GRAD, num_layers=8,
                  buckets=((0, 8, GRAD),), hosts=(0, 1, 2))
    arrivals = {1: Message(1, TAG_GOSSIP, GRAD + ALPHA_BYTES)}  # at the start of iteration 1
    it = [-1]

    def respond(op):
        if isinstance(op, Record) and op.key == "iteration":
            it[0] = op.value
        if isinstance(op, Recv):
            if op.poll:
                return arrivals.pop(it[0], None)
            return Message(2, TAG_GOSSIP, GRAD + ALPHA_BYTES)  # the final drain
        return None

    ops = drive(gosgd_worker(plan, GRAD)(ActorContext(0, "worker", job, 0)), respond)
    names = [op.key if isinstance(op, Record) else
             (op.phase if isinstance(op, Compute) else type(op).__name__) for op in ops]
    step = ["Recv", "forward", "backward", "update"]
    assert names == (["iteration"] + step
                     + ["iteration", "Recv", "accumulate", "staleness"] + step + ["Send"]
                     + ["iteration"] + step + ["Send"]
                     + ["Recv", "accumulate", "staleness"])
    sends = [op for op in ops if isinstance(op, Send)]
    assert [(s.dst, s.nbytes, s.tag, s.blocking) for s in sends] == \
        [(2, GRAD + ALPHA_BYTES, TAG_GOSSIP, True)] * 2
    polls = [op for op in ops if isinstance(op, Recv) and op.poll]
    assert len(polls) == 4 and all(op.tag == TAG_GOSSIP for op in polls)
    assert not ops[-3].poll  # the drain blocks: one push (from 2) was still on its way
    stale = [op.value for op in ops if isinstance(op, Record) and op.key == "staleness"]
    assert stale == [1, 0]  # |1 - 0| at iteration 1; |3 - 3| at the end
    # worker 1 is pushed nothing: it never looks at its mailbox, and pushes once (to 0)
    ops1 = drive(gosgd_worker(plan, GRAD)(ActorContext(1, "worker", job, 1)), lambda op: None)
    assert not any(isinstance(op, Recv) for op in ops1)
    assert [(op.dst, op.tag) for op in ops1 if isinstance(op, Send)] == [(0, TAG_GOSSIP)]


# -- end to end ---------------------------------------------------------------------------------
def test_without_pushes_each_worker_trains_alone():
    scn = scenario(p=0.0)
    m, _ = simulate_point(scn, scn.algorithm, 8, 0)
    prof = CostModel(scn, 32, 0).profile(0)
    assert m.iteration_time == pytest.approx(prof.compute_time, rel=1e-9)
    assert m.comm == 0 and m.bytes_per_iteration == 0 and m.staleness_mean is None


def test_every_push_is_merged_once_and_costs_a_transfer():
    scn = scenario()
    m, run = simulate_point(scn, scn.algorithm, 8, 0)
    plan = gossip_plan(8, 30, 0.3, 0)
    total = sum(len(x) for x in plan.pushes)
    merged = sum(len(a.records.get("staleness", [])) for a in run.actors)
    assert merged == total > 0
    assert run.flows == total
    sent = sum(a.bytes_sent for a in run.actors)
    assert sent == pytest.approx(total * (GRAD + ALPHA_BYTES))
    assert m.comm > 0 and m.staleness_max >= 0


def test_same_seed_same_metrics_different_seed_different_peers():
    scn = scenario()
    a, _ = simulate_point(scn, scn.algorithm, 8, 0)
    b, _ = simulate_point(scn, scn.algorithm, 8, 0)
    c, _ = simulate_point(scn, scn.algorithm, 8, 1)
    assert a.to_dict() == b.to_dict()
    assert (a.bytes_per_iteration, a.staleness_mean) != (c.bytes_per_iteration, c.staleness_mean)
