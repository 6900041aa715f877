"""Real training runs (``clustersim run --real``): the interpreter, measured metrics, the math.

MPI tests (marked ``mpi``) use the pip MPICH: 2 ranks for the timing-shaped runs, 4 for a
correctness run (oversubscribed on this 2-core machine, so nothing about its time is
asserted).  The unmarked tests check the pieces that need no MPI against closed forms:
the metrics of hand-made traces, kernel sizes, the proxy model's gradient, BSP's math driven
by hand.
"""

from __future__ import annotations

import collections
import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from _procs import no_strays

from clustersim.algorithms.base import JobInfo, get_algorithm
from clustersim.algorithms.ops import Collective, Compute, Handle, Record, Wait
from clustersim.algorithms.proxy import ProxyModel, ProxyTask, dataset, make_math
from clustersim.cli import main
from clustersim.sim.sweep import simulate_point
from clustersim.trace import TraceEvent, read_jsonl
from clustersim.trace_metrics import actor_stats, measured_metrics
from clustersim.workload import OPTIMIZERS, get_model
from clustersim.workload.compute import layer_time
from realrun.launch import RealRunError
from realrun.train import prepare, run_scenario

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
REAL = ("real_bsp_mlp", "real_async_ps", "real_async_easgd")
# kinds whose count per (actor, iteration, label) does not depend on timing
TIMELESS_SKIP = {"wait", "recv", "record"}


# -- helpers -----------------------------------------------------------------------------------
_no_strays = no_strays


def _ops(events, keep) -> collections.Counter:
    return collections.Counter((e.actor, e.iteration, e.kind, e.label)
                               for e in events if keep(e.kind))


def _ev(actor, kind, start, end, label="", role="worker", **kw) -> TraceEvent:
    return TraceEvent(actor, role, kind, start, end, label or kind, **kw)


def _rec(actor, key, t, value, role="worker") -> TraceEvent:
    return TraceEvent(actor, role, "record", t, t, key, value=float(value))


def lockstep_bsp(job: JobInfo, params: dict | None = None) -> list[ProxyModel]:
    """BSP with math, driven by hand: every worker's generator advances to its next
    collective; when all are there, the sum answers them.  What MPI must reproduce."""
    if params is not None:
        job = replace(job, params=params)
    actors = get_algorithm("bsp").actors(job)
    maths = [make_math(job, a.rank, a.role, a.index) for a in actors]
    gens = [a.start(job, m) for a, m in zip(actors, maths)]
    values: list = [None] * len(gens)
    results: list[dict[int, np.ndarray]] = [{} for _ in gens]  # per worker: handle -> sum
    counter = [0] * len(gens)
    live = set(range(len(gens)))
    while live:
        at_coll: dict[int, Collective] = {}
        for i in sorted(live):
            while True:
                try:
                    op = gens[i].send(values[i])
                except StopIteration:
                    live.discard(i)
                    break
                values[i] = None
                if isinstance(op, Compute):
                    values[i] = op.fn(op.data) if op.fn is not None else None
                elif isinstance(op, Wait):
                    values[i] = [results[i].pop(h.id) for h in op.handles]
                elif isinstance(op, Collective):
                    at_coll[i] = op
                    break
                else:
                    assert isinstance(op, Record)
        if at_coll:
            assert set(at_coll) == live  # BSP: everyone meets at every collective
            total = sum(np.asarray(at_coll[i].data) for i in sorted(at_coll))
            for i, op in at_coll.items():
                if op.blocking:
                    values[i] = total.copy()
                else:
                    h = Handle(counter[i])
                    counter[i] += 1
                    results[i][h.id] = total.copy()
                    values[i] = h
    return maths


