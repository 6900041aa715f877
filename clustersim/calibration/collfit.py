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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from clustersim.calibration.fit import FitResult, robust_fit
from clustersim.collectives import build_schedule
from clustersim.network.fidelity import cost_collective
from clustersim.network.params import NetworkParams
from clustersim.platform.model import Platform
from clustersim.sim.engine import DEFAULT_ALGORITHMS

__all__ = ["CollectiveFit", "model_algorithm", "collective_times", "fit_step_overhead",
           "fit_collectives", "with_collective", "DUPLEX_MODES", "EFFICIENCY_BOUNDS"]


#: a collective efficiency outside this range means the point-to-point model does not describe
#: how the runtime moves that segment's data (e.g. MPI's shared-memory collectives for small
#: messages); the fit stops at the bound and says so
EFFICIENCY_BOUNDS = (0.01, 100.0)

#: how the duplex mode of the measured link class is set (see :func:`fit_collectives`)
DUPLEX_MODES = ("keep", "auto", "full", "half")


def model_algorithm(op: str, algorithm: str) -> str:
    """The schedule the simulator uses for a measured ``(op, algorithm)``."""
    if algorithm == "mpi":
        return DEFAULT_ALGORITHMS.get(op, "ring")
    return algorithm


@dataclass
class CollectiveFit:
    step_overhead: float
    #: fitted collective efficiency per protocol segment of the link class (index), or for
    #: every message (key ``None``) when the class has no protocol table
    collective_efficiency: dict[int | None, float]
    fit: FitResult | None
    #: per row: (op, algorithm, ranks, size, measured, predicted with the fitted values)
    table: list[tuple[str, str, int, float, float, float]] = field(default_factory=list)
    #: the link class's duplex mode chosen by :func:`fit_collectives` (None: not examined)
    duplex: bool | None = None
    #: robust cost of each duplex mode tried
    costs: dict[bool, float] = field(default_factory=dict)

    def apply(self, params: NetworkParams, link_class: str | None) -> NetworkParams:
        """``params`` with the fitted step overhead and collective efficiencies."""
        return with_collective(params, link_class, self.collective_efficiency,
                               self.step_overhead)


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


def _slots(params: NetworkParams, link_class: str | None) -> list[int | None]:
    table = params.table(link_class) if link_class is not None else None
    if table is None or link_class not in dict(params.protocols):
        return [None]
    return list(range(len(table)))


def fit_step_overhead(rows: Sequence[Mapping[str, Any]], platform: Platform,
                      placement: Sequence[int], params: NetworkParams,
                      link_class: str | None = None, *, loss: str = "soft_l1",
                      f_scale: float = 0.05) -> CollectiveFit:
    """Fit ``step_overhead`` and the collective efficiency of every protocol segment of
    ``link_class`` that the rows' transfers fall in (module docs).  A segment whose
    rate-dependent part is under 10 % of every row's time keeps its value; without rows the
    current values come back unfitted."""
    rows = [r for r in rows if r.get("op") != "barrier"]
    slots = _slots(params, link_class)
    current = {k: (params.collective_efficiency if k is None
                   else params.table(link_class)[k].collective_efficiency) for k in slots}
    if not rows:
        return CollectiveFit(params.step_overhead, current, None)
    base = with_collective(params, link_class, {k: 1.0 for k in slots}, 0.0)
    t1 = collective_times(rows, platform, placement, base)
    rates = []
    for k in slots:
        half = with_collective(base, link_class, {k: 0.5})
        rates.append(np.maximum(collective_times(rows, platform, placement, half) - t1, 0.0))
    rate = np.array(rates)  # (slots, rows)
    fixed = t1 - rate.sum(axis=0)
    steps = []
    for r in rows:
        sched, devs = _schedule(r, platform, placement)
        steps.append(sum(st.repeat for st in sched.steps
                         if any(platform.route(devs[t.src], devs[t.dst])
                                for t in st.transfers)))
    steps_a = np.array(steps, dtype=float)
    measured = np.array([float(r["time"]) for r in rows])
    free = [i for i, _ in enumerate(slots) if np.any(rate[i] >= 0.1 * measured)]
    fixed = fixed + sum(rate[i] for i in range(len(slots)) if i not in free)
    scale_o = max(float(measured.min()) * 0.1, 1e-9)
    names = ["step_overhead", *[f"collective_efficiency[{slots[i]}]" for i in free]]

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
    effs = {k: 1.0 for k in slots}
    for j, i in enumerate(free):
        effs[slots[i]] = float(fit.values[1 + j])
    cf = CollectiveFit(float(fit.values[0]), effs, fit)
    pred = collective_times(rows, platform, placement, cf.apply(params, link_class))
    cf.table = [(str(r["op"]), str(r["algorithm"]), int(r["ranks"]), float(r["size"]),
                 float(m), float(p)) for r, m, p in zip(rows, measured, pred)]
    return cf


def fit_collectives(rows: Sequence[Mapping[str, Any]], platform: Platform,
                    placement: Sequence[int], params: NetworkParams, link_class: str | None,
                    *, duplex: str = "keep", loss: str = "soft_l1",
                    f_scale: float = 0.05) -> tuple[CollectiveFit, Platform]:
    """:func:`fit_step_overhead` on the platform with the link class's duplex mode
    ``duplex``: ``keep`` (as the platform says), ``full``, ``half``, or ``auto``.

    ``auto`` fits both modes and keeps the one with the lower robust cost.  Ping-pong
    cannot tell them apart (one message in flight at a time); a collective's steps send both
    ways at once, and a memory-copy transport shares one memory system between the two
    directions where a NIC does not.  On two ranks the choice is largely confounded with
    ``collective_efficiency`` (both scale the rate of a two-way step), which is why ``keep``
    is the default.  The platform returned carries the mode used.
    """
    from clustersim.calibration.retune import retune_platform

    if duplex not in DUPLEX_MODES:
        raise ValueError(f"duplex must be one of {', '.join(DUPLEX_MODES)}, not {duplex!r}")
    if link_class is None or not rows or duplex == "keep":
        return fit_step_overhead(rows, platform, placement, params, link_class, loss=loss,
                                 f_scale=f_scale), platform
    modes = {"auto": (True, False), "full": (True,), "half": (False,)}[duplex]
    best: tuple[CollectiveFit, Platform] | None = None
    costs: dict[bool, float] = {}
    for mode in modes:
        plat = retune_platform(platform, links={link_class: {"duplex": mode}})
        cf = fit_step_overhead(rows, plat, placement, params, link_class, loss=loss,
                               f_scale=f_scale)
        costs[mode] = cf.fit.cost if cf.fit is not None else 0.0
        cf.duplex = mode
        if best is None or costs[mode] < costs[bool(best[0].duplex)]:
            best = (cf, plat)
    assert best is not None
    best[0].costs = costs
    return best
