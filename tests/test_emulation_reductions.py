"""Collectives in the simulator return real reductions, member by member (checked against
numpy), in blocking and non-blocking form, and cost nothing extra without data."""

from __future__ import annotations

from dataclasses import replace
from functools import reduce

import numpy as np
import pytest
from _emulation import scenario

from clustersim.algorithms.base import ActorSpec, get_algorithm
from clustersim.algorithms.ops import (
    AllGather,
    AllReduce,
    Barrier,
    Broadcast,
    Collective,
    Reduce,
    ReduceScatter,
    Wait,
)
from clustersim.scenario.schema import AlgorithmSpec
from clustersim.sim.engine import Engine
from clustersim.sim.sweep import prepare_point

P = 4
N = 10  # not a multiple of P: uneven pieces for reduce_scatter and alltoall


def _data(rank: int) -> np.ndarray:
    return np.random.default_rng([7, rank]).standard_normal(N).astype(np.float32)


def _run(make_ops, blocking: bool = True) -> list[list]:
    """Every actor yields ``make_ops(rank)`` and keeps what each returns."""
    scn = scenario({}, P, "bsp")
    params = {k: p.default for k, p in get_algorithm("bsp").params.items()}
    scn, job, _, placement, costs = prepare_point(scn, AlgorithmSpec("bsp", params), P, 0)
    got: list[list] = [[] for _ in range(P)]

    def body(ctx):
        for op in make_ops(ctx.rank):
            if blocking:
                got[ctx.rank].append((yield op))
            else:
                h = yield replace(op, blocking=False)
                got[ctx.rank].append((yield Wait([h]))[0])

    actors = [ActorSpec(r, "worker", r, body) for r in range(P)]
    Engine(scn.platform, job, actors, placement, costs, params=scn.network).run()
    return got


@pytest.mark.parametrize("blocking", [True, False])
def test_every_collective_returns_its_numpy_result(blocking: bool) -> None:
    data = [_data(r) for r in range(P)]
    root = 2
    got = _run(lambda r: [AllReduce(4 * N, data=data[r]), Reduce(4 * N, root=root, data=data[r]),
                          Broadcast(4 * N, root=root, data=data[r]),
                          AllGather(4 * N, data=data[r]), ReduceScatter(4 * N, data=data[r]),
                          Collective("alltoall", 4 * N, data=data[r]), Barrier()], blocking)
    total = reduce(lambda a, b: a + b, data)  # left to right, in rank order, float32
    pieces = np.array_split(total, P)
    for r in range(P):
        allreduce, red, bcast, gather, rs, a2a, bar = got[r]
        assert allreduce.dtype == np.float32 and allreduce.tobytes() == total.tobytes()
        if r == root:
            assert red.tobytes() == total.tobytes()
        else:
            assert red is None
        assert bcast.tobytes() == data[root].tobytes()
        assert gather.tobytes() == np.concatenate(data).tobytes()
        assert rs.tobytes() == pieces[r].tobytes()
        assert a2a.tobytes() == np.concatenate([np.array_split(d, P)[r] for d in data]).tobytes()
        assert bar is None
    # every member has its own array: changing one result changes no other member's
    got[0][0][...] = 0
    assert got[1][0].tobytes() == total.tobytes()


def test_without_data_every_member_gets_none() -> None:
    got = _run(lambda r: [AllReduce(4 * N), Broadcast(4 * N), AllGather(4 * N)])
    assert got == [[None, None, None]] * P
