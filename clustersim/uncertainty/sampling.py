"""Quasi-Monte-Carlo points in the unit cube and their values for the uncertain inputs.

Why scrambled Sobol (``scipy.stats.qmc``): for the smooth, low-dimensional responses of a
simulator its points fill the cube far more evenly than independent draws (error ~1/N
instead of 1/sqrt(N) for integrals of smooth functions), the scrambling keeps estimates
unbiased, and a seed makes the set reproducible byte for byte.  Each input takes one
coordinate ``u`` in [0, 1) and becomes a value by its inverse CDF (``ppf``), so the same
points serve any mix of distributions and SALib's samples (also in the unit cube) are
mapped the same way.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from clustersim.uncertainty.spec import UncertainInput, bounds

__all__ = ["unit_sobol", "to_value", "to_values"]


def unit_sobol(n: int, d: int, seed: int) -> np.ndarray:
    """``n`` points of a scrambled Sobol sequence in ``d`` dimensions, seeded (n x d).

    A power of two keeps Sobol's balance properties; other counts are allowed (scipy warns,
    we do not: the first n points of the sequence are still a low-discrepancy set)."""
    from scipy.stats import qmc

    if n < 1 or d < 1:
        raise ValueError("need n >= 1 points in d >= 1 dimensions")
    eng = qmc.Sobol(d, scramble=True, seed=np.random.default_rng(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "balance properties" for n != 2**m
        return eng.random(n)


class _Uniform:
    """The uniform distribution's ``cdf`` and ``ppf``, as scipy.stats.uniform computes them
    (``(x - loc) / scale`` held to [0, 1]; ``q * scale + loc``: the same floating-point
    operations, so the same values).

    Why not scipy's: importing scipy.stats takes half a second, and every command that
    parses a scenario with an ``uncertain:`` block draws its points to check them (the
    headline ``knl_4253`` among them), while ranges and uniforms - most of what scenarios
    declare - need two lines of arithmetic."""

    __slots__ = ("loc", "scale")

    def __init__(self, loc: float, scale: float) -> None:
        self.loc, self.scale = float(loc), float(scale)

    def cdf(self, x: float) -> float:
        return min(max((float(x) - self.loc) / self.scale, 0.0), 1.0)

    def ppf(self, q: float) -> float:
        return float(q) * self.scale + self.loc


def _frozen(inp: UncertainInput) -> Any:
    p = inp.params
    if inp.dist in ("range", "uniform"):
        lo, hi = p
        if inp.kind == "int":  # every whole number from ceil(lo) to floor(hi), equally likely
            lo, hi = math.ceil(lo) - 0.5, math.floor(hi) + 0.5
        return _Uniform(lo, hi - lo)
    from scipy import stats

    if inp.dist == "loguniform":
        return stats.loguniform(p[0], p[1])
    if inp.dist == "normal":
        return stats.norm(loc=p[0], scale=p[1])
    if inp.dist == "lognormal":
        return stats.lognorm(s=p[1], scale=p[0])
    if inp.dist == "triangular":
        lo, mode, hi = p
        return stats.triang(c=(mode - lo) / (hi - lo), loc=lo, scale=hi - lo)
    raise ValueError(f"no continuous distribution for {inp.dist!r}")


def to_value(inp: UncertainInput, u: float) -> Any:
    """The value of ``inp`` at cube coordinate ``u`` in [0, 1) (inverse CDF).

    ``clip`` truncates: ``u`` is mapped into [F(low), F(high)] first, so the values stay
    distributed as the distribution conditioned on the interval (the parser refused clips
    that keep less than one millionth of it, where that interval would round away).
    ``kind: int`` rounds to the nearest whole number within the bounds and the clip, each
    with the probability of its whole interval [n - 1/2, n + 1/2) (the clip's end numbers
    too)."""
    u = min(max(float(u), 0.0), math.nextafter(1.0, 0.0))
    if inp.dist == "choice":
        w = np.asarray(inp.weights if inp.weights else [1.0] * len(inp.params), dtype=float)
        edges = np.cumsum(w) / w.sum()
        i = int(np.searchsorted(edges, u, side="right"))
        return inp.params[min(i, len(inp.params) - 1)]
    dist = _frozen(inp)
    clip = inp.clip
    if clip is not None and inp.kind == "int":
        # a whole number n stands for [n - 1/2, n + 1/2): the clip keeps the end numbers'
        # whole intervals, or {range: [1, 10], kind: int, clip: [2, 5]} drew 2 and 5 half
        # as often as 3 and 4 (QA 17)
        clip = (math.ceil(clip[0]) - 0.5, math.floor(clip[1]) + 0.5)
    if clip is not None:
        lo, hi = (float(dist.cdf(c)) for c in clip)
        if not hi > lo:
            raise ValueError(f"{inp.field}: clip [{inp.clip[0]:g}, {inp.clip[1]:g}] leaves "
                             f"no probability")
        u = lo + u * (hi - lo)
    x = float(dist.ppf(u))
    if clip is not None:
        x = min(max(x, clip[0]), clip[1])  # ppf round-off at the ends
    if inp.kind == "int":
        # the nearest whole number, kept within the bounds: {loguniform: [4.2, 9.8], kind:
        # int} gives 5..9, never 4 or 10 (the parser refused bounds without a whole number)
        lo, hi = bounds(inp)
        n = math.floor(x + 0.5)
        if math.isfinite(lo):
            n = max(n, math.ceil(lo))
        if math.isfinite(hi):
            n = min(n, math.floor(hi))
        return int(n)
    return x


def to_values(inputs: Sequence[UncertainInput], units: np.ndarray) -> list[dict[str, Any]]:
    """One ``{field: value}`` per row of ``units`` (n x len(inputs))."""
    return [{inp.field: to_value(inp, row[j]) for j, inp in enumerate(inputs)}
            for row in np.atleast_2d(units)]
