"""The fit of the analytic model's constants (clustersim.convergence.fit), on synthetic
observations generated with known constants through the analytic model itself (closed form,
no emulation): the fit must give them back, with intervals that cover them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clustersim.convergence import RunStats, load_constants, predict
from clustersim.convergence.constants import Constants
from clustersim.convergence.fit import (
    Observation,
    analytic_steps,
    batch_law_steps,
    constants_document,
    fit_batch_law,
    fit_constants,
    validation_errors,
)
from clustersim.convergence.profile import load_profile, task_profile

TRUE = Constants(k_s=0.3, k_m=0.5, k_d=0.7, k_e=2.0, k_g=0.2)
#: a fixed LR far from the stability edge: small constants (what the emulation finds)
SMALL = Constants(k_s=0.02, k_m=0.5, k_d=0.05, k_e=2.0, k_g=0.01)


def _profile(rule: str = "tuned"):
    return load_profile("toy", {"target": 0.9, "ref_batch": 32, "ref_steps": 200,
                                "noise_scale": 8.0, "lr_rule": rule})


def _grid(profile, true: Constants = TRUE) -> list[Observation]:
    """Runs that move each term: staleness spreads, momenta, tau and beta, push rates."""
    rng = np.random.default_rng(0)
    runs: list[RunStats] = []
    for w in (2, 4, 8, 16):
        runs.append(RunStats("async", w, 32, 1e-3, 1e4,
                             staleness=rng.poisson(w - 1, 200).astype(float).tolist()))
    for mu in (0.3, 0.6):
        for w in (2, 4, 8):
            runs.append(RunStats("async", w, 32, 1e-3, 1e4, momentum=mu,
                                 staleness=rng.poisson(w - 1, 200).astype(float).tolist()))
    for tau in (1, 3, 6, 10):
        for beta in (0.3, 0.6, 0.9):
            runs.append(RunStats("elastic", 4, 8, 1e-3, 1e4, beta=beta, tau=tau))
    for p in (0.02, 0.05, 0.2, 0.6):
        for w in (4, 8):
            runs.append(RunStats("gossip", w, 8, 1e-3, 1e4, gossip_prob=p))
    return [Observation(f"run {i}", r.kind, profile, r,
                        predict(profile, r, true).steps_to_target)
            for i, r in enumerate(runs)]


@pytest.mark.parametrize("rule", ["tuned", "none"])
def test_fit_recovers_known_constants_exactly(rule):
    true = TRUE if rule == "tuned" else SMALL
    obs = _grid(_profile(rule), true)
    if rule == "none":  # the fixed LR (c = 0.8) diverges at the slowest gossip: left out
        obs = [o for o in obs if math.isfinite(o.steps)]
    assert all(math.isfinite(o.steps) for o in obs) and len(obs) >= 25
    fit = fit_constants(obs)
    got = fit.by_name()
    for name in ("k_s", "k_m", "k_d", "k_e", "k_g"):
        assert got[name].identifiable, name
        assert got[name].value == pytest.approx(getattr(true, name), rel=1e-3), name
    assert max(abs(r) for r in fit.residuals) < 1e-4
    assert max(abs(r) for r in fit.residuals_theory) > 0.05  # theory is not the truth here
    assert max(validation_errors(obs, fit.constants)) < 1e-4


def test_fit_with_noise_covers_truth_with_its_intervals():
    rng = np.random.default_rng(7)
    clean = _grid(_profile())
    noisy = [Observation(o.label, o.family, o.profile, o.stats,
                         o.steps * math.exp(0.03 * rng.standard_normal()))
             for o in clean]
    fit = fit_constants(noisy, loss="linear", confidence=0.99)
    for f in fit.fits:
        assert f.low <= getattr(TRUE, f.name) <= f.high, f
        assert f.high - f.low < 2.0 * getattr(TRUE, f.name) + 0.5, f  # informative
    assert 0.01 < fit.rms < 0.06  # about the 3% noise put in


def test_constants_no_run_moves_keep_their_theory_value():
    gossip = [o for o in _grid(_profile()) if o.stats.kind == "gossip"]
    fit = fit_constants(gossip)
    by = fit.by_name()
    assert by["k_g"].identifiable and by["k_g"].value == pytest.approx(0.2, rel=1e-3)
    for name in ("k_s", "k_m", "k_d", "k_e"):
        assert not by[name].identifiable and by[name].value == 1.0
        assert "theory value kept" in by[name].note


def test_a_run_that_never_reaches_agrees_with_a_divergent_prediction():
    prof = _profile("none")  # c = 0.8: c (1 + D) >= 2 for a long staleness
    stats = RunStats("async", 64, 32, 1e-3, 1e4, staleness=[60.0] * 10)
    assert math.isinf(predict(prof, stats, load_constants({"k_s": 1.0})).steps_to_target)
    obs = Observation("never", "staleness", prof, stats, math.inf)
    assert validation_errors([obs], load_constants({"k_s": 1.0})) == [0.0]
    assert validation_errors([obs], load_constants({"k_s": 0.0})) == [math.inf]


@pytest.mark.parametrize("rule", ["tuned", "none"])
def test_batch_law_fit_recovers_smin_and_noise(rule):
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    steps = [batch_law_steps(rule, 130.0, 0.7, b, 32) for b in batches]
    f = fit_batch_law(batches, steps, rule, 32)
    assert f.s_min == pytest.approx(130.0, rel=1e-6)
    assert f.noise == pytest.approx(0.7, rel=1e-6)
    assert f.ref_steps == pytest.approx(130.0 * (1 + 0.7 / 32), rel=1e-6)  # both rules
    assert f.rms < 1e-8


def test_tuned_batch_law_is_mccandlish_closed_form():
    assert batch_law_steps("tuned", 100.0, 50.0, 25.0, 32) == pytest.approx(300.0)


def test_document_is_what_load_constants_reads():
    fit = fit_constants(_grid(_profile()))
    doc = constants_document(fit, "synthetic", "2000-01-01", 0.01)
    k = load_constants(doc)
    for name in ("k_s", "k_m", "k_d", "k_e", "k_g"):
        assert getattr(k, name) == pytest.approx(getattr(TRUE, name), rel=2e-3)
        assert doc[name]["status"] == "fitted" and doc[name]["fitted_on"] == "synthetic"
    assert k.gossip_share == pytest.approx(1 / 3)


def test_task_profiles_are_loaded_in_the_profile_format():
    for task in ("digits", "teacher_student"):
        p = task_profile(task)
        assert p.lr_rule == "none" and p.ref_batch == 32 and p.ref_steps > 0
        s_min = p.ref_steps / (1 + p.noise.mean() / p.ref_batch)
        assert 0 < s_min < p.ref_steps


def test_a_constant_the_runs_only_bound_keeps_its_fit_with_a_profile_interval():
    """Runs flat in a constant near the fit but ruling its theory value out (GoSGD's runs
    in k_g: the gossip term vanishes near 0, k_g = 1 makes them diverge) keep the fitted
    value with the profile's interval; a constant they are indifferent to goes back to
    theory.  Keeping theory for both had made the README's small-grid fit predict "never"
    for every GoSGD run (rms 2.5 instead of 0.11)."""
    from clustersim.convergence.fit import _profiles

    def resid(x: np.ndarray) -> np.ndarray:
        flat = 0.0 if x[1] <= 0.01 else 5.0  # a divergence edge at 0.01, flat below it
        return np.array([x[0] - 0.5 + 0.01, x[0] - 0.5 - 0.01, flat, flat, 0.0 * x[2]])

    x = np.array([0.5, 1e-12, 3.0])
    got = _profiles(resid, x, ["k_s", "k_g", "k_m"], ["k_g", "k_m"], Constants(), dof=2,
                    confidence=0.95)
    assert set(got) == {"k_g"}  # k_m: the runs describe its theory value as well
    low, high = got["k_g"]
    assert low == 0.0 and 0.009 < high <= 0.01


def test_the_small_emulation_grid_fits_without_a_never():
    """The README's ``calibrate --emulation --grid small`` (both tasks, 1 seed) on the
    emulation itself: no run that reached the target is predicted never at the fit, and
    the fit is tight (docs/convergence.md quotes rms 0.113)."""
    from clustersim.sim.convfit import calibrate

    cal = calibrate(("digits", "teacher_student"), "small", (0,))
    fit = cal.fit
    assert all(math.isfinite(analytic_steps(o, fit.constants))
               for o in fit.observations if math.isfinite(o.steps))
    assert fit.rms < 0.2 and cal.heldout_median < 0.15
    assert fit.by_name()["k_g"].identifiable and fit.by_name()["k_g"].high < 0.1