# -- no MPI: metrics from traces -----------------------------------------------------------------
def test_metrics_of_a_handmade_bsp_trace_follow_the_simulators_definitions() -> None:
    """Two workers, two iterations; worker 1 is late to the first all-reduce."""
    g = {"g": "abc", "nb": False}
    ev = [
        _rec(0, "iteration", 0.0, 0), _ev(0, "compute", 0.0, 1.0),
        _ev(0, "allreduce", 1.0, 3.0, nbytes=100.0, meta={**g, "seq": 0}),
        _rec(0, "iteration", 3.0, 1), _ev(0, "compute", 3.0, 4.0),
        _ev(0, "allreduce", 4.0, 5.5, nbytes=100.0, meta={**g, "seq": 1}),
        _rec(0, "actor_end", 5.5, 2),
        _rec(1, "iteration", 0.0, 0), _ev(1, "compute", 0.0, 2.0),
        _ev(1, "allreduce", 2.0, 3.0, nbytes=100.0, meta={**g, "seq": 0}),
        _rec(1, "iteration", 3.0, 1), _ev(1, "compute", 3.0, 4.5),
        _ev(1, "allreduce", 4.5, 5.5, nbytes=100.0, meta={**g, "seq": 1}),
        _rec(1, "actor_end", 5.5, 2),
    ]
    m = measured_metrics(ev, algorithm="bsp", batch=8, warmup=0, iterations=2)
    # worker 0: compute 2, comm 1 + 1, wait 1 (seq 0) + 0.5 (seq 1); worker 1: compute 3.5,
    # comm 2, wait 0; iteration (5.5 - 0) / 2 each
    assert m.iteration_time == pytest.approx(2.75)
    assert m.compute == pytest.approx((1.0 + 1.75) / 2)
    assert m.comm == pytest.approx(1.0)
    assert m.wait == pytest.approx((0.75 + 0.0) / 2)
    assert m.compute + m.comm + m.wait == pytest.approx(m.iteration_time)  # synchronous
    assert m.bytes_per_iteration == pytest.approx(100.0)
    assert m.throughput == pytest.approx(2 * 8 / 2.75)
    assert m.comm_share == pytest.approx(1.0 / 2.75)
    # warmup 1: counters from the mark at t = 3 only
    w = measured_metrics(ev, algorithm="bsp", batch=8, warmup=1, iterations=2)
    assert w.iteration_time == pytest.approx(2.5)
    assert w.wait == pytest.approx(0.5 / 2)
    assert w.compute + w.comm + w.wait == pytest.approx(w.iteration_time)


def test_metrics_of_nonblocking_waits_sends_and_a_server() -> None:
    nb = {"g": "x", "seq": 0, "nb": True}
    ev = [
        _rec(0, "iteration", 0.0, 0),
        _ev(0, "allreduce", 1.0, 2.0, nbytes=40.0, meta=nb),  # issued at 1, done at 2
        _ev(0, "wait", 1.5, 2.0, meta={"colls": [["x", 0]]}),
        _ev(0, "send", 2.0, 2.5, nbytes=10.0, peer=2),  # blocking send
        _ev(0, "send", 2.5, 3.5, nbytes=20.0, peer=2, meta={"nb": True}),
        _ev(0, "recv", 3.0, 4.0, peer=2),  # blocking receive: waiting for the server
        _rec(0, "actor_end", 4.0, 1),
        _rec(1, "iteration", 0.0, 0),
        _ev(1, "allreduce", 1.8, 2.0, nbytes=40.0, meta=nb),  # the last member: 1.8
        _ev(1, "wait", 1.8, 2.0, meta={"colls": [["x", 0]]}),
        _rec(1, "actor_end", 4.0, 1),
        _ev(2, "recv", 0.0, 2.5, role="server"),  # waiting for the first push
        _ev(2, "compute", 2.5, 3.5, role="server"),
        _ev(2, "recv", 3.5, 3.9, role="server"),  # and for one that never comes
        _rec(2, "staleness", 3.0, 0, role="server"), _rec(2, "staleness", 3.5, 2, role="server"),
        _rec(2, "update", 3.0, 1, role="server"), _rec(2, "update", 3.5, 1, role="server"),
        _rec(2, "actor_end", 3.9, 0, role="server"),
    ]
    stats = {a.rank: a for a in actor_stats(ev, warmup=0)}
    w0 = stats[0]
    # wait op: last member arrived 0.3 s into it -> 0.3 wait, 0.2 comm; plus the blocking
    # send's 0.5 comm; the receive is 1.0 wait
    assert w0.wait == pytest.approx(0.3 + 1.0)
    assert w0.comm == pytest.approx(0.2 + 0.5)
    # comm_total: collective busy after the last arrival (0.2) + both sends (0.5 + 1.0)
    assert w0.comm_total == pytest.approx(0.2 + 1.5)
    assert w0.bytes_sent == pytest.approx(70.0)
    m = measured_metrics(ev, algorithm="x", batch=[4, 4], warmup=0)
    assert m.workers == 2 and m.staleness_mean == pytest.approx(1.0)
    # the server's 1 s of compute and 2 updates per 2 worker iterations, at the workers'
    # measured 2 iterations / 4 s (here the whole run: QA 11 F1)
    assert m.server_utilization == pytest.approx(1.0 / 2 * (2 / 4.0))
    assert m.update_rate == pytest.approx(2 / 2 * (2 / 4.0))


