"""clustersim against SimGrid 3.32's SMPI times, recorded (no SimGrid needed to run this).

``tests/data/simgrid/*.csv`` hold SimGrid's simulated times of collectives, recorded by
``bench/bench_simgrid.py`` under SMPI's pure max-min model (CM02, no correction factors, no
software overheads) with rendezvous sends, on three platforms (10 Gb/s, 1 us per link):

* ``simgrid_crossbar16.csv``: the 16-host crossbar (plus the ``p2p`` rows of all three);
* ``simgrid_fattree16.csv``: SimGrid's FAT_TREE ``2;4,4;1,2;1,2`` - clustersim's
  ``leaf_spine`` with ``cables: 2`` and ``routing: dmodk``;
* ``simgrid_dragonfly64.csv``: SimGrid's DRAGONFLY ``4,1;1,1;4,1;4`` (16 ranks: every size;
  64 ranks: sizes 4 x 16^k), the same graph routed minimally;
* on all three, 6 and 12 ranks (not powers of two) for allreduce rdb, rab_rdb, redbcast, lr
  and bcast binomial_tree, at 4 B .. 12 MiB with counts both divisible and not divisible by
  the rank count (``bench_simgrid.py --ranks 6 12 ... --append``).

The cases compared are those where SMPI's algorithm sends the same messages between the same
ranks in the same order as clustersim's (``exact`` in ``bench/simgrid/sg_clustersim.py``),
SMPI's ``mpich``/``ompi`` selectors included, and SMPI's ``lr`` costed as clustersim's ring on
``count - count mod p`` elements plus a binomial reduce+bcast of the rest (what SMPI runs,
``sg_clustersim.phases``): each case resolves to the algorithm SMPI 3.32
runs (its ``mpich`` allreduce: mvapich2_two_level -> recursive doubling; its ``ompi``: Open
MPI 4.1's tables, clustersim's ``openmpi-4.1``).  There the two simulators implement the same
model, so they must agree within

* median |error| <= 2 % for sizes >= 64 KiB and <= 10 % below (issue 13's target), and
* every case within 5 % (>= 64 KiB) and 15 % (below: SMPI's 16-byte message envelope,
  zero-byte blocks SMPI does not send when count < ranks),

except the groups in :data:`ROUTING_GAPS` (SimGrid's fat-tree routing is not D-mod-K going
down; checked separately) and the per-case outliers in :data:`CASE_TOL_OVERRIDE`.
The ``p2p`` rows check the platform mapping itself: one message between the nearest and the
farthest hosts of each platform.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench" / "simgrid"))

from sg_clustersim import (  # noqa: E402
    ALGORITHMS,
    Predictor,
    SimGridFatTreeRoutes,
    available,
    phases,
    platform_dict,
    resolve_case,
)
from sg_platforms import PLATFORMS  # noqa: E402
from sg_report import BAND_EDGE, ROUTING_GAPS, SgRow, placement_of, read_csv  # noqa: E402

DATA = ROOT / "tests" / "data" / "simgrid"
FILES = ("simgrid_crossbar16.csv", "simgrid_fattree16.csv", "simgrid_dragonfly64.csv")
ROWS = [r for f in FILES for r in read_csv(DATA / f)]
MEDIAN_TOL = {"large": 0.02, "small": 0.10}
CASE_TOL = {"large": 0.05, "small": 0.15}


#: Single cases beyond :data:`CASE_TOL` (medians still within target).  None since collectives
#: run dependency-driven here (``network.execution: dependencies``, as SMPI runs them): with
#: every flow of a step started together, two flows sharing a dragonfly link in one step
#: overlapped fully where SMPI's drifting ranks overlap them in part (neighbour exchange at
#: 64 ranks, 256 KiB - 1 MiB: +17 % / +18 %, now 3.3 % at most; the ring all-to-all's 5.7 %
#: now 1.3 %).
CASE_TOL_OVERRIDE: dict[tuple[str, str, str], float] = {}

#: Groups whose median misses the target, and why: SimGrid's CM02 weights max-min sharing by
#: route latency (penalty = latency, TCP's RTT unfairness); clustersim's is unweighted.  Open
#: MPI's basic_linear all-to-all on 16 ranks of one dragonfly group shares each host link
#: between 3 same-router flows (2 us) and 12 cross-router ones (3 us): 16.33 instead of 16
#: block times, +2.08 % predicted, +2.04..2.10 % measured at every size >= 64 KiB.
MEDIAN_TOL_OVERRIDE = {("dragonfly64", "alltoall", "ompi"): 0.021}

_PRED = Predictor()


def _error(r: SgRow, cs_alg: str) -> float:
    plat = PLATFORMS[r.platform]
    t = _PRED.predict(plat, r.op, cs_alg, r.size, placement_of(r.placement, r.ranks, plat.hosts))
    return (t - r.simgrid) / r.simgrid


def _case_error(r: SgRow, pred: Predictor = _PRED) -> float:
    """Error of clustersim's cost of what SMPI runs for the row (every phase summed)."""
    plat = PLATFORMS[r.platform]
    t = pred.predict_case(plat, r.op, r.algorithm, r.size,
                          placement_of(r.placement, r.ranks, plat.hosts))
    return (t - r.simgrid) / r.simgrid


