"""Global sensitivity: which uncertain input moves which metric, with SALib.

Why global indices and not one-at-a-time swings: the inputs interact (a longer exchange
period tau hides a slower all-reduce; a larger batch hides both), so the swing of one input
depends on where the others stand.  Sobol indices (Sobol' 2001; estimators of Saltelli et al.
2010 and Jansen 1999, as SALib implements them) split the variance of a metric over the whole
input space: S1 is the share an input explains alone, ST the share it takes part in, its
interactions included.  Morris screening (Morris 1991; mu* of Campolongo et al. 2007) ranks
inputs with far fewer runs - r (d + 1) instead of N (d + 2) - when Sobol is too expensive.

The design lives in the unit cube (SALib samples [0, 1]^d) and each coordinate becomes an
input value by its inverse CDF (:func:`.sampling.to_value`), so non-uniform and discrete
inputs (a choice of all-reduce algorithm) are handled alike; a calibration profile's
correlated block is one SALib *group* (its parameters move together, and the indices are the
group's).  Why SALib: its estimators, bootstrap confidence intervals and Saltelli/Sobol
designs are reviewed and tested; writing them again would be a source of subtle bias.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from clustersim.errors import InputError
from clustersim.uncertainty.bands import quantiles
from clustersim.uncertainty.propagate import Inputs, Sample, evaluate, to_samples
from clustersim.uncertainty.sobol_check import sample_check

__all__ = ["METHODS", "design", "analyze", "run_sensitivity", "morris_quantiles", "band_rows"]

METHODS = ("sobol", "morris")
#: Morris grid levels (SALib's default; Saltelli et al. 2004 recommend 4 with r = 10..20)
LEVELS = 4


def _problem(inputs: Inputs) -> dict[str, Any]:
    names = [f.field for f in inputs.fields]
    groups = list(names)
    sources = [b.source for b in inputs.blocks]
    for b in inputs.blocks:
        names += [f"calibration:{p}" for p in b.parameters]
        # one SALib group per correlated block: blocks of one source (the ping-pong's
        # bandwidth, latency and overhead fits) are independent, so each is named by its
        # parameters - under one name SALib had merged them (QA 17)
        label = (b.source if sources.count(b.source) == 1
                 else f"{b.source}: {', '.join(p.rsplit('.', 1)[-1] for p in b.parameters)}")
        groups += [f"calibration ({label})"] * len(b.parameters)
    prob: dict[str, Any] = {"num_vars": len(names), "names": names,
                            "bounds": [[0.0, 1.0]] * len(names)}
    if inputs.blocks:
        prob["groups"] = groups
    return prob


def design(inputs: Inputs, n: int, method: str, seed: int) -> tuple[dict[str, Any], np.ndarray]:
    """(SALib problem, unit-cube design): Saltelli/Sobol with ``n`` base points (n (k + 2)
    rows, k inputs or groups; n should be a power of two) or ``n`` Morris trajectories."""
    if inputs.dims == 0:
        raise InputError("nothing is uncertain: the scenario has no 'uncertain:' section "
                         "(docs/uncertainty.md)", path=("uncertain",))
    prob = _problem(inputs)
    try:
        import SALib  # noqa: F401
    except ImportError:
        raise InputError("clustersim sensitivity needs SALib: pip install "
                         "'clustersim[uncertainty]'") from None
    if method == "sobol":
        if n < 2 or n & (n - 1):
            raise InputError(f"-n {n}: Sobol's base samples must be a power of two (2, 4, 8, "
                             f"16, ...; the design is balanced only then), e.g. "
                             f"{1 << max(1, (n - 1).bit_length())}; Morris takes any count")
        from SALib.sample import sobol

        x = sobol.sample(prob, n, calc_second_order=False, scramble=True, seed=seed)
    elif method == "morris":
        from SALib.sample import morris

        x = morris.sample(prob, n, num_levels=LEVELS, seed=seed)
    else:
        from clustersim.errors import unknown_name

        raise unknown_name("method", method, METHODS, path=("--method",))
    return prob, np.asarray(x, dtype=float)


def analyze(prob: Mapping[str, Any], x: np.ndarray, y: np.ndarray, method: str,
            seed: int) -> dict[str, list[float]]:
    """Indices of one metric ``y`` (one value per design row), with 95 % bootstrap intervals.

    A metric that does not vary at all has every index 0 (SALib would divide by a zero
    variance); ``rank_by`` is what orders the inputs (ST or mu*)."""
    names = list(dict.fromkeys(prob.get("groups") or prob["names"]))
    k = len(names)
    if not np.all(np.isfinite(y)):
        raise ValueError("the metric is not finite in every run")
    flat = float(np.ptp(y)) <= 1e-12 * max(1.0, float(np.max(np.abs(y))))
    if method == "sobol":
        if flat:
            z = [0.0] * k
            return {"names": names, "S1": z, "S1_conf": z, "ST": z, "ST_conf": z, "rank_by": z}
        from SALib.analyze import sobol

        # a Generator, not the int: SALib seeds its bootstrap only ``if seed:``, so run.seed
        # 0 (most scenarios') left the confidence intervals to chance, run to run
        r = sobol.analyze(dict(prob), y, calc_second_order=False, num_resamples=200,
                          conf_level=0.95, print_to_console=False,
                          seed=np.random.default_rng(seed))
        out = {key: [float(v) for v in r[key]] for key in ("S1", "S1_conf", "ST", "ST_conf")}
        return {"names": names, **out, "rank_by": out["ST"]}
    if flat:
        z = [0.0] * k
        return {"names": names, "mu_star": z, "mu_star_conf": z, "sigma": z, "mu": z,
                "rank_by": z}
    from SALib.analyze import morris

    r = morris.analyze(dict(prob), x, y, num_resamples=200, conf_level=0.95,
                       print_to_console=False, num_levels=LEVELS, seed=seed)
    # per unit of probability: the inputs moved (p - 1) / p of SALib's step, the grid being
    # evaluated at the bins' medians (morris_quantiles); mu* of y = 3 u, u ~ U(0, 1), is 3
    per = LEVELS / (LEVELS - 1)
    out = {key: [float(v) * per for v in np.asarray(r[key], dtype=float)]
           for key in ("mu_star", "mu_star_conf", "sigma", "mu")}
    return {"names": [str(v) for v in r["names"]], **out, "rank_by": out["mu_star"]}


def band_rows(prob: Mapping[str, Any], method: str, rows: int) -> list[int]:
    """The design rows the printed band is taken from: Saltelli's ``A`` and ``B`` rows (the
    first and last of each base point's ``k + 2``: ``2 n`` independent draws), every row of
    a Morris design (its grid is the inputs' distribution at ``LEVELS`` quantiles).

    Why not every Saltelli row: each ``AB_j`` row repeats the ``A`` row's values of every
    group but ``j``, so one extreme draw of a group fills ``k`` of the ``k + 2`` rows and
    the band of all rows weights it so (QA 17: 56.8 [45.5, 87.3] ms where ``predict
    --uncertainty 64`` gave 56.35 [46.42, 76.42] on the same inputs)."""
    if method != "sobol":
        return list(range(rows))
    k = len(dict.fromkeys(prob.get("groups") or prob["names"]))
    step = k + 2
    return sorted([*range(0, rows, step), *range(step - 1, rows, step)])


def morris_quantiles(x: np.ndarray) -> np.ndarray:
    """Morris's grid levels ``0, 1/(p-1), ..., 1`` as the probabilities ``(k + 1/2) / p`` -
    the medians of ``p`` equally likely bins - before the inverse CDF turns them into values.

    Why: the levels 0 and 1 are the distribution's ends, infinite for a normal or lognormal
    input without a clip (refused as "-inf"), and a clip's bounds otherwise, far out in the
    tails (5.5 standard deviations for the AlexNet scenario's efficiency), so that mu* measured
    improbable extremes.  The bins' medians keep the grid evenly spaced in probability (a
    Morris step stays one move of a fixed share of the input's probability), which is the
    quantile treatment of non-uniform inputs (Saltelli et al., *Sensitivity Analysis in
    Practice*, 2004, ch. 4).  :func:`analyze` scales SALib's effects by ``p / (p - 1)`` so
    that they stay per unit of probability (mu* of ``3 u`` is 3 for a uniform ``u``)."""
    p = LEVELS
    return (np.rint(x * (p - 1)) + 0.5) / p


def run_sensitivity(inputs: Inputs, n: int, method: str, seed: int,
                    model: Callable[[Sample], Mapping[str, float | None]],
                    what: Mapping[str, str], jobs: int = 1,
                    advance: Callable[[int], Any] = lambda k=1: None,
                    build: Callable[[Sample], Any] | None = None) -> dict[str, Any]:
    """Indices of every metric ``model`` returns, over ``n`` base points (or trajectories).

    ``model(build(sample))`` gives ``{metric: value}``; a metric that is None in some run
    (a target never reached) is left out with a note - a Sobol index of "infinity" means
    nothing.  ``what`` names the metrics for people."""
    prob, x = design(inputs, n, method, seed)
    samples = to_samples(inputs, morris_quantiles(x) if method == "morris" else x)
    make = build or (lambda s: s)
    ys: Sequence[Mapping[str, float | None]] = evaluate(
        lambda i: make(samples[i]), len(samples), jobs, advance, run=model)
    metrics: dict[str, Any] = {}
    skipped = []
    for key in ys[0]:
        vals = [y.get(key) for y in ys]
        if any(v is None for v in vals):
            skipped.append(key)
            continue
        y = np.array(vals, dtype=float)
        b = quantiles([vals[j] for j in band_rows(prob, method, len(vals))])
        assert b is not None
        idx = analyze(prob, x, y, method, seed)
        metrics[key] = {"what": what.get(key, key), **idx,
                        "band": {"median": b.median, "p05": b.low, "p95": b.high}}
        if method == "sobol":  # None, or why the estimates are noise and what -n resolves them
            metrics[key]["too_few_samples"] = sample_check(idx, n)
    return {"method": method, "base_samples": n, "evaluations": len(samples), "seed": seed,
            "metrics": metrics,
            "skipped": [f"{what.get(k, k)}: not reached in every run" for k in skipped]}
