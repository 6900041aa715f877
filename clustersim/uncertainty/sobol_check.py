"""Whether a metric's Sobol estimates are resolved at the sample size they came from.

Why: Saltelli's estimators (SALib) are unbiased but noisy at small N; at ``sensitivity``'s
default ``-n 16`` on theano_mpi_alexnet they printed a first-order index above the total one
(0.918 against 0.731, impossible for the true indices, S1 <= ST) with a 95 % half-width of
0.56, and the "top drivers" line under them read as a result.  The printed values stay the
raw estimates (clipping them to [0, 1] would hide the symptom that tells the reader the sample
is too small, and JSON keeps what SALib returned); this module says when they are noise and
what ``-n`` would resolve them.

A metric is flagged (:func:`sample_check`) when, for any input:

* an index lies outside [0, 1] by more than its own 95 % half-width (an impossible value
  the interval does not excuse),
* S1 exceeds ST by more than S1's half-width (S1 <= ST for the true indices), or
* a half-width exceeds :data:`MAX_CONF` = 0.2: an interval 0.4 wide on the [0, 1] scale
  holds both a non-driver (0) and a major one (0.4), so the ranking is not resolved.  Why not
  0.1: SALib's bootstrap resamples the Sobol' (quasi-random) design as if it were random and
  overstates the error - on ``y = 3 a + 1`` it gives S1 = 1.000 +- 0.137 at N = 256, where
  the estimate is exact to three digits - so 0.1 would flag every affordable run (N = 1,024
  for theano_mpi_alexnet) and a note that always appears is read as none.

The suggested ``-n`` scales the largest half-width down to :data:`AIM` x :data:`MAX_CONF`
by the estimators' 1 / sqrt(N) convergence (half-width x sqrt(N / N')), rounded up to the
power of two Sobol needs and at least double the current N.  It aims a fifth below the
threshold because the bootstrap half-width is itself an estimate: theano_mpi_alexnet's
+-0.558 at N = 16 predicts +-0.197 at 128, and N = 128 gave +-0.23.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_CONF", "MAX_N", "sample_check", "suggest_n", "check_text"]

#: the widest 95 % half-width of an index still read as a value (see the module docstring)
MAX_CONF = 0.2
#: the suggested -n aims at this share of MAX_CONF (see the module docstring)
AIM = 0.8
#: sensitivity's own cap on -n
MAX_N = 4096


def suggest_n(n: int, conf: float) -> int:
    """The power of two from which a half-width ``conf`` at ``n`` shrinks to AIM x
    MAX_CONF."""
    need = n * (conf / (AIM * MAX_CONF)) ** 2
    p = 1 << max(0, math.ceil(math.log2(max(need, 2 * n))))
    return min(p, MAX_N)


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def sample_check(m: Mapping[str, Any], n: int) -> dict[str, Any] | None:
    """None when a metric's Sobol indices ``m`` (names, S1, S1_conf, ST, ST_conf) are
    resolved at ``n`` base samples; else ``{"reasons": [...], "max_conf": c, "suggest_n":
    N}`` with the first offending case of each kind, for people."""
    reasons: list[str] = []
    out_of_range = None
    above_total = None
    widest = (0.0, "", "")
    for i, name in enumerate(m["names"]):
        s1, c1, st, ct = m["S1"][i], m["S1_conf"][i], m["ST"][i], m["ST_conf"][i]
        for what, v, c in (("S1", s1, c1), ("ST", st, ct)):
            if out_of_range is None and (v + c < 0 or v - c > 1):
                out_of_range = f"{what} of {name} {_fmt(v)} ±{_fmt(c)} is outside [0, 1]"
            if c > widest[0]:
                widest = (c, what, name)
        if above_total is None and s1 > st + c1:
            above_total = (f"S1 of {name} {_fmt(s1)} ±{_fmt(c1)} exceeds its ST "
                           f"{_fmt(st)}")
    reasons += [r for r in (out_of_range, above_total) if r]
    if widest[0] > MAX_CONF:
        reasons.append(f"{widest[1]} of {widest[2]} is ±{_fmt(widest[0])} at 95%")
    if not reasons:
        return None
    return {"reasons": reasons, "max_conf": widest[0], "suggest_n": suggest_n(n, widest[0])}


def check_text(what: str, check: Mapping[str, Any], n: int) -> str:
    """The note line for one metric."""
    more = check["suggest_n"]
    advice = (f"use -n {more:,} or more (the ±95% intervals shrink as 1/sqrt(n))" if more > n else
              f"even -n {n:,} (the most) leaves them unresolved")
    return (f"note: {what}: the indices are not resolved at -n {n:,} "
            f"({'; '.join(check['reasons'])}): the sample is too small; {advice}; its top "
            f"drivers are tentative")
