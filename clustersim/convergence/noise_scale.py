"""The gradient noise scale of a training run, estimated from its logged gradient norms.

Why: the large-batch law of the convergence layer, steps ``S = S_min (1 + B_noise / B)``
(McCandlish, Kaplan, Amodei et al. 2018, "An Empirical Model of Large-Batch Training", arXiv
1812.06162), needs the noise scale of *the user's* workload, and data-parallel training
measures it for free: every step has a small-batch gradient (one worker's local gradient, batch
``B_small``) and a big-batch gradient (the all-reduced mean, ``B_big = workers x B_small``).
Their squared norms give, per step, unbiased estimates of the true gradient's squared norm and
of the trace of the per-sample gradient covariance (the paper's Appendix A.1; Pollux/AdaptDL,
Qiao et al. OSDI 2021, compute the same from local and all-reduced gradients):

    |G|^2    ~ (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small)
    tr(Sigma) ~ (|G_small|^2 - |G_big|^2) / (1/B_small - 1/B_big)

(``E|G_B|^2 = |G|^2 + tr(Sigma)/B`` at both sizes, solved for the two unknowns).  Each is very
noisy - the |G|^2 estimate is often negative on a single step - so the simple noise scale
``B_simple = tr(Sigma) / |G|^2`` is the ratio of their *averages* over a window of steps, as the
paper and AdaptDL do, never the mean of per-step ratios (which is biased and can be dominated by
steps whose |G|^2 estimate is near zero).  The log may give, as ``sq_norm_small``, one worker's
local squared norm or the mean of every worker's: both are unbiased for ``E|G_small|^2``, the
mean just has less variance.

The uncertainty is Fieller's confidence interval for a ratio of means (Fieller 1954, J. R.
Stat. Soc. B 16:175): it uses the per-step estimates' sample covariance - the numerator and
the denominator come from the same two norms and are strongly anti-correlated, which a
interval per factor would ignore - and, unlike the delta method, it stays honest when the
average |G|^2 is barely above zero (late in training): the interval becomes asymmetric and,
when |G|^2 is not distinguishable from zero, unbounded, instead of a misleadingly narrow
symmetric one.  It is a closed form, so the same log gives the same bytes (a bootstrap would
need a seed).  It assumes the per-step estimates of a window independent - every step draws
fresh mini-batches; the drift of the true values within a window counts as extra variance, so
the interval errs on the wide side.

Training progress: the noise scale grows as the loss falls (the paper's Figure 5), so the log is
also cut into windows of progress (equal ranges of steps); a geometric schedule ``from -> to``
over progress, fitted to the windows, is what a scenario's ``workload.convergence.noise_scale``
takes.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clustersim.errors import InputError

__all__ = ["COLUMNS", "NormLog", "Estimate", "read_log", "format_log", "per_step",
           "ratio_interval", "estimate", "windows", "geometric_schedule"]

#: required columns of a norm log, in the order :func:`format_log` writes them
COLUMNS = ("step", "batch_small", "batch_big", "sq_norm_small", "sq_norm_big")
_ALLOWED = {
    "step": "a whole number, increasing from row to row",
    "batch_small": "a number > 0 (samples in the small-batch gradient)",
    "batch_big": "a number > batch_small (samples in the all-reduced gradient)",
    "sq_norm_small": "a finite number >= 0 (squared L2 norm of the small-batch gradient)",
    "sq_norm_big": "a finite number >= 0 (squared L2 norm of the big-batch gradient)",
}


@dataclass(frozen=True)
class NormLog:
    """Per-step gradient norms at two batch sizes (one array per column, same length)."""

    step: np.ndarray
    batch_small: np.ndarray
    batch_big: np.ndarray
    sq_norm_small: np.ndarray
    sq_norm_big: np.ndarray
    source: str = ""

    def __len__(self) -> int:
        return int(self.step.size)

    def subset(self, index: np.ndarray) -> NormLog:
        return NormLog(self.step[index], self.batch_small[index], self.batch_big[index],
                       self.sq_norm_small[index], self.sq_norm_big[index], self.source)


@dataclass(frozen=True)
class Estimate:
    """``B_simple`` over a range of steps, with its confidence interval.

    ``high`` is ``inf`` (and ``low`` ``-inf``) when the average |G|^2 is not distinguishable
    from zero at this confidence: the window does not bound the noise scale.
    """

    b_simple: float
    low: float
    high: float
    grad_sq: float  # mean of the per-step |G|^2 estimates
    trace: float  # mean of the per-step tr(Sigma) estimates
    steps: int  # rows in the window
    first_step: int
    last_step: int
    progress: tuple[float, float]  # the window's range of progress, 0..1
    confidence: float

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)


# -- reading and writing logs ----------------------------------------------------------------
def read_log(path: str | Path) -> NormLog:
    """Read and check a norm log (CSV with a header row naming at least :data:`COLUMNS`).

    Blank lines and lines starting with ``#`` are skipped; other columns (a loss, a
    learning rate) are allowed and ignored.  Anything else wrong raises
    :class:`~clustersim.errors.InputError` naming the file, the line, the column and what
    the column allows.  Written with the ``csv`` module rather than pandas because every
    value's line number must reach the message.
    """
    name = str(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            lines = [(no, text) for no, text in enumerate(fh, start=1)
                     if text.strip() and not text.lstrip().startswith("#")]
    except FileNotFoundError:
        raise InputError("norm log not found", file=name) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the norm log: {exc}", file=name) from None
    required = ", ".join(COLUMNS)
    if not lines:
        raise InputError(f"empty file: expected a header row with the columns {required}, "
                         "then one row per step", file=name, line=1)
    head_no, head = lines[0]
    header = [h.strip() for h in next(csv.reader([head]))]
    for col in COLUMNS:
        if col not in header:
            raise InputError(f"missing column {col!r} (required: {required}; found: "
                             f"{', '.join(header)})", file=name, line=head_no)
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise InputError(f"column {dupes[0]!r} appears twice in the header", file=name,
                         line=head_no)
    where = {col: header.index(col) for col in COLUMNS}
    values: dict[str, list[float]] = {col: [] for col in COLUMNS}
    for no, text in lines[1:]:
        row = next(csv.reader([text]))
        if len(row) != len(header):
            raise InputError(f"{len(row)} fields, the header has {len(header)} "
                             f"({', '.join(header)})", file=name, line=no)
        for col in COLUMNS:
            values[col].append(_number(row[where[col]], name, no, col))
        _check_row(values, name, no)
    if not values["step"]:
        raise InputError(f"no data rows after the header: give one row per step with "
                         f"{required}", file=name, line=head_no)
    return NormLog(*(np.asarray(values[c], dtype=float) for c in COLUMNS), source=name)


def _number(text: str, file: str, line: int, col: str) -> float:
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not math.isfinite(x):
        raise InputError(f"{text.strip()!r} is not a finite number (allowed: "
                         f"{_ALLOWED[col]})", file=file, line=line, path=(col,))
    return x


def _check_row(values: dict[str, list[float]], file: str, line: int) -> None:
    step, bs, bb = values["step"][-1], values["batch_small"][-1], values["batch_big"][-1]

    def bad(col: str, what: str) -> InputError:
        return InputError(f"{what} (allowed: {_ALLOWED[col]})", file=file, line=line,
                          path=(col,))

    if step != int(step):
        raise bad("step", f"{step!r} is not a whole number")
    if len(values["step"]) > 1 and step <= values["step"][-2]:
        raise bad("step", f"{int(step)} does not follow step {int(values['step'][-2])}")
    if not bs > 0:
        raise bad("batch_small", f"{bs:g} is not > 0")
    if not bb > bs:
        raise bad("batch_big", f"{bb:g} is not larger than batch_small {bs:g}: the two "
                               "gradients need different batch sizes")
    for col in ("sq_norm_small", "sq_norm_big"):
        if values[col][-1] < 0:
            raise bad(col, f"{values[col][-1]:g} is negative")


def format_log(rows: Iterable[Sequence[float]], comment: str = "") -> str:
    """CSV text of a norm log: ``rows`` of (step, batch_small, batch_big, sq_norm_small,
    sq_norm_big); ``comment`` lines go first, each prefixed with ``# ``.  Norms are written
    with 17 significant digits (a float64 round-trips)."""
    out = [f"# {ln}" for ln in comment.splitlines()] + [",".join(COLUMNS)]
    for step, bs, bb, s, b in rows:
        out.append(f"{int(step)},{bs:g},{bb:g},{float(s):.17g},{float(b):.17g}")
    return "\n".join(out) + "\n"


# -- the estimator ---------------------------------------------------------------------------
def per_step(log: NormLog) -> tuple[np.ndarray, np.ndarray]:
    """Per-step unbiased estimates ``(|G|^2, tr(Sigma))`` (McCandlish et al. 2018, A.1)."""
    bs, bb = log.batch_small, log.batch_big
    s, b = log.sq_norm_small, log.sq_norm_big
    grad_sq = (bb * b - bs * s) / (bb - bs)
    trace = (s - b) / (1.0 / bs - 1.0 / bb)
    return grad_sq, trace


def ratio_interval(num: np.ndarray, den: np.ndarray, confidence: float = 0.95
                   ) -> tuple[float, float, float]:
    """``(mean(num)/mean(den), low, high)``: Fieller's interval for a ratio of means.

    With ``a, b`` the means and ``v11, v22, v12`` the variances and covariance of the means,
    the interval is the set of ``R`` with ``(a - R b)^2 <= t^2 (v11 - 2 R v12 + R^2 v22)``
    (``t`` Student's quantile, n - 1 degrees of freedom): bounded exactly when
    ``b^2 > t^2 v22``, i.e. when the denominator's mean is significantly non-zero.
    """
    from scipy.stats import t as student

    n = int(num.size)
    a, b = float(np.mean(num)), float(np.mean(den))
    ratio = a / b if b != 0 else math.copysign(math.inf, a) if a else math.nan
    if n < 2:
        return ratio, -math.inf, math.inf
    cov = np.cov(np.vstack([num, den]), ddof=1) / n
    v11, v12, v22 = float(cov[0, 0]), float(cov[0, 1]), float(cov[1, 1])
    tq = float(student.ppf(0.5 + confidence / 2.0, n - 1))
    t2 = tq * tq
    qa = b * b - t2 * v22
    if qa <= 0:
        return ratio, -math.inf, math.inf
    qb = a * b - t2 * v12
    qc = a * a - t2 * v11
    root = math.sqrt(max(qb * qb - qa * qc, 0.0))
    return ratio, (qb - root) / qa, (qb + root) / qa


def estimate(log: NormLog, confidence: float = 0.95,
             progress: tuple[float, float] = (0.0, 1.0)) -> Estimate:
    """``B_simple`` of all the steps of ``log``: the ratio of the mean tr(Sigma) to the mean
    |G|^2 estimate, with Fieller's interval."""
    grad_sq, trace = per_step(log)
    value, low, high = ratio_interval(trace, grad_sq, confidence)
    return Estimate(value, low, high, float(np.mean(grad_sq)), float(np.mean(trace)), len(log),
                    int(log.step[0]), int(log.step[-1]), progress, confidence)


def progress_of(log: NormLog) -> np.ndarray:
    """Each row's progress through the log, 0 at the first step and 1 at the last."""
    span = float(log.step[-1] - log.step[0])
    return (log.step - log.step[0]) / span if span > 0 else np.zeros(len(log))


def windows(log: NormLog, count: int, confidence: float = 0.95) -> list[Estimate]:
    """``count`` estimates over equal ranges of progress (by step number, so a log written
    every k steps is cut like a complete one).  Raises InputError when a window would hold
    fewer than 2 steps (no variance, no interval)."""
    if count < 1:
        raise InputError(f"must be >= 1, not {count}", path=("windows",))
    where = np.minimum((progress_of(log) * count).astype(int), count - 1)
    out = []
    for k in range(count):
        rows = np.flatnonzero(where == k)
        if rows.size < 2:
            raise InputError(f"{count} windows leave window {k + 1} with {rows.size} step(s) of "
                             f"the {len(log)} logged; each needs at least 2 (use fewer "
                             "windows or a longer log)", path=("windows",))
        out.append(estimate(log.subset(rows), confidence, (k / count, (k + 1) / count)))
    return out


def geometric_schedule(parts: Sequence[Estimate]) -> tuple[float, float] | None:
    """``(from, to)``: the noise scale at progress 0 and 1 of ``B(p) = from (to/from)^p``,
    fitted to the windows by weighted least squares on ``log B`` at the windows' centres.

    Weights are ``1 / sd(log B)^2`` with ``sd`` read off each window's interval in log space
    (its width over ``2 t``), so a window that hardly bounds the noise scale barely counts.
    Windows whose estimate is not positive or whose interval is unbounded are left out;
    ``None`` when fewer than two remain (then a constant is all the log supports).
    """
    from scipy.stats import norm

    pts = [(sum(e.progress) / 2, math.log(e.b_simple),
            (math.log(e.high) - math.log(e.low)) / (2 * norm.ppf(0.5 + e.confidence / 2)))
           for e in parts if e.bounded and e.low > 0 and e.b_simple > 0]
    if len(pts) < 2:
        return None
    x, y, sd = (np.array(c, dtype=float) for c in zip(*pts))
    slope, intercept = np.polyfit(x, y, 1, w=1.0 / np.maximum(sd, 1e-12))
    return math.exp(intercept), math.exp(intercept + slope)
