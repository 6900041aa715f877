"""clustersim against SimGrid 3.32's SMPI times, recorded (no SimGrid needed to run this).

``tests/data/simgrid/simgrid_crossbar16.csv`` holds SimGrid's simulated times of collectives
on the 16-host crossbar (10 Gb/s, 1 us per link), recorded by ``bench/bench_simgrid.py``
under SMPI's pure max-min model (CM02, no correction factors, no software overheads) with
rendezvous sends.  The cases compared are those where SMPI's algorithm sends the same
messages between the same ranks in the same order as clustersim's (``exact`` in
``bench/simgrid/sg_clustersim.py``); there the two simulators implement the same model, so
they must agree within:

* median |error| <= 2 % for sizes >= 64 KiB and <= 10 % below (issue 13's target), and
* every case within 5 % (>= 64 KiB) and 15 % (below: SMPI's 16-byte message envelope,
  zero-byte blocks SMPI does not send when count < ranks).

Selector rows (``mpich``/``ompi``) are recorded too and skipped until clustersim has the
``mpich``/``openmpi`` algorithms.  The ``p2p`` rows check the platform mapping itself: one
message between the nearest and the farthest hosts of each platform.
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
    available,
    clustersim_algorithm,
)
from sg_platforms import PLATFORMS  # noqa: E402
from sg_report import BAND_EDGE, SgRow, placement_of, read_csv  # noqa: E402

DATA = ROOT / "tests" / "data" / "simgrid" / "simgrid_crossbar16.csv"
ROWS = read_csv(DATA)
MEDIAN_TOL = {"large": 0.02, "small": 0.10}
CASE_TOL = {"large": 0.05, "small": 0.15}

_PRED = Predictor()


def _error(r: SgRow, cs_alg: str) -> float:
    plat = PLATFORMS[r.platform]
    t = _PRED.predict(plat, r.op, cs_alg, r.size, placement_of(r.placement, r.ranks, plat.hosts))
    return (t - r.simgrid) / r.simgrid


def _groups() -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for r in ROWS:
        if r.op != "p2p" and r.protocol == "rendezvous":
            seen[(r.op, r.algorithm)] = None
    return list(seen)


def test_recorded_data_is_small_and_complete() -> None:
    assert 50 <= len(ROWS) <= 600
    assert {r.platform for r in ROWS if r.op == "p2p"} == set(PLATFORMS)
    assert all(r.simgrid > 0 for r in ROWS)


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


@pytest.mark.parametrize(("op", "alg"), _groups())
def test_exact_algorithms_match_simgrid(op: str, alg: str) -> None:
    m = ALGORITHMS.get((op, alg))
    if m is None or not m.exact:
        pytest.skip(f"{op}/{alg}: not the same message pattern as clustersim's "
                    f"({m.note if m else 'no mapping'})")
    rows = [r for r in ROWS if (r.op, r.algorithm) == (op, alg) and r.protocol == "rendezvous"]
    missing = {clustersim_algorithm(op, alg, r.ranks, r.size) for r in rows}
    missing = {a for a in missing if not available(op, a)}
    if missing:
        pytest.skip(f"clustersim has no {op} algorithm {', '.join(sorted(missing))} yet")
    errors: dict[str, list[float]] = {"small": [], "large": []}
    for r in rows:
        err = _error(r, clustersim_algorithm(op, alg, r.ranks, r.size))
        band = "large" if r.size >= BAND_EDGE else "small"
        assert abs(err) <= CASE_TOL[band], f"{op}/{alg} p={r.ranks} {r.size} B: {err:+.2%}"
        errors[band].append(abs(err))
    for band, errs in errors.items():
        if errs:
            med = statistics.median(errs)
            assert med <= MEDIAN_TOL[band], f"{op}/{alg} {band}: median {med:.2%}"
