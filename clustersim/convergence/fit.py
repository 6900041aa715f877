"""Fit the analytic model's constants (and a task's batch law) to emulated steps to target.

Pure: observations in, constants, intervals and residuals out.  Imports no simulator - the
emulation that produces the observations lives in :mod:`clustersim.sim.convfit` - so the
fit is tested on synthetic observations generated with known constants (closed form).

Why least squares on ``log(steps)``: the asynchrony terms multiply the steps (they add to
``K``), the noise of one emulated run is roughly a fixed *fraction* of its steps, and a run
that needs ten times the steps should count as much as one that needs twice.  The loss is
robust (``soft_l1`` by default) because one emulated run can land far off (a lucky or an
unlucky deal of the data); intervals are the usual linearised ones, ``s^2 (J^T J)^-1`` with
Student's quantile, from the Jacobian at the solution (scipy.optimize.least_squares).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from clustersim.convergence.constants import Constants
from clustersim.convergence.largebatch import steps_integral
from clustersim.convergence.predict import RunStats, predict
from clustersim.convergence.profile import ConvergenceProfile, NoiseSchedule

__all__ = ["FITTABLE", "Observation", "ConstantFit", "ConstantsFit", "BatchLawFit",
           "analytic_steps", "fit_constants", "validation_errors", "fit_batch_law",
           "batch_law_steps", "constants_document"]

#: the constants the emulation can move (``gossip_share`` is GoSGD's merge rule: exact)
FITTABLE = ("k_s", "k_m", "k_d", "k_e", "k_g")

#: a prediction of "never" (or a run that never reached) counts as this log-error at most:
#: the robust loss then treats it as one outlier, not as an infinite pull
_CAP = 5.0
_UPPER = 100.0  # constants are searched in [0, 100]


@dataclass(frozen=True)
class Observation:
    """One emulated grid point: the profile and RunStats the analytic path would build for it,
    and the emulated steps to target in the analytic step unit (mean over ``seeds`` seeds;
    ``spread`` the standard deviation of ``log(steps)`` over them - the emulation's noise)."""

    label: str
    family: str
    profile: ConvergenceProfile
    stats: RunStats
    steps: float
    spread: float = 0.0
    seeds: int = 1


@dataclass(frozen=True)
class ConstantFit:
    """One constant: fitted value and interval, or its theory value where the grid does not
    move it (``identifiable`` False, ``note`` says why)."""

    name: str
    value: float
    low: float
    high: float
    theory: float
    identifiable: bool
    note: str = ""


@dataclass(frozen=True)
class ConstantsFit:
    """:func:`fit_constants`' result: ``constants`` to use, each one's :class:`ConstantFit`."""

    constants: Constants
    fits: tuple[ConstantFit, ...]
    #: per observation: log(emulated) - log(analytic) at the fitted constants, and at theory
    residuals: tuple[float, ...]
    residuals_theory: tuple[float, ...]
    observations: tuple[Observation, ...]
    loss: str
    confidence: float

    @property
    def rms(self) -> float:
        r = np.array([x for x in self.residuals if math.isfinite(x)])
        return float(np.sqrt(np.mean(r * r))) if r.size else math.nan

    def by_name(self) -> dict[str, ConstantFit]:
        return {f.name: f for f in self.fits}


def analytic_steps(obs: Observation, constants: Constants) -> float:
    """Steps to target the analytic path predicts for ``obs`` (``inf``: never)."""
    return predict(obs.profile, obs.stats, constants).steps_to_target


def _log_error(emulated: float, analytic: float) -> float:
    if not math.isfinite(emulated) and not math.isfinite(analytic):
        return 0.0  # both say never: agreement
    if not math.isfinite(analytic):
        return _CAP
    if not math.isfinite(emulated):
        return -_CAP
    return float(np.clip(math.log(emulated) - math.log(analytic), -_CAP, _CAP))


def _intervals(jac: np.ndarray, resid: np.ndarray, x: np.ndarray, confidence: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """Linearised intervals ``x +- t s sqrt(diag((J^T J)^-1))``; ``inf`` where singular."""
    from scipy.stats import t as student

    n, p = jac.shape
    dof = max(n - p, 1)
    s2 = float(resid @ resid) / dof
    jtj = jac.T @ jac
    try:
        cov = np.linalg.pinv(jtj) * s2
        se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    except np.linalg.LinAlgError:
        se = np.full(p, math.inf)
    col = np.sqrt(np.sum(jac * jac, axis=0))
    se = np.where(col > 1e-9, se, math.inf)
    half = float(student.ppf(0.5 + confidence / 2.0, dof)) * se
    return np.maximum(x - half, 0.0), x + half


#: values each constant is probed and coarsely searched at (log-spaced, with 0)
_PROBES = (0.0, *np.geomspace(1e-3, _UPPER, 31).tolist())


def _sensitive(observations: Sequence[Observation], name: str, base: Constants) -> bool:
    """Does ``name`` change any prediction of the grid anywhere in ``[0, 100]`` (the other
    constants at their base values, or all small - where base predicts only divergence)?"""
    seen: dict[int, set[tuple[bool, float]]] = {}
    small = replace(base, **{n: 0.01 for n in FITTABLE})
    for v, b in [(v, b) for v in _PROBES[::3] for b in (base, small)]:
        k = replace(b, **{name: v})
        for i, o in enumerate(observations):
            a = analytic_steps(o, k)
            key = (b is base, round(math.log(a), 6) if math.isfinite(a) else math.inf)
            seen.setdefault(i, set()).add(key)
    return any(len({x for w, x in v if w}) > 1 or len({x for w, x in v if not w}) > 1
               for v in seen.values())


def _start(free: Sequence[str], base: Constants, cost: Callable[[np.ndarray], float]
           ) -> np.ndarray:
    """A coarse start: two sweeps of coordinate search over :data:`_PROBES`.  Why: near the
    theory values a fixed-LR emulation can put every prediction past the divergence edge,
    where the capped residuals are flat and a gradient method cannot move."""
    x = np.array([getattr(base, n) for n in free], dtype=float)
    for _ in range(2):
        for i in range(len(free)):
            best, arg = cost(x), x[i]
            for v in _PROBES:
                x[i] = v
                c = cost(x)
                if c < best - 1e-12:
                    best, arg = c, v
            x[i] = arg
    return np.clip(x, 1e-4, _UPPER)


def _profiles(resid: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
              free: Sequence[str], names: Sequence[str], base: Constants, dof: int,
              confidence: float) -> dict[str, tuple[float, float]]:
    """``{name: (low, high)}``: the values of each of ``names`` (the others at ``x``) whose
    sum of squared log errors stays within the F-test's bound of the fit's, for those whose
    theory value lies outside that set (missing: the runs do not tell theory from the fit).

    Why: a linearised interval is unbounded where the runs are flat in the constant at the
    solution - GoSGD's in ``k_g`` near 0, where the gossip term vanishes, while ``k_g = 1``
    makes them diverge.  Keeping theory there had made a fit of rms 0.1 predict "never" for
    every GoSGD run; the profile keeps what the runs say (``k_g`` below ~0.005)."""
    from scipy.stats import f as fisher

    def ssr(v: np.ndarray) -> float:
        r = resid(v)
        return float(r @ r)

    dof = max(dof, 1)
    bound = ssr(x) * (1.0 + float(fisher.ppf(confidence, 1, dof)) / dof) + 1e-12
    grid = np.unique(np.concatenate([[0.0], np.geomspace(1e-6, _UPPER, 181), x]))
    out: dict[str, tuple[float, float]] = {}
    for name in names:
        i = free.index(name)

        def at(v: float, i: int = i) -> float:
            y = x.copy()
            y[i] = v
            return ssr(y)

        if at(getattr(base, name)) <= bound:
            continue
        inside = [float(v) for v in grid if at(float(v)) <= bound]
        out[name] = (min(inside, default=float(x[i])), max(inside, default=float(x[i])))
    return out


def fit_constants(observations: Sequence[Observation], names: Sequence[str] = FITTABLE,
                  base: Constants | None = None, loss: str = "soft_l1",
                  f_scale: float = 0.1, confidence: float = 0.95) -> ConstantsFit:
    """Least squares of ``log(steps_emulated) - log(steps_analytic)`` over ``names``.

    Constants that no observation is sensitive to keep ``base``'s value (theory) and are
    marked not identifiable; the others are fitted jointly, bounded to ``[0, 100]``.
    Observations whose emulation never reached the target are kept in the residuals (at
    most ``_CAP``) but do not enter the fit.
    """
    from scipy.optimize import least_squares

    base = base or Constants()
    obs = tuple(observations)
    if not obs:
        raise ValueError("no observations to fit")
    for n in names:
        if n not in FITTABLE:
            raise ValueError(f"unknown constant {n!r} (fittable: {', '.join(FITTABLE)})")
    used = [o for o in obs if math.isfinite(o.steps) and o.steps > 0]
    free = [n for n in names if _sensitive(used, n, base)]

    def consts(x: np.ndarray) -> Constants:
        return replace(base, **{n: float(v) for n, v in zip(free, x)})

    def resid(x: np.ndarray) -> np.ndarray:
        k = consts(x)
        return np.array([_log_error(o.steps, analytic_steps(o, k)) for o in used])

    values = {n: getattr(base, n) for n in names}
    lows, highs = dict(values), dict(values)
    if free and len(used) > len(free):
        def cost(x: np.ndarray) -> float:
            r = resid(x) / f_scale
            return float(np.sum(2.0 * (np.sqrt(1.0 + r * r) - 1.0)))  # soft_l1

        x0 = _start(free, base, cost)
        sol = least_squares(resid, x0, bounds=(0.0, _UPPER), loss=loss, f_scale=f_scale,
                            diff_step=1e-4)
        lo, hi = _intervals(sol.jac, sol.fun, sol.x, confidence)
        for i, n in enumerate(free):
            values[n], lows[n], highs[n] = float(sol.x[i]), float(lo[i]), float(hi[i])
    unbounded = [n for n in free if not math.isfinite(highs[n])]
    profiled: dict[str, tuple[float, float]] = {}
    if unbounded:
        x = np.array([values[n] for n in free])
        profiled = _profiles(resid, x, free, unbounded, base, len(used) - len(free),
                             confidence)
    for n in unbounded:
        if n in profiled:  # the runs rule its theory value out: fitted value, profile interval
            lows[n], highs[n] = profiled[n]
        else:  # the runs are as well described at its theory value: theory kept
            values[n] = lows[n] = highs[n] = getattr(base, n)
    unbounded = [n for n in unbounded if n not in profiled]
    fitted = consts(np.array([values[n] for n in free]))
    fits = []
    for n in names:
        theory = getattr(base, n)
        if n in profiled:
            fits.append(ConstantFit(n, values[n], lows[n], highs[n], theory, True,
                                    "interval from the profile of the squared log errors "
                                    "(the other constants at their fitted values): the "
                                    "linearised one is unbounded"))
        elif n in unbounded:
            fits.append(ConstantFit(n, theory, theory, theory, theory, False,
                                    "its interval is unbounded at the fit, and the runs "
                                    "are as well described at its theory value: theory "
                                    "value kept"))
        elif n in free and len(used) > len(free):
            fits.append(ConstantFit(n, values[n], lows[n], highs[n], theory, True))
        else:
            fits.append(ConstantFit(n, theory, theory, theory, theory, False,
                                    "no run of the grid is sensitive to it: theory value kept"))
    return ConstantsFit(
        constants=fitted, fits=tuple(fits),
        residuals=tuple(_log_error(o.steps, analytic_steps(o, fitted)) for o in obs),
        residuals_theory=tuple(_log_error(o.steps, analytic_steps(o, base)) for o in obs),
        observations=obs, loss=loss, confidence=confidence)


def validation_errors(observations: Sequence[Observation], constants: Constants
                      ) -> list[float]:
    """``|analytic / emulated - 1|`` of steps to target per observation (``inf``: one of the
    two never reaches, the other does; 0 when both never do)."""
    out = []
    for o in observations:
        a = analytic_steps(o, constants)
        if math.isfinite(a) and math.isfinite(o.steps):
            out.append(abs(a / o.steps - 1.0))
        else:
            out.append(0.0 if math.isfinite(a) == math.isfinite(o.steps) else math.inf)
    return out


# -- the batch law of one task (its profile) -------------------------------------------------

@dataclass(frozen=True)
class BatchLawFit:
    """``S(B)`` of synchronous SGD fitted to emulated steps: ``S_min`` and ``B_noise`` with
    intervals, under one LR rule (``tuned``: ``S_min (1 + B_noise/B)``; ``none``: the fixed LR
    of the reference batch, McCandlish's ``1 / (2c - c^2 K)``)."""

    rule: str
    ref_batch: float
    s_min: float
    s_min_interval: tuple[float, float]
    noise: float
    noise_interval: tuple[float, float]
    batches: tuple[float, ...]
    steps: tuple[float, ...]
    residuals: tuple[float, ...]  # log(measured) - log(fitted), inf-free (capped)

    @property
    def ref_steps(self) -> float:
        return batch_law_steps(self.rule, self.s_min, self.noise, self.ref_batch,
                               self.ref_batch)

    @property
    def rms(self) -> float:
        r = np.asarray(self.residuals)
        return float(np.sqrt(np.mean(r * r)))


def batch_law_steps(rule: str, s_min: float, noise: float, batch: float,
                    ref_batch: float) -> float:
    """Steps of the law at ``batch`` (the profile's formula: ``largebatch.steps_integral``)."""
    return s_min * steps_integral(NoiseSchedule.constant(noise), batch, rule=rule,
                                  ref_batch=ref_batch)


def fit_batch_law(batches: Sequence[float], steps: Sequence[float], rule: str,
                  ref_batch: float, confidence: float = 0.95) -> BatchLawFit:
    """Fit ``S_min`` and a constant ``B_noise`` to measured steps at several global batches.

    ``log`` parameters (both positive), plain least squares on ``log(steps)``; points whose
    run never reached the target must be left out by the caller (they say where the law's
    divergence edge lies, which the caller checks).  Intervals: linearised on the log
    parameters, then exponentiated (so they stay positive).
    """
    from scipy.optimize import least_squares
    from scipy.stats import t as student

    b = np.asarray(batches, dtype=float)
    s = np.asarray(steps, dtype=float)
    if b.size < 3 or not np.all(np.isfinite(s)):
        raise ValueError("the batch law needs at least 3 finite measured points")

    def resid(x: np.ndarray) -> np.ndarray:
        smin, bn = math.exp(x[0]), math.exp(x[1])
        return np.array([_log_error(si, batch_law_steps(rule, smin, bn, bi, ref_batch))
                         for bi, si in zip(b, s)])

    x0 = np.array([math.log(float(np.min(s))), math.log(max(float(np.min(b)), 1.0))])
    sol = least_squares(resid, x0)
    dof = max(b.size - 2, 1)
    s2 = float(sol.fun @ sol.fun) / dof
    cov = np.linalg.pinv(sol.jac.T @ sol.jac) * s2
    half = float(student.ppf(0.5 + confidence / 2.0, dof)) * np.sqrt(np.maximum(np.diag(cov),
                                                                                 0.0))
    lo, hi = np.exp(sol.x - half), np.exp(sol.x + half)
    return BatchLawFit(rule, float(ref_batch), math.exp(sol.x[0]), (float(lo[0]), float(hi[0])),
                       math.exp(sol.x[1]), (float(lo[1]), float(hi[1])), tuple(b.tolist()),
                       tuple(s.tolist()), tuple(float(r) for r in sol.fun))


def constants_document(fit: ConstantsFit, fitted_on: str, date: str,
                       heldout_median: float | None, sources: Mapping[str, str] | None = None
                       ) -> dict[str, Any]:
    """The ``constants:`` mapping ``load_constants`` reads, with provenance per constant."""
    out: dict[str, Any] = {}
    by = fit.by_name()
    r = np.array([x for x in fit.residuals if math.isfinite(x)])
    spread = (f"log-residual rms {fit.rms:.3f}, median |log-residual| "
              f"{float(np.median(np.abs(r))):.3f} over {len(r)} runs") if r.size else ""
    held = (f"; held-out median |steps error| {heldout_median:.1%}"
            if heldout_median is not None and math.isfinite(heldout_median) else "")
    for name in FITTABLE:
        f = by.get(name)
        theory_src = (sources or {}).get(name, "")
        if f is None or not f.identifiable:
            out[name] = {"value": f.value if f else getattr(fit.constants, name),
                         "status": "theory",
                         "source": theory_src,
                         "fit": f"not identifiable from the grid ({fitted_on}): theory "
                                f"value kept"}
            continue
        out[name] = {"value": _sig(f.value), "status": "fitted",
                     "interval": [_sig(f.low), _sig(f.high)],
                     "confidence": fit.confidence, "theory": f.theory,
                     "fitted_on": fitted_on, "date": date,
                     "residuals": spread + held, "source": theory_src}
    out["gossip_share"] = {"value": fit.constants.gossip_share, "status": "theory",
                           "source": (sources or {}).get("gossip_share", "")}
    return out


def _sig(x: float) -> float:
    """Four significant digits (a fitted constant is not known better)."""
    return float(f"{x:.4g}")
