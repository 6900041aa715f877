"""The gradient noise scale estimator (:mod:`clustersim.convergence.noise_scale`) recovers a
known noise scale from logs generated with it.

The generator draws per-sample gradients ``G + xi`` with ``xi ~ N(0, Sigma)`` (Sigma diagonal,
uneven), known ``|G|^2`` and ``tr(Sigma)``; each of ``W`` workers averages ``B_small`` samples,
the all-reduce averages the workers - what data-parallel training does.  The tolerances come
from the closed-form variance of the per-step estimates for Gaussian noise: with
``C = Sigma/B``, ``Var|G + e|^2 = 2 tr(C^2) + 4 G'CG``; the small batch being one of the
workers' parts, ``Cov(|G_small|^2, |G_big|^2) = Var|G_big|^2``, and a mean of the ``W`` local
norms divides the small one's variance by ``W`` (:func:`theory_se`).  The estimate, a ratio of
means over ``n`` steps, then has standard error ``~ 1/sqrt(n)`` by the delta method; every
check allows 4 of them (a 6e-5 chance of a false failure, were the seeds not fixed).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from clustersim.convergence.noise_scale import (
    NormLog,
    estimate,
    format_log,
    geometric_schedule,
    per_step,
    progress_of,
    read_log,
    windows,
)


def _shape(seed: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Direction of G and the (normalised) diagonal of Sigma."""
    rng = np.random.default_rng([seed, 1])
    u = rng.standard_normal(d)
    w = rng.uniform(0.2, 1.0, d)
    return u / np.linalg.norm(u), w / w.sum()


def synthetic_norms(seed: int, grad_sq: np.ndarray, trace: np.ndarray, *, d: int = 32,
                    workers: int = 4, b_small: int = 8, averaged: bool = False) -> NormLog:
    """A norm log of ``len(grad_sq)`` steps with the given true ``|G|^2`` and ``tr(Sigma)``
    per step, from explicit per-sample gradients."""
    u, w = _shape(seed, d)
    rng = np.random.default_rng([seed, 2])
    n = len(grad_sq)
    g = np.sqrt(grad_sq)[:, None] * u
    noise = rng.standard_normal((n, workers, b_small, d)) * np.sqrt(trace[:, None] * w)[:, None,
                                                                                     None, :]
    local = g[:, None, :] + noise.mean(axis=2)  # each worker's mini-batch gradient
    big = local.mean(axis=1)  # the all-reduced mean
    sq_local = np.einsum("nwd,nwd->nw", local, local)
    small = sq_local.mean(axis=1) if averaged else sq_local[:, 0]
    return NormLog(np.arange(n, dtype=float), np.full(n, float(b_small)),
                   np.full(n, float(b_small * workers)), small,
                   np.einsum("nd,nd->n", big, big))


def theory_se(seed: int, grad_sq: np.ndarray, trace: np.ndarray, *, d: int = 32,
              workers: int = 4, b_small: int = 8, averaged: bool = False
              ) -> tuple[float, float]:
    """(the estimand mean(tr)/mean(|G|^2), the delta-method standard error of its estimate)
    for independent steps of :func:`synthetic_norms`."""
    u, w = _shape(seed, d)
    bs, bb = b_small, b_small * workers
    gd2 = grad_sq[:, None] * u ** 2
    cs, cb = trace[:, None] * w / bs, trace[:, None] * w / bb
    v_s = (2 * (cs ** 2).sum(1) + 4 * (gd2 * cs).sum(1)) / (workers if averaged else 1)
    v_b = 2 * (cb ** 2).sum(1) + 4 * (gd2 * cb).sum(1)  # also Cov(small, big)
    k, a, b = 1 / (1 / bs - 1 / bb), bb / (bb - bs), bs / (bb - bs)
    v_tr = k ** 2 * (v_s - v_b)  # tr = k (s - big)
    v_g = a ** 2 * v_b + b ** 2 * v_s - 2 * a * b * v_b  # |G|^2 = a big - b s
    c = k * b * (v_b - v_s)
    mt, mg, n = trace.mean(), grad_sq.mean(), len(grad_sq)
    var = (v_tr / mg ** 2 - 2 * mt * c / mg ** 3 + mt ** 2 * v_g / mg ** 4).sum() / n ** 2
    return float(mt / mg), float(math.sqrt(var))