# -- no MPI: kernels and math --------------------------------------------------------------------
def test_kernels_carry_the_layers_flops_and_bytes() -> None:
    from realrun.arrays import get_backend
    from realrun.compute import TILE_BYTES, KernelPlan

    be = get_backend("numpy")
    model = get_model("mlp", features=64, hidden=(32,), classes=10)
    b = 16
    plan = KernelPlan(model.layers, b, "momentum", be, model.grad_bytes)
    fwd = plan.kernels("forward")
    bwd = plan.kernels("backward")
    assert sum(k.flops for k in fwd) == pytest.approx(b * 2 * model.multiply_adds)
    weighted = [lay for lay in model.layers if lay.params]
    assert sum(k.flops for k in bwd) == pytest.approx(b * sum(lay.bwd_flops for lay in weighted))
    # an fc GEMM moves the roofline's bytes but the bias (4 * out, < 1% here); weight-free
    # layers copy exactly theirs
    for lay, ks in zip(model.layers, plan.forward):
        want = layer_time(lay, _dev(), b, "forward").nbytes
        got = sum(k.nbytes for k in ks)
        assert got == pytest.approx(want - (4 * lay.out_shape[0] if lay.params else 0.0))
    assert sum(k.nbytes for k in plan.kernels("update")) == pytest.approx(
        OPTIMIZERS["momentum"][0] * model.params, rel=1e-3)
    acc = plan.kernels("accumulate", nbytes=4096.0)
    assert sum(k.nbytes for k in acc) == pytest.approx(3 * 4096.0)
    assert plan.kernels("backward", layers=(0, 1)) == plan.backward[0]
    plan.run(fwd + bwd + acc)  # really runs
    # a huge layer is tiled, with the same FLOPs
    vgg = get_model("vgg16")
    big = KernelPlan(vgg.layers[-8:], 2, "sgd", be, 4.0)  # fc6 .. prob
    fc6 = next(k for ks in big.forward for k in ks if k.kind == "gemm")
    assert fc6.repeat > 1 and fc6.k * fc6.n * 4 <= TILE_BYTES
    assert fc6.flops == pytest.approx(2 * 2 * vgg.layers[-8].macs, rel=0.01)


def _dev():
    from realrun.compute import _NOMINAL

    return _NOMINAL


def test_proxy_gradient_matches_finite_differences_and_shards_partition() -> None:
    task = ProxyTask(samples=512)
    m = ProxyModel(task)
    m.forward()
    x, y, _, _ = m._cache  # the mini-batch the gradient is for
    g = m.backward()
    w0 = m.weights.astype(np.float64)

    def loss(w):
        mm = ProxyModel(task)
        mm.weights[...] = w
        return mm._xent(mm._probs(x)[1], y)

    for j in (0, 7, task.features * task.hidden + 3, g.size - 1):
        e = np.zeros_like(w0)
        e[j] = 1e-2
        num = (loss((w0 + e).astype(np.float32)) - loss((w0 - e).astype(np.float32))) / 2e-2
        assert g[j] == pytest.approx(num, rel=0.05, abs=2e-4)
    job = JobInfo(3, 1, 4.0, 1, ((0, 1, 4.0),), (0, 0, 0))
    shards = [make_math(job, r, "worker", r) for r in range(3)]
    assert sum(len(s._y) for s in shards) == len(dataset(ProxyTask())[1])
    assert all(np.array_equal(s.weights, shards[0].weights) for s in shards)


def test_bsp_with_math_trains_when_driven_by_hand() -> None:
    """The algorithm's math alone (no MPI): the loss falls and the replicas stay equal."""
    job = JobInfo(2, 60, 4.0, 3, ((2, 3, 1.0), (1, 2, 1.0), (0, 1, 2.0)), (0, 0), seed=3)
    for params in ({"strategy": "ring", "exchange": "gradients", "every": 1, "overlap": False,
                    "fp16": False},
                   {"strategy": "ring", "exchange": "gradients", "every": 1, "overlap": True,
                    "fp16": False},
                   {"strategy": "ring", "exchange": "weights", "every": 3, "overlap": False,
                    "fp16": False}):
        maths = lockstep_bsp(job, params)
        start = ProxyModel(ProxyTask(seed=3)).loss()
        assert maths[0].loss() < 0.6 * start, params
        assert maths[0].digest() != ProxyModel(ProxyTask(seed=3)).digest()
        if params["exchange"] == "gradients" or job.iterations % params["every"] == 0:
            assert maths[0].digest() == maths[1].digest(), params


