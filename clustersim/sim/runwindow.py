"""The run window of a point: its warm-up and measured steps in whole exchange periods."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

__all__ = ["PERIODS", "aligned_run"]

#: the parameters that make an algorithm exchange every N steps (EASGD and parameter-server
#: families' ``tau``, BSP's weight averaging ``every``)
PERIODS = ("tau", "every")


def aligned_run(run: Any, alg: Any) -> Any:
    """``run`` with its warm-up and measured steps each rounded up to whole exchange periods
    of ``alg`` (``tau`` or ``every``; unchanged for a period of 1).

    Why: a run measures what happens in its window.  With ``tau: 10`` and knl_4253's one
    warm-up and one measured step, no worker ever exchanged: the point was pure compute,
    100 % efficient, its master idle and its staleness zero - the headline band's "99.9 %
    at tau = 10" and every master-based method "unsaturated" when ``predict --uncertainty``
    drew tau.  A window of whole periods holds every exchange of the steps it covers, and
    the warm-up then ends after the first burst of exchanges (all workers start at once)."""
    period = max((int(alg.params.get(k) or 1) for k in PERIODS), default=1)
    if period <= 1:
        return run
    warmup = -(-run.warmup // period) * period
    measured = max(1, -(-(run.iterations - run.warmup) // period)) * period
    if (warmup, warmup + measured) == (run.warmup, run.iterations):
        return run
    return replace(run, warmup=warmup, iterations=warmup + measured)
