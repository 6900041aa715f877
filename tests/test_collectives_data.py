"""Every schedule computes its collective: run it on integer vectors and compare.

The executor (:mod:`clustersim.collectives.verify`) follows the schedule contract literally -
segments of unequal size, chunk shifts of repeated steps, snapshot reads, deferred writes - so
these tests check both the algorithms and the contract the MPI executor relies on.
"""

from __future__ import annotations

import numpy as np
import pytest

from clustersim.collectives import build_schedule, list_algorithms
from clustersim.collectives.schedule import Schedule, Step, Transfer
from clustersim.collectives.verify import ScheduleError, check_schedule, execute

P = [1, 2, 3, 4, 5, 7, 8, 13, 16, 64]
ROOTED = {"broadcast", "reduce", "gather", "scatter"}


def _cases():
    for op, algs in list_algorithms().items():
        for alg in algs:
            if alg in ("copper", "user_tree", "hierarchical", "horovod_hierarchical"):
                continue                        # own tests below
            for p in P:
                if op in ("p2p", "ps_push", "ps_pull") and p < 2:
                    continue
                yield op, alg, p


@pytest.mark.parametrize(("op", "alg", "p"), list(_cases()))
def test_schedule_computes_its_collective(op, alg, p):
    roots = [0, p - 1, p // 2] if op in ROOTED or alg == "binomial_tree" else [0]
    for root in dict.fromkeys(roots):
        check_schedule(build_schedule(op, alg, p, 1e6, root=root), seed=p)


@pytest.mark.parametrize(("op", "alg"), [("allreduce", "ring"), ("allreduce", "rabenseifner"),
                                         ("allreduce", "double_binary_tree"),
                                         ("reduce_scatter", "recursive_halving"),
                                         ("alltoall", "pairwise"), ("gather", "binomial"),
                                         ("broadcast", "scatter_allgather")])
@pytest.mark.parametrize("p", [3, 8, 13])
def test_fp16_schedules_compute_the_same(op, alg, p):
    check_schedule(build_schedule(op, alg, p, 1e6, fp16=True, root=p - 1))


@pytest.mark.parametrize("p", [2, 3, 5, 8, 13, 64])
@pytest.mark.parametrize("chunks", [1, 2, 7, 33])
def test_pipelines_for_any_chunk_count(p, chunks):
    check_schedule(build_schedule("allreduce", "double_binary_tree", p, 1e6, chunks=chunks))
    check_schedule(build_schedule("broadcast", "pipelined_chain", p, 1e6, chunks=chunks,
                                  root=p // 3))


def test_more_segments_than_elements():
    # 64 chunks per tree = 128 segments, over 10 elements: most segments are empty
    check_schedule(build_schedule("allreduce", "double_binary_tree", 8, 1e9, chunks=64),
                   elements=10)
    check_schedule(build_schedule("allreduce", "ring", 64, 1e6), elements=7)


HOSTS = [
    [0, 0, 0, 1, 1, 2, 2, 2, 2],            # uneven hosts
    [0, 1, 0, 1, 2, 2, 0, 3],               # ranks of a host not contiguous
    [5, 5, 5, 5, 3, 3, 3, 3],               # arbitrary host ids
    [r // 4 for r in range(16)],
    [0] * 5,                                # one host: no inter stage
    list(range(6)),                          # one rank per host: no intra stage
]


@pytest.mark.parametrize("hosts", HOSTS)
@pytest.mark.parametrize("inter", ["ring", "recursive_doubling", "rabenseifner",
                                   "binomial_tree", "double_binary_tree", "asa", "asa16"])
def test_hierarchical(hosts, inter):
    check_schedule(build_schedule("allreduce", "hierarchical", len(hosts), 1e6, hosts=hosts,
                                  inter=inter))


def test_hierarchical_with_copper_between_four_hosts():
    hosts = [r // 2 for r in range(8)]
    check_schedule(build_schedule("allreduce", "hierarchical", 8, 1e6, hosts=hosts,
                                  inter="copper"))


@pytest.mark.parametrize("p", [2, 4, 8, 16])
def test_copper(p):
    check_schedule(build_schedule("allreduce", "copper", p, 1e6))


@pytest.mark.parametrize("tree", [
    [[(1, 0)], [(2, 0)], [(0, 1), (0, 2)]],                     # star reduce + copies
    [[(0, 1)], [(1, 2)], [(2, 0), (2, 1)]],                      # chain
    [[(1, 0), (2, 3), (4, 3)], [(0, 3), (3, 0)], [(0, 1), (3, 2), (3, 4)]],
])
def test_user_trees(tree):
    p = 1 + max(max(pair) for stage in tree for pair in stage)
    check_schedule(build_schedule("allreduce", "user_tree", p, 1e6, tree=tree))


@pytest.mark.parametrize("servers", [[0], [3], [1, 4], [0, 2, 5]])
def test_parameter_server_shards(servers):
    for op in ("ps_push", "ps_pull"):
        check_schedule(build_schedule(op, "direct", 7, 1e6, root=servers))


# -- the executor itself must catch wrong schedules -------------------------------------------
def _sched(steps, segments=1, op="allreduce", p=2):
    return Schedule(op, "handmade", p, 8.0, tuple(steps), segments=segments)


def test_executor_rejects_incomplete_allreduce():
    half = _sched([Step((Transfer(0, 1, 8.0, True),))])      # rank 0 never gets the sum
    with pytest.raises(ScheduleError, match="rank 0"):
        check_schedule(half)


def test_executor_rejects_conflicting_writes():
    s = Schedule("allreduce", "handmade", 3, 8.0, (
        Step((Transfer(0, 2, 8.0, True), Transfer(1, 2, 8.0, False))),), segments=1)
    with pytest.raises(ScheduleError, match="overwritten"):
        execute(s, [np.ones(4)] * 3)


def test_executor_reads_snapshots():
    # an exchange in one step: both read the values from before the step
    s = _sched([Step((Transfer(0, 1, 8.0, True), Transfer(1, 0, 8.0, True)))])
    out = execute(s, [np.array([1.0]), np.array([10.0])])
    assert out[0][0] == out[1][0] == 11.0


def test_executor_applies_chunk_shift():
    # a ring on 3 ranks with the wrong shift direction must fail
    good = build_schedule("allreduce", "ring", 3, 6.0)
    check_schedule(good)
    bad_steps = tuple(Step(s.transfers, s.repeat, s.label, -s.chunk_shift) for s in good.steps)
    bad = Schedule("allreduce", "ring", 3, 6.0, bad_steps, segments=3)
    with pytest.raises(ScheduleError):
        check_schedule(bad)
