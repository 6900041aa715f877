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
.CLASS``, ``links.CLASS.bandwidth|latency``, ``network.step_overhead``), values SI.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clustersim.errors import InputError

__all__ = ["CovBlock", "calibration_blocks", "parse_covariance", "dump_covariance",
           "resolve", "with_values"]


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
    cfit = cal.collective
    if cfit is not None and cfit.fit is not None and "step_overhead" in prof.network:
        out.append(_one("network.step_overhead", cfit.step_overhead, cfit.fit,
                        "step_overhead", 1.0, "collective"))
    return [b for b in out if b is not None]


def dump_covariance(blocks: Sequence[CovBlock]) -> list[dict[str, Any]]:
    """The blocks as YAML-ready data (6 significant digits: same profile, same bytes)."""
    def g(x: float) -> float:
        return float(f"{x:.6g}")

    return [{"from": b.source, "parameters": list(b.parameters),
             "value": [g(v) for v in b.value],
             "matrix": [[g(x) for x in row] for row in b.matrix]} for b in blocks]


def resolve(prof: Any, name: str) -> tuple[dict[str, Any], str] | None:
    """(the dict that holds the parameter ``name`` in ``prof``, its key), or None."""
    parts = name.split(".")
    if len(parts) < 2:
        return None
    if parts[0] == "network" and len(parts) == 2:
        return (prof.network, parts[1]) if parts[1] in prof.network else None
    if parts[0] not in ("devices", "links") or len(parts) < 3:
        return None
    table = prof.devices if parts[0] == "devices" else prof.links
    if parts[0] == "devices" and len(parts) >= 4 and parts[-2] == "efficiency_by_class":
        entry = table.get(".".join(parts[1:-2]))
        sub = entry.get("efficiency_by_class") if isinstance(entry, dict) else None
        return (sub, parts[-1]) if isinstance(sub, dict) and parts[-1] in sub else None
    entry = table.get(".".join(parts[1:-1]))
    return (entry, parts[-1]) if isinstance(entry, dict) and parts[-1] in entry else None


def parse_covariance(raw: Any, prof: Any) -> list[CovBlock]:
    """The ``covariance:`` section of a profile, checked against the profile's entries."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError("must be a list of blocks {from, parameters, value, matrix}",
                         path=("covariance",))
    out = []
    for i, b in enumerate(raw):
        path: tuple[Any, ...] = ("covariance", i)
        if not isinstance(b, Mapping):
            raise InputError("must be a mapping {from, parameters, value, matrix}", path=path)
        for key in b:
            if key not in ("from", "parameters", "value", "matrix"):
                raise InputError(f"unknown key {key!r}; allowed: from, parameters, value, "
                                 f"matrix", path=(*path, key))
        names = b.get("parameters")
        if not isinstance(names, list) or not names:
            raise InputError("must be a list of profile parameters", path=(*path, "parameters"))
        for j, n in enumerate(names):
            if resolve(prof, str(n)) is None:
                raise InputError(f"{n!r} is not a parameter of this profile (devices.NAME."
                                 f"FIELD, links.CLASS.FIELD, network.FIELD)",
                                 path=(*path, "parameters", j))
        k = len(names)
        try:
            value = np.asarray(b.get("value"), dtype=float).reshape(k)
            mat = np.asarray(b.get("matrix"), dtype=float).reshape(k, k)
        except (TypeError, ValueError):
            raise InputError(f"'value' must hold {k} numbers and 'matrix' {k} x {k}",
                             path=path) from None
        if not (np.all(np.isfinite(mat)) and np.all(np.isfinite(value))):
            raise InputError("must hold finite numbers", path=(*path, "matrix"))
        scale = float(np.max(np.abs(mat))) or 1.0
        if not np.allclose(mat, mat.T, rtol=1e-6, atol=1e-12 * scale):
            raise InputError("must be symmetric", path=(*path, "matrix"))
        _check_psd(mat, (*path, "matrix"))
        _check_centred(prof, [str(n) for n in names], value, mat, path)
        out.append(CovBlock(tuple(str(n) for n in names), tuple(value.tolist()),
                            tuple(tuple(r) for r in mat.tolist()), str(b.get("from", ""))))
    return out


def _check_psd(mat: np.ndarray, path: tuple[Any, ...]) -> None:
    """Positive semi-definite, judged on the *correlation* matrix - the one the sampler
    factorises (uncertainty/propagate.py).  Why not on the covariance: a block holds an
    efficiency (variance ~1e-2) beside a rate in B/s (~1e29), and a tolerance scaled by the
    largest entry let through a "correlation" of 48 between two efficiencies; the sampler
    then clipped the negative eigenvalue and sampled another matrix than the file's."""
    var = np.diag(mat)
    if np.any(var < 0):
        raise InputError("must be positive semi-definite (a covariance): a variance on its "
                         "diagonal is negative", path=path)
    sd = np.sqrt(var)
    zero = sd == 0
    if np.any(mat[zero, :] != 0) or np.any(mat[:, zero] != 0):
        raise InputError("must be positive semi-definite (a covariance): a parameter with "
                         "variance 0 has a non-zero covariance", path=path)
    safe = np.where(zero, 1.0, sd)
    corr = mat / np.outer(safe, safe)
    if float(np.min(np.linalg.eigvalsh(corr))) < -1e-6:
        worst = float(np.max(np.abs(corr - np.diag(np.diag(corr)))))
        raise InputError(f"must be positive semi-definite (a covariance); its correlation "
                         f"matrix is not (largest |correlation| {worst:.3g}, at most 1)",
                         path=path)


def _check_centred(prof: Any, names: Sequence[str], value: np.ndarray, mat: np.ndarray,
                   path: tuple[Any, ...]) -> None:
    """Each ``value`` is the profile's own number for that parameter.  Why: the sampler
    centres the block on ``value``, so a block edited apart from the profile (a bandwidth
    of -5 B/s beside a fitted 2.97 GB/s) silently gave a band around another model - a
    band of 620 samples/s around a nominal 99,878.  Both are written with 6 significant
    digits by ``calibrate`` (times at 3 in the profile's units); the tolerance is 1 % of
    the value plus a thousandth of its standard deviation (a fit at 0)."""
    sd = np.sqrt(np.clip(np.diag(mat), 0.0, None))
    for j, name in enumerate(names):
        where = resolve(prof, name)
        own = where[0][where[1]] if where is not None else None
        if not isinstance(own, (int, float)) or isinstance(own, bool):
            continue
        v = float(value[j])
        if abs(v - own) > 0.01 * max(abs(v), abs(own)) + 1e-3 * sd[j]:
            raise InputError(f"{v:.6g} is not the profile's {name} ({own:.6g}): a "
                             f"covariance block describes the fitted values it sits beside "
                             f"(write the profile again with 'clustersim calibrate', or "
                             f"edit both)", path=(*path, "value", j))


def with_values(prof: Any, values: Mapping[str, float]) -> Any:
    """A copy of the profile with the named parameters set (sampled values)."""
    new = copy.deepcopy(prof)
    for name, v in values.items():
        where = resolve(new, name)
        if where is None:
            raise KeyError(name)
        where[0][where[1]] = float(v)
    return new
