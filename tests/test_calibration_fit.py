"""The fitting routines: robust least squares with intervals, segmentation, conversions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clustersim.calibration.alphabeta import (
    detect_breakpoints,
    fit_line,
    fit_piecewise,
    link_model,
)
from clustersim.calibration.computefit import fit_compute, fit_reduction, gemm_bytes, gemm_class
from clustersim.calibration.fit import robust_fit
from clustersim.catalog import DeviceSpec
from clustersim.workload.compute import roofline

SIZES = np.array(sorted({int(round(2 ** (k / 2))) for k in range(0, 51)}), dtype=float)
#: (start, alpha, beta): eager, rendezvous, large-copy regimes
TRUTH = ((0.0, 3e-6, 1 / 2e9), (65536.0, 9e-6, 1 / 6e9), (4194304.0, 30e-6, 1 / 3e9))


def piecewise_times(sizes: np.ndarray) -> np.ndarray:
    out = np.empty_like(sizes)
    for i, s in enumerate(sizes):
        _, a, b = [t for t in TRUTH if s >= t[0]][-1]
        out[i] = a + b * s
    return out


def test_exact_line_is_recovered_with_tight_interval():
    t = 2e-6 + SIZES / 5e9
    f = fit_line(SIZES, t)
    assert f["alpha"] == pytest.approx(2e-6, rel=1e-6)
    assert f["beta"] == pytest.approx(1 / 5e9, rel=1e-6)
    lo, hi = f.interval("beta")
    assert lo <= f["beta"] <= hi and (hi - lo) < 1e-6 * f["beta"]
    assert f.dof == len(SIZES) - 2


def test_interval_coverage_is_about_95_percent():
    """Linear loss, Gaussian relative noise: the 95 % interval holds the truth in about 95 %
    of 200 seeded experiments (binomial: 88-100 % is well within chance)."""
    hits = 0
    x = np.linspace(1.0, 10.0, 30)
    for seed in range(200):
        rng = np.random.default_rng(seed)
        y = (2.0 + 3.0 * x) * (1 + 0.02 * rng.standard_normal(x.size))
        f = robust_fit(lambda p: p[0] + p[1] * x, y, [1.0, 1.0], ("a", "b"), loss="linear")
        lo, hi = f.interval("b")
        hits += lo <= 3.0 <= hi
    assert 176 <= hits <= 200


def test_robust_loss_resists_outliers():
    rng = np.random.default_rng(3)
    x = np.linspace(1.0, 10.0, 40)
    y = 2.0 + 3.0 * x
    bad = rng.choice(x.size, 6, replace=False)
    y = y.copy()
    y[bad] *= 2.5
    lin = robust_fit(lambda p: p[0] + p[1] * x, y, [1.0, 1.0], ("a", "b"), loss="linear")
    rob = robust_fit(lambda p: p[0] + p[1] * x, y, [1.0, 1.0], ("a", "b"), loss="soft_l1")
    assert abs(rob["b"] - 3.0) < 0.05 * 3.0
    assert abs(rob["b"] - 3.0) < abs(lin["b"] - 3.0) / 3


def test_no_degrees_of_freedom_means_unknown_interval():
    f = robust_fit(lambda p: p[0] + 0 * p[0], [2.0], [1.0], ("a",))
    assert f["a"] == pytest.approx(2.0)
    assert all(math.isnan(v) for v in f.interval("a"))


def test_bad_fit_input_is_rejected():
    with pytest.raises(ValueError):
        robust_fit(lambda p: p, [0.0], [1.0], ("a",))
    with pytest.raises(ValueError):
        robust_fit(lambda p: p, [1.0], [1.0], ("a",), loss="l2")


def test_breakpoints_are_detected_exactly_on_clean_data():
    assert detect_breakpoints(SIZES, piecewise_times(SIZES)) == (65536.0, 4194304.0)


def test_breakpoints_survive_two_percent_noise():
    rng = np.random.default_rng(11)
    t = piecewise_times(SIZES) * rng.lognormal(0.0, 0.02, SIZES.size)
    pw = fit_piecewise(SIZES, t)
    assert pw.breakpoints == (65536.0, 4194304.0)
    for piece, (_, _alpha, b) in zip(pw.pieces, TRUTH):
        assert piece.beta == pytest.approx(b, rel=0.05)
        # the error estimate is honest: the truth lies within 3 standard errors
        assert abs(piece.beta - b) < 3 * piece.fit.error("beta")


def test_a_straight_line_stays_one_segment():
    pw = fit_piecewise(SIZES, 5e-6 + SIZES / 8e9)
    assert len(pw.pieces) == 1 and pw.detected


def test_given_breakpoints_are_used_as_given():
    pw = fit_piecewise(SIZES, piecewise_times(SIZES), breakpoints=[60000, 4e6])
    assert pw.breakpoints == (60000.0, 4e6)
    assert not pw.detected


def test_link_model_reproduces_the_fit_on_its_route():
    pw = fit_piecewise(SIZES, piecewise_times(SIZES))
    lm = link_model(pw, hops=2, fallback_bandwidth=1e9)
    assert lm.bandwidth == pytest.approx(6e9, rel=1e-6)  # the fastest visible segment
    assert lm.latency == pytest.approx(3e-6 / 2, rel=1e-6)  # the smallest alpha over 2 hops
    for seg, (start, a, b) in zip(lm.segments, TRUTH):
        assert seg.start == start
        model_alpha = 2 * lm.latency + seg.overhead
        assert model_alpha == pytest.approx(a, rel=1e-5)
        assert 1 / (lm.bandwidth * seg.efficiency) == pytest.approx(b, rel=1e-5)


def test_gemm_classes_by_shape():
    assert gemm_class(12544, 64, 576) == "conv"
    assert gemm_class(64, 512, 512) == "fc"
    assert gemm_bytes(2, 3, 4) == 4 * (8 + 12 + 6)


def _gemm_rows(dev, eff):
    rows = []
    for m, n, k, cls in [(64, 512, 512, "fc"), (128, 1024, 1024, "fc"), (512, 512, 64, "fc"),
                         (32, 256, 256, "fc"), (12544, 64, 576, "conv"),
                         (3136, 128, 1152, "conv"), (784, 256, 2304, "conv")]:
        flops = 2.0 * m * n * k
        t, _ = roofline(flops, gemm_bytes(m, n, k), dev, eff[cls], dev.mem_efficiency,
                        dev.overhead)
        rows.append({"bench": "gemm", "m": m, "n": n, "k": k, "flops": flops, "time": t,
                     "class": cls})
    return rows


def _copy_rows(dev):
    return [{"bench": "memory", "kernel": "copy", "size": s, "bytes_moved": 2 * s,
             "time": roofline(0, 2 * s, dev, 1, dev.mem_efficiency, dev.overhead)[0]}
            for s in (1 << 12, 1 << 16, 1 << 20, 1 << 24)]


def test_roofline_parameters_are_recovered():
    dev = DeviceSpec("cpu", peak=80e9, mem_bw=20e9, memory=1e9, mem_efficiency=0.4,
                     overhead=4e-6)
    eff = {"fc": 0.55, "conv": 0.35}
    red = [{"bench": "reduce", "size": s, "time": s / 3e9} for s in (1 << 16, 1 << 22)]
    nominal = DeviceSpec("cpu", peak=80e9, mem_bw=20e9, memory=1e9)
    cf = fit_compute(_gemm_rows(dev, eff), _copy_rows(dev), red, nominal)
    assert cf.pack_rate is None  # the truth has no packing term: none is reported
    assert cf.efficiency["fc"] == pytest.approx(0.55, rel=1e-4)
    assert cf.efficiency["conv"] == pytest.approx(0.35, rel=1e-4)
    assert cf.efficiency["other"] == cf.efficiency["fc"]
    assert cf.mem_efficiency == pytest.approx(0.4, rel=1e-5)
    assert cf.overhead == pytest.approx(4e-6, rel=1e-4)
    assert cf.reduce_rate == pytest.approx(3e9, rel=1e-6)
    assert not any("raised" in n for n in cf.notes)


def test_cache_sized_copies_do_not_set_memory_bandwidth():
    """Copies whose arrays fit a cache run faster than memory; only the large ones count."""
    dev = DeviceSpec("cpu", peak=80e9, mem_bw=20e9, memory=1e9, mem_efficiency=0.4,
                     overhead=4e-6)
    rows = _copy_rows(dev)
    for r in rows:
        if r["size"] < (4 << 20):
            r["time"] /= 4  # a cache 4x faster than memory
    cf = fit_compute(_gemm_rows(dev, {"fc": 0.5, "conv": 0.5}), rows, [], dev)
    assert cf.mem_efficiency == pytest.approx(0.4, rel=1e-4)
    assert any("smaller ones measure caches" in n for n in cf.notes)


def test_rates_above_the_datasheet_raise_it():
    dev = DeviceSpec("cpu", peak=80e9, mem_bw=20e9, memory=1e9, mem_efficiency=1.0,
                     overhead=1e-6)
    nominal = DeviceSpec("cpu", peak=40e9, mem_bw=10e9, memory=1e9)
    cf = fit_compute(_gemm_rows(dev, {"fc": 0.9, "conv": 0.9}), _copy_rows(dev), [], nominal)
    assert cf.peak == pytest.approx(72e9, rel=1e-4)
    assert cf.efficiency["fc"] == pytest.approx(1.0, rel=1e-4)
    assert cf.mem_bw == pytest.approx(20e9, rel=1e-4)
    assert sum("raised" in n for n in cf.notes) == 2


def test_reduction_rate_alone():
    f = fit_reduction([{"size": s, "time": s / 5e9} for s in (1e5, 1e6, 1e7)])
    assert f["rate"] == pytest.approx(5e9, rel=1e-9)
