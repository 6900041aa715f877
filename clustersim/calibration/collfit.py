"""Collective overheads, fitted against the simulator's own schedules.

Ping-pong fixes what one lone message costs; a collective adds what its runtime does around
its messages.  An alpha-beta correction on top of point-to-point:

* ``NetworkParams.step_overhead`` - software cost per step (posting the step's sends and
  receives, waiting for them, bookkeeping), which a Python schedule executor pays far more
  of than MPI's C code;
* a collective efficiency per protocol segment of the link class (``Segment.
  collective_efficiency``; ``NetworkParams.collective_efficiency`` without a table) - the
  rate a collective's transfers reach relative to lone messages of the same size: eager
  messages overlap freely, large shared-memory copies in both directions of a step compete
  for one memory system, a library may stage through extra copies.

For each measured collective the simulator's cost of the *same* schedule is computed - on the
platform and network already calibrated from ping-pong and the reduction benchmark, at the
fidelity the simulator would choose - once as is and once per segment with that segment's
transfers at half rate, which splits it into a part that does not scale with the transfer
rate and one part per segment that does (exact when a step's slowest transfer stays the
slowest).  One robust fit then finds

    measured ~ fixed + sum_k rate_part_k / efficiency_k + (data-moving steps) x step_overhead

A row measured with the MPI library (``algorithm: mpi``) is modelled with the schedule the
simulator uses for a collective that names no algorithm (:data:`clustersim.sim.engine.
DEFAULT_ALGORITHMS`): that is how predictions of library runs are made, so that is what the
corrections must correct.  The table of a fit is recomputed with the full model.

Breakpoints of the collective fit's own, chosen by BIC, and the choice of duplex mode are in
:mod:`.collsplits` (``fit_collective_splits``, ``fit_collectives``).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from clustersim.calibration.fit import FitResult, robust_fit
from clustersim.collectives import build_schedule
from clustersim.network.fidelity import cost_collective
from clustersim.network.params import NetworkParams, Segment, bottleneck_class
from clustersim.platform.model import Platform
from clustersim.sim.engine import DEFAULT_ALGORITHMS

__all__ = ["CollectiveFit", "model_algorithm", "collective_times", "fit_step_overhead",
           "with_collective", "with_splits", "split_table", "message_sizes", "bic",
           "EFFICIENCY_BOUNDS", "at_efficiency_bound"]


#: a collective efficiency outside this range means the point-to-point model does not describe
#: how the runtime moves that segment's data (e.g. MPI's shared-memory collectives for small
#: messages); the fit stops at the bound and says so
EFFICIENCY_BOUNDS = (0.01, 100.0)


def at_efficiency_bound(value: float) -> float | None:
    """The bound of :data:`EFFICIENCY_BOUNDS` a fitted efficiency stopped at (within 0.1 %:
    the optimiser rests just inside it, 99.9996), else None.  One rule for the fit's note
    and the report's "not determined" reason, which had used 0.1 % and 1e-6 (audit C M3)."""
    for b in EFFICIENCY_BOUNDS:
        if abs(value - b) <= 1e-3 * b:
            return b
    return None

#: a segment's efficiency is fitted (and a row determines it) when its rate-dependent part
#: is at least this share of the row's measured time
_SHARE = 0.1
#: floor of the mean squared relative residual in the BIC (exact synthetic data has R ~ 0);
#: the same floor as the ping-pong segmentation's
_R_FLOOR = 1e-12


def model_algorithm(op: str, algorithm: str) -> str:
    """The schedule the simulator uses for a measured ``(op, algorithm)``."""
    if algorithm == "mpi":
        return DEFAULT_ALGORITHMS.get(op, "ring")
    return algorithm


