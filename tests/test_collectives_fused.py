"""NCCL's reduce-copy: a ``fused_reduce`` schedule's reduction overlaps its transfers.

Why: NCCL's kernels reduce each FIFO slot while copying it, so a step costs
max(transfer, reduction); MPI libraries reduce a message after it has arrived, so their steps
cost the sum.  Closed forms on the uniform crossbar of test_collectives_cost (alpha = 2 l,
bandwidth B, reduction bandwidth R), for the NCCL ring with and without the flag, in the
reduction-hidden (R > B) and the reduction-bound (R < B) regime, analytic and flow alike.
"""

from __future__ import annotations

import dataclasses

import pytest
from test_collectives_cost import DEV, LINK, A, B, N, R, close, platform

from clustersim.collectives import build_schedule
from clustersim.network.analytic import cost_schedule
from clustersim.network.flowsim import simulate_schedule
from clustersim.platform.builders import star

#: a device whose reduction (R / 20 = 5 GB/s) is slower than the link (B = 10 GB/s)
SLOW = dataclasses.replace(DEV, name="slowreduce", mem_bw=DEV.mem_bw / 20)
R_SLOW = SLOW.reduce_bw


def _with_flag(s, fused: bool):
    return dataclasses.replace(s, meta={**s.meta, "fused_reduce": fused})


def _ring(p: int, fused: bool):
    return _with_flag(build_schedule("allreduce", "nccl_ring", p, N), fused)


def test_only_nccl_schedules_fuse_the_reduction():
    for alg in ("nccl_ring", "nccl_ring_ll", "nccl_ring_ll128", "nccl_tree", "nccl"):
        assert build_schedule("allreduce", alg, 8, N).fused_reduce, alg
    for alg in ("ring", "rabenseifner_mpich", "ring_segmented", "double_binary_tree", "mpich",
                "openmpi", "horovod_hierarchical"):
        kw = {"hosts": [r // 2 for r in range(8)]} if alg == "horovod_hierarchical" else {}
        assert not build_schedule("allreduce", alg, 8, N, **kw).fused_reduce, alg


@pytest.mark.parametrize("p", [2, 3, 8, 13])
def test_nccl_ring_with_and_without_fusion(p):
    step = A + N / (p * B)                       # one ring step's copy (2 channels share a link)
    red = N / (p * R)                            # one reduce-scatter step's reduction
    assert R > B
    unfused = cost_schedule(_ring(p, False), platform(p))
    close(unfused.time, 2 * (p - 1) * step + (p - 1) * red)
    close(unfused.reduce, (p - 1) * red)
    fused = cost_schedule(_ring(p, True), platform(p))
    close(fused.time, 2 * (p - 1) * step)
    assert fused.reduce == 0.0


@pytest.mark.parametrize("p", [2, 3, 8])
def test_fused_reduction_longer_than_the_copy_shows_its_excess(p):
    plat = star(p, SLOW, LINK)
    step, red = A + N / (p * B), N / (p * R_SLOW)
    assert red > step
    fused = cost_schedule(_ring(p, True), plat)
    close(fused.time, (p - 1) * red + (p - 1) * step)   # reduce-scatter steps: max = red
    close(fused.reduce, (p - 1) * (red - step))
    close(cost_schedule(_ring(p, False), plat).time, (p - 1) * (red + 2 * step))


@pytest.mark.parametrize("slow", [False, True])
@pytest.mark.parametrize("fused", [False, True])
def test_flow_model_charges_the_reduction_like_the_analytic_one(fused, slow):
    p = 5
    plat = star(p, SLOW if slow else DEV, LINK)
    s = _ring(p, fused)
    a, f = cost_schedule(s, plat), simulate_schedule(s, plat)
    close(f.time, a.time)
    close(f.reduce, a.reduce)
    assert f.step_times == pytest.approx(a.step_times, rel=1e-9)
