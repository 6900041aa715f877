"""What ``clustersim predict`` runs beyond its table: the propagation of ``--uncertainty N``
and the sweep together with the headline's one-at-a-time band.

Kept out of cli.py (a few lines there call :func:`propagate_prediction` and
:func:`sweep_with_band`); without ``--uncertainty`` and without an ``uncertain:`` section
``predict`` runs its sweep alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from clustersim.errors import InputError
from clustersim.uncertainty.bands import band
from clustersim.uncertainty.nominal import Bands, outside_notes
from clustersim.uncertainty.propagate import (
    Inputs,
    collect_inputs,
    draw,
    evaluate,
    sample_scenario,
)

__all__ = ["MAX_SAMPLES", "load_raw", "prepare_propagation", "propagate_prediction",
           "sweep_with_band"]

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
    """``n`` when it is a sample count from 2 to :data:`MAX_SAMPLES` (each sample a whole
    sweep); else an input error naming ``flag``."""
    if not 2 <= n <= MAX_SAMPLES:
        raise InputError(f"{flag} takes a number of samples from 2 to {MAX_SAMPLES:,} "
                         f"(16 to 64 are typical; a power of two keeps Sobol's balance), "
                         f"not {n}")
    return n


def prepare_propagation(scn: Any, path: str, sets: Sequence[str], profile_path: str | None,
                        n: int) -> tuple[Inputs, list[Any]]:
    """``--uncertainty N``'s inputs and its ``n`` sample scenarios, every one checked: what
    can be refused, refused before anything is simulated.

    Why apart from :func:`propagate_prediction`: ``predict`` calls this before its own sweep,
    so that "nothing is uncertain" or a sampled value the scenario refuses is said at once,
    not after the whole nominal sweep (QA 18b: a progress bar to 24/24, then exit 2)."""
    check_samples(n)
    profile = None
    if profile_path:
        from clustersim.calibration.profile import load_profile

        profile = load_profile(profile_path)
    inputs = collect_inputs(scn, profile)
    samples = draw(inputs, n, scn.run.seed)
    raw = load_raw(path, sets)
    # every sample checked before any is simulated: a refused value fails in a second
    return inputs, [sample_scenario(raw, path, s, profile) for s in samples]


def propagate_prediction(scn: Any, path: str, sets: Sequence[str], profile_path: str | None,
                         n: int, jobs: int,
                         progress: Callable[[int], AbstractContextManager[Any]],
                         nominal: Any = None,
                         prepared: tuple[Inputs, list[Any]] | None = None
                         ) -> tuple[dict[str, Any], Inputs]:
    """Bands of every headline metric over ``n`` samples of the scenario's uncertain inputs
    (and the profile's covariance), each sample a whole sweep; a :class:`Bands` whose
    ``notes`` name the headline metrics whose nominal lies outside its band, and why.
    ``nominal``: the prediction's own sweep of ``scn`` (``predict`` has it), else it is run
    once more beside the samples; ``prepared``: :func:`prepare_propagation`'s, if called."""
    inputs, scns = prepared or prepare_propagation(scn, path, sets, profile_path, n)
    # the nominal sweep once more, in the same pool (1/n of the cost): its headline is
    # checked against its own bands (clustersim.uncertainty.nominal), which the printers of
    # the bands are not handed otherwise
    extra = 1 if nominal is None else 0
    with progress(n + extra) as advance:
        results = evaluate(lambda i: scns[i] if i < n else scn, n + extra, jobs, advance)
    if nominal is not None:
        from clustersim.uncertainty.focus import measured_points

        results.append(measured_points(nominal))
    bands = band(results[:n])
    return Bands(bands, outside_notes(bands, results[n], scn, inputs.fields)), inputs


def sweep_with_band(scn: Any, path: str, sets: Sequence[str], profile_path: str | None,
                    want_band: bool, trace: bool = False,
                    progress_factory: Callable[[int], AbstractContextManager[Any]] | None = None,
                    jobs: int | None = None) -> tuple[Any, Any]:
    """The prediction's sweep and, for a scenario with an ``uncertain:`` section when
    ``want_band``, its headline's one-at-a-time band (:mod:`clustersim.uncertainty.swing`;
    None otherwise), with the prediction's ``--set`` and calibration profile.

    The band's runs are planned first (a value the scenario refuses fails before anything
    runs) and then go into the sweep's own pool, beside its points: one pool, one progress
    bar, and the band's runs share the prediction's platform, whose routes and message plans
    the pool's processes cache anyway.  The nominal is the sweep's main algorithm at its
    largest point, which the focused nominal run equals to the last bit (tests/test_swing.py).
    """
    from clustersim.sim.sweep import run_sweep, run_sweeps

    if not (want_band and scn.uncertain):
        return run_sweep(scn, trace, progress_factory, jobs), None
    from clustersim.uncertainty.focus import sweep_headline
    from clustersim.uncertainty.swing import swing_plan, swing_result

    profile = None
    if profile_path:
        from clustersim.calibration.profile import load_profile

        profile = load_profile(profile_path)
    plan = swing_plan(load_raw(path, sets), path, scn.uncertain, profile, platform=scn.platform)
    result, *runs = run_sweeps([scn, *plan.scenarios[1:]], trace, progress_factory, jobs)
    metrics = [sweep_headline(r) for r in (result, *runs)]
    return result, swing_result(plan, metrics, len(runs))
