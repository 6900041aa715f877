"""Propagation: the uncertain inputs' samples through the simulator, and the quantiles of
what comes out.

A sample is one scenario: the file's raw fields with the sampled values set (as ``--set``
would set them, so every value is validated exactly like one written in the file) and, with a
calibration profile, the profile with its covariance blocks' sampled values applied.  Every
sample keeps ``run.seed``: the compute jitter is then the same random stream in every sample
(common random numbers), so the spread is the inputs', not the seeds'.

:func:`evaluate` is the one place that runs samples (a local process pool); the sweep
executors of ``clustersim.explore`` can take its place without touching the rest.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clustersim.errors import InputError
from clustersim.uncertainty.spec import UncertainInput

__all__ = ["Sample", "Inputs", "collect_inputs", "draw", "sample_scenario", "evaluate",
           "band", "HEADLINE", "Band"]

#: the metrics reported with a band: (PointMetrics attribute, what it is)
HEADLINE = (("iteration_time", "iteration time (s)"), ("throughput", "samples/s"),
            ("speedup", "speedup"), ("efficiency", "scaling efficiency"),
            ("comm_share", "communication exposed"), ("time_to_target", "time to target (s)"),
            ("statistical_efficiency", "statistical efficiency"), ("goodput", "goodput"))


@dataclass
class Inputs:
    """Everything uncertain in one prediction: the scenario's fields and the profile's
    covariance blocks (each block takes as many cube dimensions as it has parameters)."""

    fields: tuple[UncertainInput, ...] = ()
    blocks: tuple[Any, ...] = ()  # clustersim.calibration.covariance.CovBlock
    profile: Any = None

    @property
    def dims(self) -> int:
        return len(self.fields) + sum(len(b.parameters) for b in self.blocks)

    @property
    def names(self) -> list[str]:
        return [f.field for f in self.fields] + [f"calibration:{p}" for b in self.blocks
                                                 for p in b.parameters]


@dataclass
class Sample:
    """One draw: values of the scenario's fields and of the profile's parameters."""

    fields: dict[str, Any] = field(default_factory=dict)
    profile: dict[str, float] = field(default_factory=dict)


def collect_inputs(scn: Any, profile: Any = None) -> Inputs:
    """The scenario's ``uncertain:`` inputs and, with a profile, its covariance blocks."""
    blocks = tuple(profile.covariance) if profile is not None else ()
    return Inputs(tuple(scn.uncertain), blocks, profile)


def _profile_values(block: Any, u: np.ndarray) -> dict[str, float]:
    """A multivariate normal draw of one block at cube coordinates ``u`` (inverse CDF of
    each coordinate, then the covariance's square root).  Values are kept where the model
    accepts them: efficiencies in (0, 1], rates above 1 % of the fitted value, times >= 0 -
    a Gaussian has tails the physics does not."""
    from scipy.stats import norm

    mean = np.asarray(block.value, dtype=float)
    cov = np.asarray(block.matrix, dtype=float)
    # the square root of a PSD matrix (singular ones included) by eigendecomposition of the
    # *correlation* matrix: the parameters of one block differ by 20 orders of magnitude
    # (an efficiency and a rate in B/s), and eigh of the raw covariance would lose the small
    # ones in the round-off of the large ones
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    safe = np.where(sd > 0, sd, 1.0)
    w, v = np.linalg.eigh(cov / np.outer(safe, safe))
    root = (sd[:, None] * v) * np.sqrt(np.clip(w, 0.0, None))
    z = norm.ppf(np.clip(u, 1e-12, 1 - 1e-12))
    x = mean + root @ z
    out = {}
    for name, m, val in zip(block.parameters, mean, x):
        last = name.rsplit(".", 1)[-1]
        if "efficiency" in name:
            val = min(max(val, 1e-6), 1.0)
        elif last in ("overhead", "latency", "step_overhead"):
            val = max(val, 0.0)
        else:
            val = max(val, 0.01 * m)
        out[name] = float(val)
    return out


def to_samples(inputs: Inputs, units: np.ndarray) -> list[Sample]:
    """The cube points (n x dims) as samples."""
    from clustersim.uncertainty.sampling import to_value

    out = []
    k = len(inputs.fields)
    for row in np.atleast_2d(units):
        s = Sample({f.field: to_value(f, row[j]) for j, f in enumerate(inputs.fields)})
        j = k
        for b in inputs.blocks:
            s.profile.update(_profile_values(b, row[j:j + len(b.parameters)]))
            j += len(b.parameters)
        out.append(s)
    return out


