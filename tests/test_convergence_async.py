"""Asynchronous, elastic and gossip terms: stability bound, reductions, spectral gaps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clustersim.convergence import (
    Constants,
    ConvergenceProfile,
    NoiseSchedule,
    RunStats,
    delay_curvature,
    gossip_mixing_matrix,
    levin_may_bound,
    mixing_delay,
    predict,
    second_eigenvalue_modulus,
    uniform_gossip_rho,
)

PROF = ConvergenceProfile(model="t", target_metric="top1", target_value=0.7, ref_batch=256.0,
                          ref_steps=1e5, noise=NoiseSchedule.geometric(1000.0, 8000.0),
                          dataset_size=1e6)


def _spectral_radius(a: float, d: int) -> float:
    # x_{t+1} = x_t - a x_{t-d}: roots of z^{d+1} - z^d + a
    coeffs = np.zeros(d + 2)
    coeffs[0] = 1.0
    coeffs[1] -= 1.0
    coeffs[-1] += a
    return float(np.max(np.abs(np.roots(coeffs))))


@pytest.mark.parametrize("d", [0, 1, 2, 3, 5, 10, 25])
def test_levin_may_bound_is_the_stability_edge(d):
    edge = levin_may_bound(d)
    assert _spectral_radius(edge * 0.999, d) < 1.0
    assert _spectral_radius(edge * 1.001, d) > 1.0


def test_delay_curvature_values():
    assert delay_curvature(0) == 0.0
    assert delay_curvature(1) == pytest.approx(1.0, rel=1e-12)         # 2 cos(pi/3) = 1
    assert delay_curvature(2) == pytest.approx(math.sqrt(5), rel=1e-12)  # 1/cos(2pi/5) - 1
    big = 1000.0
    assert delay_curvature(big) == pytest.approx(4 * big / math.pi + 2 / math.pi - 1, rel=1e-5)
    d = np.arange(0, 50)
    assert np.all(np.diff(delay_curvature(d), 2) > 0)                    # convex


def _run(kind: str, **kw) -> RunStats:
    base = dict(kind=kind, workers=8, batch=32.0, update_time=0.01, throughput=3200.0)
    base.update(kw)
    return RunStats(**base)


def test_zero_staleness_reduces_async_and_hybrid_to_sync():
    sync = predict(PROF, _run("sync"))
    for kind in ("async", "hybrid"):
        for mom in (0.0, 0.9):
            for stale in ((), (0, 0, 0)):
                r = predict(PROF, _run(kind, momentum=mom, staleness=stale))
                assert r.steps_to_target == pytest.approx(sync.steps_to_target, rel=1e-12)
                assert r.statistical_efficiency == pytest.approx(sync.statistical_efficiency,
                                                                 rel=1e-12)


def test_staleness_closed_form_distribution_and_momentum():
    k = Constants()
    s_min = PROF.ref_steps / (1 + PROF.noise.mean() / 256.0)
    samples = [0, 1, 2, 7, 7, 20]
    r = predict(PROF, _run("async", staleness=samples), k)
    want = s_min * (1 + PROF.noise.mean() / 32.0 + np.mean(delay_curvature(samples)))
    assert r.steps_to_target == pytest.approx(want, rel=1e-12)
    # the spread costs more than its mean (D convex): same mean 6, constant vs spread
    flat = predict(PROF, _run("async", staleness=[6] * 6), k).steps_to_target
    spread = predict(PROF, _run("async", staleness=[0, 0, 0, 12, 12, 12]), k).steps_to_target
    assert spread > flat
    # explicit momentum amplifies staleness (Mitliagkas et al.: total momentum composes)
    msgd = predict(PROF, _run("async", staleness=[7] * 4, momentum=0.9), k).steps_to_target
    sgd = predict(PROF, _run("async", staleness=[7] * 4), k).steps_to_target
    assert msgd > sgd
    lag = 7 * (1 + 9) + 9
    assert msgd == pytest.approx(
        s_min * (1 + PROF.noise.mean() / 32.0 + delay_curvature(lag) - delay_curvature(9)),
        rel=1e-12)
    # k_m = 0: the lags just add
    k0 = Constants(k_m=0.0)
    add = predict(PROF, _run("async", staleness=[7] * 4, momentum=0.9), k0).steps_to_target
    assert add == pytest.approx(
        s_min * (1 + PROF.noise.mean() / 32.0 + delay_curvature(16) - delay_curvature(9)),
        rel=1e-12)


def test_elastic_alpha_zero_never_converges_and_limits():
    r = predict(PROF, _run("elastic", alpha=0.0, tau=10))
    assert math.isinf(r.steps_to_target) and r.goodput == 0.0 and "never" in r.note
    assert math.isinf(predict(PROF, _run("elastic", beta=2.5, tau=1)).steps_to_target)
    # tau = 1 and beta = 1 (centre = workers' average every step, no drift, no lag):
    # the sync law at batch workers * batch
    e = predict(PROF, _run("elastic", beta=1.0, tau=1))
    s = predict(PROF, _run("sync", batch=8 * 32.0))
    assert e.steps_to_target == pytest.approx(s.steps_to_target, rel=1e-12)
    assert e.samples_to_target == pytest.approx(s.samples_to_target, rel=1e-12)
    # the lag is tau (1 - beta)/beta extra steps, the drift D((tau-1)/2) extra curvature
    k = Constants()
    s_min = PROF.ref_steps / (1 + PROF.noise.mean() / 256.0)
    got = predict(PROF, _run("elastic", alpha=0.9 / 8, tau=10), k).steps_to_target
    want = s_min * (1 + PROF.noise.mean() / 256.0 + delay_curvature(4.5)) + 10 * 0.1 / 0.9
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("p,q,share", [(2, 1.0, 0.5), (4, 0.3, 1 / 3), (16, 0.01, 1 / 3),
                                       (64, 0.5, 0.5)])
def test_uniform_gossip_gap_matches_closed_form(p, q, share):
    w = gossip_mixing_matrix(p, q, share)
    assert np.allclose(w.sum(axis=1), 1.0) and np.allclose(w.sum(axis=0), 1.0)
    assert second_eigenvalue_modulus(w) == pytest.approx(uniform_gossip_rho(p, q, share),
                                                         abs=1e-12)
    assert uniform_gossip_rho(p, q, share) == pytest.approx(abs(1 - share * q * p / (p - 1)))


def test_gossip_ring_disconnected_and_full_mixing():
    p, q = 8, 0.5
    ring = [[(i - 1) % p, (i + 1) % p] for i in range(p)]
    rho = second_eigenvalue_modulus(gossip_mixing_matrix(p, q, 1 / 3, ring))
    # ring: eigenvalues 1 - (s q/2)(2 - 2 cos(2 pi k/p)); second largest at k = 1
    want = 1 - (q / 3) * (1 - math.cos(2 * math.pi / p))
    assert rho == pytest.approx(want, abs=1e-12)
    assert mixing_delay(p, q, 1 / 3, ring) == pytest.approx(want / (1 - want))
    two_islands = [[1], [0], [3], [2]]
    assert math.isinf(mixing_delay(4, 0.5, 1 / 3, two_islands))
    r = predict(PROF, _run("gossip", gossip_prob=0.0))
    assert math.isinf(r.steps_to_target) and "never" in r.note
    # perfect mixing (rho = 0) and no staleness: the sync law at workers * batch
    g = predict(PROF, _run("gossip", workers=2, gossip_prob=1.0), Constants(gossip_share=0.5))
    s = predict(PROF, _run("sync", batch=64.0))
    assert g.steps_to_target == pytest.approx(s.steps_to_target, rel=1e-12)
    # more gossip, fewer steps
    lo = predict(PROF, _run("gossip", gossip_prob=0.05)).steps_to_target
    hi = predict(PROF, _run("gossip", gossip_prob=0.5)).steps_to_target
    assert hi < lo
