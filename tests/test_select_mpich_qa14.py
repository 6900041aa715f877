"""MPICH's selection by version (QA 14 F1-F4): ``mpich-3.2``, ``mpich-3.3``, ``mpich-4`` = ``mpich``.

Expected choices restate the sources QA 14 cites (github pmodels/mpich): 3.2's
``src/mpi/coll/allreduce.c`` rule, 3.3's zeroed byte count (``allreduce.c:159``) and SMP paths
on node-aware communicators, 4.x's csel trees ``maint/tuning/coll/mpir/generic.json`` and
``maint/tuning/coll/ch4/generic.json`` (identical from v3.4 to the 5.0.x branch for these ops).
Sizes are fp32 buffers (count = bytes // 4).
"""

from __future__ import annotations

import pytest

from clustersim.collectives import build_schedule, list_algorithms
from clustersim.collectives.selection import select

TWO_BY_8 = [0] * 8 + [1] * 8          # node-aware: 2 hosts, 8 ranks each
TWO_BY_6 = [0] * 6 + [1] * 6
FOUR_BY_4 = [h for h in range(4) for _ in range(4)]
TWO_BY_2 = [0, 0, 1, 1]
ONE_HOST_8 = [0] * 8                   # node-aware, one host
OWN_HOSTS_16 = list(range(16))         # one rank per host: flat

RD = ("recursive_doubling", "recursive_doubling")
RAB = ("rabenseifner_mpich", "rabenseifner")
BINOMIAL = ("binomial", "binomial")
SC_RD = ("scatter_rd_allgather", "scatter_recursive_doubling_allgather")
SC_RING = ("scatter_allgather", "scatter_ring_allgather")
RSG = ("mpich_reduce_scatter_gather", "reduce_scatter_gather")


def pick(name: str, op: str, p: int, n: float, hosts: list[int] | None = None) -> tuple:
    choice = select(op, name, p, n, hosts=hosts)[1]
    if choice.options:
        return choice.algorithm, choice.label, choice.options
    return choice.algorithm, choice.label


def approx(what: str, flat: tuple) -> tuple:
    return flat[0], f"{what}≈{flat[1]}"


# -- mpich-3.2: the flat rules clustersim's mpich had until QA 14, SMP on node-aware communicators --
@pytest.mark.parametrize(("op", "p", "n", "hosts", "want"), [
    ("allreduce", 16, 8, None, RD),
    ("allreduce", 16, 9, None, RD),
    ("allreduce", 16, 1024, None, RD),
    ("allreduce", 16, 2048, None, RD),                 # <= ALLREDUCE_SHORT_MSG_SIZE
    ("allreduce", 16, 2049, None, RAB),
    ("allreduce", 16, 8192, None, RAB),
    ("allreduce", 1024, 4092, None, RD),               # count 1023 = pof2 - 1
    ("allreduce", 1024, 4096, None, RAB),              # count = pof2
    ("allreduce", 16, 1 << 20, OWN_HOSTS_16, RAB),     # one rank per host: flat
    # node-aware: SMP at every size (allreduce.c 211-215, audit G H1), the leaders' allreduce
    # by the flat rule with the real byte count (2 leaders, count >= pof2: Rabenseifner)
    ("allreduce", 16, 1 << 20, TWO_BY_8, ("hierarchical", "smp(rabenseifner)",
                                          {"inter": "rabenseifner_mpich"})),
    ("allreduce", 16, 2048, TWO_BY_8, ("hierarchical", "smp(recursive_doubling)",
                                       {"inter": "recursive_doubling"})),
    ("allreduce", 16, 1 << 20, FOUR_BY_4, ("hierarchical", "smp(rabenseifner)",
                                           {"inter": "rabenseifner_mpich"})),
    ("broadcast", 16, 12287, None, BINOMIAL),
    ("broadcast", 16, 12288, None, SC_RD),             # nbytes < 12288
    ("broadcast", 16, 524287, None, SC_RD),
    ("broadcast", 16, 524288, None, SC_RING),          # nbytes < 524288
    ("broadcast", 12, 12288, None, SC_RING),
    ("broadcast", 16, 4096, TWO_BY_8, approx("smp", BINOMIAL)),   # the same SMP gate
    ("broadcast", 16, 1 << 20, TWO_BY_8, SC_RING),
    ("reduce", 16, 2048, None, BINOMIAL),
    ("reduce", 16, 2052, TWO_BY_8, approx("smp", RSG)),
    ("reduce", 16, 2052, OWN_HOSTS_16, RSG),
])
def test_mpich_32(op, p, n, hosts, want):
    assert pick("mpich-3.2", op, p, n, hosts) == want


# -- mpich-3.3: zeroed byte count with default CVARs (F2) --------------------------------------------
SMP_RD = ("hierarchical", "smp(recursive_doubling)", {"inter": "recursive_doubling"})


@pytest.mark.parametrize(("op", "p", "n", "hosts", "want"), [
    ("allreduce", 16, 4, None, RD),
    ("allreduce", 16, 2049, None, RD),
    ("allreduce", 16, 8192, None, RD),
    ("allreduce", 16, 1 << 20, None, RD),
    ("allreduce", 1024, 4096, None, RD),               # count = pof2: still RD
    ("allreduce", 16, 1 << 20, OWN_HOSTS_16, RD),      # one rank per host: flat
    ("allreduce", 16, 1 << 20, TWO_BY_8, SMP_RD),      # node-aware: SMP at every size
    ("allreduce", 16, 8, TWO_BY_8, SMP_RD),
    ("allreduce", 8, 1 << 20, ONE_HOST_8, SMP_RD),
    ("broadcast", 16, 12287, None, BINOMIAL),
    ("broadcast", 16, 12288, None, SC_RD),
    ("broadcast", 16, 524288, None, SC_RING),
    ("broadcast", 16, 4096, TWO_BY_8, approx("smp", BINOMIAL)),
    ("broadcast", 16, 100000, TWO_BY_8, approx("smp", SC_RD)),
    ("broadcast", 16, 1 << 20, TWO_BY_8, SC_RING),     # bcast_intra_smp's flat branch
    ("broadcast", 12, 100000, TWO_BY_6, SC_RING),
    ("reduce", 16, 2052, None, RSG),
    ("reduce", 16, 2052, TWO_BY_8, approx("smp", RSG)),
])
def test_mpich_33(op, p, n, hosts, want):
    assert pick("mpich-3.3", op, p, n, hosts) == want


