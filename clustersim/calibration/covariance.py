"""The covariance of a profile's fitted parameters: written by ``calibrate``, read as
uncertainty by ``predict --uncertainty``.

The fit (:mod:`.fit`) already estimates the covariance of what it fits (``s^2 (J^T J)^-1``),
but a profile does not hold what was fitted - it holds what the model uses: a GEMM *rate*
becomes an *efficiency* (rate / peak), a ping-pong *beta* becomes a link *bandwidth* (1 /
beta).  Each block below carries the covariance through those formulas to first order (the
delta method, ``J C J^T`` with ``J`` the Jacobian of the formulas), so that the profile's
own numbers can be sampled together with their correlations: the rates of one GEMM fit
share its overhead and are correlated, sampling them independently would overstate the
spread of a whole step.

Profile format::

    covariance:
      - from: gemm+memory
        parameters: [devices.cpu.efficiency_by_class.conv, devices.cpu.overhead]
        value: [0.58, 4.2e-06]
        matrix: [[1.1e-04, -2.0e-10], [-2.0e-10, 3.1e-13]]

Names are paths into the profile (``devices.NAME.FIELD``, ``devices.NAME.efficiency_by_class
.CLASS``, ``links.CLASS.bandwidth|latency``, ``network.step_overhead``, ``network.
collective_efficiency``, ``network.protocols.CLASS.K.overhead|efficiency|
collective_efficiency`` for segment K of a link class's protocol table), values SI.

Only what the measurements determined, away from a physical limit, gets a covariance: a fit
whose standard error exceeds its value, or that sits on the optimiser's bound (a collective
efficiency of 100 with a 95 % interval of +-187,000), or on a physical limit, is left out -
by the rule ``calibrate``'s report names them with
(:func:`clustersim.calibration.fitlines.undetermined`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CovBlock", "calibration_blocks", "dump_covariance", "resolve", "with_values",
           "without"]


@dataclass(frozen=True)
class CovBlock:
    """Correlated profile parameters: names, values (the profile's) and covariance (SI)."""

    parameters: tuple[str, ...]
    value: tuple[float, ...]
    matrix: tuple[tuple[float, ...], ...]
    source: str = ""


def _block(names: Sequence[str], values: Sequence[float], jac: np.ndarray, cov: np.ndarray,
           source: str) -> CovBlock | None:
    """``J cov J^T`` as a block, or None when the fit left no interval (NaN)."""
    if not names or not np.all(np.isfinite(cov)):
        return None
    c = jac @ cov @ jac.T
    c = (c + c.T) / 2.0
    return CovBlock(tuple(names), tuple(float(v) for v in values),
                    tuple(tuple(float(x) for x in row) for row in c), source)


def _compute_block(cf: Any, device: str) -> CovBlock | None:
    f = cf.fit
    if f is None:
        return None
    pre = f"devices.{device}"
    names, values, rows = [], [], []

    def add(name: str, value: float, fit_name: str, d: float) -> None:
        row = np.zeros(len(f.names))
        row[f.names.index(fit_name)] = d
        names.append(name)
        values.append(value)
        rows.append(row)

    for cls in ("conv", "fc", "fc_wgrad"):
        if cls in cf.inherited or cls not in cf.rates or f"rate_{cls}" not in f.names:
            continue
        add(f"{pre}.efficiency_by_class.{cls}", min(cf.efficiency[cls], 1.0), f"rate_{cls}",
            1.0 / cf.peak)
    if "mem" in f.names:
        add(f"{pre}.mem_efficiency", min(cf.mem_efficiency, 1.0), "mem", 1.0 / cf.mem_bw)
    if "pack" in f.names and cf.pack_rate is not None:
        pack = f["pack"]  # seconds per byte; the profile holds its inverse
        add(f"{pre}.pack_rate", cf.pack_rate, "pack", -1.0 / pack ** 2 if pack > 0 else 0.0)
    if "overhead" in f.names:
        add(f"{pre}.overhead", cf.overhead, "overhead", 1.0)
    if not rows:
        return None
    return _block(names, values, np.array(rows), np.asarray(f.cov, dtype=float),
                  "gemm+memory")


def _one(name: str, value: float, fit: Any, fit_name: str, d: float, source: str
         ) -> CovBlock | None:
    i = fit.names.index(fit_name)
    var = np.asarray(fit.cov, dtype=float)[i:i + 1, i:i + 1]
    return _block([name], [value], np.array([[d]]), var, source)


def _collective_block(cfit: Any, cls: str | None, prof: Any) -> CovBlock | None:
    """Step overhead and the collective efficiencies of one fit, together (they
    share the fit: their errors are correlated).  Why these matter: on a communication-
    bound run the collective efficiency of the segment its all-reduce falls in sets most of
    the step, and with only the step overhead in the covariance the band of a refitted H200
    run was +-2 % around a parameter known to +-37 %."""
    f = cfit.fit
    if f is None or "step_overhead" not in prof.network:
        return None
    cov = np.asarray(f.cov, dtype=float)
    names, values, cols = ["network.step_overhead"], [cfit.step_overhead], [0]
    table = prof.protocols.get(cls) if cls is not None else None
    for i, fname in enumerate(f.names):
        if not fname.startswith("collective_efficiency["):
            continue
        key = fname[len("collective_efficiency["):-1]
        value = float(f.values[i])
        if key == "None":
            if not math.isclose(prof.network.get("collective_efficiency", math.nan), value,
                                rel_tol=1e-9):
                continue
            name = "network.collective_efficiency"
        else:
            k = int(key)
            if table is None or k >= len(table) or not math.isclose(
                    table[k].collective_efficiency, value, rel_tol=1e-9):
                continue  # not the profile's table (never written so): not sampled
            name = f"network.protocols.{cls}.{k}.collective_efficiency"
        names.append(name)
        values.append(value)
        cols.append(i)
    jac = np.zeros((len(cols), len(f.names)))
    for r, c in enumerate(cols):
        jac[r, c] = 1.0
    return _block(names, values, jac, cov, "collective")


def _segment_blocks(cal: Any, cls: str) -> list[CovBlock | None]:
    """Each ping-pong segment's protocol overhead and efficiency (delta method from its
    alpha-beta fit: overhead = alpha - hops x latency, efficiency = 1 / (beta x bandwidth)),
    one block per segment.  Left out, as carried elsewhere or not determined: the overhead
    of the segment that defines the hop latency and the efficiency of the one that defines
    the bandwidth (both are the link's, in ``links.CLASS``), a bandwidth term the segment's
    sizes do not show (what the measurements did not determine goes at the end of
    :func:`calibration_blocks`)."""
    lm, prof = cal.link, cal.profile
    table = prof.protocols.get(cls) or ()
    out: list[CovBlock | None] = []
    for p in cal.pingpong.pieces:
        k = next((j for j, seg in enumerate(table) if seg.start == p.start), None)
        if k is None or p.fit is None or "alpha" not in p.fit.names:
            continue
        seg = table[k]
        cov = np.asarray(p.fit.cov, dtype=float)
        ia, ib = p.fit.names.index("alpha"), p.fit.names.index("beta")
        names, values, rows = [], [], []
        if seg.overhead > 0:  # (0: alpha below the hop latency, clipped: no derivative)
            row = np.zeros(len(p.fit.names))
            row[ia] = 1.0
            names.append(f"network.protocols.{cls}.{k}.overhead")
            values.append(seg.overhead)
            rows.append(row)
        d_eff = -1.0 / (p.beta ** 2 * lm.bandwidth) if p.beta > 0 else 0.0
        if p.beta > 0 and p.visible and not math.isclose(seg.efficiency, 1.0, rel_tol=1e-9):
            row = np.zeros(len(p.fit.names))
            row[ib] = d_eff
            names.append(f"network.protocols.{cls}.{k}.efficiency")
            values.append(seg.efficiency)
            rows.append(row)
        if rows:
            out.append(_block(names, values, np.array(rows), cov, "pingpong"))
    return out


def calibration_blocks(cal: Any) -> list[CovBlock]:
    """The covariance blocks of a :class:`~.pipeline.Calibration` (what its fits can tell)."""
    out: list[CovBlock | None] = []
    target, prof = cal.target, cal.profile
    if cal.compute is not None:
        out.append(_compute_block(cal.compute, target.device))
        rf = cal.compute.reduce_fit
        if rf is not None and cal.compute.reduce_rate is not None:
            out.append(_one(f"devices.{target.device}.reduce_rate", cal.compute.reduce_rate,
                            rf, "rate", 1.0, "reduce"))
    if cal.pingpong is not None and cal.link is not None and target.link in prof.links:
        lm, cls = cal.link, target.link
        fast = max((p for p in cal.pingpong.pieces if p.beta > 0), key=lambda p: 1 / p.beta,
                   default=None)
        if fast is not None and np.isclose(1 / fast.beta, lm.bandwidth, rtol=1e-12):
            out.append(_one(f"links.{cls}.bandwidth", lm.bandwidth, fast.fit, "beta",
                            -1.0 / fast.beta ** 2, "pingpong"))
        lat = min(cal.pingpong.pieces, key=lambda p: abs(p.alpha - lm.hops * lm.latency))
        if lm.hops > 0:
            out.append(_one(f"links.{cls}.latency", lm.latency, lat.fit, "alpha",
                            1.0 / lm.hops, "pingpong"))
    if cal.pingpong is not None and cal.link is not None and target.link in prof.protocols:
        out += _segment_blocks(cal, target.link)
    if cal.collective is not None:
        out.append(_collective_block(cal.collective, target.link, prof))
    from clustersim.calibration.fitlines import covariance_name, undetermined

    # what the report calls undetermined is not sampled either (one rule for both)
    loose = {covariance_name(ln.parameter, target.device)
             for ln in undetermined(getattr(cal, "lines", ()))}
    return [b for b in (without(b, loose) for b in out if b is not None) if b is not None]


def without(block: CovBlock, names: set[str]) -> CovBlock | None:
    """``block`` without ``names`` (their rows and columns: the marginal of the rest)."""
    keep = [i for i, n in enumerate(block.parameters) if n not in names]
    if len(keep) == len(block.parameters):
        return block
    if not keep:
        return None
    return CovBlock(tuple(block.parameters[i] for i in keep),
                    tuple(block.value[i] for i in keep),
                    tuple(tuple(block.matrix[i][j] for j in keep) for i in keep), block.source)


def dump_covariance(blocks: Sequence[CovBlock]) -> list[dict[str, Any]]:
    """The blocks as YAML-ready data (6 significant digits: same profile, same bytes)."""
    def g(x: float) -> float:
        return float(f"{x:.6g}")

    return [{"from": b.source, "parameters": list(b.parameters),
             "value": [g(v) for v in b.value],
             "matrix": [[g(x) for x in row] for row in b.matrix]} for b in blocks]


class _SegmentSlot:
    """Segment ``k`` of a profile's protocol table for class ``cls`` as a mapping of its
    fields, so that :func:`resolve` can hand out ``(holder, key)`` for it as for a dict
    (segments are frozen: setting one replaces it in the profile's table)."""

    def __init__(self, prof: Any, cls: str, k: int) -> None:
        self.prof, self.cls, self.k = prof, cls, k

    def __getitem__(self, key: str) -> float:
        return float(getattr(self.prof.protocols[self.cls][self.k], key))

    def __setitem__(self, key: str, value: float) -> None:
        from dataclasses import replace

        table = list(self.prof.protocols[self.cls])
        table[self.k] = replace(table[self.k], **{key: float(value)})
        self.prof.protocols[self.cls] = tuple(table)


_SEGMENT_FIELDS = ("overhead", "efficiency", "collective_efficiency")


def resolve(prof: Any, name: str) -> tuple[Any, str] | None:
    """(what holds the parameter ``name`` in ``prof`` - a dict, or a protocol segment's
    :class:`_SegmentSlot` - and its key), or None."""
    parts = name.split(".")
    if len(parts) < 2:
        return None
    if parts[0] == "network" and len(parts) == 2:
        return (prof.network, parts[1]) if parts[1] in prof.network else None
    if parts[0] == "network" and parts[1] == "protocols" and len(parts) >= 5:
        cls, k, fld = ".".join(parts[2:-2]), parts[-2], parts[-1]
        table = prof.protocols.get(cls)
        if table is None or not k.isdigit() or int(k) >= len(table) or \
                fld not in _SEGMENT_FIELDS:
            return None
        return _SegmentSlot(prof, cls, int(k)), fld
    if parts[0] not in ("devices", "links") or len(parts) < 3:
        return None
    table = prof.devices if parts[0] == "devices" else prof.links
    if parts[0] == "devices" and len(parts) >= 4 and parts[-2] == "efficiency_by_class":
        entry = table.get(".".join(parts[1:-2]))
        sub = entry.get("efficiency_by_class") if isinstance(entry, dict) else None
        return (sub, parts[-1]) if isinstance(sub, dict) and parts[-1] in sub else None
    entry = table.get(".".join(parts[1:-1]))
    return (entry, parts[-1]) if isinstance(entry, dict) and parts[-1] in entry else None


def segment_collectives(prof: Any) -> dict[str, float]:
    """Every protocol segment's fitted collective efficiency by its parameter name - those
    the covariance samples and those it holds (undetermined, or on the fitter's bound).  A
    segment without one (1.0, which a profile does not write) had no collective fit."""
    return {f"network.protocols.{cls}.{k}.collective_efficiency": float(seg.collective_efficiency)
            for cls, table in (getattr(prof, "protocols", None) or {}).items()
            for k, seg in enumerate(table) if seg.collective_efficiency != 1.0}


def with_values(prof: Any, values: Mapping[str, float]) -> Any:
    """A copy of the profile with the named parameters set (sampled values)."""
    new = copy.deepcopy(prof)
    for name, v in values.items():
        where = resolve(new, name)
        if where is None:
            raise KeyError(name)
        where[0][where[1]] = float(v)
    return new
