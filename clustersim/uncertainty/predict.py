"""``clustersim predict --uncertainty N``: the propagation behind the command's extra table.

Kept out of cli.py (a few lines there call :func:`propagate_prediction`); without
``--uncertainty`` nothing here runs and ``predict`` prints what it always printed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from clustersim.errors import InputError
from clustersim.uncertainty.propagate import (
    Inputs,
    band,
    collect_inputs,
    draw,
    evaluate,
    sample_scenario,
)

__all__ = ["MAX_SAMPLES", "load_raw", "propagate_prediction", "swing_prediction"]

#: a sample is a whole sweep: 100,000 of them is a typo, not a plan
MAX_SAMPLES = 4096


def load_raw(path: str, sets: Sequence[str]) -> Any:
    """The scenario file's raw mapping with the ``--set`` overrides applied."""
    from clustersim.scenario.overrides import apply_overrides
    from clustersim.scenario.yamlio import load_yaml

    raw = load_yaml(path, what="scenario file")
    if sets:
        try:
            raw = apply_overrides(raw, sets)
        except InputError as exc:
            raise exc.located(file=str(path)) from None
    return raw


def check_samples(n: int, flag: str = "--uncertainty") -> int:
    if not 2 <= n <= MAX_SAMPLES:
        raise InputError(f"{flag} takes a number of samples from 2 to {MAX_SAMPLES:,} "
                         f"(16 to 64 are typical; a power of two keeps Sobol's balance), "
                         f"not {n}")
    return n


def propagate_prediction(scn: Any, path: str, sets: Sequence[str], profile_path: str | None,
                         n: int, jobs: int,
                         progress: Callable[[int], AbstractContextManager[Any]]
                         ) -> tuple[dict[str, Any], Inputs]:
    """Bands of every headline metric over ``n`` samples of the scenario's uncertain inputs
    (and the profile's covariance), each sample a whole sweep."""
    check_samples(n)
    profile = None
    if profile_path:
        from clustersim.calibration.profile import load_profile

        profile = load_profile(profile_path)
    inputs = collect_inputs(scn, profile)
    samples = draw(inputs, n, scn.run.seed)
    raw = load_raw(path, sets)
    # every sample checked before any is simulated: a refused value fails in a second
    scns = [sample_scenario(raw, path, s, profile) for s in samples]
    with progress(n) as advance:
        results = evaluate(lambda i: scns[i], n, jobs, advance)
    return band(results), inputs


def swing_prediction(scn: Any, path: str, sets: Sequence[str], profile_path: str | None,
                     jobs: int, progress: Callable[[int], AbstractContextManager[Any]],
                     result: Any = None) -> Any:
    """The headline's one-at-a-time band (:mod:`clustersim.uncertainty.swing`) of a scenario
    with an ``uncertain:`` section, with the prediction's ``--set`` and calibration profile
    (``result``: the prediction's sweep, whose main algorithm's last point is the nominal);
    None without one."""
    if not scn.uncertain:
        return None
    from clustersim.uncertainty.focus import point_metrics
    from clustersim.uncertainty.swing import headline_swing

    nominal = None
    if result is not None and result.points:
        nominal = point_metrics(next(iter(result.points.values()))[-1])

    profile = None
    if profile_path:
        from clustersim.calibration.profile import load_profile

        profile = load_profile(profile_path)
    return headline_swing(load_raw(path, sets), path, scn.uncertain, jobs, progress, profile,
                          nominal=nominal)