# -- mpich-4 (= mpich): csel defaults, ch4 device (F1, F3, F4) ---------------------------------------
def alpha(inter: tuple) -> tuple:
    return "hierarchical", f"composition_alpha({inter[1]})", {"inter": inter[0]}


MPICH4 = [
    ("allreduce", 2, 8, None, RD),                     # avg_msg_size <= 8
    ("allreduce", 2, 9, None, RAB),                    # count 2 = pof2
    ("allreduce", 16, 60, None, RD),                   # count 15 = pof2 - 1
    ("allreduce", 16, 64, None, RAB),                  # count 16 = pof2
    ("allreduce", 16, 1024, None, RAB),                # no 2048 B threshold
    ("allreduce", 16, 2048, None, RAB),
    ("allreduce", 16, 2049, None, RAB),
    ("allreduce", 16, 8192, None, RAB),
    ("allreduce", 1024, 4092, None, RD),
    ("allreduce", 1024, 4096, None, RAB),
    ("allreduce", 16, 1 << 20, OWN_HOSTS_16, RAB),     # not node-aware: flat
    ("allreduce", 16, 1 << 20, TWO_BY_8, alpha(RAB)),  # leaders: 2 ranks, count >= 2
    ("allreduce", 16, 8, TWO_BY_8, alpha(RD)),         # leaders: <= 8 B
    ("allreduce", 16, 12, FOUR_BY_4, alpha(RD)),       # leaders: count 3 < pof2 4
    ("allreduce", 16, 16, FOUR_BY_4, alpha(RAB)),
    ("allreduce", 8, 1 << 20, ONE_HOST_8, approx("release_gather", RAB)),
    ("broadcast", 16, 12288, None, BINOMIAL),          # avg_msg_size <= 12288
    ("broadcast", 16, 12289, None, SC_RD),
    ("broadcast", 16, 524288, None, SC_RD),            # avg_msg_size <= 524288
    ("broadcast", 16, 524289, None, SC_RING),
    ("broadcast", 12, 12288, None, BINOMIAL),
    ("broadcast", 12, 12289, None, SC_RING),
    ("broadcast", 7, 1e6, None, BINOMIAL),
    ("broadcast", 16, 4096, TWO_BY_8, approx("composition_alpha", BINOMIAL)),
    ("broadcast", 16, 12288, TWO_BY_8, approx("composition_beta", BINOMIAL)),  # ch4: < 12288
    ("broadcast", 16, 100000, TWO_BY_8, approx("composition_beta", SC_RD)),
    ("broadcast", 16, 524288, TWO_BY_8, SC_RD),        # ch4 gamma = the flat tree
    ("broadcast", 12, 12287, TWO_BY_6, approx("composition_alpha", BINOMIAL)),
    ("broadcast", 12, 12288, TWO_BY_6, BINOMIAL),      # gamma
    ("broadcast", 4, 1e6, TWO_BY_2, approx("composition_alpha", BINOMIAL)),  # p < 8
    ("broadcast", 16, 4096, OWN_HOSTS_16, BINOMIAL),
    ("reduce", 16, 2048, None, BINOMIAL),
    ("reduce", 16, 2052, None, RSG),
    ("reduce", 16, 2048, TWO_BY_8, approx("composition_beta", BINOMIAL)),
    ("reduce", 16, 2052, TWO_BY_8, approx("composition_alpha", RSG)),
    ("allgather", 8, 524287, TWO_BY_2 * 2, RD),        # other ops: flat, as 3.x
    ("alltoall", 8, 8 * 257, None, ("direct", "scattered")),
]


@pytest.mark.parametrize(("op", "p", "n", "hosts", "want"), MPICH4)
@pytest.mark.parametrize("name", ["mpich-4", "mpich"])
def test_mpich_4(name, op, p, n, hosts, want):
    assert pick(name, op, p, n, hosts) == want


def test_labels_name_the_version():
    s = build_schedule("allreduce", "mpich-4", 16, 1 << 20, hosts=TWO_BY_8)
    assert s.algorithm == "mpich-4→composition_alpha(rabenseifner)"
    assert s.meta["inter"] == "rabenseifner_mpich" and s.meta["hosts"] == 2
    assert build_schedule("allreduce", "mpich", 16, 1024).algorithm == "mpich→rabenseifner"
    assert (build_schedule("allreduce", "mpich-3.3", 16, 8192).algorithm
            == "mpich-3.3→recursive_doubling")
    assert build_schedule("allreduce", "mpich-3.2", 16, 1024).algorithm == \
        "mpich-3.2→recursive_doubling"
    assert build_schedule("broadcast", "mpich", 16, 4096, hosts=TWO_BY_8).algorithm == \
        "mpich→composition_alpha≈binomial"


def test_versions_are_listed_and_auto_means_mpich_4():
    names = list_algorithms("allreduce")["allreduce"]
    assert {"mpich", "mpich-4", "mpich-3.3", "mpich-3.2"} <= set(names)
    assert build_schedule("allreduce", "auto", 16, 1024).algorithm == "mpich→rabenseifner"