def _groups() -> list[tuple[str, str, str]]:
    seen: dict[tuple[str, str, str], None] = {}
    for r in ROWS:
        if r.op != "p2p" and r.protocol == "rendezvous":
            seen[(r.platform, r.op, r.algorithm)] = None
    return list(seen)


def _why_not_compared(group: tuple[str, str, str]) -> str | None:
    """None for a group compared case by case; else why not: SMPI's algorithm has no
    clustersim counterpart ("no mapping"), sends other messages than clustersim's at every
    recorded size ("pattern"), or is routed differently on the fat tree ("routing")."""
    platform, op, alg = group
    if ALGORITHMS.get((op, alg)) is None:
        return "no mapping"
    if group in ROUTING_GAPS:
        return "routing"
    rows = [r for r in ROWS if (r.platform, r.op, r.algorithm) == group
            and r.protocol == "rendezvous"]
    if not any(resolve_case(op, alg, r.ranks, r.size)[1] for r in rows):
        return "pattern"
    return None


#: the groups left out of the case-by-case comparison, and why; audit J M3: they were
#: skipped at run time on every machine, so they could never fail.  Now a change either way
#: (clustersim gains SMPI's pairwise all-to-all, a mapping breaks) fails
#: :func:`test_the_groups_left_out_are_the_recorded_ones` until this list is updated.
NOT_COMPARED = {
    **dict.fromkeys([("crossbar16", "bcast", "ompi"), ("dragonfly64", "allgather", "ring"),
                     ("dragonfly64", "allreduce", "ompi_ring_segmented"),
                     ("dragonfly64", "allreduce", "rab1"), ("dragonfly64", "alltoall", "pair"),
                     ("dragonfly64", "bcast", "ompi"), ("fattree16", "allgather", "ring"),
                     ("fattree16", "allreduce", "ompi_ring_segmented"),
                     ("fattree16", "allreduce", "rab1"), ("fattree16", "alltoall", "pair"),
                     ("fattree16", "bcast", "ompi")], "pattern"),
    **dict.fromkeys([("fattree16", "allgather", "mpich"), ("fattree16", "allgather", "ompi"),
                     ("fattree16", "allgather", "rdb"), ("fattree16", "allreduce", "mpich"),
                     ("fattree16", "allreduce", "ompi"), ("fattree16", "allreduce", "rab_rdb"),
                     ("fattree16", "allreduce", "rdb"), ("fattree16", "alltoall", "mpich"),
                     ("fattree16", "alltoall", "ring"),
                     ("fattree16", "bcast", "scatter_rdb_allgather")], "routing"),
}


def test_the_groups_left_out_are_the_recorded_ones() -> None:
    got = {g: why for g in _groups() if (why := _why_not_compared(g)) is not None}
    assert got == NOT_COMPARED
    assert len(_groups()) - len(got) == 47  # the groups compared case by case


def test_recorded_data_is_small_and_complete() -> None:
    assert 800 <= len(ROWS) <= 1800
    assert {r.platform for r in ROWS if r.op == "p2p"} == set(PLATFORMS)
    assert {r.platform for r in ROWS} == set(PLATFORMS)
    assert all(r.simgrid > 0 for r in ROWS)


def test_platform_mapping_uses_clustersim_routing_and_cables() -> None:
    ft = platform_dict(PLATFORMS["fattree16"])
    assert ft["topology"] == "leaf_spine" and ft["cables"] == 2
    assert ft["routing"] == {"policy": "dmodk"}
    assert platform_dict(PLATFORMS["dragonfly64"])["routing"] == {"policy": "minimal"}