@dataclass
class CollectiveFit:
    """What a collective fit found: ``step_overhead`` (seconds per data-moving step) and the
    collective efficiencies, for :meth:`apply` to put into a ``NetworkParams``; ``fit`` is None
    when there was nothing to fit (the current values came back unchanged)."""

    step_overhead: float
    #: fitted collective efficiency per protocol segment of the link class (index into the
    #: table *with* :attr:`splits` inserted), or for every message (key ``None``) when the
    #: class has no protocol table
    collective_efficiency: dict[int | None, float]
    fit: FitResult | None
    #: per row: (op, algorithm, ranks, size, measured, predicted with the fitted values)
    table: list[tuple[str, str, int, float, float, float]] = field(default_factory=list)
    #: the link class's duplex mode chosen by :func:`.collsplits.fit_collectives` (None: not
    #: examined)
    duplex: bool | None = None
    #: robust cost of each duplex mode tried
    costs: dict[bool, float] = field(default_factory=dict)
    #: starts (message bytes) of the segments the collective fit inserted into the link
    #: class's protocol table (:func:`.collsplits.fit_collective_splits`), ascending
    splits: tuple[float, ...] = ()
    #: BIC of the best fit with 0, 1, ... splits, in the order they were tried (the last
    #: one tried is not kept when it did not lower the criterion)
    criterion: list[float] = field(default_factory=list)

    @property
    def bic(self) -> float:
        """BIC of the kept fit (NaN when nothing was fitted)."""
        return self.criterion[len(self.splits)] if self.criterion else math.nan

    def apply(self, params: NetworkParams, link_class: str | None) -> NetworkParams:
        """``params`` with the splits inserted, the fitted step overhead and collective
        efficiencies."""
        return with_collective(with_splits(params, link_class, self.splits), link_class,
                               self.collective_efficiency, self.step_overhead)


def with_collective(params: NetworkParams, link_class: str | None,
                    efficiencies: Mapping[int | None, float],
                    step_overhead: float | None = None) -> NetworkParams:
    """``params`` with collective efficiencies set per segment of ``link_class``'s protocol
    table (integer keys) and/or globally (key ``None``)."""
    protos = dict(params.protocols)
    if link_class is not None and link_class in protos:
        protos[link_class] = tuple(
            replace(seg, collective_efficiency=efficiencies.get(k, seg.collective_efficiency))
            for k, seg in enumerate(protos[link_class]))
    return replace(params, protocols=tuple(protos.items()),
                   collective_efficiency=efficiencies.get(None, params.collective_efficiency),
                   step_overhead=(params.step_overhead if step_overhead is None
                                  else step_overhead))


def split_table(table: Sequence[Segment], splits: Sequence[float]) -> tuple[Segment, ...]:
    """``table`` with a segment inserted at each size of ``splits``: a copy of the segment
    that contained that size (same overhead, efficiency and collective efficiency), so that
    every message costs what it cost before.  A split at an existing start, at 0 or below
    is an error."""
    out = sorted(table, key=lambda s: s.start)
    for c in sorted(float(x) for x in splits):
        starts = [s.start for s in out]
        if not (c > 0 and math.isfinite(c)) or c in starts:
            raise ValueError(f"cannot split a protocol table at {c:g} B (segment starts "
                             f"{', '.join(f'{s:g}' for s in starts)})")
        k = bisect.bisect_right(starts, c) - 1
        out.insert(k + 1, replace(out[k], start=c))
    return tuple(out)


def with_splits(params: NetworkParams, link_class: str | None,
                splits: Sequence[float]) -> NetworkParams:
    """``params`` with ``link_class``'s protocol table split at ``splits``
    (:func:`split_table`); unchanged without splits."""
    if not splits:
        return params
    protos = dict(params.protocols)
    if link_class is None or link_class not in protos:
        raise ValueError(f"link class {link_class!r} has no protocol table to split")
    protos[link_class] = split_table(protos[link_class], splits)
    return replace(params, protocols=tuple(protos.items()))


def _schedule(r: Mapping[str, Any], platform: Platform, placement: Sequence[int]):
    op, p, size = str(r["op"]), int(r["ranks"]), float(r["size"])
    if p > len(placement):
        raise ValueError(f"a {p}-rank collective needs {p} placed ranks, have {len(placement)}")
    devs = list(placement[:p])
    hosts = [platform.host(d) for d in devs]
    return build_schedule(op, model_algorithm(op, str(r["algorithm"])), p, size,
                          hosts=hosts), devs


def collective_times(rows: Sequence[Mapping[str, Any]], platform: Platform,
                     placement: Sequence[int], params: NetworkParams) -> np.ndarray:
    """The simulator's time of each row's collective under ``params``."""
    out = []
    for r in rows:
        sched, devs = _schedule(r, platform, placement)
        out.append(cost_collective(sched, platform, devs, params, fidelity="auto").time)
    return np.array(out, dtype=float)