# -- constant noise scale --------------------------------------------------------------------
@pytest.mark.parametrize("averaged", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_constant_noise_scale_is_recovered(seed: int, averaged: bool) -> None:
    """tr(Sigma) = 100, |G|^2 = 0.5: B_simple = 200 at B_small 8, B_big 32, 4,000 steps
    (se 10 with one worker's norm, 7 with the workers' mean; seen: 199.5-200.0 and
    196.7-206.1, interval widths 0.95-1.07 x the theory's)."""
    n = 4000
    g2, tr = np.full(n, 0.5), np.full(n, 100.0)
    log = synthetic_norms(seed, g2, tr, averaged=averaged)
    truth, se = theory_se(seed, g2, tr, averaged=averaged)
    assert truth == 200.0
    est = estimate(log)
    assert abs(est.b_simple - truth) < 4 * se
    # the parts: |G|^2 and tr(Sigma) themselves, within 4 of their own standard errors
    grad_sq, trace = per_step(log)
    assert abs(est.grad_sq - 0.5) < 4 * grad_sq.std() / math.sqrt(n)
    assert abs(est.trace - 100.0) < 4 * trace.std() / math.sqrt(n)
    # Fieller's interval covers the truth and is as wide as the theory says (+-1.96 se)
    assert est.low < truth < est.high
    assert 0.75 < (est.high - est.low) / (2 * 1.96 * se) < 1.33


def test_averaging_the_workers_local_norms_is_unbiased_and_tighter() -> None:
    n = 4000
    g2, tr = np.full(n, 0.5), np.full(n, 100.0)
    _, se_one = theory_se(0, g2, tr)
    _, se_mean = theory_se(0, g2, tr, averaged=True)
    assert se_mean < 0.8 * se_one
    one = estimate(synthetic_norms(0, g2, tr))
    mean = estimate(synthetic_norms(0, g2, tr, averaged=True))
    assert mean.high - mean.low < 0.8 * (one.high - one.low)


def test_fieller_intervals_cover_at_their_level() -> None:
    """400 logs of 100 steps each (B_simple 20, B_small 4, B_big 8): the 95% interval covers
    the truth in 92-98% of them (binomial sd of the rate: 1.1%); the 80% one in 75-85%
    (seen: 97.8% and 79.3% - Student's quantile makes short windows a little wide)."""
    n, reps = 100, 400
    g2, tr = np.full(n, 1.0), np.full(n, 20.0)
    hits = {0.95: 0, 0.80: 0}
    for seed in range(reps):
        log = synthetic_norms(seed, g2, tr, d=8, workers=2, b_small=4)
        for level in hits:
            e = estimate(log, confidence=level)
            hits[level] += e.low < 20.0 < e.high
    assert 0.92 <= hits[0.95] / reps <= 0.98
    assert 0.75 <= hits[0.80] / reps <= 0.85


def test_the_ratio_of_means_is_not_the_mean_of_ratios() -> None:
    """Per-step |G|^2 estimates straddle zero at this noise level: their ratios are useless,
    the ratio of the means is right."""
    n = 4000
    g2, tr = np.full(n, 0.5), np.full(n, 100.0)
    log = synthetic_norms(3, g2, tr)
    grad_sq, trace = per_step(log)
    assert (grad_sq < 0).mean() > 0.2
    truth, se = theory_se(3, g2, tr)
    assert abs(estimate(log).b_simple - truth) < 4 * se
    assert abs(np.mean(trace / grad_sq) - truth) > 10 * se


# -- a noise scale that grows over training ------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_growing_noise_scale_is_recovered_per_window(seed: int) -> None:
    """B(p) = 50 * 8^p over 8,000 steps (tr(Sigma) = 100, |G|^2 falling): each of 4 windows
    within 4 se of its estimand, mean(tr)/mean(|G|^2) over the window's steps (se 1.9 to 31);
    the geometric schedule fitted to the windows within 4 propagated se of the one fitted to
    the estimands, which is itself within 2% of 50 -> 400 (a ratio of window means sits a
    little above the value at the window's centre: 1.1% here)."""
    n, k = 8000, 4
    p = np.arange(n) / (n - 1)
    tr = np.full(n, 100.0)
    g2 = tr / (50.0 * 8.0 ** p)
    log = synthetic_norms(seed, g2, tr)
    parts = windows(log, k)
    cut = np.minimum((progress_of(log) * k).astype(int), k - 1)
    truths, sds = [], []
    for j, e in enumerate(parts):
        rows = cut == j
        truth, se = theory_se(seed, g2[rows], tr[rows])
        assert e.steps == rows.sum() == n // k
        assert abs(e.b_simple - truth) < 4 * se, (j, e.b_simple, truth, se)
        assert e.low < truth < e.high or abs(e.b_simple - truth) > 1.9 * se
        truths.append(truth)
        sds.append(se / truth)  # sd of log B
    assert all(a.b_simple < b.b_simple for a, b in zip(parts, parts[1:]))
    # the schedule: weighted least squares on log B, its covariance propagated
    centres = np.array([(j + 0.5) / k for j in range(k)])
    x = np.vstack([np.ones(k), centres]).T
    cov = np.linalg.inv(x.T @ np.diag(1 / np.square(sds)) @ x)
    sd_from, sd_to = math.sqrt(cov[0, 0]), math.sqrt(cov[0, 0] + cov[1, 1] + 2 * cov[0, 1])
    slope, icept = np.polyfit(centres, np.log(truths), 1, w=1 / np.array(sds))
    ideal = (math.exp(icept), math.exp(icept + slope))
    assert ideal == pytest.approx((50.0, 400.0), rel=0.02)
    got = geometric_schedule(parts)
    assert got is not None
    assert abs(math.log(got[0] / ideal[0])) < 4 * sd_from
    assert abs(math.log(got[1] / ideal[1])) < 4 * sd_to


def test_a_constant_schedule_needs_two_bounded_windows() -> None:
    n = 400
    log = synthetic_norms(0, np.full(n, 1e-6), np.full(n, 100.0))  # |G|^2 lost in the noise
    parts = windows(log, 4)
    assert not any(e.bounded for e in parts)
    assert geometric_schedule(parts) is None


# -- the log format ------------------------------------------------------------------------------
def test_a_written_log_reads_back_bit_for_bit(tmp_path) -> None:
    log = synthetic_norms(5, np.full(50, 0.5), np.full(50, 10.0))
    rows = zip(log.step, log.batch_small, log.batch_big, log.sq_norm_small, log.sq_norm_big)
    path = tmp_path / "norms.csv"
    path.write_text(format_log(rows, comment="made by a test\nsecond line"))
    back = read_log(path)
    for col in ("step", "batch_small", "batch_big", "sq_norm_small", "sq_norm_big"):
        assert np.array_equal(getattr(back, col), getattr(log, col)), col
    assert estimate(back) == estimate(log)