@pytest.mark.parametrize("platform", list(PLATFORMS))
def test_point_to_point_latency_and_bandwidth(platform: str) -> None:
    """One message: SimGrid sums the route's link latencies, clustersim its hops' latencies;
    both then move ``size + 16`` (SMPI's envelope) vs ``size`` bytes at the link bandwidth."""
    rows = [r for r in ROWS if r.op == "p2p" and r.platform == platform]
    assert rows
    for r in rows:
        bw = PLATFORMS[platform].bw_bytes
        err = _error(r, "direct")
        envelope = 16 / bw / r.simgrid
        assert abs(err + envelope) < 1e-6, (r, err)


@pytest.mark.parametrize(("platform", "op", "alg"),
                         [g for g in _groups() if g not in NOT_COMPARED])
def test_exact_algorithms_match_simgrid(platform: str, op: str, alg: str) -> None:
    rows = [r for r in ROWS if (r.platform, r.op, r.algorithm) == (platform, op, alg)
            and r.protocol == "rendezvous"]
    cases = [(r, resolve_case(op, alg, r.ranks, r.size)) for r in rows]
    cases = [(r, cs) for r, (cs, exact, _) in cases if exact]
    assert cases
    missing = {cs for _, cs in cases if not available(op, cs)}
    assert not missing, f"clustersim lacks {op} {sorted(missing)}"
    over = CASE_TOL_OVERRIDE.get((platform, op, alg))
    errors: dict[str, list[float]] = {"small": [], "large": []}
    for r, cs in cases:
        err = _case_error(r)
        band = "large" if r.size >= BAND_EDGE else "small"
        tol = max(CASE_TOL[band], over or 0.0)
        assert abs(err) <= tol, f"{platform} {op}/{alg} -> {cs} p={r.ranks} {r.size} B: {err:+.2%}"
        errors[band].append(abs(err))
    for band, errs in errors.items():
        if errs:
            med = statistics.median(errs)
            tol = MEDIAN_TOL[band]
            if band == "large":
                tol = max(tol, MEDIAN_TOL_OVERRIDE.get((platform, op, alg), 0.0))
            assert med <= tol, f"{platform} {op}/{alg} {band}: median {med:.2%}"


def test_fat_tree_gap_is_the_down_cable() -> None:
    """The fat-tree gap is SimGrid's down-cable choice, nothing else: in the pairwise
    all-to-all on 16 ranks (4 leaves x 4 hosts, 2 spines x 2 cables), round ``k`` shifts by
    ``k``; with the down cable picked by ``source % 2``, rounds k = 3..13 put two flows on one
    down cable (twice as long at large sizes), rounds 1, 2, 14, 15 one; clustersim's D-mod-K
    never more than one.  So SimGrid / clustersim = (15 + 11) / 15 at bandwidth-bound sizes
    (>= 4 MiB: 256 KiB blocks; 1.720 at 4 MiB, 1.730 at 16 MiB).
    The other routing-gap groups: clustersim faster, never more than 2x."""
    rows = [r for r in ROWS if (r.platform, r.op, r.algorithm, r.ranks) ==
            ("fattree16", "alltoall", "ring", 16) and r.size >= 4 << 20]
    assert rows
    for r in rows:
        ratio = r.simgrid / (r.simgrid * (1 + _error(r, "pairwise")))
        assert ratio == pytest.approx(26 / 15, rel=0.01), (r.size, ratio)
    for platform, op, alg in sorted(ROUTING_GAPS):
        for r in ROWS:
            if (r.platform, r.op, r.algorithm) != (platform, op, alg) or r.size < BAND_EDGE:
                continue
            cs, exact, _ = resolve_case(op, alg, r.ranks, r.size)
            if exact:
                err = _case_error(r)
                assert -0.5 <= err <= 0.02, f"{op}/{alg} -> {cs} p={r.ranks} {r.size}: {err:+.2%}"


_SG_ROUTES = Predictor(simgrid_routes=True)


