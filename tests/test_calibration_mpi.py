"""``clustersim calibrate --real`` end to end on 2 real MPI ranks (quick plan).

Checks behaviour, not this machine's speed: the command measures, fits and writes a profile
that names the platform's device and link class with physically sane values and intervals,
the contention benchmark's kernels are in the traces, and a short validation produces a
report with one case per scenario.  Timings on a shared 2-core VM are noise; the bounds are
orders of magnitude.
"""

from __future__ import annotations

import json

import pytest

from clustersim.calibration.profile import load_profile
from clustersim.cli import main
from clustersim.scenario.schema import PROJECT_ROOT

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


def test_calibrate_real_quick_writes_a_sane_profile(tmp_path):
    out = tmp_path / "profile.yaml"
    report = tmp_path / "fit.json"
    scenario = PROJECT_ROOT / "scenarios" / "real_async_ps.yaml"
    code = main(["calibrate", "--real", "--quick", "--out", str(out), "--work-dir",
                 str(tmp_path / "work"), "--scenarios", str(scenario), "--repeats", "1",
                 "--json", str(report), "--timeout", "300", "-q"])
    assert code == 0
    prof = load_profile(out)
    dev = prof.devices["localhost_core"]
    assert 1e8 < dev["peak"] * dev["efficiency"] < 1e13  # FLOP/s of one core
    assert 0 < dev["efficiency_by_class"]["fc"] <= 1
    assert 1e7 < dev["reduce_rate"] < 1e12
    link = prof.links["localhost_shm"]
    assert 1e7 < link["bandwidth"] < 1e12 and 0 <= link["latency"] < 1e-3
    segs = prof.protocols["localhost_shm"]
    assert segs[0].start == 0 and all(s.efficiency > 0 for s in segs)
    assert "step_overhead" in prof.network
    assert prof.source["kind"] == "real" and prof.source["ranks"] == 2
    # every fitted number is reported with an interval and its point count
    assert all({"parameter", "value", "ci95", "points"} <= set(f) for f in prof.fit)
    # the validation ran the scenario for real and compared it
    cases = prof.validation["cases"]
    assert [c["scenario"] for c in cases] == ["real_async_ps"]
    assert cases[0]["iteration_time"]["measured"] > 0
    assert json.loads(report.read_text())["validation"]["mape_iteration_time"] >= 0
    # the contention benchmark's traces are there, with their context
    cont = list((tmp_path / "work" / "bench" / "contention").glob("trace.rank*.jsonl"))
    assert len(cont) == 2
    assert "peer_polling" in cont[0].read_text() or "peer_polling" in cont[1].read_text()
