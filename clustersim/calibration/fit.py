"""Robust least squares with confidence intervals: the one fitting routine calibration uses.

Why relative residuals: benchmark times span five orders of magnitude (a 1-byte ping-pong in
microseconds, a 16 MiB one in milliseconds); absolute residuals would let the largest sizes
decide everything.  ``(model - measured) / measured`` weighs every point by its own scale.

Why a robust loss: on a shared machine some batches are slowed by other work.  scipy's
``soft_l1`` (or ``huber``) loss grows linearly beyond ``f_scale`` (default 5 % relative
error), so a few disturbed points pull far less than under plain squares.

Why scaled parameters: the parameters of one fit differ by 15 orders of magnitude (an
overhead of 1e-6 s and a bandwidth of 1e9 B/s).  Each parameter is optimised as
``x / scale`` so that the solver works on numbers near 1; values, errors and intervals are
reported in SI units.

Uncertainty: from the Jacobian at the solution (``J^T J`` approximates the Hessian of the
cost; scipy returns the Jacobian already modified by the robust loss), the covariance is
``s^2 (J^T J)^-1`` with ``s^2 = 2 cost / (m - n)``; the 95 % interval is ``value +- t(0.975,
m - n) * stderr``.  With no degrees of freedom left the interval is unknown (NaN), never
invented.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares
from scipy.stats import t as student_t

__all__ = ["FitResult", "robust_fit", "LOSSES"]

LOSSES = ("soft_l1", "huber", "cauchy", "arctan", "linear")


@dataclass
class FitResult:
    """Fitted parameters (SI units) with standard errors and 95 % confidence intervals."""

    names: tuple[str, ...]
    values: np.ndarray
    stderr: np.ndarray
    ci95: np.ndarray  # shape (n, 2)
    points: int
    dof: int
    rms_rel: float  # root mean square relative residual
    median_rel: float  # median absolute relative residual
    loss: str
    success: bool
    cost: float = 0.0  # robust cost at the solution: compares models fitted to one data set
    message: str = ""
    residuals: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: covariance of ``values`` (SI units, n x n); NaN where the interval is unknown
    cov: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    def __getitem__(self, name: str) -> float:
        return float(self.values[self.names.index(name)])

    def interval(self, name: str) -> tuple[float, float]:
        i = self.names.index(name)
        return float(self.ci95[i, 0]), float(self.ci95[i, 1])

    def error(self, name: str) -> float:
        return float(self.stderr[self.names.index(name)])

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {n: {"value": float(v), "stderr": float(e), "ci95_low": float(lo),
                    "ci95_high": float(hi)}
                for n, v, e, (lo, hi) in zip(self.names, self.values, self.stderr, self.ci95)}


def robust_fit(
    model: Callable[[np.ndarray], np.ndarray],
    measured: Sequence[float] | np.ndarray,
    x0: Sequence[float],
    names: Sequence[str],
    *,
    scale: Sequence[float] | None = None,
    lower: Sequence[float] | None = None,
    upper: Sequence[float] | None = None,
    loss: str = "soft_l1",
    f_scale: float = 0.05,
) -> FitResult:
    """Fit ``model(x) ~ measured`` (both arrays of the same length) by relative residuals.

    ``x0``, ``lower``, ``upper`` and ``scale`` are in SI units (``scale`` defaults to
    ``|x0|`` or 1).  ``loss`` is a scipy ``least_squares`` loss.
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}, not {loss!r}")
    y = np.asarray(measured, dtype=float)
    if y.ndim != 1 or not y.size:
        raise ValueError("need at least one measured value")
    if not np.all(y > 0):
        raise ValueError("measured values must be positive (relative residuals)")
    n = len(x0)
    x0a = np.asarray(x0, dtype=float)
    sc = np.asarray(scale if scale is not None else
                    [abs(v) if v != 0 else 1.0 for v in x0a], dtype=float)
    lo = np.asarray(lower if lower is not None else [-np.inf] * n, dtype=float) / sc
    hi = np.asarray(upper if upper is not None else [np.inf] * n, dtype=float) / sc
    z0 = np.clip(x0a / sc, lo, hi)  # a start on a bound is fine: scipy nudges it inside

    def fun(z: np.ndarray) -> np.ndarray:
        return np.asarray(model(z * sc), dtype=float) / y - 1.0

    res = least_squares(fun, z0, bounds=(lo, hi), loss=loss, f_scale=f_scale,
                        x_scale=1.0, method="trf")
    m = y.size
    dof = m - n
    x = res.x * sc
    stderr = np.full(n, np.nan)
    ci = np.full((n, 2), np.nan)
    cov = np.full((n, n), np.nan)
    if dof > 0:
        jac = np.asarray(res.jac, dtype=float)
        s2 = 2.0 * float(res.cost) / dof
        try:
            cov_z = np.linalg.pinv(jac.T @ jac) * s2
            err_z = np.sqrt(np.clip(np.diag(cov_z), 0.0, None))
            stderr = err_z * sc
            cov = cov_z * np.outer(sc, sc)
            q = float(student_t.ppf(0.975, dof))
            ci = np.column_stack([x - q * stderr, x + q * stderr])
        except np.linalg.LinAlgError:  # pragma: no cover - pinv does not raise in practice
            pass
    resid = fun(res.x)
    return FitResult(tuple(names), x, stderr, ci, m, dof,
                     float(math.sqrt(float(np.mean(resid ** 2)))),
                     float(np.median(np.abs(resid))), loss, bool(res.success),
                     float(res.cost), str(res.message), resid, cov)
