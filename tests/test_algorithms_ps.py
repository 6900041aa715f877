"""Parameter servers: schedules by hand, closed forms, staleness, saturation, determinism.

Closed form of one asynchronous PS worker alone on a crossbar (B bytes/s per link direction,
latency l per hop, no software overhead): an iteration is
``forward + backward + (2l + n/B) + server step + (2l + n/B)`` - push, apply, pull.
"""

from __future__ import annotations

import copy

import pytest

from clustersim.algorithms.base import ActorContext, JobInfo, get_algorithm
from clustersim.algorithms.ops import (
    Compute,
    Message,
    Record,
    Recv,
    Send,
    Wait,
    drive,
)
from clustersim.algorithms.ps import (
    TAG_PULL,
    TAG_PUSH,
    VersionClock,
    async_server,
    ps_worker,
    sync_server,
)
from clustersim.catalog import builtin_catalog
from clustersim.scenario.schema import parse_scenario
from clustersim.sim.costs import CostModel
from clustersim.sim.sweep import place_actors, simulate_point

B = 10e9 / 8
LAT = 1e-6
TOY = {"name": "toy", "params": 2_000_000, "fwd_flops": 4e9, "split": 8}
GRAD = 8_000_000.0  # toy model: 2 M fp32 parameters

BASE = {
    "name": "t",
    "platform": {"topology": "star", "hosts": 12, "device": "v100",
                 "link": {"bandwidth": "10 Gb/s", "latency": "1 us"}},
    "network": {"overhead": "0 us", "efficiency": 1.0},
    "workload": {"model": TOY, "batch_per_worker": 32},
    "algorithm": {"name": "async_sgd"},
    "sweep": {"workers": [1]},
    "run": {"iterations": 6, "warmup": 1},
}


def scenario(algorithm, **changes):
    raw = copy.deepcopy(BASE)
    raw["algorithm"] = algorithm if isinstance(algorithm, dict) else {"name": algorithm}
    raw.update(changes)
    return parse_scenario(raw)


def job(workers=2, iterations=3, **params):
    return JobInfo(workers=workers, iterations=iterations, grad_bytes=GRAD, num_layers=8,
                   buckets=((0, 8, GRAD),), hosts=tuple(range(workers)), params=params)


def ctx(rank, role="worker", **kw):
    return ActorContext(rank, role, job(**kw), index=rank)


# -- schedules by hand ------------------------------------------------------------------------
def test_worker_pushes_to_every_shard_then_pulls_each():
    ops = drive(ps_worker((2, 3), GRAD / 2, 1)(ctx(0, iterations=2)),
                lambda op: Message(op.src, TAG_PULL, GRAD / 2) if isinstance(op, Recv) else None)
    per_it = ops[:8]
    assert per_it[0] == Record("iteration", 0)
    assert [op.phase for op in per_it[1:3]] == ["forward", "backward"]
    sends = per_it[3:5]
    assert [(s.dst, s.nbytes, s.tag, s.blocking) for s in sends] == [
        (2, GRAD / 2, TAG_PUSH, False), (3, GRAD / 2, TAG_PUSH, False)]
    assert isinstance(per_it[5], Wait)
    assert [(r.src, r.tag) for r in per_it[6:8]] == [(2, TAG_PULL), (3, TAG_PULL)]
    assert len(ops) == 16 and ops[8] == Record("iteration", 1)


def test_worker_with_tau_steps_locally_and_pushes_every_tau():
    ops = drive(ps_worker((1,), GRAD, 2)(ctx(0, workers=1, iterations=4)),
                lambda op: Message(1, TAG_PULL, GRAD) if isinstance(op, Recv) else None)
    pushes = [i for i, op in enumerate(ops) if isinstance(op, Send)]
    its = [i for i, op in enumerate(ops) if isinstance(op, Record)]
    # pushes after iterations 1 and 3 only (every tau=2 steps); a local step every iteration
    assert len(pushes) == 2 and its[1] < pushes[0] < its[2] and pushes[1] > its[3]
    assert sum(1 for op in ops if isinstance(op, Compute) and op.phase == "update") == 4