def message_sizes(rows: Sequence[Mapping[str, Any]], platform: Platform,
                  placement: Sequence[int], link_class: str) -> list[tuple[float, ...]]:
    """Per row, the distinct sizes (bytes, ascending) of its schedule's transfers whose
    route's narrowest link is of ``link_class`` - the sizes that class's protocol table
    prices."""
    out = []
    for r in rows:
        sched, devs = _schedule(r, platform, placement)
        sizes = set()
        for st in sched.steps:
            for t in st.transfers:
                route = platform.route(devs[t.src], devs[t.dst])
                if route and bottleneck_class(route, platform.capacity,
                                              platform.link_kind) == link_class:
                    sizes.add(float(t.nbytes))
        out.append(tuple(sorted(sizes)))
    return out


class RateParts:
    """The rows' model times split into a rate-independent part, one rate part per range of
    message sizes of the link class's table, and the data-moving step counts (module docs).

    The time with every collective efficiency at 1 and no step overhead does not depend on
    where the table is split (a split copies its segment), so rate parts of any size range
    are computed against one baseline and cached: a split search costs two schedule
    costings per candidate."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], platform: Platform,
                 placement: Sequence[int], params: NetworkParams,
                 link_class: str | None) -> None:
        self.rows, self.platform, self.placement = rows, platform, placement
        self.link_class = link_class
        table = params.table(link_class) if link_class is not None else None
        self.has_table = table is not None and link_class in dict(params.protocols)
        keys: list[int | None] = [None]
        if self.has_table and table is not None:
            keys = list(range(len(table)))
        self.base = with_collective(params, link_class, {k: 1.0 for k in keys}, 0.0)
        self.t1 = collective_times(rows, platform, placement, self.base)
        self.measured = np.array([float(r["time"]) for r in rows])
        steps = []
        for r in rows:
            sched, devs = _schedule(r, platform, placement)
            steps.append(sum(st.repeat for st in sched.steps
                             if any(platform.route(devs[t.src], devs[t.dst])
                                    for t in st.transfers)))
        self.steps = np.array(steps, dtype=float)
        self._cache: dict[tuple[float, float] | None, np.ndarray] = {}

    def rate(self, lo: float | None, hi: float = math.inf) -> np.ndarray:
        """Rate part of messages of ``lo <= size < hi`` bytes (``lo`` None: the global
        collective efficiency, for a class without a table)."""
        key = None if lo is None else (float(lo), float(hi))
        if key not in self._cache:
            if key is None:
                half = with_collective(self.base, None, {None: 0.5})
            else:
                table = self.base.table(self.link_class)
                assert table is not None
                starts = {s.start for s in table}
                cuts = [c for c in key if 0 < c < math.inf and c not in starts]
                params = with_splits(self.base, self.link_class, cuts)
                new = params.table(self.link_class)
                assert new is not None
                half = with_collective(params, self.link_class, {
                    k: 0.5 for k, s in enumerate(new) if key[0] <= s.start < key[1]})
            t = collective_times(self.rows, self.platform, self.placement, half)
            self._cache[key] = np.maximum(t - self.t1, 0.0)
        return self._cache[key]

    def ranges(self, splits: Sequence[float]) -> list[tuple[float, float] | None]:
        """The size range of each segment of the table split at ``splits`` (``[None]``
        without a table)."""
        if not self.has_table:
            return [None]
        table = self.base.table(self.link_class)
        assert table is not None
        starts = sorted([s.start for s in table] + [float(c) for c in splits])
        return list(zip(starts, [*starts[1:], math.inf]))

    def determined(self, lo: float, hi: float) -> int:
        """How many rows the rate part of sizes ``[lo, hi)`` visibly shapes."""
        return int(np.count_nonzero(self.rate(lo, hi) >= _SHARE * self.measured))


def fit_parts(parts: RateParts, splits: Sequence[float], *, loss: str,
               f_scale: float) -> tuple[FitResult, float, dict[int | None, float]]:
    """Robust fit of step overhead and the free efficiencies of the table split at
    ``splits``: (fit, step overhead, efficiency per segment index)."""
    ranges = parts.ranges(splits)
    keys: list[int | None] = [None] if ranges == [None] else list(range(len(ranges)))
    rate = np.array([parts.rate(None) if rg is None else parts.rate(*rg) for rg in ranges])
    measured = parts.measured
    free = [i for i in range(len(keys)) if np.any(rate[i] >= _SHARE * measured)]
    fixed = parts.t1 - rate[free].sum(axis=0) if free else parts.t1.copy()
    steps_a = parts.steps
    scale_o = max(float(measured.min()) * 0.1, 1e-9)
    names = ["step_overhead", *[f"collective_efficiency[{keys[i]}]" for i in free]]

    def model(x: np.ndarray) -> np.ndarray:
        out = fixed + steps_a * x[0]
        for j, i in enumerate(free):
            out = out + rate[i] / x[1 + j]
        return out

    fit = robust_fit(model, measured, [scale_o] + [1.0] * len(free), names,
                     scale=[scale_o] + [1.0] * len(free),
                     lower=[0.0] + [EFFICIENCY_BOUNDS[0]] * len(free),
                     upper=[np.inf] + [EFFICIENCY_BOUNDS[1]] * len(free),
                     loss=loss, f_scale=f_scale)
    effs: dict[int | None, float] = {k: 1.0 for k in keys}
    for j, i in enumerate(free):
        effs[keys[i]] = float(fit.values[1 + j])
    return fit, float(fit.values[0]), effs


def finish_fit(rows: Sequence[Mapping[str, Any]], platform: Platform, placement: Sequence[int],
            params: NetworkParams, link_class: str | None, cf: CollectiveFit,
            measured: np.ndarray) -> CollectiveFit:
    """``cf`` with its ``table`` filled: each row's measured time beside the time the fitted
    values predict (seconds), recomputed with the full model (module docs)."""
    pred = collective_times(rows, platform, placement, cf.apply(params, link_class))
    cf.table = [(str(r["op"]), str(r["algorithm"]), int(r["ranks"]), float(r["size"]),
                 float(m), float(p)) for r, m, p in zip(rows, measured, pred)]
    return cf


def current_efficiencies(params: NetworkParams, link_class: str | None) -> dict[int | None, float]:
    """The collective efficiencies ``params`` holds now, keyed as :class:`CollectiveFit` keys
    them (segment index of ``link_class``'s table, or ``None`` without one): an unfitted result."""
    table = params.table(link_class) if link_class is not None else None
    if table is None or link_class not in dict(params.protocols):
        return {None: params.collective_efficiency}
    return {k: s.collective_efficiency for k, s in enumerate(table)}


def fit_step_overhead(rows: Sequence[Mapping[str, Any]], platform: Platform,
                      placement: Sequence[int], params: NetworkParams,
                      link_class: str | None = None, *, loss: str = "soft_l1",
                      f_scale: float = 0.05) -> CollectiveFit:
    """Fit ``step_overhead`` and the collective efficiency of every protocol segment of
    ``link_class`` that the rows' transfers fall in (module docs), without splitting any
    segment.  A segment whose rate-dependent part is under 10 % of every row's time is not
    fitted (efficiency 1); without rows the current values come back unfitted."""
    rows = [r for r in rows if r.get("op") != "barrier"]
    if not rows:
        return CollectiveFit(params.step_overhead, current_efficiencies(params, link_class), None)
    parts = RateParts(rows, platform, placement, params, link_class)
    fit, step, effs = fit_parts(parts, (), loss=loss, f_scale=f_scale)
    cf = CollectiveFit(step, effs, fit, criterion=[bic(fit, 0)])
    return finish_fit(rows, platform, placement, params, link_class, cf, parts.measured)


def bic(fit: FitResult, splits: int) -> float:
    """Schwarz criterion of a collective fit with ``splits`` inserted breakpoints (module
    docs): ``m ln(RSS/m) + p ln m`` on the relative residuals, ``p`` the fitted parameters
    plus one position per split."""
    m = fit.points
    r = max(float(np.sum(fit.residuals ** 2)) / m, _R_FLOOR)
    return m * math.log(r) + (len(fit.names) + splits) * math.log(m)