def test_importing_the_training_backend_does_not_initialise_mpi() -> None:
    code = ("import sys, realrun.train, realrun.trainmain, realrun.interpreter, realrun.p2p, "
            "realrun.opcollectives, realrun.compute, clustersim.trace_metrics, "
            "clustersim.commands.run_real, clustersim.algorithms.proxy; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mpi4py', 'cupy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_bad_input_is_refused_before_anything_starts(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default --out is relative: nothing may appear here
    bsp = str(SCENARIOS / "real_bsp_mlp.yaml")
    assert main(["run", bsp]) == 2  # --real is required
    assert main(["run", "--real", str(tmp_path / "missing.yaml")]) == 2
    assert main(["run", "--real", bsp, "--np", "3", "--workers", "2"]) == 2  # np = workers
    assert main(["run", "--real", bsp, "--algorithm", "nope"]) == 2
    assert main(["run", "--real", bsp, "--set", "run.iterations=0"]) == 2
    assert main(["run", "--real", str(SCENARIOS / "real_async_ps.yaml"), "--np", "1"]) == 2
    assert list(tmp_path.iterdir()) == []


# -- MPI -------------------------------------------------------------------------------------------
@pytest.mark.mpi
@pytest.mark.parametrize("name", REAL)
def test_real_scenario_runs_and_its_ops_join_the_simulated_ones(name: str,
                                                                tmp_path: Path) -> None:
    path = SCENARIOS / f"{name}.yaml"
    res = run_scenario(path, np=2, out_dir=tmp_path, timeout=120)
    setup = prepare(path, np=2)
    predicted, sim = simulate_point(setup.scenario, setup.algorithm, setup.workers,
                                    setup.scenario.run.seed, trace=True)
    # one trace per rank, header says what ran
    assert [p.name for p in res.traces] == ["trace.rank0.jsonl", "trace.rank1.jsonl"]
    head, _ = read_jsonl(res.traces[-1])
    assert head["backend"] == "real" and head["world"] == 2 and head["scenario"] == name
    # same operations as the simulator, per actor, iteration, kind and label
    keep = lambda k: k not in TIMELESS_SKIP  # noqa: E731
    assert _ops(res.events, keep) == _ops(sim.events, keep)
    # every receive the simulator saw blocking happened here too
    real_recv, sim_recv = _ops(res.events, {"recv"}.__contains__), _ops(sim.events,
                                                                        {"recv"}.__contains__)
    assert all(real_recv[k] >= v for k, v in sim_recv.items())
    m = res.metrics
    # bytes are fixed by the algorithm: exactly the simulator's
    assert m.bytes_per_iteration == pytest.approx(predicted.bytes_per_iteration)
    assert m.workers == predicted.workers and m.iteration_time > 0
    # the trace-derived counters cover the iteration: only the harness's gaps are missing
    worker_sum = m.compute + m.comm + m.wait
    assert 0.7 * m.iteration_time < worker_sum <= m.iteration_time * (1 + 1e-9)
    # metrics are a pure function of the files on disk
    from realrun.api import load_traces

    _, again = load_traces(tmp_path)
    scn = setup.scenario
    assert measured_metrics(again, algorithm=m.algorithm, batch=[setup.batch] * setup.workers,
                            warmup=scn.run.warmup, iterations=scn.run.iterations) == m
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["metrics"]["iteration_time"] == m.iteration_time
    assert json.loads((tmp_path / "trace.chrome.json").read_text())["traceEvents"]
    if predicted.staleness_mean is not None:  # one worker: never stale, as predicted
        assert m.staleness_mean == predicted.staleness_mean == 0.0
        updates = [e for e in res.events if e.kind == "record" and e.label == "update"]
        assert len(updates) == len([e for e in sim.events
                                    if e.kind == "record" and e.label == "update"])
    _no_strays(tmp_path)


@pytest.mark.mpi
def test_bsp_on_two_ranks_really_trains_like_the_lockstep_reference(tmp_path: Path) -> None:
    res = run_scenario(SCENARIOS / "real_bsp_mlp.yaml", np=2, iterations=40, out_dir=tmp_path,
                       timeout=120, math=True)
    a, b = res.math
    assert a["digest"] == b["digest"]  # replicas bit-identical
    assert a["loss_end"] < 0.6 * a["loss_start"] and a["steps"] == 40
    losses = [e.value for e in res.events if e.actor == 0 and e.label == "loss"]
    assert len(losses) == 40 and np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5])
    # MPI's sum of two fp32 vectors is the sum the hand-driven algorithm computes: the same bits
    setup = prepare(SCENARIOS / "real_bsp_mlp.yaml", np=2, iterations=40)
    ref = lockstep_bsp(setup.job)
    real = np.load(tmp_path / "math.rank0.npy")
    assert np.array_equal(real, ref[0].weights)
    _no_strays(tmp_path)


