"""The run window of a point: its warm-up and measured steps in whole exchange periods."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

__all__ = ["PERIODS", "aligned_run", "period", "stretched"]

#: the parameters that make an algorithm exchange every N steps: the EASGD and
#: parameter-server families' ``tau``, the hybrid's global push every ``k`` local sums, BSP's
#: weight averaging ``every`` (with ``exchange: weights`` only: gradients go every step)
PERIODS = ("tau", "every", "k")


def period(alg: Any) -> int:
    """Steps between an algorithm's exchanges (1: every step)."""
    params = alg.params
    out = 1
    for key in PERIODS:
        if key == "every" and params.get("exchange", "gradients") != "weights":
            continue
        if key == "k" and alg.name != "hybrid":
            continue
        out = max(out, int(params.get(key) or 1))
    return out


def aligned_run(run: Any, alg: Any) -> Any:
    """``run`` with its warm-up and measured steps each rounded up to whole exchange periods
    of ``alg`` (:func:`period`; unchanged for a period of 1).

    Why: a run measures what happens in its window.  With ``tau: 10`` and knl_4253's one
    warm-up and one measured step, no worker ever exchanged: the point was pure compute,
    100 % efficient, its master idle and its staleness zero - the headline band's "99.9 %
    at tau = 10" and every master-based method "unsaturated" when ``predict --uncertainty``
    drew tau.  A window of whole periods holds every exchange of the steps it covers, and
    the warm-up then ends after the first burst of exchanges (all workers start at once)."""
    n = period(alg)
    if n <= 1:
        return run
    warmup = -(-run.warmup // n) * n
    measured = max(1, -(-(run.iterations - run.warmup) // n)) * n
    if (warmup, warmup + measured) == (run.warmup, run.iterations):
        return run
    return replace(run, warmup=warmup, iterations=warmup + measured)


def stretched(scn: Any) -> dict[str, tuple[int, int, int]]:
    """``{title: (warm-up, measured steps, period)}`` of the scenario's algorithms whose run
    :func:`aligned_run` lengthens: what ``predict`` says under its tables and writes to its
    JSON, so that a run of other lengths than ``run:`` says is never silent."""
    from clustersim.sim.sweep import sweep_cases

    out = {}
    for title, s, alg in sweep_cases(scn):
        run = aligned_run(s.run, alg)
        if run is not s.run:
            out[title] = (run.warmup, run.iterations - run.warmup, period(alg))
    return out
