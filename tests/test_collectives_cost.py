"""Closed-form costs of every collective algorithm on a uniform crossbar.

Platform: ``star`` with one link class of bandwidth B and latency l per device, so a message
crosses two hops: alpha = 2 l.  Reductions cost bytes / R with R = DeviceSpec.reduce_bw.
Each formula below is the textbook cost of the algorithm (Thakur, Rabenseifner, Gropp 2005;
Patarasuk & Yuan 2009; Sanders et al. 2009), written independently of the builders, and the
analytic coster must reproduce it to 1e-9 relative for every rank count in P.
"""

from __future__ import annotations

import math

import pytest

from clustersim.catalog import DeviceSpec, LinkSpec
from clustersim.collectives import build_schedule, copper_tree
from clustersim.network.analytic import convert_time, cost_schedule
from clustersim.platform.builders import star

P = [2, 3, 4, 5, 7, 8, 13, 16, 64]
B = 10e9                    # bytes/s per link direction
LAT = 1.5e-6                # per hop
A = 2 * LAT                 # alpha: device -> switch -> device
N = 64e6                    # bytes
DEV = DeviceSpec("test", peak=1e13, mem_bw=300e9, memory=16e9, mem_efficiency=1.0)
R = DEV.reduce_bw           # 1e11 bytes/s
LINK = LinkSpec("test", bandwidth=B, latency=LAT)
_PLATFORMS: dict[int, object] = {}


def platform(p: int):
    if p not in _PLATFORMS:
        _PLATFORMS[p] = star(p, DEV, LINK)
    return _PLATFORMS[p]


def cost(op: str, alg: str, p: int, n: float = N, **kw) -> float:
    return cost_schedule(build_schedule(op, alg, p, n, **kw), platform(p)).time


def log2c(p: int) -> int:
    return math.ceil(math.log2(p))


def pow2(p: int) -> int:
    return 1 << (p.bit_length() - 1)


def fold_terms(p: int) -> tuple[int, int, int]:
    """(p', rem, 1 if folded else 0)."""
    pf = pow2(p)
    return pf, p - pf, int(p != pf)


def masks(pf: int) -> list[int]:
    return [1 << k for k in range(pf.bit_length() - 1)]


def close(got: float, want: float) -> None:
    assert got == pytest.approx(want, rel=1e-9), (got, want)


# -- allreduce -------------------------------------------------------------------------------
@pytest.mark.parametrize("p", P)
@pytest.mark.parametrize("alg", ["ring"])
def test_ring_allreduce(p, alg):
    want = 2 * (p - 1) * (A + N / (p * B)) + (p - 1) * (N / p) / R
    close(cost("allreduce", alg, p), want)


@pytest.mark.parametrize("p", P)
def test_recursive_doubling_allreduce(p):
    pf, _, f = fold_terms(p)
    k = int(math.log2(pf))
    # fold: one whole-buffer reduce step before, one copy step after
    want = k * (A + N / B + N / R) + f * (A + N / B + N / R) + f * (A + N / B)
    close(cost("allreduce", "recursive_doubling", p), want)


@pytest.mark.parametrize("p", P)
def test_rabenseifner_allreduce(p):
    pf, _, f = fold_terms(p)
    k = int(math.log2(pf))
    core = 2 * k * A + 2 * (pf - 1) / pf * N / B + (pf - 1) / pf * N / R
    want = core + f * (A + N / B + N / R) + f * (A + N / B)
    close(cost("allreduce", "rabenseifner", p), want)


@pytest.mark.parametrize("p", P)
@pytest.mark.parametrize("root", [0, 1])
def test_binomial_allreduce(p, root):
    L = log2c(p)
    close(cost("allreduce", "binomial_tree", p, root=root), 2 * L * (A + N / B) + L * N / R)


@pytest.mark.parametrize("p", P)
def test_asa(p):
    # one step of p-1 concurrent messages per link each way, twice
    want = 2 * A + 2 * (p - 1) / p * N / B + (p - 1) / p * N / R
    close(cost("allreduce", "asa", p), want)


@pytest.mark.parametrize("p", [2, 4, 8])
def test_asa16_halves_bytes_and_pays_conversion(p):
    h = N / 2
    conv = convert_time(platform(p), 0, 2 * N)      # cast in and out: 2N fp32 bytes
    want = 2 * A + 2 * (p - 1) / p * h / B + (p - 1) / p * h / R + conv
    close(cost("allreduce", "asa16", p), want)
    close(cost("allreduce", "asa", p, fp16=True), want)


