"""Theano-MPI's asa32/asa16 run per tensor with Open MPI 1.8's schedules: per tensor, one
alltoall by pairwise exchange (p-1 rounds, the sum as pieces land) and one ring allgather."""

from __future__ import annotations

from clustersim.algorithms.base import ActorContext, get_algorithm
from clustersim.algorithms.bsp import bsp_worker
from clustersim.algorithms.ops import Collective, Record, drive
from clustersim.collectives.registry import build_schedule
from clustersim.scenario.schema import parse_scenario
from clustersim.sim.costs import CostModel
from clustersim.sim.sweep import build_job


def _ops(strategy, bucket=0):
    scn = parse_scenario({
        "platform": {"file": "theano_mpi_k80"},
        "network": {"efficiency": 0.42, "overhead": "10 us"},
        "workload": {"model": "alexnet", "batch_per_worker": 128, "bucket": bucket},
        "algorithm": {"name": "bsp", "strategy": strategy},
        "sweep": {"workers": [8]},
        "run": {"iterations": 2, "warmup": 1},
    })
    costs = CostModel(scn, 128, 0)
    job = build_job(scn, scn.algorithm, get_algorithm("bsp"), 8, 0, costs)
    ops = drive(bsp_worker(ActorContext(0, "worker", job)), lambda op: None)
    marks = [i for i, op in enumerate(ops) if isinstance(op, Record) and op.key == "iteration"]
    first = ops[marks[0]:marks[1]]
    prof = costs.profile(0)
    return [op for op in first if isinstance(op, Collective)], prof


def test_asa_issues_one_alltoall_and_one_allgather_per_tensor():
    for strategy, fp16 in (("asa32", False), ("asa16", True)):
        colls, prof = _ops(strategy)
        tensors = [s.grad_bytes for s in prof.backward if s.grad_bytes > 0]
        assert len(colls) == len(tensors)
        assert [c.nbytes for c in colls] == tensors  # backward order, one per tensor
        assert {(c.op, c.algorithm, c.fp16) for c in colls} == {("allreduce", "asa_ompi", fp16)}
        sched = build_schedule("allreduce", "asa_ompi", 8, tensors[0])
        labels = [s.label for s in sched.steps]
        assert labels == [f"pairwise reduce {k}" for k in range(1, 8)] + ["ring allgather"]
        assert sched.steps[-1].repeat == 7
        assert all(len(s.transfers) == 8 for s in sched.steps)  # one message per rank/round


def test_direct_asa_is_still_reachable():
    colls, _ = _ops("asa32_direct")
    assert {c.algorithm for c in colls} == {"asa"}
