"""NCCL against published nccl-tests figures (issue 13; bench/bench_nccl_published.py).

Why: the selector and schedules claim to predict NCCL; published busbw is the outside check.
What holds is asserted with the tolerance that honestly holds: the selection (ring/Simple at
>= 64 MiB on one 8-GPU NVSwitch node) and the NCCL ring schedule's busbw within the issue's
10% (+3% to +4% on A100, 0% on H100 - where the published 370 GB/s is the maintainer's own
statement of the NVLink figure the scenario takes from NCCL's topo.h, so not independent).
The two modelling choices behind it are checked one at a time: NCCL's reduction fused into
its copy (without it, the textbook ring with its serial reduction lands 19-23% low) and
NCCL's own NVLink efficiency (with the copy-engine figure instead, the NCCL schedule
overshoots by more than 10%); docs/collectives.md, "NCCL against published nccl-tests
figures".
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_nccl_published",
                                               ROOT / "bench" / "bench_nccl_published.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.fixture(scope="module")
def rows():
    return bench.rows()


def test_every_published_figure_is_compared(rows):
    assert len(rows) == len(bench.PUBLISHED) >= 3
    assert all(r["size"] >= 64 << 20 and r["published"] > 0 for r in rows)


def test_selection_at_64mib_and_above_is_ring_simple():
    for name in sorted({p[0] for p in bench.PUBLISHED}):
        pred = bench.predictions(name)
        sel = {row["selected"] for (alg, size), row in pred.items()
               if alg == "nccl" and size >= 64 << 20}
        assert sel == {"nccl→ring/Simple×2ch"}, (name, sel)


def test_nccl_schedule_within_10_percent_of_published(rows):
    for r in rows:
        assert abs(r["err_nccl"]) <= 0.10, r


def test_textbook_ring_with_its_serial_reduction_is_below_by_15_to_25_percent(rows):
    for r in rows:
        assert -0.25 <= r["err_ring"] <= -0.15, r


def test_copy_engine_nvlink_efficiency_overshoots(rows):
    """The NVLink figure matters as a closed form says: the runs are bandwidth-bound, so the
    copy-engine transport (nvlink3, measured on A100) over NCCL's own (nccl_nvlink3/4) scales
    busbw by the ratio of their efficiencies, within 1%; and it puts NCCL's reduce-copy above
    every published figure."""
    from clustersim.catalog import builtin_catalog

    tr = builtin_catalog().transports
    for name in sorted({p[0] for p in bench.PUBLISHED}):
        pred = bench.predictions(name, (bench.COPY_ENGINE,))
        own = "nccl_nvlink3" if "a100" in name else "nccl_nvlink4"
        ratio = tr["nvlink3"].efficiency / tr[own].efficiency
        for r in (r for r in rows if r["system"] == name):
            copy = pred[("nccl", float(r["size"]))]["busbw"] / 1e9
            assert copy == pytest.approx(r["nccl"] * ratio, rel=0.01), r
            assert copy > 1.05 * r["published"], r
