"""Steps, time and goodput to a profile's target for one simulated run (plain data in/out).

``predict(profile, stats)`` turns what one simulated run measured (:class:`RunStats`) into
steps, samples, epochs and simulated time to the target, the statistical efficiency against
tuned synchronous SGD at the profile's reference batch, and goodput (Pollux, Qiao et al. OSDI
2021: throughput x statistical efficiency).  Every algorithm goes through one formula,

    steps = S_min * integral_0^1 dp / r(p),  r = 2c - c^2 (1 + B_noise(p)/B_eff + A)

(``largebatch``) with ``S_min = ref_steps / (1 + mean(B_noise)/ref_batch)`` and the kind's
asynchrony terms ``A`` (``asynchrony``):

========  =================  =====================================================
kind      B_eff              A
========  =================  =====================================================
sync      batch              0
async     batch              staleness term (measured samples, momentum)
hybrid    batch (= group's)  staleness term in node (group) updates
elastic   workers * batch    k_d D((tau-1)/2) + staleness term; + k_e * centre lag
gossip    workers * batch    k_g D(rho/(1-rho)) + staleness term (merge gaps)
========  =================  =====================================================
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from clustersim.convergence.asynchrony import (
    delay_curvature,
    elastic_drift_delay,
    elastic_lag_steps,
    mixing_delay,
    staleness_term,
)
from clustersim.convergence.constants import Constants, load_constants
from clustersim.convergence.largebatch import rule_scale, steps_integral
from clustersim.convergence.profile import ConvergenceProfile

__all__ = ["KINDS", "RunStats", "ConvergenceResult", "Constants", "load_constants", "predict",
           "progress_curve"]

KINDS = ("sync", "async", "elastic", "gossip", "hybrid")


@dataclass(frozen=True)
class RunStats:
    """What one simulated run measured, in the algorithm's own step unit.

    ``batch`` is the samples in the gradient of one update: sync - the global batch; async -
    one worker's batch (one server update); hybrid - one group's batch (``group`` workers x
    their batch, one node push); elastic and gossip - one worker's local batch (``workers``
    replicas step in parallel, a step is one local step of every worker).  ``update_time`` is
    simulated seconds per step in that unit (sync: iteration time; PS: 1 / server updates per
    second; elastic/gossip: a worker's time per local step, exchanges included).
    ``staleness`` holds the measured samples (updates between read and write; gossip: merge
    gaps; asynchronous EASGD: centre versions).
    """

    kind: str
    workers: int
    batch: float
    update_time: float
    throughput: float
    staleness: Sequence[float] = ()
    momentum: float = 0.0
    alpha: float | None = None
    beta: float | None = None
    tau: int = 1
    gossip_prob: float | None = None
    peers: Sequence[Sequence[int]] | None = None
    group: int = 1
    #: elastic only: local SGD, the replicas reset to their mean at every exchange (``bsp``
    #: averaging weights every k steps) - the one elastic form a lone worker bounds
    local_sgd: bool = False


@dataclass(frozen=True)
class ConvergenceResult:
    """Time to accuracy of one run; ``steps_to_target`` is ``inf`` (with ``note``) if never."""

    steps_to_target: float
    samples_to_target: float
    epochs_to_target: float | None
    time_to_target: float
    statistical_efficiency: float
    goodput: float
    note: str = ""
    #: the terms the steps came from (for progress curves, :func:`progress_curve`): the
    #: effective batch, the asynchrony terms added to K, and the elastic centre's lag in steps
    batch_eff: float = 0.0
    extra: float = 0.0
    lag_steps: float = 0.0
    #: local SGD: the steps are a lone worker's (the cap in :func:`predict`)
    lone_capped: bool = False


def _never(profile: ConvergenceProfile, stats: RunStats, note: str, batch_eff: float = 0.0,
           extra: float = 0.0) -> ConvergenceResult:
    """A target never reached; ``batch_eff`` and ``extra``: the terms that were computed
    before the model gave up (a divergent step's), so the outputs still show them."""
    return ConvergenceResult(math.inf, math.inf, math.inf if profile.dataset_size else None,
                             math.inf, 0.0, 0.0, note, batch_eff=batch_eff, extra=extra)


def _check(stats: RunStats) -> None:
    if stats.kind not in KINDS:
        raise ValueError(f"unknown run kind {stats.kind!r} (allowed: {', '.join(KINDS)})")
    if stats.workers < 1 or stats.batch <= 0 or stats.update_time <= 0 or stats.throughput < 0:
        raise ValueError(f"need workers >= 1, batch > 0, update_time > 0, throughput >= 0: "
                         f"{stats}")
    if not 0.0 <= stats.momentum < 1.0 or stats.tau < 1:
        raise ValueError(f"need 0 <= momentum < 1 and tau >= 1: {stats}")


def predict(profile: ConvergenceProfile, stats: RunStats,
            constants: Constants | None = None) -> ConvergenceResult:
    """Time to ``profile``'s target for the run ``stats`` measured (module docstring: model)."""
    _check(stats)
    k = constants or profile.constants or load_constants()
    stale = staleness_term(stats.staleness, stats.momentum, k.k_s, k.k_m)
    extra, lag_steps, b_eff, per_step = 0.0, 0.0, stats.batch, stats.batch
    if stats.kind in ("async", "hybrid"):
        extra = stale
    elif stats.kind == "elastic":
        alpha = stats.alpha if stats.alpha is not None else (
            stats.beta / stats.workers if stats.beta is not None else None)
        if alpha is None:
            raise ValueError("an elastic run needs alpha or beta")
        beta = stats.beta if stats.beta is not None else stats.workers * alpha
        if alpha <= 0.0 or beta <= 0.0:
            return _never(profile, stats, "elastic moving rate alpha = 0: the centre variable "
                          "never moves, so the centre never reaches the target")
        if beta >= 2.0 or alpha >= 2.0:
            return _never(profile, stats, f"elastic moving rates alpha = {alpha:g}, beta = "
                          f"{beta:g}: the elastic averaging oscillates and diverges (needs "
                          f"|1 - alpha| < 1 and |1 - beta| < 1)")
        b_eff = per_step = stats.workers * stats.batch
        extra = k.k_d * delay_curvature(elastic_drift_delay(stats.tau)) + stale
        lag_steps = k.k_e * elastic_lag_steps(stats.tau, beta)
    elif stats.kind == "gossip":
        if stats.gossip_prob is None:
            raise ValueError("a gossip run needs gossip_prob")
        b_eff = per_step = stats.workers * stats.batch
        delay = mixing_delay(stats.workers, stats.gossip_prob, k.gossip_share, stats.peers)
        if math.isinf(delay):
            return _never(profile, stats, "gossip never mixes (push probability 0 or a "
                          "disconnected peer graph): the replicas never agree on a model")
        extra = k.k_g * delay_curvature(delay) + stale
    s_min = profile.ref_steps / steps_integral(profile.noise, profile.ref_batch)
    factor = steps_integral(profile.noise, b_eff, extra=extra, rule=profile.lr_rule,
                            ref_batch=profile.ref_batch)
    if math.isinf(factor):
        return _never(profile, stats, f"diverges: the {profile.lr_rule} LR rule at batch "
                      f"{b_eff:g} takes a step beyond the stable range (c K >= 2 in "
                      f"McCandlish's quadratic model)", batch_eff=b_eff, extra=extra)
    steps = s_min * factor + lag_steps
    capped = False
    if stats.kind == "elastic" and stats.local_sgd:
        # Replicas that average (local SGD: the centre becomes the replicas' mean) are never
        # slower than one of them alone: in McCandlish's quadratic model the SGD map is
        # linear in the error, so averaging commutes with it and only removes noise
        # (L(mean x_i) <= mean L(x_i)).  The drift and mixing terms are first order in
        # the delay and grow without bound (D(d) ~ 4d/pi): averaging every 1,000 steps was
        # predicted 5x slower than never averaging (audit I H2).  Cap at a lone worker's
        # steps, at its own batch under the profile's LR rule.  A run whose LR rule diverges
        # stays divergent (above).  Not EASGD with beta < 1: its evaluated model is the
        # centre, a moving average that lags, and its workers are pulled towards it - no
        # lone worker bounds that, at beta = 1 either (the workers are pulled, not reset;
        # keyed on the algorithm, not on a beta that rounds to 1.0 at 17 asynchronous
        # workers: audit L H1).  Not gossip either: its mixing constant k_g is fitted on
        # emulated gossip runs (constants_emulation.yaml) with the term uncapped, and a cap
        # would change what that fit means (docs/convergence.md, "Known to be wrong").
        lone = s_min * steps_integral(profile.noise, stats.batch, rule=profile.lr_rule,
                                      ref_batch=profile.ref_batch)
        if lone < steps:
            steps, b_eff, extra, lag_steps, capped = lone, stats.batch, 0.0, 0.0, True
    samples = steps * per_step
    eff = profile.ref_samples / samples
    return ConvergenceResult(
        steps_to_target=steps, samples_to_target=samples,
        epochs_to_target=samples / profile.dataset_size if profile.dataset_size else None,
        time_to_target=steps * stats.update_time, statistical_efficiency=eff,
        goodput=stats.throughput * eff, batch_eff=b_eff, extra=extra, lag_steps=lag_steps,
        lone_capped=capped)


def progress_curve(profile: ConvergenceProfile, result: ConvergenceResult,
                   points: int = 41) -> tuple[list[float], list[float]]:
    """Progress towards the target (0..1) against the fraction of ``result``'s steps taken.

    Progress is McCandlish's: steps of the ideal run (infinite batch, tuned LR), so equal
    progress is equal loss improvement in the quadratic model.  A run whose noise scale grows
    over training spends more of its steps late; the curve shows where.  The elastic centre's
    lag is spread evenly.  Returns ``([fraction of steps], [progress])``; empty if never."""
    if not math.isfinite(result.steps_to_target) or result.steps_to_target <= 0:
        return [], []
    grid = np.linspace(0.0, 1.0, 8 * (points - 1) + 1)
    k = 1.0 + profile.noise.values(grid) / result.batch_eff + result.extra
    if profile.lr_rule != "tuned":
        s = rule_scale(profile.lr_rule, result.batch_eff, profile.ref_batch)
        c = s / (1.0 + profile.noise.values(grid) / profile.ref_batch)
        k = 1.0 / (2.0 * c - c * c * k)
    cum = np.concatenate(([0.0], np.cumsum((k[1:] + k[:-1]) / 2.0 * np.diff(grid))))
    s_min = profile.ref_steps / steps_integral(profile.noise, profile.ref_batch)
    steps = s_min * cum + result.lag_steps * grid
    frac = steps / steps[-1]
    idx = np.linspace(0, len(grid) - 1, points).round().astype(int)
    return [float(x) for x in frac[idx]], [float(x) for x in grid[idx]]
