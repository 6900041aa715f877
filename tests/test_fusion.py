"""Framework gradient exchange (workload.fusion): Horovod tensor fusion and DDP buckets give
the closed-form number of collectives per iteration."""

from __future__ import annotations

import math

import pytest

from clustersim.algorithms.base import ActorContext, get_algorithm
from clustersim.algorithms.bsp import bsp_worker
from clustersim.algorithms.ops import Collective, Record, drive
from clustersim.errors import InputError
from clustersim.scenario.schema import parse_scenario
from clustersim.sim.costs import CostModel
from clustersim.sim.sweep import build_job
from clustersim.workload.fusion import horovod_buffers

MIB = 1024 * 1024


def scenario(fusion=None, model="alexnet", strategy="ring", bucket=None):
    wl = {"model": model, "batch_per_worker": 32}
    if fusion is not None:
        wl["fusion"] = fusion
    if bucket is not None:
        wl["bucket"] = bucket
    return parse_scenario({
        "platform": {"topology": "star", "hosts": 4, "device": "v100", "link": "eth25g"},
        "workload": wl,
        # overlap needs buckets: with one (whole) it is refused (test_input_qa18)
        "algorithm": {"name": "bsp", "strategy": strategy, "overlap": fusion != "whole"},
        "sweep": {"workers": [4]},
        "run": {"iterations": 3, "warmup": 1},
    })


def tensors(scn):
    """Gradient sizes and ready times in backward order (layers with parameters)."""
    prof = CostModel(scn, 32, 0).profile(0)
    return [(s.grad_bytes, s.end) for s in prof.backward if s.grad_bytes > 0]


def collectives_per_iteration(scn):
    costs = CostModel(scn, 32, 0)
    alg = scn.algorithm
    job = build_job(scn, alg, get_algorithm(alg.name), 4, 0, costs)
    ops = drive(bsp_worker(ActorContext(0, "worker", job)), lambda op: None)
    marks = [i for i, op in enumerate(ops) if isinstance(op, Record) and op.key == "iteration"]
    first = ops[marks[0]:marks[1]]
    return sum(isinstance(op, Collective) and op.op == "allreduce" for op in first), job


def greedy_count(sizes, threshold):
    """Closed form: pack in order, a new buffer when the next tensor would overflow."""
    count, fill = 0, None
    for n in sizes:
        if fill is None or fill + n > threshold:
            count, fill = count + 1, n
        else:
            fill += n
    return count


def test_threshold_above_model_and_no_cycle_is_one_allreduce():
    scn = scenario({"mode": "horovod", "threshold": "1 GiB", "cycle_time": 0})
    n, job = collectives_per_iteration(scn)
    assert n == 1
    assert job.buckets[0][2] == pytest.approx(sum(b for b, _ in tensors(scn)))


def test_threshold_below_every_tensor_is_per_tensor():
    scn = scenario({"mode": "horovod", "threshold": 1, "cycle_time": 0})
    n, _ = collectives_per_iteration(scn)
    assert n == len(tensors(scn))
    assert n == collectives_per_iteration(scenario("per_tensor"))[0]


@pytest.mark.parametrize("threshold", [4 * MIB, 16 * MIB, 64 * MIB, 100 * MIB])
def test_horovod_buffer_count_is_the_closed_form(threshold):
    scn = scenario({"mode": "horovod", "threshold": threshold, "cycle_time": 0})
    sizes = [b for b, _ in tensors(scn)]
    n, job = collectives_per_iteration(scn)
    assert n == greedy_count(sizes, threshold)
    assert sum(b for *_, b in job.buckets) == pytest.approx(sum(sizes))
    assert all(b <= threshold or b in sizes for *_, b in job.buckets)  # big ones go alone


def test_horovod_cycle_splits_by_wakeup():
    scn = scenario({"mode": "horovod", "threshold": "1 GiB", "cycle_time": "1 ms"})
    ticks = [math.ceil(end / 1e-3) for _, end in tensors(scn)]
    n, _ = collectives_per_iteration(scn)
    assert n == len(set(ticks)) > 1


def test_ddp_bucket_count():
    scn = scenario({"mode": "ddp"})  # 25 MiB, first bucket 1 MiB
    sizes = [b for b, _ in tensors(scn)]
    want, fill, limit = 0, 0, 1 * MIB
    for b in sizes:
        fill += b
        if fill >= limit:
            want, fill, limit = want + 1, 0, 25 * MIB
    want += fill > 0
    n, _ = collectives_per_iteration(scn)
    assert n == want
    assert n == collectives_per_iteration(
        scenario({"mode": "ddp", "bucket_cap": 25 * MIB, "first_bucket": 1 * MIB}))[0]


def test_whole_is_one_allreduce():
    assert collectives_per_iteration(scenario("whole"))[0] == 1


def test_horovod_buffers_unit():
    from clustersim.workload.compute import BackwardStep
    steps = [BackwardStep(f"l{i}", "fc", 1e-3, i * 1e-3, (i + 1) * 1e-3, 10, "compute")
             for i in range(6)]
    assert [b.nbytes for b in horovod_buffers(steps, 25, 0)] == [20, 20, 20]
    assert len(horovod_buffers(steps, 1000, 2.5e-3)) == 3  # wake-ups at 2.5, 5, 7.5 ms


@pytest.mark.parametrize("fusion, where", [
    ({"mode": "horovd"}, "did you mean 'horovod'"),
    ({"mode": "ddp", "threshold": "1 MiB"}, "does not apply to fusion mode 'ddp'"),
    ({"mode": "horovod", "cycle_time": "-1 ms"}, "cycle_time"),
    ({"mode": "horovod", "thresold": 1}, "did you mean 'threshold'"),
])
def test_bad_fusion(fusion, where):
    with pytest.raises(InputError, match=where) as exc:
        scenario(fusion)
    assert "workload.fusion" in str(exc.value)


def test_bucket_and_fusion_together_is_an_error():
    with pytest.raises(InputError, match="not both"):
        scenario("ddp", bucket="25 MiB")
