"""Schedule contract, byte accounting, op-level factors and input errors of the collectives API."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clustersim.collectives import (
    OPS,
    build_schedule,
    copper_tree,
    describe_algorithm,
    list_algorithms,
)
from clustersim.collectives.dbt import double_binary_tree
from clustersim.collectives.schedule import (
    Schedule,
    Step,
    Transfer,
    chunk_indices,
    segment_bounds,
    shift_chunk,
)
from clustersim.errors import InputError

N = 1e6


# -- compactness and the repeat/shift contract ------------------------------------------------
def test_ring_on_4253_ranks_is_two_steps():
    p = 4253
    s = build_schedule("allreduce", "ring", p, 100e6)
    assert len(s.steps) == 2
    assert [st.repeat for st in s.steps] == [p - 1, p - 1]
    assert [st.chunk_shift for st in s.steps] == [-1, -1]
    assert s.num_steps == 2 * (p - 1)
    assert s.num_transfers() == 2 * (p - 1) * p
    assert s.segments == p
    s.validate()


def test_ring_occurrences_shift_chunks():
    p = 5
    s = build_schedule("allreduce", "ring", p, N)
    rs = s.steps[0]
    for k in range(p - 1):
        occ = rs.occurrence(k, s.segments)
        for t in occ:
            assert t.dst == (t.src + 1) % p
            assert t.chunk == ((t.src - k) % p, (t.src - k) % p + 1)
    expanded = list(s.expanded())
    assert len(expanded) == s.num_steps
    assert all(e.repeat == 1 for e in expanded)
    assert expanded[3].transfers == rs.occurrence(3, p)
    with pytest.raises(IndexError):
        rs.occurrence(p - 1, p)


def test_shift_and_wrapping_chunks():
    assert shift_chunk((3, 5), 2, 6) == (5, 7)          # wraps past the end: segments 5, 0
    assert shift_chunk((0, 1), -1, 6) == (5, 6)
    b = segment_bounds(10, 4)
    assert b.tolist() == [0, 2, 5, 7, 10]
    assert chunk_indices((1, 3), b) == slice(2, 7)
    assert chunk_indices((3, 5), b).tolist() == [7, 8, 9, 0, 1]
    assert chunk_indices(None, b) == slice(0, 10)


def test_transfer_defaults_stay_compatible():
    t = Transfer(0, 1, 10.0)
    assert (t.reduce, t.chunk, t.dst_chunk) == (False, None, None)
    st = Step((t,), repeat=3)
    assert st.chunk_shift == 0 and st.reduce_bytes() == {}
    s = Schedule("p2p", "x", 2, 10.0, (st,))
    assert (s.segments, s.inplace, s.fp16) == (1, True, False)
    assert list(s.expanded())[1].transfers == (t,)
    s.validate()


def test_validate_catches_inconsistent_transfers():
    ok = Transfer(0, 1, 5.0, False, (0, 1))
    Schedule("p2p", "x", 2, 10.0, (Step((ok,)),), segments=2).validate()
    for bad in (Transfer(0, 1, 6.0, False, (0, 1)),       # wrong bytes for one segment
                Transfer(0, 1, 5.0, False, (2, 3)),       # chunk out of range
                Transfer(0, 0, 5.0, False, (0, 1)),       # self-transfer
                Transfer(0, 1, 5.0, False, (0, 1), (0, 2))):  # dst width differs
        with pytest.raises(ValueError):
            Schedule("p2p", "x", 2, 10.0, (Step((bad,)),), segments=2).validate()


@pytest.mark.parametrize(("op", "alg"), [(o, a) for o, algs in list_algorithms().items()
                                         for a in algs if a not in ("user_tree",)])
def test_every_schedule_validates_and_is_deterministic(op, alg):
    p = 8
    kw = {"hosts": [r // 2 for r in range(p)]} if "hierarchical" in alg else {}
    a = build_schedule(op, alg, p, N, root=3, **kw)
    b = build_schedule(op, alg, p, N, root=3, **kw)
    a.validate()
    assert a == b
    # a library selector names the schedule "library→choice"
    assert a.op == op and a.ranks == p
    assert a.algorithm == alg or a.algorithm.split("→")[0] in (alg, "mpich")
    assert sum(a.bytes_sent().values()) == pytest.approx(sum(a.bytes_received().values()))


# -- byte accounting ------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2, 3, 5, 8, 13, 16])
def test_bytes_sent_per_rank(p):
    def sent(op, alg, **kw):
        d = build_schedule(op, alg, p, N, **kw).bytes_sent()
        return [d.get(r, 0.0) for r in range(p)]

    share = (p - 1) / p * N
    for alg in ("ring", "asa"):
        assert sent("allreduce", alg) == pytest.approx([2 * share] * p)
    assert sent("allreduce", "ring", fp16=True) == pytest.approx([share] * p)
    assert sent("reduce_scatter", "ring") == pytest.approx([share] * p)
    assert sent("reduce_scatter", "pairwise") == pytest.approx([share] * p)
    assert sent("allgather", "ring") == pytest.approx([share] * p)
    assert sent("alltoall", "pairwise") == pytest.approx([share] * p)
    # trees: every non-root sends the whole buffer up once and every edge carries it down once
    assert sum(sent("allreduce", "binomial_tree")) == pytest.approx(2 * (p - 1) * N)
    assert sum(sent("allreduce", "double_binary_tree")) == pytest.approx(2 * (p - 1) * N)
    assert sum(sent("broadcast", "binomial")) == pytest.approx((p - 1) * N)
    assert sum(sent("broadcast", "pipelined_chain")) == pytest.approx((p - 1) * N)
    if p & (p - 1) == 0:
        assert sent("allreduce", "rabenseifner") == pytest.approx([2 * share] * p)
        assert sent("allreduce", "recursive_doubling") == pytest.approx([math.log2(p) * N] * p)
        assert sent("reduce_scatter", "recursive_halving") == pytest.approx([share] * p)
        assert sent("allgather", "recursive_doubling") == pytest.approx([share] * p)
        assert sent("gather", "binomial")[0] == 0.0      # the root only receives


@pytest.mark.parametrize("p", [4, 8, 16, 13])
def test_binomial_gather_moves_each_block_once_per_level(p):
    # block of virtual rank v climbs one level per set bit of v: total = sum popcount(v) blocks
    d = build_schedule("gather", "binomial", p, N).bytes_sent()
    assert sum(d.values()) == pytest.approx(N / p * sum(bin(v).count("1") for v in range(p)))


def test_double_binary_tree_shapes():
    for p in (2, 3, 4, 5, 8, 13, 14, 64, 100):
        t0, t1 = double_binary_tree(p)
        for t in (t0, t1):
            assert sum(1 for x in t.parent if x < 0) == 1
            assert max(len(t.children(r)) for r in range(p)) <= 2
            assert t.height[t.root] == (int(math.log2(p - 1)) + 1 if p > 1 else 0)
        inner0 = {x for x in t0.parent if x >= 0}
        inner1 = {x for x in t1.parent if x >= 0}
        both = inner0 & inner1
        # complementary: no rank is an inner node of both trees (odd p: rank 0 may be)
        assert (both == set()) if p % 2 == 0 else (both <= {0})
        assert all(r % 2 == 1 for r in range(1, p) if r not in inner0)   # leaves: odd ranks
    t0, t1 = double_binary_tree(8)
    assert t0.parent == (-1, 2, 4, 2, 0, 6, 4, 6)          # 0 -> 4 -> (2, 6) -> odd leaves
    assert t1.parent == tuple(7 - x if x >= 0 else -1 for x in t0.parent[::-1])   # mirror


# -- op-level factors -----------------------------------------------------------------------------
@pytest.mark.parametrize("p", [1, 2, 8, 13])
def test_busbw_factors_follow_nccl_tests(p):
    f = {op: build_schedule(op, list_algorithms(op)[op][0], p, N).busbw_factor
         for op in OPS if op not in ("p2p", "ps_push", "ps_pull")}
    assert f["allreduce"] == pytest.approx(2 * (p - 1) / p)
    for op in ("reduce_scatter", "allgather", "alltoall", "gather", "scatter"):
        assert f[op] == pytest.approx((p - 1) / p)
    for op in ("broadcast", "reduce"):
        assert f[op] == 1.0
    if p >= 2:
        assert build_schedule("p2p", "direct", p, N).busbw_factor == 1.0


def test_fp16_conversion_bytes():
    p = 4
    assert build_schedule("allreduce", "ring", p, N).convert_bytes == 0.0
    s = build_schedule("allreduce", "ring", p, N, fp16=True)
    assert (s.fp16, s.convert_bytes, s.wire_bytes) == (True, 2 * N, N / 2)
    assert build_schedule("allreduce", "asa16", p, N).convert_bytes == 2 * N
    assert build_schedule("reduce_scatter", "ring", p, N, fp16=True).convert_bytes == N + N / p
    assert build_schedule("allgather", "ring", p, N, fp16=True).convert_bytes == N + N / p
    assert build_schedule("broadcast", "binomial", p, N, fp16=True).convert_bytes == N
    sched = build_schedule("allreduce", "hierarchical", p, N, hosts=[0, 0, 1, 1], inter="asa16")
    assert sched.fp16 and sched.convert_bytes == 2 * N


def test_default_chunks_follow_512k_slots():
    s = build_schedule("allreduce", "double_binary_tree", 8, 64 * 2**20)
    assert s.meta["chunks"] == 64                    # 32 MiB per tree / 512 KiB
    assert s.segments == 128
    assert build_schedule("allreduce", "double_binary_tree", 8, 1000).meta["chunks"] == 1
    assert build_schedule("allreduce", "double_binary_tree", 8, 1e12).meta["chunks"] == 1024
    assert build_schedule("broadcast", "pipelined_chain", 8, 1e12).meta["chunks"] == 64
    assert build_schedule("allreduce", "double_binary_tree", 8, 1e9, chunks=3).meta[
        "chunks"] == 3


# -- copper and user trees ---------------------------------------------------------------------
def test_copper_matches_theano_mpi():
    # Exch_copper in uoguelph-mlrg/Theano-MPI lib/base/exchanger_strategy.py
    assert copper_tree(2) == [[(0, 1), (1, 0)]]
    assert copper_tree(4) == [[(1, 0), (3, 2)], [(0, 2), (2, 0)], [(0, 1), (2, 3)]]
    assert copper_tree(8) == [[(1, 0), (3, 2), (5, 4), (7, 6)], [(0, 2), (4, 6)],
                              [(2, 6), (6, 2)], [(2, 0), (6, 4)],
                              [(0, 1), (2, 3), (4, 5), (6, 7)]]
    s = build_schedule("allreduce", "copper", 4, N)
    assert [[t.reduce for t in st.transfers] for st in s.steps] == [
        [True, True], [True, True], [False, False]]


@pytest.mark.parametrize(("tree", "match"), [
    ([[(1, 0)], [(0, 1), (1, 0)]], "twice"),                     # 1 already has 0's data
    ([[(1, 0)]], "lacks"),                                       # rank 1 never gets the sum
    ([[(1, 0), (1, 0)]], "overlapping"),
    ([[(1, 0)], [(0, 1), (2, 1)]], "overwritten"),
    ([[(0, 3)]], "different ranks"),
    ([[(0, 0)]], "different ranks"),
    ([[0, 1]], "pair"),
    ([], "non-empty"),
    ([[]], "non-empty"),
])
def test_user_tree_errors(tree, match):
    with pytest.raises(InputError, match=match) as e:
        build_schedule("allreduce", "user_tree", 3, N, tree=tree)
    assert e.value.path[0] == "tree"


# -- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize(("call", "match", "path"), [
    (lambda: build_schedule("allreduc", "ring", 4, N), "did you mean 'allreduce'", "op"),
    (lambda: build_schedule("allreduce", "rign", 4, N), "did you mean 'ring'", "algorithm"),
    (lambda: build_schedule("allreduce", "ring", 0, N), ">= 1", "ranks"),
    (lambda: build_schedule("allreduce", "ring", 2.5, N), "integer", "ranks"),
    (lambda: build_schedule("allreduce", "ring", 4, -1.0), ">= 0", "nbytes"),
    (lambda: build_schedule("allreduce", "ring", 4, float("nan")), "finite", "nbytes"),
    (lambda: build_schedule("broadcast", "binomial", 4, N, root=4), "root 4", "root"),
    (lambda: build_schedule("allreduce", "double_binary_tree", 4, N, chunks=0), ">= 1",
     "chunks"),
    (lambda: build_schedule("allreduce", "hierarchical", 4, N), "needs hosts", "hosts"),
    (lambda: build_schedule("allreduce", "hierarchical", 4, N, hosts=[0, 1]), "expected 4",
     "hosts"),
    (lambda: build_schedule("allreduce", "hierarchical", 4, N, hosts=[0, 0, 1, 1],
                            inter="rign"), "did you mean 'ring'", "inter"),
    (lambda: build_schedule("allreduce", "hierarchical", 4, N, hosts=[0, 0, 1, 1],
                            inter="hierarchical"), "inter-host", "inter"),
    (lambda: build_schedule("allreduce", "copper", 6, N), "2, 4, 8", "ranks"),
    (lambda: build_schedule("allreduce", "user_tree", 4, N), "needs tree", "tree"),
    (lambda: build_schedule("p2p", "direct", 1, N), "at least 2", "ranks"),
    (lambda: build_schedule("ps_push", "direct", 2, N, root=[0, 1]), "no worker", "root"),
    (lambda: build_schedule("ps_push", "direct", 4, N, root=[0, 7]), "not in 0..3", "root"),
    (lambda: build_schedule("ps_pull", "direct", 4, N, root=[1, 1]), "twice", "root"),
    (lambda: build_schedule("allreduce", "asa", 2000, N), "at most 1024", "ranks"),
    (lambda: list_algorithms("gathr"), "did you mean 'gather'", "op"),
    (lambda: describe_algorithm("broadcast", "chain"), "pipelined_chain", "algorithm"),
])
def test_bad_input_names_field_and_choices(call, match, path):
    with pytest.raises(InputError, match=match) as e:
        call()
    assert e.value.path[0] == path


def test_unknown_algorithm_lists_the_allowed_ones():
    with pytest.raises(InputError) as e:
        build_schedule("reduce_scatter", "tree", 4, N)
    msg = str(e.value)
    for name in ("ring", "recursive_halving", "pairwise"):
        assert name in msg


def test_listing_and_descriptions():
    algs = list_algorithms()
    assert set(algs) == set(OPS) == {"allreduce", "broadcast", "reduce", "reduce_scatter",
                                     "allgather", "alltoall", "p2p", "gather", "scatter",
                                     "ps_push", "ps_pull"}
    assert {"ring", "nccl", "recursive_doubling", "rabenseifner", "binomial_tree",
            "double_binary_tree", "hierarchical", "asa", "asa16", "copper",
            "user_tree"} <= set(algs["allreduce"])
    assert list_algorithms("broadcast")["broadcast"][:3] == ["binomial", "scatter_allgather",
                                                             "pipelined_chain"]
    assert {"mpich", "openmpi", "nccl", "auto"} <= set(list_algorithms("broadcast")["broadcast"])
    for op, names in algs.items():
        for a in names:
            d = describe_algorithm(op, a)
            assert d and "\n" not in d
    assert "NCCL" in describe_algorithm("allreduce", "nccl")


def test_nccl_is_now_the_selector_and_theano_nccl_stays_the_ring():
    # "nccl" used to be an alias of the ring; it is now NCCL's own choice (issue 13).  The
    # Theano-MPI strategies nccl32/nccl16 (NCCL 1.x: rings only) keep the plain ring.
    from clustersim.algorithms.bsp import STRATEGIES

    assert build_schedule("allreduce", "nccl", 6, N).algorithm.startswith("nccl→")
    assert STRATEGIES["nccl32"][0] == STRATEGIES["nccl16"][0] == "ring"


def test_hosts_are_ignored_where_not_needed():
    a = build_schedule("allreduce", "ring", 4, N, hosts=[0, 0, 1, 1])
    assert a == build_schedule("allreduce", "ring", 4, N)


def test_execution_order_of_pipeline_steps_is_consecutive():
    # pipeline phases: every occurrence moves every chunk of every stream exactly once
    s = build_schedule("broadcast", "pipelined_chain", 6, N, chunks=4)
    seen: dict[tuple[int, int], list[int]] = {}
    for st in s.expanded():
        for t in st.transfers:
            seen.setdefault((t.src, t.dst), []).append(t.chunk[0])
    assert all(v == [0, 1, 2, 3] for v in seen.values()) and len(seen) == 5
    assert np.isclose(sum(s.bytes_sent().values()), 5 * N)


def test_numpy_numbers_are_accepted():
    s = build_schedule("allreduce", "ring", np.int64(6), np.float32(1e6), root=np.int32(2))
    assert s.ranks == 6 and type(s.ranks) is int and s.nbytes == pytest.approx(1e6)
    with pytest.raises(InputError, match="integer"):
        build_schedule("allreduce", "ring", True, N)
