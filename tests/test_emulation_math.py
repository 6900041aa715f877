"""Convergence emulation against closed forms: one worker is sequential SGD, BSP is
large-batch SGD, EASGD without elastic force is independent SGD, runs are deterministic and
the math does not move the timing."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _emulation import emulate, scenario, sgd_loop

from clustersim.algorithms.base import get_algorithm
from clustersim.algorithms.tasks import TaskModel, make_task
from clustersim.scenario.schema import AlgorithmSpec
from clustersim.sim.engine import Engine
from clustersim.sim.sweep import prepare_point

#: teacher-student, fast; target 1.0 is out of reach with noise: every run goes to its end
TS = {"task": "teacher_student", "target": 1.0, "max_iterations": 25, "eval_updates": 5,
      "lr": 0.05, "batch": 16, "features": 16, "noise": 0.5}
DIGITS = {"task": "digits", "target": 1.0, "max_iterations": 12, "eval_updates": 4,
          "hidden": 16, "batch": 8}
PLAIN = [("bsp", {}), ("async_sgd", {"tau": 1}), ("hogwild_sgd", {"tau": 1}),
         ("sync_ps", {})]


@pytest.mark.parametrize("emulation", [TS, DIGITS], ids=["teacher_student", "digits"])
@pytest.mark.parametrize("name,params", PLAIN)
def test_one_worker_is_sequential_sgd_bit_for_bit(name: str, params: dict,
                                                  emulation: dict) -> None:
    em = emulate(name, params, 1, emulation)
    steps = emulation["max_iterations"]
    # Hogwild's server answers before it applies: its one worker is one update behind
    ref = sgd_loop(emulation, steps, delay=1 if name == "hogwild_sgd" else 0)
    # the reference model: worker 0 (BSP) or the server (last actor)
    model = em.models[0] if name == "bsp" else em.models[-1]
    assert em.result.stopped == "max_iterations"
    assert em.result.steps[-1] == steps
    assert model.weights.dtype == np.float32
    assert model.weights.tobytes() == ref.tobytes()


@pytest.mark.parametrize("name", ["async_easgd", "easgd_round_robin", "hogwild_easgd",
                                  "sync_easgd"])
def test_easgd_without_elastic_force_leaves_workers_independent(name: str) -> None:
    """alpha = beta = 0: every exchange moves nothing (``d = 0 (x - centre)``), so each
    worker is its own sequential SGD bit for bit and the centre stays the start."""
    p = 3
    em = emulate(name, {"tau": 2, "alpha": 0.0, "beta": 0.0}, p, TS)
    steps = TS["max_iterations"]
    for w in range(p):
        ref = sgd_loop(TS, steps, shard=w, shards=p, stream=w)
        assert em.models[w].weights.tobytes() == ref.tobytes()
    start = make_task("teacher_student", 0, **{k: TS[k] for k in
                                                ("lr", "batch", "features", "noise")})
    centre = em.models[0].centre if name == "sync_easgd" else em.models[-1].weights
    assert centre.tobytes() == start.initial_weights().tobytes()
    assert em.result.metric[-1] == 0.0  # the centre never moved: nothing learned


def test_bsp_is_large_batch_sgd() -> None:
    """BSP over p workers applies the mean of p mini-batch gradients - SGD on the p*B samples
    they read.  Not bit-exact: the hand loop sums the p*B samples in one matrix product, BSP
    sums B per worker and then the p results (another float32 rounding order).  Tolerance:
    1e-5 of the weights' scale, a few float32 ulps (eps 1.2e-7) per step over 25 steps of a
    contraction (seen: ~1e-6)."""
    p = 4
    em = emulate("bsp", {}, p, TS)
    task = make_task("teacher_student", 0, **{k: TS[k] for k in
                                               ("lr", "batch", "features", "noise")})
    streams = [TaskModel(task, shard=w, shards=p, stream=w) for w in range(p)]
    w = task.initial_weights()
    for _ in range(TS["max_iterations"]):
        batches = [m._next() for m in streams]
        x = np.concatenate([b[0] for b in batches])
        y = np.concatenate([b[1] for b in batches])
        _, g = task.loss_grad(w, (x, y))
        w -= np.float32(task.lr) * g
    for m in em.models:  # the replicas stay identical, bit for bit
        assert m.weights.tobytes() == em.models[0].weights.tobytes()
    scale = float(np.max(np.abs(w)))
    assert np.max(np.abs(em.models[0].weights - w)) <= 1e-5 * scale


@pytest.mark.parametrize("name", ["bsp", "async_sgd", "async_easgd", "sync_easgd"])
def test_same_seed_same_curve_bytes(name: str) -> None:
    a = emulate(name, {}, 3, DIGITS)
    b = emulate(name, {}, 3, DIGITS)
    assert json.dumps(a.result.to_dict()) == json.dumps(b.result.to_dict())
    assert [m.digest() for m in a.models] == [m.digest() for m in b.models]
    c = emulate(name, {}, 3, DIGITS, seed=1)
    assert c.result.loss != a.result.loss  # the seed changes data order and weights


@pytest.mark.parametrize("name", ["bsp", "async_sgd", "async_easgd", "sync_easgd",
                                  "async_measgd"])
def test_emulation_keeps_the_timing(name: str) -> None:
    """The emulated run's events are the timing-only run's: same makespan, number of
    events, and per actor the same busy, blocked and waiting times and iteration starts."""
    em = emulate(name, {}, 3, TS)
    scn = scenario(TS, 3)
    full = {k: p.default for k, p in get_algorithm(name).params.items()}
    scn_p, job, actors, placement, costs = prepare_point(
        scn, AlgorithmSpec(name, full), 3, 0, iterations=TS["max_iterations"])
    plain = Engine(scn_p.platform, job, actors, placement, costs, params=scn_p.network,
                   fidelity=scn_p.run.fidelity).run()
    run = em.run
    assert run.makespan == plain.makespan
    assert run.sim_events == plain.sim_events
    for a, b in zip(run.actors, plain.actors):
        assert (a.compute, a.comm, a.wait, a.comm_total, a.bytes_sent) == \
            (b.compute, b.comm, b.wait, b.comm_total, b.bytes_sent)
        assert a.iterations == b.iterations


def test_curve_columns_and_target() -> None:
    em = emulate("async_sgd", {}, 4, {"task": "digits", "target": 0.8, "eval_every": "0.5 s",
                                      "max_time": "200 s"})
    r = em.result
    n = len(r.time)
    assert n > 3 and all(len(c) == n for c in (r.updates, r.steps, r.samples, r.loss,
                                                 r.metric))
    assert r.time == sorted(r.time) and r.updates == sorted(r.updates)
    assert r.samples == [s * 32 for s in r.steps]
    assert r.reached and r.metric[-1] >= 0.8 > max(r.metric[:-1])
    assert r.time_to_target == r.time[-1] and r.steps_to_target == r.steps[-1]
    # time samples at multiples of 0.5 s until the target
    assert all(abs(t / 0.5 - round(t / 0.5)) < 1e-9 for t in r.time)
    assert r.metric[0] < 0.3  # the start is near chance (1/10)


def test_the_sweep_exposes_one_result_per_algorithm_and_point() -> None:
    from _emulation import BASE

    from clustersim.scenario.schema import load_scenario
    from clustersim.sim.sweep import run_sweep

    emulation = {"task": "teacher_student", "target": 0.9, "max_iterations": 200,
                 "lr": 0.05, "features": 8}
    scn = load_scenario(BASE, [
        "workload.jitter=0", "sweep.workers=[2, 4]", "run.convergence=emulate",
        f"run.emulation={json.dumps(emulation)}",
        'algorithm={"name": "async_sgd", "label": "A"}',
        'compare=[{"name": "bsp", "label": "B"}]'])
    out = run_sweep(scn, jobs=1)
    assert list(out.emulation) == list(out.points) == ["A", "B"]
    for title, results in out.emulation.items():
        assert [r.workers for r in results] == [p.workers for p in out.points[title]]
        for r in results:
            assert r.algorithm == title and r.reached and r.metric[-1] >= 0.9
            assert r.steps_to_target <= 200 * r.workers
    plain = run_sweep(load_scenario(BASE, ["workload.jitter=0", "sweep.workers=[2]"]), jobs=1)
    assert plain.emulation == {}


def test_gossip_conserves_the_alphas_and_trains() -> None:
    """GOSGD with the math: a push halves the sender's alpha and the merge adds it to the
    receiver's (Blot et al. 2016), so once every push is merged the alphas sum to 1 (to
    float64 rounding: after many halvings a sum needs more than 53 bits; seen 1 - 8e-16);
    the replicas' mean learns."""
    em = emulate("gosgd", {"p": 0.3}, 4, {**TS, "max_iterations": 300})  # to the end
    assert abs(sum(m.alpha for m in em.models) - 1.0) < 1e-12
    assert any(m.alpha != 0.25 for m in em.models)  # pushes happened
    r = em.result
    assert r.stopped == "max_iterations" and r.metric[0] == 0.0 and r.metric[-1] >= 0.95
    # the curve's model is the replicas' mean: re-evaluate it at the end
    mean = np.mean([m.weights for m in em.models], axis=0, dtype=np.float32)
    assert em.models[0].task.evaluate(mean)[1] >= 0.95


def test_one_gossip_worker_is_sequential_sgd() -> None:
    em = emulate("gosgd", {"p": 0.5}, 1, TS)
    ref = sgd_loop(TS, TS["max_iterations"])
    assert em.models[0].weights.tobytes() == ref.tobytes()