def test_simgrid_fat_tree_routes_are_dmodk_up_source_down() -> None:
    """The diagnostic router reproduces FatTreeZone's rule on 4 leaves x 4 hosts, 2 spines x
    2 cables: up port ``d mod 4`` = spine ``port mod 2``, cable ``port // 2``; down cable
    ``s mod 2``."""
    plat = _SG_ROUTES._scenario(PLATFORMS["fattree16"]).platform
    assert isinstance(plat._route_fn, SimGridFatTreeRoutes)
    for s, d in ((0, 5), (1, 6), (0, 7), (3, 14), (6, 1)):
        route = [plat.link_names[x] for x in plat.route(s, d)]
        spine = f"spine{(d % 4) % 2}"
        up = f"leaf{s // 4}->{spine}" + ("#1" if (d % 4) // 2 else "")
        down = f"{spine}->leaf{d // 4}" + ("#1" if s % 2 else "")
        assert route == [f"h{s}->leaf{s // 4}", up, down, f"leaf{d // 4}->h{d}"], route


@pytest.mark.parametrize(("platform", "op", "alg"), sorted(ROUTING_GAPS))
def test_routing_gap_closes_with_simgrid_routes(platform: str, op: str, alg: str) -> None:
    """Routed as SimGrid routes its FAT_TREE, the fat-tree routing-gap groups meet the same
    target as every other exact match: the gap is the down-cable choice and nothing else."""
    errors: dict[str, list[float]] = {"small": [], "large": []}
    for r in ROWS:
        if (r.platform, r.op, r.algorithm) != (platform, op, alg):
            continue
        cs, exact, _ = resolve_case(op, alg, r.ranks, r.size)
        if not exact:
            continue
        err = _case_error(r, _SG_ROUTES)
        band = "large" if r.size >= BAND_EDGE else "small"
        assert abs(err) <= CASE_TOL[band], f"{op}/{alg} -> {cs} p={r.ranks} {r.size}: {err:+.2%}"
        errors[band].append(abs(err))
    assert errors["large"]
    for band, errs in errors.items():
        if errs:
            assert statistics.median(errs) <= MEDIAN_TOL[band]


#: The exact cases recorded at rank counts that are not powers of two (QA 11 F4)
NON_POW2 = {("allreduce", "rdb"), ("allreduce", "rab_rdb"), ("allreduce", "redbcast"),
            ("allreduce", "lr"), ("bcast", "binomial_tree")}


@pytest.mark.parametrize("platform", list(PLATFORMS))
def test_non_power_of_two_ranks_are_covered(platform: str) -> None:
    """6 and 12 ranks are in the data for every exact case listed, and lr has counts on both
    sides of ``count mod p == 0`` there - so the exact-match test above checks them."""
    for op, alg in sorted(NON_POW2):
        for p in (6, 12):
            rows = [r for r in ROWS if (r.platform, r.op, r.algorithm, r.ranks) ==
                    (platform, op, alg, p)]
            assert len({r.size for r in rows if r.size >= 4 * p}) >= 6, (op, alg, p)
            if alg == "lr":
                rems = {(r.size // 4) % p for r in rows if r.size >= 4 * p}
                assert 0 in rems and rems - {0}, (p, rems)


def test_lr_leftover_is_a_reduce_bcast() -> None:
    """SMPI 3.32's lr rings ``count // p`` elements per block and hands the ``count mod p``
    leftover to the selected allreduce (lr again -> reduce + bcast, binomial here).  The
    recorded times show it: at 6 and 12 ranks the plain ring misses SMPI's non-divisible
    cases by the leftover's reduce+bcast (-20 % to -33 % at 4 KiB), while ring + binomial
    reduce+bcast of the leftover is within the exact-match tolerance."""
    rows = [r for r in ROWS if r.op == "allreduce" and r.algorithm == "lr"
            and r.ranks in (6, 12) and r.size // 4 >= r.ranks]
    split = [r for r in rows if (r.size // 4) % r.ranks]
    assert split and len(split) < len(rows)
    for r in rows:
        parts = phases("allreduce", "lr", r.ranks, r.size)
        left = (r.size // 4) % r.ranks * 4
        assert parts == ([("ring", r.size)] if not left else
                         [("ring", r.size - left), ("binomial_tree", left)])
        assert resolve_case("allreduce", "lr", r.ranks, r.size)[1]
        band = "large" if r.size >= BAND_EDGE else "small"
        assert abs(_case_error(r)) <= CASE_TOL[band], (r, _case_error(r))
    small = [r for r in split if r.size < BAND_EDGE]
    assert small
    for r in small:
        assert _error(r, "ring") < -0.15, (r, _error(r, "ring"))
