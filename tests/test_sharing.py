"""Several ranks on one GPU (``time_shared`` devices): the simulator's static share, its
catalog fields and the calibration's fit of ``share_efficiency`` (clustersim/sim/sharing.py,
clustersim/calibration/sharefit.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from clustersim.calibration.computefit import fit_compute
from clustersim.calibration.sharefit import ALONE, fit_share, ranks_sharing
from clustersim.catalog import builtin_catalog, device_from_dict
from clustersim.errors import InputError
from clustersim.scenario.schema import load_scenario
from clustersim.sim.sharing import device_factors
from clustersim.sim.sweep import simulate_point

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "topologies" / "h200_shared.yaml"


def _variant(tmp_path: Path, scenario: str, share: str) -> Path:
    """``scenario`` on a copy of h200_shared whose device line ``time_shared``/
    ``share_efficiency`` is replaced by ``share`` (YAML lines)."""
    plat = SHARED.read_text()
    old = "      time_shared: true\n      share_efficiency: 1.0\n"
    assert old in plat
    (tmp_path / "plat.yaml").write_text(plat.replace(old, share))
    scn = (ROOT / "scenarios" / scenario).read_text()
    scn = scn.replace("platform: topologies/h200_shared.yaml", "platform: plat.yaml")
    out = tmp_path / scenario
    out.write_text(scn)
    return out


def _compute(path: Path) -> float:
    scn = load_scenario(path)
    alg = scn.algorithms[0]
    m, _ = simulate_point(scn, alg, scn.sweep.workers[0], scn.run.seed, False)
    return m.compute


@pytest.mark.parametrize("share", [1.0, 0.8])
def test_bsp_workers_sharing_a_gpu_compute_k_over_share_times_as_long(tmp_path, share):
    """Closed form: 2 BSP workers on one time-shared GPU compute 2/share times as long as
    the same workers on separate devices (no jitter in the scenario)."""
    alone = _compute(_variant(tmp_path, "real_gpu_bsp_mlp.yaml", "      time_shared: false\n"))
    shared = _compute(_variant(tmp_path, "real_gpu_bsp_mlp.yaml",
                               f"      time_shared: true\n      share_efficiency: {share}\n"))
    assert shared / alone == pytest.approx(2.0 / share, rel=1e-9)


def test_one_worker_and_its_server_are_not_slowed(tmp_path):
    """A parameter server's worker alone on the GPU with the server (k = 1): no factor."""
    alone = _compute(_variant(tmp_path, "real_gpu_async_ps.yaml", "      time_shared: false\n"))
    shared = _compute(_variant(tmp_path, "real_gpu_async_ps.yaml",
                               "      time_shared: true\n      share_efficiency: 0.5\n"))
    assert shared == pytest.approx(alone, rel=1e-12)


def test_device_factors_group_by_machine_and_count_workers():
    plat = load_scenario(ROOT / "scenarios" / "real_gpu_bsp_mlp.yaml").platform
    assert device_factors(plat, [0, 1], ["worker", "worker"]) == {0: 2.0, 1: 2.0}
    assert device_factors(plat, [0, 1, 2], ["worker", "worker", "server"]) == {
        0: 2.0, 1: 2.0, 2: 2.0}
    assert device_factors(plat, [0, 1], ["worker", "server"]) == {}
    assert ranks_sharing(plat, [0, 1]) == 2
    other = builtin_catalog()  # CPU/GPU kinds of the shipped catalog are never time-shared
    assert not any(d.time_shared for d in other.devices.values())


@pytest.mark.parametrize("field,value,words", [
    ("time_shared", "yes", "time_shared must be true or false"),
    ("share_efficiency", 1.5, "share_efficiency must be in (0, 1]"),
    ("share_efficiency", 0, "share_efficiency must be in (0, 1]"),
])
def test_bad_sharing_fields_are_input_errors(field, value, words):
    with pytest.raises(InputError) as exc:
        device_from_dict("g", {field: value}, base=builtin_catalog().devices["h200"])
    assert words in str(exc.value)


def _rows(k: int, share: float, overhead: float = 8e-6) -> tuple[list[dict], list[dict]]:
    """GEMM and copy rows of a device of 50 TFLOP/s and 3 TB/s, timed alone and with k ranks
    computing at once, each getting share/k of it."""
    gemm, mem = [], []
    for m, n, kk in ((1024, 4096, 4096), (4096, 4096, 1024), (2048, 8192, 4096),
                     (256, 2048, 2048), (4096, 8192, 8192)):
        flops = 2.0 * m * n * kk
        work = flops / 50e12
        base = {"bench": "gemm", "m": m, "n": n, "k": kk, "dtype": "float32", "flops": flops}
        gemm.append({**base, "context": ALONE, "time": overhead + work})
        gemm.append({**base, "time": overhead + work * k / share})
    for size in (16 << 20, 64 << 20, 256 << 20):
        work = 2 * size / 3e12
        base = {"bench": "memory", "kernel": "copy", "size": size, "bytes_moved": 2 * size}
        mem.append({**base, "context": ALONE, "time": overhead + work})
        mem.append({**base, "time": overhead + work * k / share})
    return gemm, mem


def test_share_efficiency_is_recovered_from_the_two_contexts():
    gemm, mem = _rows(2, 0.9)
    got = fit_share([r for r in gemm + mem if "context" not in r],
                    [r for r in gemm + mem if "context" in r], 2)
    # overhead is not shared, so kernels near the floor read a little high
    assert got is not None and got.value == pytest.approx(0.9, abs=0.01)
    spec = load_scenario(ROOT / "scenarios" / "real_gpu_bsp_mlp.yaml").platform.spec(0)
    cf = fit_compute(gemm, mem, [], spec, sharing=2)
    assert cf.share is not None and cf.share.value == pytest.approx(0.9, abs=0.01)
    # the roofline is the whole GPU's: fitted on the rows timed alone
    assert cf.rates["fc"] == pytest.approx(50e12, rel=0.02)
    assert cf.sustained_mem == pytest.approx(3e12, rel=0.02)
    assert any("time-shared device" in n for n in cf.notes)


def test_without_rows_timed_alone_the_share_is_not_fitted_and_the_note_says_so():
    gemm, mem = _rows(2, 0.9)
    together = [r for r in gemm if "context" not in r]
    spec = load_scenario(ROOT / "scenarios" / "real_gpu_bsp_mlp.yaml").platform.spec(0)
    cf = fit_compute(together, [r for r in mem if "context" not in r], [], spec, sharing=2)
    assert cf.share is None
    assert any("count the sharing twice" in n for n in cf.notes)
    assert fit_share(together, [], 2) is None
    assert fit_share(together, together, 1) is None  # one rank: nothing shared
    assert not math.isnan(cf.rates["fc"])


def test_time_shared_workers_are_not_grouped_by_kind():
    """The grouped BSP run (sim/grouped.py) classes workers by device kind; on a
    time-shared device the cost also depends on how many share it, so it is not used."""
    from clustersim.sim.grouped import worker_classes
    from clustersim.sim.sweep import prepare_point

    scn = load_scenario(ROOT / "scenarios" / "real_gpu_bsp_mlp.yaml",
                        ["run.fidelity=analytic", "sweep.workers=[3]"])
    alg = scn.algorithms[0]
    scn3, _job, actors, placement, _costs = prepare_point(scn, alg, 3, 0)
    assert scn3.workload.jitter == 0
    assert worker_classes("bsp", scn3, actors, placement, False) is None