def draw(inputs: Inputs, n: int, seed: int) -> list[Sample]:
    """``n`` samples from a scrambled Sobol sequence seeded with ``seed``."""
    from clustersim.uncertainty.sampling import unit_sobol

    if inputs.dims == 0:
        raise InputError("nothing is uncertain: the scenario has no 'uncertain:' section "
                         "(docs/uncertainty.md) and no calibration profile with a "
                         "covariance was given", path=("uncertain",))
    return to_samples(inputs, unit_sobol(n, inputs.dims, seed))


def sample_scenario(raw: Mapping[str, Any], file: str | None, sample: Sample,
                    profile: Any = None) -> Any:
    """The scenario of one sample; a sampled value the scenario refuses is an input error
    naming the ``uncertain:`` entry that produced it."""
    from clustersim.scenario.overrides import set_fields
    from clustersim.scenario.schema import parse_scenario
    from clustersim.scenario.yamlio import line_of

    plain = {k: v for k, v in raw.items() if k != "uncertain"}
    try:
        scn = parse_scenario(set_fields(plain, sample.fields), file)
    except InputError as exc:
        bad = next((f for f in sample.fields if exc.path and
                    ".".join(str(p) for p in exc.path).startswith(f)), None)
        if bad is None:
            bad = next(iter(sample.fields), "")
        raise InputError(f"the sampled value {sample.fields.get(bad)!r} is refused: "
                         f"{exc.message} (narrow the distribution)", file=file,
                         path=("uncertain", bad),
                         line=line_of(raw, ("uncertain", bad))) from None
    if profile is not None:
        from clustersim.calibration.applyprofile import apply_profile_data
        from clustersim.calibration.covariance import with_values

        prof = with_values(profile, sample.profile) if sample.profile else profile
        scn = apply_profile_data(scn, prof)[0]
    return scn


#: what the forked pool processes run (inherited, never pickled)
_POOL: list[Callable[[int], Any]] = []


def _task(i: int) -> tuple[int, Any]:
    return i, _POOL[0](i)


def _points(scn: Any) -> dict[str, list[Any]]:
    from clustersim.sim.sweep import run_sweep

    return run_sweep(scn, jobs=1).points


def evaluate(build: Callable[[int], Any], n: int, jobs: int = 1,
             advance: Callable[[int], Any] = lambda k=1: None,
             run: Callable[[Any], Any] = _points) -> list[Any]:
    """``run(build(i))`` for i in 0..n-1, on ``jobs`` forked processes, in sample order.

    The default ``run`` is the whole sweep of the sample's scenario (every algorithm, every
    point), one process per sample: samples are the coarse, independent unit here."""
    out: list[Any] = [None] * n
    if jobs > 1 and n > 1 and "fork" in multiprocessing.get_all_start_methods():
        _POOL[:] = [lambda i: run(build(i))]
        try:
            with multiprocessing.get_context("fork").Pool(min(jobs, n)) as pool:
                for i, res in pool.imap_unordered(_task, range(n)):
                    out[i] = res
                    advance(1)
        finally:
            _POOL.clear()
    else:
        for i in range(n):
            out[i] = run(build(i))
            advance(1)
    return out


@dataclass
class Band:
    """Median and 90 % interval (5th and 95th percentiles) of one metric over the samples;
    ``never``: samples whose value is None (e.g. a target never reached)."""

    median: float
    low: float
    high: float
    n: int
    never: int = 0


def quantiles(values: Sequence[float | None]) -> Band | None:
    """A :class:`Band`; None counts as +inf (never).  Linear interpolation between order
    statistics when every value is finite (numpy's default), the empirical quantile (no
    interpolation) otherwise, so that an infinite value reads as "never", not NaN."""
    vals = np.array([np.inf if v is None else float(v) for v in values], dtype=float)
    if not vals.size:
        return None
    method = "linear" if np.all(np.isfinite(vals)) else "inverted_cdf"
    lo, med, hi = np.quantile(vals, [0.05, 0.5, 0.95], method=method)
    return Band(float(med), float(lo), float(hi), int(vals.size),
                int(sum(v is None for v in values)))


def band(results: Sequence[Mapping[str, Sequence[Any]]]
         ) -> dict[str, list[tuple[int, dict[str, Band]]]]:
    """Per algorithm title, per sweep point: a :class:`Band` of every headline metric that
    the points carry (time to target only with a convergence profile)."""
    out: dict[str, list[tuple[int, dict[str, Band]]]] = {}
    first = results[0]
    for title, pts in first.items():
        rows = []
        for i, p in enumerate(pts):
            bands = {}
            for key, _what in HEADLINE:
                vals = [r[title][i].__dict__.get(key) for r in results]
                if all(v is None for v in vals) and key != "time_to_target":
                    continue
                if key == "time_to_target" and all(v is None and not r[title][i].tta_note
                                                   for v, r in zip(vals, results)):
                    continue
                b = quantiles(vals)
                if b is not None:
                    bands[key] = b
            rows.append((p.workers, bands))
        out[title] = rows
    return out