@pytest.mark.mpi
def test_four_ranks_our_schedules_overlapped_buckets_keep_replicas_identical(
        tmp_path: Path) -> None:
    sets = ["algorithm.overlap=true", "workload.bucket=0"]  # one bucket per layer
    res = run_scenario(SCENARIOS / "real_bsp_mlp.yaml", workers=4, iterations=12, sets=sets,
                       out_dir=tmp_path, timeout=180, math=True, collectives="schedules")
    assert len({r["digest"] for r in res.math}) == 1
    colls = [e for e in res.events if e.kind == "allreduce"]
    assert colls and all(e.meta["path"] == "schedule" and e.meta["algorithm"] == "ring"
                         and e.meta["nb"] for e in colls)
    setup = prepare(SCENARIOS / "real_bsp_mlp.yaml", workers=4, iterations=12, sets=sets)
    assert len(setup.job.buckets) == 3
    ref = lockstep_bsp(setup.job)
    # the ring sums in another order than the reference: equal to fp32 rounding
    np.testing.assert_allclose(np.load(tmp_path / "math.rank2.npy"), ref[2].weights,
                               rtol=1e-4, atol=1e-6)
    _no_strays(tmp_path)


@pytest.mark.mpi
def test_a_killed_rank_is_named_and_its_partial_trace_kept(tmp_path: Path) -> None:
    with pytest.raises(RealRunError) as exc:
        run_scenario(SCENARIOS / "real_bsp_mlp.yaml", np=2, out_dir=tmp_path, timeout=60,
                     env={"REALRUN_FAULT": "kill:1:3"})
    err = exc.value
    assert err.kind == "failed" and err.rank == 1
    assert err.log == tmp_path.resolve() / "logs" / "rank1.err"
    assert "rank 1 was killed by signal 9 (SIGKILL)" in str(err) and str(err.log) in str(err)
    _, events = read_jsonl(tmp_path / "trace.rank1.jsonl")
    done = sorted({e.iteration for e in events if e.kind == "allreduce"})
    assert done == [0, 1, 2]  # everything before the fault was flushed
    _no_strays(tmp_path)


@pytest.mark.mpi
def test_cli_exit_codes_of_real_runs(tmp_path: Path, capsys, monkeypatch) -> None:
    scn = str(SCENARIOS / "real_async_easgd.yaml")
    out = tmp_path / "ok"
    # a bare name is the shipped scenario, as in predict (it was "file not found")
    assert main(["run", "--real", "real_async_easgd", "--iterations", "8", "--out", str(out),
                 "--json", str(tmp_path / "r.json")]) == 0
    text = capsys.readouterr().out
    assert "measured" in text and "predicted" in text
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["np"] == 2 and data["metrics"]["iteration_time"] > 0
    assert data["predicted"]["bytes_per_iteration"] == pytest.approx(
        data["metrics"]["bytes_per_iteration"])
    monkeypatch.setenv("REALRUN_FAULT", "raise:0:2")
    bad = tmp_path / "bad"
    assert main(["run", "--real", scn, "--out", str(bad), "--timeout", "60"]) == 1
    err = capsys.readouterr().err
    assert "rank 0 failed" in err and "rank0.err" in err and "partial traces" in err
    assert (bad / "trace.rank0.jsonl").exists()
    _no_strays(bad)
    assert math.isfinite(data["metrics"]["comm_share"])