def _serve(body, sources):
    """Drive a server, answering its Recvs with pushes from ``sources`` in order."""
    feed = iter(sources)
    return drive(body(ctx(9, "server")),
                 lambda op: Message(next(feed), TAG_PUSH, 1.0) if isinstance(op, Recv) else None)


def test_locked_async_server_applies_then_answers_fifo():
    ops = _serve(async_server((0, 1), 2, 100.0, "accumulate"), [0, 1, 1, 0])
    kinds = [type(op).__name__ if not isinstance(op, Record) else op.key for op in ops]
    # first push: recv, staleness, apply, update, answer (no previous answer to wait for)
    assert kinds[:5] == ["Recv", "staleness", "Compute", "update", "Send"]
    sends = [op for op in ops if isinstance(op, Send)]
    assert [(s.dst, s.nbytes, s.tag) for s in sends] == [(0, 100.0, TAG_PULL), (1, 100.0, TAG_PULL),
                                                        (1, 100.0, TAG_PULL), (0, 100.0, TAG_PULL)]
    assert all(op.phase == "accumulate" and op.nbytes == 100.0
               for op in ops if isinstance(op, Compute))
    # versions: 0 | 1 - 0 | 2 - 2 (1 read v2 after its push) | 3 - 1
    assert [op.value for op in ops if isinstance(op, Record) and op.key == "staleness"] == \
        [0, 1, 0, 2]
    assert isinstance(ops[-1], Wait) and len(ops[-1].handles) == 2  # ends cleanly


def test_lock_free_server_answers_before_applying():
    ops = _serve(async_server((0,), 3, 100.0, "accumulate", lock_free=True), [0, 0, 0])
    first = [type(op).__name__ for op in ops[:4]]
    assert first == ["Recv", "Record", "Send", "Compute"]
    # one worker alone still misses its own last update: staleness 0, then 1
    assert [op.value for op in ops if isinstance(op, Record) and op.key == "staleness"] == \
        [0, 1, 1]


def test_sync_server_sums_all_then_steps_once_and_answers_all():
    ops = _serve(sync_server((0, 1, 2), 2, 50.0), [2, 0, 1, 1, 2, 0])
    phases = [op.phase for op in ops if isinstance(op, Compute)]
    assert phases == ["accumulate"] * 3 + ["update"] + ["accumulate"] * 3 + ["update"]
    sends = [op for op in ops if isinstance(op, Send)]
    assert [s.dst for s in sends] == [0, 1, 2, 0, 1, 2]
    assert all(not s.blocking and s.nbytes == 50.0 for s in sends)
    assert {op.value for op in ops if isinstance(op, Record) and op.key == "staleness"} == {0}


def test_version_clock_lag():
    c = VersionClock(lag=1)
    assert c.staleness(7) == 0
    c.applied()
    c.replied(7)          # reply 0 at version 1
    c.applied()
    c.applied()
    assert c.staleness(7) == 3   # push 1 still computed on the initial weights (lag 1)
    c.replied(7)          # reply 1 at version 3
    c.applied()
    assert c.staleness(7) == 4 - 1  # push 2 computed on reply 0 (version 1)


def test_actor_layout_and_placement():
    defn = get_algorithm("async_sgd")
    actors = defn.actors(job(workers=3, shards=2, tau=1))
    assert [(a.rank, a.role, a.index) for a in actors] == [
        (0, "worker", 0), (1, "worker", 1), (2, "worker", 2), (3, "server", 0), (4, "server", 1)]
    assert place_actors(3, 2, 12) == [0, 1, 2, 3, 4]
    assert place_actors(3, 2, 3) == [0, 1, 2, 0, 1]  # full platform: shared with workers


# -- end to end: closed forms ---------------------------------------------------------------
def _parts(scn):
    cm = CostModel(scn, 32, 0)
    prof = cm.profile(0)
    return prof, cm


@pytest.mark.parametrize("name,phase", [("async_sgd", "accumulate"), ("async_msgd", "update"),
                                        ("sync_ps", None)])
