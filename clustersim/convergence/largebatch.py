"""The large-batch law of synchronous SGD (McCandlish et al. 2018, arXiv 1812.06162).

McCandlish's quadratic model: one SGD step with learning rate ``c * eps_max`` on a batch of
``B`` improves the loss by ``dL_max * (2c - c^2 K)`` where ``K = 1 + B_noise/B`` (``dL_max``
the best a noiseless step can do, ``eps_max = |G|^2 / G^T H G``).  Everything else in this
package only adds terms to ``K`` (asynchrony acts like extra curvature), so this module holds
the one integral every algorithm shares:

    steps(B) = S_min * integral_0^1 dp / r(p),   r(p) = 2 c(p) - c(p)^2 K(p)

``p`` is training progress measured in steps of the ideal run (infinite batch, tuned LR), so
that ``S_min`` is the steps of that ideal run.  With the LR tuned at every point (``c = 1/K``,
McCandlish's assumption) ``r = 1/K`` and the integral is closed: ``1 + mean(B_noise)/B +
extra`` - the law ``S = S_min (1 + B_noise/B)`` with the noise scale averaged over progress.
The other rules scale the reference batch's tuned schedule ``c_ref(p) = 1/(1 + B_noise(p)/
B_ref)`` by ``B/B_ref`` (linear, Goyal et al. 2017), ``sqrt(B/B_ref)`` (Krizhevsky 2014) or
not at all (``none``); where ``c K >= 2`` the step no longer improves the loss (``r <= 0``)
and the run diverges: infinite steps, reported, never raised.
"""

from __future__ import annotations

import math

import numpy as np

from clustersim.convergence.profile import LR_RULES, NoiseSchedule

__all__ = [
    "LR_RULES",
    "steps_integral",
    "rule_scale",
    "optimal_batch",
    "pollux_efficiency",
]

# Gauss-Legendre nodes on [0, 1]; the integrand is smooth inside each geometric segment of the
# schedule, so a fixed rule per segment is exact to ~1e-12 away from the divergence edge
# (checked against scipy.integrate.quad in the tests) and costs one vector operation; where
# the rule on a segment and on its halves disagree (the edge), QUADPACK takes over.
_GL_X, _GL_W = np.polynomial.legendre.leggauss(48)
_GL_X = (_GL_X + 1.0) / 2.0
_GL_W = _GL_W / 2.0


def rule_scale(rule: str, batch: float, ref_batch: float) -> float:
    """Factor the rule applies to the reference batch's tuned LR fraction (``tuned``: None)."""
    if rule == "linear":
        return batch / ref_batch
    if rule == "sqrt":
        return math.sqrt(batch / ref_batch)
    if rule == "none":
        return 1.0
    raise ValueError(f"no fixed scale for LR rule {rule!r} (allowed: linear, sqrt, none)")


def steps_integral(noise: NoiseSchedule, batch: float, *, extra: float = 0.0,
                   rule: str = "tuned", ref_batch: float | None = None) -> float:
    """``integral_0^1 dp / r(p)``: steps to target in units of ``S_min``; ``inf`` = diverges.

    ``extra`` is added to ``K`` (the asynchrony terms of :mod:`asynchrony`; 0 for sync).
    ``ref_batch`` is needed by every rule but ``tuned``.
    """
    if batch <= 0:
        raise ValueError(f"batch must be positive, not {batch}")
    if not math.isfinite(extra):
        return math.inf
    if rule == "tuned":
        return 1.0 + noise.mean() / batch + extra
    if ref_batch is None or ref_batch <= 0:
        raise ValueError("the LR rules other than 'tuned' need the positive reference batch")
    s = rule_scale(rule, batch, ref_batch)
    # c*K is a Moebius function of B_noise, B_noise is monotone on each segment: the largest
    # c*K is at a breakpoint, so checking those decides divergence on the whole of [0, 1].
    knots = np.asarray(noise.breakpoint_values())
    ck = s * (1.0 + knots / batch + extra) / (1.0 + knots / ref_batch)
    if float(ck.max()) >= 2.0:
        return math.inf
    def inverse_rate(p: np.ndarray) -> np.ndarray:
        bn = noise.values(p)
        c = s / (1.0 + bn / ref_batch)
        return 1.0 / (2.0 * c - c * c * (1.0 + bn / batch + extra))

    def gauss(lo: float, hi: float) -> float:
        return (hi - lo) * float(np.dot(_GL_W, inverse_rate(lo + (hi - lo) * _GL_X)))

    near_edge = float(ck.max()) > _NEAR_EDGE
    total = 0.0
    for lo, hi in noise.segments():
        whole = gauss(lo, hi)
        mid = (lo + hi) / 2.0
        if not near_edge or \
                abs(gauss(lo, mid) + gauss(mid, hi) - whole) <= _GL_AGREE * abs(whole):
            total += whole
        else:  # 1/r peaks near the divergence edge: adaptive quadrature (QA 16b LOW-8)
            total += _adaptive(inverse_rate, lo, hi)
    return total


#: how closely the rule on a segment and on its two halves must agree to be taken as is
_GL_AGREE = 1e-11
#: below this largest ``c K`` (divergence at 2), ``r = c (2 - c K) >= c / 2``: 1/r is smooth
#: and the fixed rule is taken without the check (the fit calls this thousands of times)
_NEAR_EDGE = 1.5


def _adaptive(f, lo: float, hi: float) -> float:
    """``integral_lo^hi f`` by QUADPACK (scipy.integrate.quad) where the fixed rule is not
    converged: just below the divergence edge ``r`` dips towards 0 inside a segment, and the
    48-point rule was 1.8 % low (7.2805 against 7.4110 for ResNet-50's schedule at B = 2,511
    under the linear rule, edge at 2,512)."""
    from scipy.integrate import quad

    val, _err = quad(lambda x: float(f(np.array([x]))[0]), lo, hi, epsabs=0.0,
                     epsrel=1e-12, limit=500)
    return float(val)


def pollux_efficiency(batch: float, ref_batch: float, noise_scale: float) -> float:
    """Pollux's statistical efficiency ``(phi + M0) / (phi + M)`` (Qiao et al., OSDI 2021).

    Equal to ``E(M0)/E(M)`` of the tuned law with a constant noise scale ``phi``: the samples
    the reference batch needs over the samples batch ``M`` needs.
    """
    return (noise_scale + ref_batch) / (noise_scale + batch)


def optimal_batch(a: float, b: float, noise_scale: float) -> float:
    """The batch that maximises goodput when one step takes ``a + b B`` seconds.

    Time to target ``S_min (1 + phi/B)(a + b B)`` has derivative ``S_min (b - a phi / B^2)``,
    zero at ``B* = sqrt(a phi / b)``, and second derivative ``2 a phi / B^3 > 0``: one minimum
    of time, one maximum of goodput (docs/convergence.md derives it).
    """
    if a < 0 or b <= 0 or noise_scale <= 0:
        raise ValueError("need a >= 0, b > 0 and a positive noise scale")
    return math.sqrt(a * noise_scale / b)
