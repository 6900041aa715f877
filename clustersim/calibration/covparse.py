"""Reading a profile's ``covariance:`` section: every block checked against the profile it
sits in (names it holds, one block per parameter, values that are the profile's own, a
symmetric positive semi-definite matrix) - :mod:`.covariance` writes and samples the blocks.

Apart from :mod:`.covariance` because reading is about refusing what a user (or another
program) wrote, with the field and line named; writing is about the fits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from clustersim.calibration.covariance import CovBlock, resolve
from clustersim.errors import InputError

__all__ = ["parse_covariance"]


def parse_covariance(raw: Any, prof: Any) -> list[CovBlock]:
    """The ``covariance:`` section of a profile, checked against the profile's entries."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError("must be a list of blocks {from, parameters, value, matrix}",
                         path=("covariance",))
    out = []
    seen: dict[str, tuple[int, int]] = {}  # parameter -> (block, position) of its first use
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
            if str(n) in seen:  # sampled twice, the later draw silently won
                bi, bj = seen[str(n)]
                raise InputError(f"{n!r} is already covariance[{bi}].parameters[{bj}]: a "
                                 f"parameter belongs to one block",
                                 path=(*path, "parameters", j))
            seen[str(n)] = (i, j)
            if resolve(prof, str(n)) is None:
                raise InputError(f"{n!r} is not a parameter of this profile (devices.NAME."
                                 f"FIELD, links.CLASS.FIELD, network.FIELD, network.protocols."
                                 f"CLASS.K.overhead|efficiency|collective_efficiency)",
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
