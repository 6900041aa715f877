"""The extra steps of asynchronous, elastic and gossip training, as extra curvature.

McCandlish's quadratic model (``largebatch``) makes the per-step improvement ``2c - c^2 K``
with ``K = 1 + B_noise/B``: the ``1`` is the curvature limit of the step size (a noiseless
step is stable below ``c = 2``).  A gradient that is ``d`` updates old lowers that limit: the
delayed step ``x_{t+1} = x_t - a x_{t-d}`` on one curvature direction is stable iff
``0 < a < 2 cos(d pi / (2d + 1))`` (Levin & May 1976).  We add to ``K`` the term that moves the
model's noiseless stability edge exactly there:

    D(d) = 2 / a_max(d) - 1 = 1 / cos(d pi / (2d + 1)) - 1,

``D(0) = 0``, ``D(1) = 1``, ``D(d) ~ 4d/pi + 2/pi - 1`` for large ``d``: with the LR tuned the
steps become ``S_min (1 + B_noise/B + D)`` - the brief's ``2 k_s tau`` to first order, but
exact at the stability edge and convex, so that a spread-out staleness costs more than its
mean (we average ``D`` over the measured samples, not ``D`` of the mean).

Each term carries one constant (``constants.yaml``): theory values by default, to be refitted
on emulation.  Everything here is first order in the delays; docs/convergence.md says where
that is known to be wrong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

__all__ = [
    "levin_may_bound",
    "delay_curvature",
    "momentum_lag",
    "staleness_term",
    "elastic_lag_steps",
    "elastic_drift_delay",
    "uniform_gossip_rho",
    "gossip_mixing_matrix",
    "second_eigenvalue_modulus",
    "mixing_delay",
]


def levin_may_bound(delay: float | np.ndarray) -> float | np.ndarray:
    """Largest stable ``a`` of ``x_{t+1} = x_t - a x_{t-d}``: ``2 cos(d pi / (2d + 1))``.

    Levin & May, "A note on difference-delay equations", Theor. Popul. Biol. 9 (1976): the
    recursion is asymptotically stable iff ``0 < a < 2 cos(d pi / (2d + 1))``; ``d = 0`` gives
    the plain gradient step's ``a < 2``.  Defined for real ``d >= 0`` by the same formula (an
    interpolation between the integer delays the theorem covers).
    """
    d = np.asarray(delay, dtype=float)
    out = 2.0 * np.cos(d * np.pi / (2.0 * d + 1.0))
    return float(out) if out.ndim == 0 else out


def delay_curvature(delay: float | np.ndarray) -> float | np.ndarray:
    """``D(d) = 2 / a_max(d) - 1``: the curvature a delay of ``d`` updates adds to ``K``."""
    d = np.asarray(delay, dtype=float)
    out = 1.0 / np.cos(d * np.pi / (2.0 * d + 1.0)) - 1.0
    return float(out) if out.ndim == 0 else out


def momentum_lag(staleness: np.ndarray, momentum: float, k_m: float) -> np.ndarray:
    """Effective delay of a stale update under explicit momentum ``mu``.

    Mitliagkas, Zhang, Hadjis & Re (2016, arXiv 1605.09774): asynchrony with a geometric
    staleness of mean ``tau`` acts like momentum ``mu_a = tau / (1 + tau)`` (``1 - 1/M`` for
    ``M`` workers); with explicit momentum ``mu`` the total is ``1 - (1 - mu)(1 - mu_a)``,
    whose mean lag ``mu_tot / (1 - mu_tot)`` is ``(1 + tau)/(1 - mu) - 1 = tau (1 + mu/(1-mu))
    + mu/(1-mu)``.  ``k_m`` weighs the amplification (1: that composition; 0: the lags just add,
    as two convolved kernels' means do).
    """
    m = momentum / (1.0 - momentum)
    return staleness * (1.0 + k_m * m) + m


def staleness_term(samples: Sequence[float] | np.ndarray, momentum: float, k_s: float,
                   k_m: float) -> float:
    """``k_s (E[D(lag(tau))] - D(lag(0)))`` over the measured staleness samples.

    Subtracting the zero-staleness value makes the term vanish without staleness whatever the
    momentum: momentum alone is the reference's business (the tuned sync run), only its
    interaction with staleness is asynchrony's cost.
    """
    tau = np.asarray(samples, dtype=float)
    if tau.size == 0 or k_s == 0.0:
        return 0.0
    if np.any(tau < 0) or not np.all(np.isfinite(tau)):
        raise ValueError("staleness samples must be finite and non-negative")
    base = float(delay_curvature(momentum_lag(np.zeros(1), momentum, k_m))[0])
    return k_s * (float(np.mean(delay_curvature(momentum_lag(tau, momentum, k_m)))) - base)


def elastic_lag_steps(tau: int, beta: float) -> float:
    """Mean lag of the centre behind the workers' average, in local steps: ``tau (1-b)/b``.

    The EASGD centre moves ``x~ += beta (mean(x) - x~)`` once per exchange (Zhang, Choromanska
    & LeCun 2015, ``beta = p alpha``): an exponential moving average whose mean lag is
    ``(1 - beta)/beta`` exchanges, one exchange every ``tau`` local steps.  For ``beta`` in
    [1, 2) it overshoots instead of lagging: 0.
    """
    return tau * max(0.0, (1.0 - beta) / beta)


def elastic_drift_delay(tau: int) -> float:
    """Mean age of the local progress the centre has not seen yet: ``(tau - 1) / 2`` steps.

    Between exchanges each worker runs ``tau`` local steps (local SGD, Stich 2019 arXiv
    1805.09767; Lin et al., ICLR 2020): the exchange sees steps 0..tau-1 old, mean
    ``(tau - 1)/2`` - treated as a delay of the averaged direction.
    """
    return (tau - 1) / 2.0


@lru_cache(maxsize=4096)
def uniform_gossip_rho(workers: int, push_prob: float, share: float) -> float:
    """Closed-form second eigenvalue modulus of the uniform push-gossip expected matrix.

    Each step each worker pushes with probability ``q`` to a peer drawn uniformly from the
    ``p - 1`` others, and the receiver moves the fraction ``share`` of the way to the sender
    (GoSGD with equal weights: 1/3, plain pairwise averaging: 1/2).  Expected matrix
    ``W = (1 - s q p/(p-1)) I + (s q/(p-1)) J`` (``J`` all ones): eigenvalue 1 on the
    consensus vector, ``1 - s q p/(p-1)`` on every vector orthogonal to it.
    """
    if workers < 2:
        return 0.0
    return abs(1.0 - share * push_prob * workers / (workers - 1))


def gossip_mixing_matrix(workers: int, push_prob: float, share: float,
                         peers: Sequence[Sequence[int]] | None = None) -> np.ndarray:
    """Expected one-step mixing matrix ``W`` of push gossip (rows: receivers).

    ``peers[i]`` lists whom worker ``i`` may push to (uniformly); ``None`` is every other
    worker.  A push ``i -> j`` moves ``x_j`` by ``share (x_i - x_j)``; taking expectations of
    the (linear) per-step update gives ``W = I + s q sum_i sum_{j in N(i)} e_j (e_i - e_j)^T /
    |N(i)|`` - row-stochastic; doubly stochastic when the graph is regular.
    """
    w = np.eye(workers)
    for i in range(workers):
        nbrs = [j for j in range(workers) if j != i] if peers is None else list(peers[i])
        if not nbrs:
            continue
        weight = share * push_prob / len(nbrs)
        for j in nbrs:
            if not 0 <= j < workers or j == i:
                raise ValueError(f"peer {j} of worker {i} is not another worker")
            w[j, i] += weight
            w[j, j] -= weight
    return w


def second_eigenvalue_modulus(matrix: np.ndarray) -> float:
    """``rho``: the second-largest eigenvalue modulus (``1 - rho`` is the spectral gap)."""
    mods = np.sort(np.abs(np.linalg.eigvals(matrix)))[::-1]
    return float(mods[1]) if mods.size > 1 else 0.0


@lru_cache(maxsize=4096)
def _rho_cached(workers: int, push_prob: float, share: float,
                peers: tuple[tuple[int, ...], ...] | None) -> float:
    if peers is None:
        return uniform_gossip_rho(workers, push_prob, share)
    return second_eigenvalue_modulus(gossip_mixing_matrix(workers, push_prob, share, peers))


def mixing_delay(workers: int, push_prob: float, share: float,
                 peers: Sequence[Sequence[int]] | None = None) -> float:
    """``rho / (1 - rho)``: mean age of the disagreement gossip has not mixed away yet.

    The replicas' disagreement decays like ``rho^t`` (Lian et al., NIPS 2017: D-PSGD's extra
    error grows with ``rho/(1 - rho)``, ``1 - rho`` the spectral gap); the geometric kernel's
    mean lag is ``rho/(1 - rho)``.  ``inf`` when nothing mixes (``rho >= 1``).  Cached by
    ``(p, q, share, peers)``.
    """
    key = None if peers is None else tuple(tuple(int(j) for j in n) for n in peers)
    rho = _rho_cached(int(workers), float(push_prob), float(share), key)
    if rho >= 1.0 - 1e-12:
        return math.inf
    return rho / (1.0 - rho)
