"""The large-batch law and its LR rules against closed forms (McCandlish et al. 2018)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize

from clustersim.convergence import (
    ConvergenceProfile,
    NoiseSchedule,
    RunStats,
    optimal_batch,
    pollux_efficiency,
    predict,
    steps_integral,
)


def _profile(noise: NoiseSchedule, rule: str = "tuned", ref_batch: float = 256.0,
             ref_steps: float = 1e5) -> ConvergenceProfile:
    return ConvergenceProfile(model="t", target_metric="top1", target_value=0.7,
                              ref_batch=ref_batch, ref_steps=ref_steps, noise=noise,
                              dataset_size=1e6, lr_rule=rule)


def _sync(batch: float, t: float = 1.0) -> RunStats:
    return RunStats(kind="sync", workers=1, batch=batch, update_time=t, throughput=batch / t)


def test_tuned_law_closed_form_and_pollux_efficiency():
    phi = 1000.0
    prof = _profile(NoiseSchedule.constant(phi))
    s_min = prof.ref_steps / (1 + phi / prof.ref_batch)
    for b in (8.0, 256.0, 4096.0, 65536.0):
        r = predict(prof, _sync(b))
        assert r.steps_to_target == pytest.approx(s_min * (1 + phi / b), rel=1e-12)
        # E(B) = E_min (1 + B/phi), E_min = S_min phi
        assert r.samples_to_target == pytest.approx(s_min * phi * (1 + b / phi), rel=1e-12)
        assert r.statistical_efficiency == pytest.approx(
            pollux_efficiency(b, prof.ref_batch, phi), rel=1e-12)
        assert r.goodput == pytest.approx(b * r.statistical_efficiency, rel=1e-12)
        assert r.time_to_target == pytest.approx(r.steps_to_target, rel=1e-12)
    # (S/S_min - 1)(E/E_min - 1) = 1 at every batch
    r = predict(prof, _sync(3000.0))
    assert (r.steps_to_target / s_min - 1) * (r.samples_to_target / (s_min * phi) - 1) == \
        pytest.approx(1.0, rel=1e-12)


def test_efficiency_tends_to_one_for_small_batches():
    phi = 1000.0
    effs = [predict(_profile(NoiseSchedule.constant(phi), ref_batch=b0), _sync(b0 / 2))
            .statistical_efficiency for b0 in (1e2, 1e0, 1e-2, 1e-4)]
    gaps = [abs(e - 1) for e in effs]
    assert all(a > b for a, b in zip(gaps, gaps[1:]))
    assert gaps[-1] < 1e-7


def test_steps_flat_below_and_samples_linear_above_noise_scale():
    phi = 1000.0
    prof = _profile(NoiseSchedule.constant(phi))
    s_min = prof.ref_steps / (1 + phi / prof.ref_batch)
    big = [predict(prof, _sync(b)) for b in (1e5, 1e6, 1e7)]
    assert all(r.steps_to_target / s_min - 1 < 0.011 for r in big)      # steps -> S_min
    small = [predict(prof, _sync(b)) for b in (1.0, 2.0, 4.0)]
    for r, b in zip(small, (1.0, 2.0, 4.0)):                            # steps ~ S_min phi/B
        assert r.steps_to_target * b / (s_min * phi) == pytest.approx(1.0, rel=5e-3)
    # past the noise scale the samples grow linearly in B: doubling B doubles them
    ratio = big[2].samples_to_target / big[1].samples_to_target
    assert ratio == pytest.approx(10.0, rel=2e-3)


def test_goodput_single_maximum_at_sqrt_a_phi_over_b():
    phi, a, b = 2000.0, 0.05, 2e-5
    prof = _profile(NoiseSchedule.constant(phi))

    def neg_goodput(log_batch: float) -> float:
        batch = math.exp(log_batch)
        t = a + b * batch
        return -predict(prof, _sync(batch, t)).goodput

    best = optimize.minimize_scalar(neg_goodput, bounds=(0.0, math.log(1e7)), method="bounded",
                                    options={"xatol": 1e-10})
    assert math.exp(best.x) == pytest.approx(optimal_batch(a, b, phi), rel=1e-4)
    # one maximum: goodput rises then falls on a log grid
    grid = np.exp(np.linspace(0.0, math.log(1e7), 400))
    g = np.array([-neg_goodput(math.log(x)) for x in grid])
    d = np.sign(np.diff(g))
    assert np.count_nonzero(d[1:] != d[:-1]) == 1


def test_geometric_schedule_mean_and_reduction_to_constant():
    sched = NoiseSchedule.geometric(1000.0, 8000.0)
    num, _ = integrate.quad(lambda p: float(sched.values(p)), 0.0, 1.0)
    assert sched.mean() == pytest.approx(num, rel=1e-10)
    assert sched.mean() == pytest.approx(7000.0 / math.log(8.0), rel=1e-12)
    same = NoiseSchedule.geometric(3000.0, 3000.0)
    const = NoiseSchedule.constant(3000.0)
    for rule in ("tuned", "linear", "sqrt", "none"):
        for b in (64.0, 256.0, 700.0):
            assert steps_integral(same, b, rule=rule, ref_batch=256.0) == pytest.approx(
                steps_integral(const, b, rule=rule, ref_batch=256.0), rel=1e-12)
    two_points = NoiseSchedule(((0.0, 1000.0), (1.0, 8000.0)))
    assert two_points.mean() == sched.mean()


@pytest.mark.parametrize("batch", [2400.0, 2500.0, 2510.0, 2511.0, 2511.9])
def test_the_linear_rule_matches_quadrature_just_below_the_divergence_edge(batch):
    """QA 16b LOW-8: ResNet-50's schedule under the linear rule from 256 diverges at
    B = 2,512; the fixed 48-point rule was 1.8 % low at 2,511 (7.2805 against 7.4110) as 1/r
    peaks inside a segment.  Near the edge the rule is checked against itself on halves
    and QUADPACK takes over where they disagree."""
    from clustersim.convergence import load_profile

    sched = load_profile("resnet50").noise
    got = steps_integral(sched, batch, rule="linear", ref_batch=256.0)
    s = batch / 256.0

    def inv_r(p: float) -> float:
        bn = float(sched.values(np.array([p]))[0])
        c = s / (1 + bn / 256.0)
        return 1.0 / (2 * c - c * c * (1 + bn / batch))

    want = sum(integrate.quad(inv_r, lo, hi, epsabs=0, epsrel=1e-13, limit=500)[0]
               for lo, hi in sched.segments())
    assert got == pytest.approx(want, rel=1e-9)
    assert math.isinf(steps_integral(sched, 2512.0, rule="linear", ref_batch=256.0))


def test_rules_agree_at_reference_batch_and_match_quadrature():
    sched = NoiseSchedule(((0.0, 500.0), (0.3, 2000.0), (1.0, 9000.0)))
    tuned = steps_integral(sched, 256.0)
    for rule in ("linear", "sqrt", "none"):
        assert steps_integral(sched, 256.0, rule=rule, ref_batch=256.0) == pytest.approx(
            tuned, rel=1e-10)
    b, b0, extra = 600.0, 256.0, 0.7
    got = steps_integral(sched, b, extra=extra, rule="sqrt", ref_batch=b0)

    def inv_r(p: float) -> float:
        bn = float(sched.values(p))
        c = math.sqrt(b / b0) / (1 + bn / b0)
        return 1.0 / (2 * c - c * c * (1 + bn / b + extra))

    want, _ = integrate.quad(inv_r, 0.0, 1.0, points=[0.3], epsabs=0, epsrel=1e-12)
    assert got == pytest.approx(want, rel=1e-9)
    # the tuned rule is the best any rule can do
    for rule in ("linear", "sqrt", "none"):
        assert steps_integral(sched, b, extra=extra, rule=rule, ref_batch=b0) >= \
            steps_integral(sched, b, extra=extra) * (1 - 1e-12)


def test_linear_rule_diverges_where_closed_form_says():
    # constant noise: c K = (B + phi)/(B_ref + phi) >= 2  <=>  B >= 2 B_ref + phi
    phi, b0 = 1000.0, 256.0
    edge = 2 * b0 + phi
    prof = _profile(NoiseSchedule.constant(phi), rule="linear", ref_batch=b0)
    assert math.isfinite(predict(prof, _sync(edge * 0.999)).steps_to_target)
    r = predict(prof, _sync(edge))
    assert math.isinf(r.steps_to_target) and r.goodput == 0.0 and "diverges" in r.note
    assert math.isinf(predict(prof, _sync(edge * 10)).time_to_target)
    # sqrt rule: sqrt(B/B0) (1 + phi/B)/(1 + phi/B0) >= 2, solved numerically
    f = lambda x: math.sqrt(x / b0) * (1 + phi / x) / (1 + phi / b0) - 2  # noqa: E731
    root = optimize.brentq(f, b0 * 1.01, 1e9)
    sq = _profile(NoiseSchedule.constant(phi), rule="sqrt", ref_batch=b0)
    assert math.isfinite(predict(sq, _sync(root * 0.999)).steps_to_target)
    assert math.isinf(predict(sq, _sync(root * 1.001)).steps_to_target)
    # growing noise: the edge is set by the smallest noise scale (early training)
    grow = _profile(NoiseSchedule.geometric(phi, 8 * phi), rule="linear", ref_batch=b0)
    assert math.isinf(predict(grow, _sync(edge * 1.001)).steps_to_target)