def test_single_worker_iteration_is_compute_push_apply_pull(name, phase):
    scn = scenario(name)
    prof, cm = _parts(scn)
    hop = 2 * LAT + GRAD / B
    if phase is None:  # sync: sum the one push, then one optimizer step
        server = (cm.base_time(Compute("accumulate", nbytes=GRAD), 1)
                  + cm.base_time(Compute("update", nbytes=GRAD), 1))
    else:
        server = cm.base_time(Compute(phase, nbytes=GRAD), 1)
    m, _ = simulate_point(scn, scn.algorithm, 1, 0)
    expect = prof.forward_time + prof.backward_time + hop + server + hop
    assert m.iteration_time == pytest.approx(expect, rel=1e-6)
    assert m.comm == pytest.approx(hop, rel=1e-6)          # the blocking push
    assert m.wait == pytest.approx(server + hop, rel=1e-6)  # waiting for the answer
    assert m.bytes_per_iteration == pytest.approx(GRAD)
    assert m.staleness_max == 0


def test_hogwild_single_worker_does_not_wait_for_the_update():
    scn = scenario("hogwild_sgd")
    prof, _ = _parts(scn)
    hop = 2 * LAT + GRAD / B
    m, _ = simulate_point(scn, scn.algorithm, 1, 0)
    assert m.iteration_time == pytest.approx(prof.forward_time + prof.backward_time + 2 * hop,
                                             rel=1e-6)
    assert m.staleness_max == 1


def test_sharded_push_splits_the_bytes_but_not_the_workers_link():
    """Four shards on four links: each applies a quarter of the bytes, but the worker's own
    link still carries all of them (its four pushes share it), so the transfer time is the
    unsharded one and only the server step shrinks."""
    scn = scenario({"name": "async_sgd", "shards": 4})
    prof, cm = _parts(scn)
    hop = 2 * LAT + GRAD / B
    m, run = simulate_point(scn, scn.algorithm, 1, 0)
    expect = (prof.forward_time + prof.backward_time + 2 * hop
              + cm.base_time(Compute("accumulate", nbytes=GRAD / 4), 1))
    assert m.iteration_time == pytest.approx(expect, rel=1e-6)
    servers = [a for a in run.actors if a.role == "server"]
    assert len(servers) == 4 and all(len(a.records["update"]) == 6 for a in servers)


# -- staleness --------------------------------------------------------------------------------
def test_staleness_zero_when_synchronous_positive_when_asynchronous():
    sync, _ = simulate_point(scenario("sync_ps", sweep={"workers": [4]}),
                             scenario("sync_ps").algorithm, 4, 0)
    assert sync.staleness_max == 0 and sync.staleness_mean == 0
    for name in ("async_sgd", "async_msgd", "hogwild_sgd"):
        scn = scenario(name, sweep={"workers": [4]})
        m, _ = simulate_point(scn, scn.algorithm, 4, 0)
        assert m.staleness_mean > 0
        # FIFO with identical workers: every other worker's push lands between read and write
        assert m.staleness_max <= 4


# -- incast and saturation ----------------------------------------------------------------------
def _cluster(workers: int, servers: int) -> dict:
    """Explicit crossbar: V100 workers, then slow-memory server machines (so the servers take
    the devices right after the workers), 12.5 GB/s links."""
    nodes = [{"name": f"w{i}", "device": "v100", "host": i} for i in range(workers)]
    nodes += [{"name": f"s{j}", "host": workers + j,
               "device": {"like": "xeon6248", "name": "psbox", "mem_bw": "10 GB/s"}}
              for j in range(servers)]
    nodes.append({"name": "sw", "kind": "switch"})
    links = [[n["name"], "sw"] for n in nodes[:-1]]
    return {"topology": "explicit", "nodes": nodes, "links": links, "link": "ib_edr"}


