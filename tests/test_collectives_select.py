"""Library selection (mpich, openmpi, nccl, auto) and the libraries' own schedules.

Closed forms on the uniform crossbar of test_collectives_cost (alpha = 2 l, bandwidth B,
reduction bandwidth R), written from the algorithms' descriptions, not from the builders;
selector decisions just below / at each documented threshold.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from test_collectives_cost import A, B, N, R, close, cost, log2c, platform

from clustersim.catalog import builtin_catalog
from clustersim.collectives import build_schedule
from clustersim.collectives.nccl_sched import SLOT_BYTES, nccl_ring
from clustersim.collectives.plan import Plan
from clustersim.collectives.selection import Context
from clustersim.collectives.verify import check_schedule
from clustersim.errors import InputError
from clustersim.network.analytic import cost_schedule

P = [2, 3, 4, 5, 7, 8, 13, 16]


def chosen(op: str, alg: str, p: int, n: float, **kw) -> str:
    return build_schedule(op, alg, p, n, **kw).algorithm


# -- schedules: closed forms -------------------------------------------------------------------
@pytest.mark.parametrize("p", P)
def test_mpich_rabenseifner_costs_the_textbook_on_a_crossbar(p):
    close(cost("allreduce", "rabenseifner_mpich", p), cost("allreduce", "rabenseifner", p))


def _first_halving_distance(alg: str, p: int) -> int:
    s = build_schedule("allreduce", alg, p, N)
    step = next(st for st in s.steps if st.label.startswith("halving"))
    return abs(step.transfers[0].src - step.transfers[0].dst)


@pytest.mark.parametrize("p", [4, 8, 16, 64])
def test_mpich_pairs_near_ranks_first_the_textbook_far(p):
    assert _first_halving_distance("rabenseifner_mpich", p) == 1
    assert _first_halving_distance("rabenseifner", p) == p // 2
    s = build_schedule("allreduce", "rabenseifner_mpich", p, N)
    # the reduce-scatter halves the data at every step: the near exchange moves n/2
    assert s.steps[0].transfers[0].nbytes == pytest.approx(N / 2)


@pytest.mark.parametrize("p", P)
def test_bruck_allgather(p):
    want = sum(A + min(2 ** k, p - 2 ** k) * N / p / B for k in range(log2c(p)))
    close(cost("allgather", "bruck", p), want)


@pytest.mark.parametrize("p", [2, 4, 6, 8, 16])
def test_neighbor_exchange_allgather(p):
    close(cost("allgather", "neighbor_exchange", p),
          A + N / p / B + (p // 2 - 1) * (A + 2 * N / p / B))


@pytest.mark.parametrize("p", [3, 7])
def test_neighbor_exchange_is_the_ring_for_odd_p(p):
    close(cost("allgather", "neighbor_exchange", p), cost("allgather", "ring", p))


def _bit_count(p: int, k: int) -> int:
    """m_k: how many of 1..p-1 have bit k set, counted one by one."""
    return sum(1 for i in range(1, p) if i >> k & 1)


@pytest.mark.parametrize("p", P + [6, 11, 17, 64])
def test_bruck_alltoall(p):
    # ceil(log2 p) steps; step k: one message of the m_k blocks with bit k set, n/p each
    ks = range(log2c(p))
    close(cost("alltoall", "bruck", p), sum(A + _bit_count(p, k) * N / p / B for k in ks))
    s = build_schedule("alltoall", "bruck", p, N)
    assert s.num_steps == log2c(p)
    for k, st in zip(ks, s.steps):
        assert len(st.transfers) == p  # one message per rank, however many runs it packs
        assert [t.nbytes for t in st.transfers] == pytest.approx([_bit_count(p, k) * N / p] * p)


def test_bruck_alltoall_block_counts():
    # p = 6: indices 1..5 = 001 010 011 100 101 -> bit 0: 1,3,5; bit 1: 2,3; bit 2: 4,5
    assert [_bit_count(6, k) for k in range(3)] == [3, 2, 2]
    s = build_schedule("alltoall", "bruck", 6, N)
    assert [st.transfers[0].chunk for st in s.steps] == [((1, 2), (3, 4), (5, 6)), (2, 4),
                                                         (4, 6)]


@pytest.mark.parametrize("p", range(2, 18))
def test_bruck_alltoall_data(p):
    for fp16 in (False, True):
        check_schedule(build_schedule("alltoall", "bruck", p, 1e6, fp16=fp16), seed=p)


def test_bruck_alltoall_needs_its_final_mirror():
    import dataclasses

    from clustersim.collectives.verify import ScheduleError

    s = build_schedule("alltoall", "bruck", 5, 1e6)
    with pytest.raises(ScheduleError):
        check_schedule(dataclasses.replace(s, mirror=False))


@pytest.mark.parametrize("p", P)
def test_direct_alltoall(p):
    close(cost("alltoall", "direct", p), A + (p - 1) * N / p / B)


@pytest.mark.parametrize("p", P)
def test_segmented_ring(p):
    ph = math.ceil(N / p / 2 ** 20)
    want = (ph * (p - 1) * (A + N / (p * ph * B)) + (p - 1) * N / p / R
            + (p - 1) * (A + N / (p * B)))
    close(cost("allreduce", "ring_segmented", p), want)


@pytest.mark.parametrize("p", [4, 8, 16])
def test_scatter_recursive_doubling_bcast(p):
    k = int(math.log2(p))
    close(cost("broadcast", "scatter_rd_allgather", p), 2 * k * A + 2 * (p - 1) * N / p / B)


@pytest.mark.parametrize("p", P)
@pytest.mark.parametrize(("proto", "factor"), [("", 1.0), ("_ll", 2.0), ("_ll128", 128 / 120)])
def test_nccl_ring_allreduce(p, proto, factor):
    # NCCL's loops stream through its FIFO slots: one pipeline fill of 2(p-1) latencies; its
    # reduce-copy hides the reduction (w/(pR) per step) behind the step's copy (R > B here)
    w = N * factor                                       # what the wire carries
    assert R > B
    want = 2 * (p - 1) * A + 2 * (p - 1) * w / (p * B)
    close(cost("allreduce", f"nccl_ring{proto}", p), want)
    slot = SLOT_BYTES[{"": "Simple", "_ll": "LL", "_ll128": "LL128"}[proto]]
    s = build_schedule("allreduce", f"nccl_ring{proto}", p, N)
    assert s.meta["loops"] == min(256, math.ceil(N / (2 * p * slot)))


@pytest.mark.parametrize("p", [2, 5, 8])
def test_nccl_tree_is_the_double_binary_tree_in_slots(p):
    c = math.ceil(N / 2 / SLOT_BYTES["Simple"])
    dbt = build_schedule("allreduce", "double_binary_tree", p, N, chunks=c)
    fused = dataclasses.replace(dbt, meta={**dbt.meta, "fused_reduce": True})
    close(cost("allreduce", "nccl_tree", p), cost_schedule(fused, platform(p)).time)
    ll = build_schedule("allreduce", "nccl_tree_ll", p, N, chunks=4)
    simple = build_schedule("allreduce", "nccl_tree", p, N, chunks=4)
    assert sum(ll.bytes_sent().values()) == pytest.approx(2 * sum(simple.bytes_sent().values()))


@pytest.mark.parametrize(("p", "ppn"), [(8, 2), (8, 4), (12, 3), (16, 4), (6, 1), (4, 4)])
def test_horovod_hierarchical(p, ppn):
    hosts = [r // ppn for r in range(p)]
    L = p // ppn
    s = N / ppn                                          # each local rank's shard
    want = (2 * (ppn - 1) * (A + s / B) + (ppn - 1) * s / R
            + 2 * (L - 1) * (A + s / (L * B)) + (L - 1) * s / (L * R))
    close(cost("allreduce", "horovod_hierarchical", p, hosts=hosts), want)


# -- schedules: data ---------------------------------------------------------------------------
@pytest.mark.parametrize("hosts", [[r // 2 for r in range(8)], [r // 3 for r in range(12)],
                                   [0, 1, 0, 1, 2, 2], [5, 5, 3, 3, 9, 9, 1, 1]])
@pytest.mark.parametrize("inter", ["ring", "recursive_doubling", "rabenseifner_mpich",
                                   "double_binary_tree", "nccl_ring_ll"])
def test_horovod_hierarchical_computes_the_allreduce(hosts, inter):
    check_schedule(build_schedule("allreduce", "horovod_hierarchical", len(hosts), 1e6,
                                  hosts=hosts, inter=inter))


def test_horovod_hierarchical_needs_even_hosts():
    with pytest.raises(InputError, match="same number of ranks"):
        build_schedule("allreduce", "horovod_hierarchical", 5, 1e6, hosts=[0, 0, 0, 1, 1])


@pytest.mark.parametrize("alg", ["ring_segmented", "nccl_ring", "nccl_ring_ll"])
@pytest.mark.parametrize("p", [3, 4])
def test_many_phases_and_loops_compute_the_allreduce(alg, p):
    s = build_schedule("allreduce", alg, p, 1e8)
    assert max(s.meta.get("phases", 1), s.meta.get("loops", 1)) > 10
    check_schedule(s, elements=s.segments + 3)


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
@pytest.mark.parametrize("p", [3, 8])
def test_nccl_rings_with_loops(op, p):
    s = build_schedule(op, "nccl_ring_ll", p, 4e6)
    assert s.meta["loops"] > 1
    check_schedule(s)
    # the loop structure itself (one ring pass per loop) moves the data right too
    for loops in (2, 5):
        plan = Plan(p, 4e6, p * 2 * loops)
        nccl_ring(plan, op, 2, loops)
        check_schedule(plan.to_schedule(op, "nccl_ring", 0.0, 1.0))


# -- selectors -----------------------------------------------------------------------------------
def test_4_byte_allreduce_on_16_ranks_is_recursive_doubling():
    for lib in ("mpich", "openmpi", "openmpi-4.1", "openmpi-4.0", "auto"):
        s = build_schedule("allreduce", lib, 16, 4)
        assert s.algorithm.endswith("recursive_doubling"), s.algorithm
        assert s.num_steps == 4                          # log2(16), not the ring's 30
        close(cost("allreduce", lib, 16, 4), 4 * (A + 4 / B + 4 / R))


@pytest.mark.parametrize(("op", "p", "n", "want"), [
    ("allreduce", 16, 2048, "recursive_doubling"),       # <= ALLREDUCE_SHORT_MSG_SIZE
    ("allreduce", 16, 2052, "rabenseifner"),
    ("allreduce", 16, 60, "recursive_doubling"),         # count 15 < pof2
    ("broadcast", 8, 12287, "binomial"),                 # < BCAST_SHORT_MSG_SIZE
    ("broadcast", 8, 12288, "scatter_recursive_doubling_allgather"),
    ("broadcast", 8, 524288, "scatter_ring_allgather"),  # >= BCAST_LONG_MSG_SIZE
    ("broadcast", 7, 1e6, "binomial"),                   # p < BCAST_MIN_PROCS
    ("broadcast", 12, 100000, "scatter_ring_allgather"),  # not a power of two
    ("allgather", 8, 524287, "recursive_doubling"),
    ("allgather", 8, 524288, "ring"),
    ("allgather", 6, 81919, "brucks"),
    ("allgather", 6, 81920, "ring"),
    ("alltoall", 8, 8 * 256, "brucks"),           # block <= ALLTOALL_SHORT_MSG_SIZE
    ("alltoall", 8, 8 * 257, "scattered"),
    ("alltoall", 7, 7 * 100, "scattered"),               # p < 8
    ("alltoall", 8, 8 * 32768, "scattered"),             # <= ALLTOALL_MEDIUM_MSG_SIZE
    ("alltoall", 8, 8 * 32769, "pairwise"),
    ("reduce_scatter", 8, 524287, "recursive_halving"),
    ("reduce_scatter", 8, 524288, "pairwise"),
    ("reduce", 8, 2048, "binomial"),
    ("gather", 8, 1e6, "binomial"),
])
def test_mpich_thresholds(op, p, n, want):
    # MPICH 3.2's rules (QA 14: mpich is now mpich-4; tests/test_select_mpich_qa14.py)
    assert chosen(op, "mpich-3.2", p, n) == f"mpich-3.2→{want}"


@pytest.mark.parametrize(("op", "p", "n", "want"), [
    ("allreduce", 4, 9999, "recursive_doubling"),         # < 10000
    ("allreduce", 4, 10000, "ring"),
    ("allreduce", 4, 4 * 2 ** 20, "ring"),                # p * 1 MiB >= n
    ("allreduce", 4, 4 * 2 ** 20 + 4, "ring_segmented"),
    ("alltoall", 13, 13 * 199, "bruck"),           # block < 200 and p > 12
    ("alltoall", 13, 13 * 200, "basic_linear"),
    ("alltoall", 12, 12 * 100, "basic_linear"),
    ("alltoall", 13, 13 * 2999, "basic_linear"),
    ("alltoall", 13, 13 * 3000, "pairwise"),
    ("allgather", 8, 49999, "recursive_doubling"),
    ("allgather", 6, 49999, "bruck"),
    ("allgather", 8, 50000, "neighbor_exchange"),
    ("allgather", 7, 50000, "ring"),
    ("reduce_scatter", 8, 256 * 1024, "recursive_halving"),   # <= 256 KiB, power of two
    ("reduce_scatter", 6, 12 * 1024, "recursive_halving"),    # <= 12 KiB
    ("reduce_scatter", 6, 12 * 1024 + 4, "ring"),
    ("broadcast", 8, 2047, "binomial"),
    ("broadcast", 8, 2048, "split_bintree≈binomial"),
    ("broadcast", 8, 370728, "split_bintree≈binomial"),   # p < 13
    ("broadcast", 4, 2e6, "pipeline(128KiB)"),          # p < 1.6134e-6 n + 2.1102
    ("broadcast", 16, 2e6, "pipeline(8KiB)"),
])
def test_openmpi_40_thresholds(op, p, n, want):
    assert chosen(op, "openmpi-4.0", p, n) == f"openmpi-4.0→{want}"


@pytest.mark.parametrize(("p", "n", "want"), [
    (12, 8188, "recursive_doubling"),
    (12, 8192, "rabenseifner"),
    (16, 4092, "recursive_doubling"),
    (16, 4096, "rabenseifner"),
    (6, 12, "ring→recursive_doubling"),                   # ring with count < p
    (6, 16, "recursive_doubling"),
    (40, 124, "segmented_ring→recursive_doubling"),
    (40, 128, "rabenseifner"),
    (300, 4092, "nonoverlapping≈binomial_tree"),
])
def test_openmpi_41_allreduce_table(p, n, want):
    assert chosen("allreduce", "openmpi", p, n) == f"openmpi→{want}"
    assert chosen("allreduce", "openmpi-4.1", p, n) == f"openmpi-4.1→{want}"


def test_openmpi_41_alltoall_table():
    assert chosen("alltoall", "openmpi", 20, 20 * 511) == "openmpi→modified_bruck"
    assert chosen("alltoall", "openmpi", 20, 20 * 512) == "openmpi→linear_sync≈direct"
    assert chosen("alltoall", "openmpi", 200, 200 * 262144) == "openmpi→pairwise"


@pytest.mark.parametrize(("p", "block", "want"), [
    # Open MPI 4.1.8 allgather table, keyed by one rank's block (dsize * scount)
    (2, 1e6, "two_proc"),
    (16, 1e6, "recursive_doubling"),                  # p < 32: always recursive doubling
    (20, 1e6, "recursive_doubling→bruck"),           # ... which needs a power of two
    (48, 1023, "recursive_doubling→bruck"),
    (48, 1024, "neighbor"),
    (47, 1024, "neighbor→ring"),                     # neighbour exchange needs an even p
    (48, 65536, "ring"),
    (200, 600e3, "neighbor"),                        # 524288 <= block < 1 MiB
    (300, 100, "bruck"),                             # 32 <= block < 128 at p < 512
    (5000, 300, "bruck"),
    (5000, 5000, "neighbor"),
])
def test_openmpi_41_allgather_table(p, block, want):
    assert chosen("allgather", "openmpi", p, p * block) == f"openmpi→{want}"
    # 4.0's rule looks at the total: the same buffers often get another algorithm there
    assert chosen("allgather", "openmpi-4.0", 48, 48 * 1024) == "openmpi-4.0→bruck"


@pytest.mark.parametrize(("p", "n", "want"), [
    # Open MPI 4.1.8 broadcast table (no segmentation in the fixed rules)
    (3, 16, "pipeline(unsegmented)"),
    (3, 200, "binary≈binomial"),
    (3, 800, "knomial≈binomial"),
    (6, 100, "binomial"),
    (6, 4e6, "chain(unsegmented)"),
    (12, 1e6, "basic_linear≈binomial"),
    (20, 4e6, "scatter_allgather"),
    (100, 4e6, "knomial≈binomial"),
    (600, 20000, "split_bintree≈binomial"),
    (5000, 1e6, "scatter_allgather"),
])
def test_openmpi_41_broadcast_table(p, n, want):
    assert chosen("broadcast", "openmpi", p, n) == f"openmpi→{want}"


@pytest.mark.parametrize(("op", "p", "n", "want"), [
    # Open MPI 4.1.8 gather/scatter (block bytes) and reduce_scatter (total bytes) tables
    ("gather", 4, 4 * 4096, "basic_linear"),
    ("gather", 4, 4 * 300e3, "linear_sync≈linear"),
    ("gather", 100, 100 * 1e6, "binomial"),              # 8 <= p < 256: always binomial
    ("gather", 300, 300 * 4096, "basic_linear"),
    ("scatter", 2, 2 * 1, "linear_nb≈linear"),
    ("scatter", 12, 12 * 1024, "binomial"),
    ("scatter", 12, 12 * 2e6, "basic_linear"),
    ("scatter", 100, 100 * 1024, "linear_nb≈linear"),
    ("reduce_scatter", 2, 100e3, "butterfly≈recursive_halving"),
    ("reduce_scatter", 6, 4, "non-overlapping≈recursive_halving"),
    ("reduce_scatter", 16, 100e3, "recursive_halving"),
    ("reduce_scatter", 16, 1e6, "ring"),
    ("reduce_scatter", 5000, 1e6, "butterfly≈recursive_halving"),
])
def test_openmpi_41_gather_scatter_reduce_scatter_tables(op, p, n, want):
    assert chosen(op, "openmpi", p, n) == f"openmpi→{want}"


def test_openmpi_41_scatter_allgather_falls_back_below_one_element_per_rank():
    """coll_base_bcast.c: scatter_allgather with count < p runs the linear broadcast; the
    table picks scatter_allgather from 256 KiB at 4,096 ranks and more, so 100,000 ranks
    broadcasting 65,536 floats fall back and 400,000 floats do not."""
    from clustersim.collectives.select_openmpi import decide_41

    few = decide_41(Context("broadcast", 100_000, 4 * 65_536, 4, 1))
    assert few.label == "scatter_allgather→basic_linear≈binomial"
    assert few.algorithm == "binomial"
    many = decide_41(Context("broadcast", 100_000, 4 * 400_000, 4, 1))
    assert (many.label, many.algorithm) == ("scatter_allgather", "scatter_rd_allgather")


def test_nccl_protocol_follows_the_size():
    from clustersim.collectives.select_nccl import decide, predicted_times

    small = build_schedule("allreduce", "nccl", 8, 4)
    big = build_schedule("allreduce", "nccl", 8, 1e9)
    assert small.meta["protocol"] == "LL" and big.meta["protocol"] == "Simple"
    assert big.algorithm == "nccl→ring/Simple×2ch"
    # the chosen pair is the model's minimum
    ctx = Context("allreduce", 64, 32e6, 4, 8)
    t = predicted_times(ctx)
    algo, proto = decide(ctx).label.split("×")[0].split("/")
    assert t[(algo, proto)] == min(t.values())
    assert chosen("alltoall", "nccl", 4, 1e6) == "nccl→send/recv direct"


def test_nccl_protocols_change_the_cost():
    # LL carries twice the bytes and takes 16x more, smaller loops than Simple
    assert cost("allreduce", "nccl_ring_ll", 8) > 1.9 * cost("allreduce", "nccl_ring", 8)


def test_auto_follows_the_library():
    assert chosen("allreduce", "auto", 16, 1e6) == "mpich→rabenseifner"
    assert chosen("allreduce", "auto", 16, 1024, library="mpich-3.2").startswith(
        "mpich-3.2→recursive_doubling")
    assert chosen("allreduce", "auto", 16, 1e6, library="openmpi-4.0") == "openmpi-4.0→ring"
    with pytest.raises(InputError, match="allowed: mpich, mpich-3.2, mpich-3.3, mpich-4, nccl"):
        build_schedule("allreduce", "auto", 4, 1e6, library="mvapich")
    with pytest.raises(InputError, match="nccl has no reduce"):
        build_schedule("reduce", "nccl", 4, 1e6)


def test_platform_declares_its_library():
    from clustersim.platform.describe import build_platform

    raw = {"topology": "star", "hosts": 4, "device": "k80",
           "link": {"bandwidth": "10 Gb/s", "latency": "1 us"}}
    assert build_platform(raw, builtin_catalog()).library is None
    plat = build_platform({**raw, "library": "openmpi-4.0"}, builtin_catalog())
    assert plat.library == "openmpi-4.0"
    with pytest.raises(InputError) as e:
        build_platform({**raw, "library": "mvapich"}, builtin_catalog())
    assert e.value.path == ("platform", "library") and "openmpi-4.1" in str(e.value)


def test_near_first_order_pays_off_on_a_hierarchical_network():
    # 8 DGX-1 on one EDR switch, ranks host by host: MPICH's first (half-buffer) exchange is
    # with rank^1 over NVLink, the textbook's with the rank 32 away, over InfiniBand
    from clustersim.network.analytic import cost_schedule
    from clustersim.platform.describe import load_platform

    plat = load_platform("topologies/dgx1_edr8.yaml")
    p = 64
    hosts = [plat.host(d) for d in range(p)]

    def t(alg: str) -> float:
        s = build_schedule("allreduce", alg, p, 64e6, hosts=hosts)
        return cost_schedule(s, plat, list(range(p))).time

    assert t("rabenseifner_mpich") < 0.6 * t("rabenseifner")
    # MPICH 3.2 runs its SMP allreduce on these 8 hosts of 8 ranks (audit G H1), as mpich-4
    # runs its node-aware composition
    assert chosen("allreduce", "mpich-3.2", p, 64e6, hosts=hosts) == \
        "mpich-3.2→smp(rabenseifner)"
