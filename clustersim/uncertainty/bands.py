"""The bands of a propagation: median and 90 % interval of each headline metric over the
samples (split from :mod:`clustersim.uncertainty.propagate`, which draws and runs them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["HEADLINE", "Band", "quantiles", "band"]

#: the metrics reported with a band: (PointMetrics attribute, what it is)
HEADLINE = (("iteration_time", "iteration time (s)"), ("throughput", "samples/s"),
            ("speedup", "speedup"), ("efficiency", "scaling efficiency"),
            ("comm_share", "communication exposed"), ("time_to_target", "time to target (s)"),
            ("statistical_efficiency", "statistical efficiency"), ("goodput", "goodput"))


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
                if len(pts) < 2 and key in ("efficiency", "speedup"):
                    continue  # one worker count: 100 % and 1x by definition, no band
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