def _saturation(workers: int, shards: int):
    raw = copy.deepcopy(BASE)
    raw["platform"] = _cluster(workers, 4)
    raw["workload"] = {"model": "resnet50", "batch_per_worker": 32}
    raw["algorithm"] = {"name": "async_sgd", "shards": shards}
    raw["sweep"] = {"workers": [workers]}
    raw["run"] = {"iterations": 12, "warmup": 2}
    scn = parse_scenario(raw)
    m, _ = simulate_point(scn, scn.algorithm, workers, 0)
    return m, CostModel(scn, 32, 0), scn


def test_one_shard_saturates_and_more_shards_relieve_it():
    """The server machine applies a push in t_apply (memory-bound, 10 GB/s): one shard absorbs
    at most one push per t_apply, i.e. batch / t_apply samples/s, whatever the worker count."""
    one = [_saturation(w, 1) for w in (1, 4, 16)]
    m1, cm, scn = one[0]
    n = cm.grad_bytes
    t_apply = cm.base_time(Compute("accumulate", nbytes=n), 1)  # device 1: the first server
    assert scn.platform.spec(1).name == "psbox"
    prof = cm.profile(0)
    link = scn.platform.capacity.max()
    hop = builtin_catalog().link("ib_edr").latency  # the explicit platform's link class
    cycle = prof.forward_time + prof.backward_time + 2 * (2 * hop + n / link) + t_apply
    assert m1.iteration_time == pytest.approx(cycle, rel=1e-6)
    assert m1.server_utilization == pytest.approx(t_apply / cycle, rel=0.05)
    utils = [m.server_utilization for m, _, _ in one]
    assert utils == sorted(utils) and utils[-1] > 0.95
    thr = [m.throughput for m, _, _ in one]
    assert thr[1] == pytest.approx(4 * thr[0], rel=0.01)  # slack: linear
    cap = 32 / t_apply
    assert thr[2] == pytest.approx(cap, rel=0.01)       # saturated: the server's rate
    assert thr[2] < 4 * thr[1] / 2
    # four shards: a quarter of the bytes each, on four machines -> about four times the cap
    four, _, _ = _saturation(16, 4)
    assert four.throughput == pytest.approx(4 * cap, rel=0.05)
    # each of the four is as busy over the measured steps: 16 workers are its saturation
    # point (the old "less busy" came from dividing by the whole run: QA 11 F1)
    assert four.saturation_workers == pytest.approx(16, rel=0.02)
    assert four.server_utilization == pytest.approx(1.0, abs=0.02)


def test_incast_pushes_share_the_server_link():
    """Workers pushing at the same instant share the server's ingress link (max-min fair):
    each push takes w times as long as alone - measured on the first iteration's push."""
    for w in (2, 4):
        scn = scenario("async_sgd", sweep={"workers": [w]}, run={"iterations": 1, "warmup": 0})
        _, run = simulate_point(scn, scn.algorithm, w, 0)
        for a in run.actors[:w]:
            assert a.comm == pytest.approx(2 * LAT + w * GRAD / B, rel=1e-9)


# -- determinism -----------------------------------------------------------------------------
def test_same_seed_same_metrics_other_seed_differs_with_jitter():
    raw = copy.deepcopy(BASE)
    raw["workload"] = dict(raw["workload"], jitter=0.2)
    raw["sweep"] = {"workers": [4]}
    scn = parse_scenario(raw)
    a, _ = simulate_point(scn, scn.algorithm, 4, 3)
    b, _ = simulate_point(scn, scn.algorithm, 4, 3)
    c, _ = simulate_point(scn, scn.algorithm, 4, 4)
    assert a.to_dict() == b.to_dict()
    assert a.iteration_time != c.iteration_time


def test_shards_have_an_upper_bound() -> None:
    """5,000 shards was accepted, wrapped onto the workers' devices, and made one 17-worker
    point take 13 s instead of 0.05 s: a typo, refused with the bound."""
    from clustersim.algorithms.base import get_algorithm
    from clustersim.errors import InputError

    for name in ("async_sgd", "sync_ps", "hybrid"):
        with pytest.raises(InputError, match="<= 1024"):
            get_algorithm(name).resolve_params({"shards": 5000})