@pytest.mark.parametrize("p", [2, 4, 8, 16])
def test_copper(p):
    k = int(math.log2(p))
    stages, reducing = 2 * k - 1, k         # pairs/socket reduces + exchange, then copies back
    assert len(copper_tree(p)) == stages
    close(cost("allreduce", "copper", p), stages * (A + N / B) + reducing * N / R)


@pytest.mark.parametrize("p", [4, 7, 8, 13, 16, 64])
@pytest.mark.parametrize("per_host", [2, 3, 4])
def test_hierarchical_ring(p, per_host):
    hosts = [r // per_host for r in range(p)]
    L = len(set(hosts))
    g = min(per_host, p)
    intra = log2c(g)
    want = (intra * (A + N / B + N / R) + intra * (A + N / B)
            + 2 * (L - 1) * (A + N / (L * B)) + (L - 1) * (N / L) / R)
    close(cost("allreduce", "hierarchical", p, hosts=hosts), want)


@pytest.mark.parametrize("p", [8, 16])
def test_hierarchical_with_recursive_doubling_inter(p):
    hosts = [r // 2 for r in range(p)]
    L = p // 2
    k = int(math.log2(L))
    want = (A + N / B + N / R) + (A + N / B) + k * (A + N / B + N / R)
    close(cost("allreduce", "hierarchical", p, hosts=hosts, inter="recursive_doubling"), want)


def test_double_binary_tree_two_ranks_exact():
    # p=2: each tree is one edge; steps 1..C-1 carry two flows per link direction
    c = 16
    m = N / (2 * c)
    want = (c + 1) * A + 2 * c * m / B + c * m / R
    close(cost("allreduce", "double_binary_tree", 2, chunks=c), want)
    close(want, (c + 1) * A + N / B + N / (2 * R))


@pytest.mark.parametrize("p", [4, 5, 8, 13, 16, 64])
def test_double_binary_tree_pipeline_bounds(p):
    c = 64
    H = int(math.log2(p - 1)) + 1             # tree height: root with one child on top
    sched = build_schedule("allreduce", "double_binary_tree", p, N, chunks=c)
    assert sched.num_steps == c + 2 * H - 1
    m = N / (2 * c)
    res = cost_schedule(sched, platform(p))
    steady = A + 4 * m / B + 2 * m / R        # 4 flows per link: parent, 2 children, other tree
    assert max(res.step_times) == pytest.approx(steady, rel=1e-9)
    n_steady = c - 2 * H + 1
    lo = n_steady * steady + (4 * H - 2) * (A + m / B)
    hi = (c + 2 * H - 1) * steady
    assert lo * (1 - 1e-9) <= res.time <= hi * (1 + 1e-9)


def test_double_binary_tree_is_bandwidth_optimal_asymptotically():
    # no latency: time -> 2n/B + n/R as chunks grow (ring: 2(p-1)/p n/B + (p-1)/p n/R)
    plat = star(16, DEV, LinkSpec("nolat", bandwidth=B, latency=0.0))
    ratios = []
    for c in (16, 64, 256, 1024):
        t = cost_schedule(build_schedule("allreduce", "double_binary_tree", 16, N, chunks=c),
                          plat).time
        ratios.append(t / (2 * N / B + N / R))
    assert all(a > b >= 1.0 for a, b in zip(ratios, ratios[1:]))
    assert ratios[1] == pytest.approx(1.0, abs=0.05)       # 7 fill steps on 64 chunks
    assert ratios[-1] == pytest.approx(1.0, abs=0.003)


# -- broadcast / reduce ------------------------------------------------------------------------
@pytest.mark.parametrize("p", P)
@pytest.mark.parametrize("root", [0, 2])
def test_binomial_broadcast_and_reduce(p, root):
    root %= p
    L = log2c(p)
    close(cost("broadcast", "binomial", p, root=root), L * (A + N / B))
    close(cost("reduce", "binomial", p, root=root), L * (A + N / B + N / R))


@pytest.mark.parametrize("p", P)
def test_scatter_allgather_broadcast(p):
    scatter = sum(A + min(m, p - m) * N / (p * B) for m in masks(2 * pow2(p)) if m < p)
    want = scatter + (p - 1) * (A + N / (p * B))
    close(cost("broadcast", "scatter_allgather", p, root=p - 1), want)
    if p == pow2(p):
        close(scatter, math.log2(p) * A + (p - 1) / p * N / B)


@pytest.mark.parametrize("p", P)
@pytest.mark.parametrize("c", [1, 8, 100])
def test_pipelined_chain(p, c):
    close(cost("broadcast", "pipelined_chain", p, chunks=c, root=1 % p),
          (c + p - 2) * (A + N / (c * B)))


# -- reduce_scatter / allgather / alltoall -------------------------------------------------------
@pytest.mark.parametrize("p", P)
def test_reduce_scatter(p):
    blk = N / p
    ring = (p - 1) * (A + blk / B + blk / R)
    close(cost("reduce_scatter", "ring", p), ring)
    close(cost("reduce_scatter", "pairwise", p), ring)
    pf, rem, f = fold_terms(p)
    core = sum(A + (m + min(m, rem)) * blk * (1 / B + 1 / R) for m in masks(pf))
    want = f * (A + N / B + N / R) + core + f * (A + blk / B)
    close(cost("reduce_scatter", "recursive_halving", p), want)
    if not f:
        close(core, math.log2(p) * A + (p - 1) / p * N * (1 / B + 1 / R))


@pytest.mark.parametrize("p", P)
def test_allgather(p):
    blk = N / p
    close(cost("allgather", "ring", p), (p - 1) * (A + blk / B))
    pf, rem, f = fold_terms(p)
    core = sum(A + (m + min(m, rem)) * blk / B for m in masks(pf))
    want = f * (A + blk / B) + core + f * (A + N / B)
    close(cost("allgather", "recursive_doubling", p), want)


@pytest.mark.parametrize("p", P)
def test_alltoall_pairwise(p):
    close(cost("alltoall", "pairwise", p), (p - 1) * (A + N / (p * B)))


# -- p2p, gather, scatter, parameter server -----------------------------------------------------
def test_p2p():
    close(cost("p2p", "direct", 2), A + N / B)
    close(cost("p2p", "direct", 5), A + N / B)


@pytest.mark.parametrize("p", P)
@pytest.mark.parametrize("op", ["gather", "scatter"])
def test_gather_scatter(p, op):
    blk = N / p
    binom = sum(A + min(m, p - m) * blk / B for m in masks(2 * pow2(p)) if m < p)
    close(cost(op, "binomial", p, root=p // 2), binom)
    close(cost(op, "linear", p, root=p // 2), A + (p - 1) * blk / B)   # root link: incast


@pytest.mark.parametrize("p", [2, 5, 8, 13, 64])
@pytest.mark.parametrize("servers", [[0], [0, 1], [1, 3, 4]])
def test_parameter_server(p, servers):
    if len(servers) >= p:
        return
    s, w = len(servers), p - len(servers)
    shard = N / s
    # every flow crosses a worker uplink (s flows) and a server downlink (w flows)
    push = A + max(w, s) * shard / B + w * shard / R
    pull = A + max(w, s) * shard / B
    close(cost("ps_push", "direct", p, root=servers), push)
    close(cost("ps_pull", "direct", p, root=servers), pull)


def test_one_rank_costs_nothing():
    for op, alg in [("allreduce", "ring"), ("allreduce", "rabenseifner"),
                    ("broadcast", "binomial"), ("allgather", "ring"),
                    ("allreduce", "double_binary_tree")]:
        assert cost(op, alg, 1) == 0.0


@pytest.mark.parametrize("reduce", [True, False])
@pytest.mark.parametrize("members", [range(6), (3, 0, 5, 1, 4, 2)])
def test_bulk_built_transfers_give_the_same_columns(members, reduce):
    """A step built by make_transfers is read into the analytic model's columns from the
    sources and destinations it was built from (collectives.plan.BULK); the columns equal
    those read off the transfer tuples one by one, dtypes included."""
    import numpy as np

    from clustersim.collectives.plan import BULK, make_transfers
    from clustersim.network import analytic

    dsts = list(members[1:]) + [members[0]]
    transfers = make_transfers(members, dsts, 1536.0, reduce, [(v, v + 1) for v in range(6)])
    assert BULK[id(transfers)][0] is transfers
    bulk = analytic._Cols(transfers)
    assert id(transfers) not in BULK  # taken out by its consumer
    plain = analytic._Cols(transfers)
    for name in ("src", "dst", "sizes", "red_dst", "red_bytes"):
        got, want = getattr(bulk, name), getattr(plain, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
