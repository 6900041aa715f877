"""Open MPI's reduce schedules (collectives/ompi_reduce.py) and 4.1's reduce table.

Shapes from the definitions in Open MPI's coll_base_topo.c (its comment draws the in-order
binary tree of 9 ranks); costs are closed forms on the uniform crossbar of
test_collectives_cost (alpha = 2 l, bandwidth B, reduction bandwidth R; a rank receiving k
buffers in one step shares its link k ways and adds k buffers); data by running every schedule.
SimGrid's SMPI ports agree too (``python bench/bench_simgrid.py --platforms crossbar16 --ops
reduce``; docs/fidelity.md).
"""

from __future__ import annotations

import math

import pytest
from test_collectives_cost import A, B, N, R, close, cost

from clustersim.collectives import build_schedule
from clustersim.collectives.ompi_reduce import binary_tree_parents, in_order_bintree_parents
from clustersim.collectives.verify import check_schedule

ALGS = ["ompi_linear", "ompi_chain", "ompi_binary", "ompi_in_order_binary", "ompi_rabenseifner",
        "mpich_reduce_scatter_gather"]


@pytest.mark.parametrize("alg", ALGS)
@pytest.mark.parametrize("p", [2, 3, 5, 6, 7, 8, 12, 13, 16, 33])
def test_every_schedule_leaves_the_sum_at_the_root(alg, p):
    for root in sorted({0, 1, p // 2, p - 1}):
        check_schedule(build_schedule("reduce", alg, p, 4.0 * 1024, root=root))


def test_binary_tree_is_level_order_shifted_by_the_root():
    # shifted rank s on level L (levels of 1, 2, 4 ranks) has children s + 2^L, s + 2^(L+1)
    assert binary_tree_parents(7, 0) == [None, 0, 0, 1, 2, 1, 2]
    # rooted at 2: every rank shifted by 2 (mod 7)
    assert binary_tree_parents(7, 2) == [3, 4, None, 2, 2, 3, 4]


def test_in_order_binary_tree_of_nine_ranks():
    # coll_base_topo.c draws it: 8 -> (7, 3); 7 -> (6, 5); 3 -> (2, 1); 5 -> 4; 1 -> 0
    assert in_order_bintree_parents(9) == [1, 3, 3, 8, 5, 7, 7, 8, None]
    assert in_order_bintree_parents(2) == [1, None]


@pytest.mark.parametrize("p", [2, 3, 5, 8, 16])
def test_linear_and_chain_costs(p):
    # linear: the root's p-1 blocking receives, one after another; chain: p-1 hops
    close(cost("reduce", "ompi_linear", p), (p - 1) * (A + N / B + N / R))
    close(cost("reduce", "ompi_chain", p), (p - 1) * (A + N / B + N / R))


@pytest.mark.parametrize("p", [3, 7, 15])
def test_full_binary_trees_cost_their_height(p):
    height = int(math.log2(p + 1)) - 1      # every parent adds two children per round
    want = height * (A + 2 * N / B + 2 * N / R)
    close(cost("reduce", "ompi_binary", p), want)
    close(cost("reduce", "ompi_in_order_binary", p, root=p - 1), want)
    # another root: rank p-1 sends it the result
    close(cost("reduce", "ompi_in_order_binary", p, root=0), want + A + N / B)


@pytest.mark.parametrize("p", [2, 4, 8, 16])
def test_rabenseifner_reduce_power_of_two(p):
    k = int(math.log2(p))
    # halving moves (1 - 1/p) N and adds it; the gather moves (1 - 1/p) N again
    want = 2 * k * A + 2 * (1 - 1 / p) * N / B + (1 - 1 / p) * N / R
    close(cost("reduce", "ompi_rabenseifner", p), want)


@pytest.mark.parametrize(("root", "extra"), [(0, 0), (1, 1), (5, 0)])
def test_rabenseifner_reduce_folds_extra_ranks(root, extra):
    p, p2 = 6, 4
    k = 2
    fold = (A + N / 2 / B + N / 2 / R) + (A + N / 2 / B)     # swap halves, return one half
    core = 2 * k * A + 2 * (1 - 1 / p2) * N / B + (1 - 1 / p2) * N / R
    # an odd root among the folded ranks is handed core rank 0's block first
    want = fold + core + extra * (A + N / p2 / B)
    close(cost("reduce", "ompi_rabenseifner", p, root=root), want)


@pytest.mark.parametrize("p", [4, 6, 13])
def test_mpich_reduce_scatter_gather_folds_whole_buffers(p):
    p2 = 1 << (p.bit_length() - 1)
    k = int(math.log2(p2))
    fold = (A + N / B + N / R) if p != p2 else 0.0      # the odd rank's whole buffer, added
    want = fold + 2 * k * A + 2 * (1 - 1 / p2) * N / B + (1 - 1 / p2) * N / R
    close(cost("reduce", "mpich_reduce_scatter_gather", p), want)
    # MPICH picks it above REDUCE_SHORT_MSG_SIZE (2048 B) with count >= pof2
    assert build_schedule("reduce", "mpich", p, 2052).algorithm == "mpich→reduce_scatter_gather"
    assert build_schedule("reduce", "mpich", p, 2048).algorithm == "mpich→binomial"


def test_rabenseifner_with_fewer_elements_than_ranks_is_linear():
    s = build_schedule("reduce", "ompi_rabenseifner", 8, 16.0)     # 4 floats < 8
    assert s.meta["fallback"] == "basic_linear" and len(s.steps) == 7


@pytest.mark.parametrize(("p", "n", "want"), [
    # Open MPI 4.1.8 reduce table, commutative operations, total bytes
    (3, 4, "rabenseifner→basic_linear"),   # count < pof2: coll_base_reduce.c falls back
    (3, 12, "binary"),
    (3, 20, "pipeline(=chain, unsegmented)"),
    (3, 1000, "basic_linear"),
    (3, 300e3, "pipeline(=chain, unsegmented)"),
    (3, 600e3, "chain"),
    (6, 4095, "binary"),
    (6, 4096, "chain"),
    (6, 100e3, "binomial"),
    (6, 300e3, "basic_linear"),
    (6, 4e6, "basic_linear"),
    (12, 8191, "binary"),
    (12, 8192, "binomial"),
    (300, 10e3, "in-order_binary"),
    (3000, 600, "in-order_binary"),
    (5000, 20, "in-order_binary"),
    (5000, 1e8, "binomial"),
])
def test_openmpi_41_reduce_table(p, n, want):
    assert build_schedule("reduce", "openmpi", p, n).algorithm == f"openmpi→{want}"
    # 4.0's rules differ: a pipeline with segments, costed as binomial
    assert build_schedule("reduce", "openmpi-4.0", 16, 1e8).algorithm == \
        "openmpi-4.0→pipeline≈binomial"
