"""The ``uncertain:`` section of a scenario: which fields are not known, and how not.

::

    uncertain:
      workload.batch_per_worker: {range: [4, 32], kind: int}        # every whole number 4..32
      algorithm.tau: {range: [1, 10], kind: int}
      workload.jitter: {uniform: [0, 0.05]}
      network.efficiency: {normal: [0.9, 0.05], clip: [0.5, 1]}     # truncated to [0.5, 1]
      network.overhead: {loguniform: [1 us, 20 us]}                 # units as in the scenario
      algorithm.allreduce: {choice: [binomial_tree, ring, rabenseifner]}

One key per entry names the distribution (``range`` and ``uniform`` are the same;
``loguniform``, ``normal: [mean, sd]``, ``lognormal: [median, sigma]``, ``triangular: [low,
mode, high]``, ``choice: [values...]`` with optional ``weights``); ``kind: int`` rounds to
whole numbers (a ``range`` then covers both ends with equal weight); ``clip: [low, high]``
truncates a distribution (values outside are not piled up at the bounds: the distribution is
renormalised between them); ``about:`` says why, for people.

Why parse here, with the scenario: a typo in an uncertain input must fail ``clustersim
validate`` with the file and line, not minutes into a propagation.  This module imports
nothing heavy; the distributions become scipy objects in :mod:`.sampling`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clustersim.errors import InputError, unknown_name

__all__ = ["UncertainInput", "parse_uncertain", "DISTRIBUTIONS", "FORBIDDEN_TOP"]

#: distribution name -> number of parameters (None: a list of any length >= 2)
DISTRIBUTIONS: dict[str, int | None] = {
    "range": 2, "uniform": 2, "loguniform": 2, "normal": 2, "lognormal": 2,
    "triangular": 3, "choice": None,
}
_KEYS = (*DISTRIBUTIONS, "kind", "clip", "weights", "about")
KINDS = ("float", "int")

#: top-level sections an uncertain input may not change: they define what is being run
#: (the cases, the axis, the uncertainty itself), not an input of the prediction
FORBIDDEN_TOP = ("uncertain", "sweep", "variants", "compare", "name", "label", "about",
                 "assumptions", "benchmark")


@dataclass(frozen=True)
class UncertainInput:
    """One uncertain field: its dotted path, distribution and parameters (SI numbers)."""

    field: str
    dist: str
    params: tuple[Any, ...]
    kind: str = "float"
    clip: tuple[float, float] | None = None
    weights: tuple[float, ...] | None = None
    about: str = ""

    @property
    def label(self) -> str:
        return self.field

    def describe(self) -> str:
        """``uniform [0, 0.05]`` - the distribution as people write it."""
        ps = ", ".join(_fmt(p) for p in self.params)
        text = f"{self.dist} [{ps}]"
        if self.kind == "int" and self.dist != "choice":
            text += " (whole numbers)"
        if self.clip is not None:
            text += f" within [{_fmt(self.clip[0])}, {_fmt(self.clip[1])}]"
        return text


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _number(value: Any, path: tuple) -> float:
    """A plain number, or a quantity with units (``"1 us"``, ``"10 Gb/s"``, ``"64 MiB"``)."""
    from clustersim.units import UnitError, parse_quantity

    if isinstance(value, bool):
        raise InputError(f"must be a number, not {value}", path=path)
    if isinstance(value, (int, float)):
        v = float(value)
    elif isinstance(value, str):
        for kind in ("time", "bandwidth", "size", "flops"):
            try:
                v = parse_quantity(kind, value, allow_zero=True)
                break
            except (UnitError, ValueError):
                continue
        else:
            raise InputError(f"must be a number or a quantity with units ('1 us', "
                             f"'10 Gb/s', '64 MiB'), not {value[:40]!r}", path=path)
    else:
        raise InputError(f"must be a number, not {type(value).__name__}", path=path)
    if not math.isfinite(v):
        raise InputError(f"must be finite, not {v}", path=path)
    return v


def _numbers(raw: Any, n: int, path: tuple, what: str) -> tuple[float, ...]:
    if not isinstance(raw, list) or len(raw) != n:
        raise InputError(f"must be a list of {n} numbers [{what}]", path=path)
    return tuple(_number(v, (*path, i)) for i, v in enumerate(raw))


def _parse_one(name: str, raw: Any, path: tuple) -> UncertainInput:
    if not isinstance(raw, Mapping):
        raise InputError("must be a mapping with one distribution, like {range: [4, 32]}, "
                         "{normal: [0.9, 0.05]} or {choice: [ring, binomial_tree]}", path=path)
    for key in raw:
        if key not in _KEYS:
            raise unknown_name("key", str(key), _KEYS, path=(*path, key))
    dists = [k for k in raw if k in DISTRIBUTIONS]
    if len(dists) != 1:
        raise InputError(f"needs exactly one distribution ({', '.join(DISTRIBUTIONS)}), "
                         f"found {len(dists)}" + (f": {', '.join(dists)}" if dists else ""),
                         path=path)
    dist = str(dists[0])
    p = (*path, dist)
    kind = raw.get("kind", "float")
    if kind not in KINDS:
        raise unknown_name("kind", str(kind), KINDS, path=(*path, "kind"))
    about = raw.get("about", "")
    if not isinstance(about, str):
        raise InputError("must be a text", path=(*path, "about"))
    weights = None
    if dist == "choice":
        vals = raw[dist]
        if not isinstance(vals, list) or len(vals) < 2:
            raise InputError("must be a list of at least two values", path=p)
        for i, v in enumerate(vals):
            if isinstance(v, (Mapping, list)) or v is None:
                raise InputError("each choice must be a single value (a name or a number)",
                                 path=(*p, i))
        if len({repr(v) for v in vals}) != len(vals):
            raise InputError("has a value twice", path=p)
        if "weights" in raw:
            w = raw["weights"]
            if not isinstance(w, list) or len(w) != len(vals):
                raise InputError(f"must be a list of {len(vals)} numbers, one per choice",
                                 path=(*path, "weights"))
            weights = tuple(_number(x, (*path, "weights", i)) for i, x in enumerate(w))
            if any(x < 0 for x in weights) or sum(weights) <= 0:
                raise InputError("must be >= 0 with a positive sum", path=(*path, "weights"))
        if "clip" in raw or "kind" in raw:
            raise InputError("a choice takes no 'clip' or 'kind'", path=path)
        return UncertainInput(name, dist, tuple(vals), "float", None, weights, about)
    if "weights" in raw:
        raise InputError("only a choice takes weights", path=(*path, "weights"))
    n = DISTRIBUTIONS[dist]
    assert n is not None
    hint = {"normal": "mean, sd", "lognormal": "median, sigma",
            "triangular": "low, mode, high"}.get(dist, "low, high")
    params = _numbers(raw[dist], n, p, hint)
    if dist in ("range", "uniform", "loguniform") and not params[0] < params[1]:
        raise InputError(f"low ({params[0]:g}) must be smaller than high ({params[1]:g})",
                         path=p)
    if dist == "loguniform" and params[0] <= 0:
        raise InputError("a log-uniform range must be positive", path=p)
    if dist in ("normal", "lognormal") and params[1] <= 0:
        raise InputError(f"the spread ({params[1]:g}) must be > 0", path=(*p, 1))
    if dist == "lognormal" and params[0] <= 0:
        raise InputError(f"the median ({params[0]:g}) must be > 0", path=(*p, 0))
    if dist == "triangular" and not params[0] <= params[1] <= params[2] \
            or dist == "triangular" and params[0] == params[2]:
        raise InputError("needs low <= mode <= high with low < high", path=p)
    if kind == "int" and dist in ("range", "uniform") and \
            math.floor(params[1]) < math.ceil(params[0]):
        raise InputError("holds no whole number", path=p)
    clip = None
    if "clip" in raw:
        clip = _numbers(raw["clip"], 2, (*path, "clip"), "low, high")
        if not clip[0] < clip[1]:
            raise InputError("low must be smaller than high", path=(*path, "clip"))
    return UncertainInput(name, dist, params, str(kind), clip, None, about)  # type: ignore[arg-type]


def parse_uncertain(raw: Any) -> tuple[UncertainInput, ...]:
    """The ``uncertain:`` section, checked; fields in the order written."""
    path = ("uncertain",)
    if raw is None:
        return ()
    if not isinstance(raw, Mapping) or not raw:
        raise InputError("must map dotted field names to distributions, like "
                         "'workload.jitter: {uniform: [0, 0.05]}'", path=path)
    out = []
    for name, spec in raw.items():
        field = str(name).strip()
        parts = [p for p in field.split(".") if p]
        if len(parts) < 2:
            raise InputError("must be a dotted field like workload.jitter or "
                             "network.efficiency", path=(*path, name))
        if parts[0] in FORBIDDEN_TOP:
            raise InputError(f"an uncertain input cannot change {parts[0]!r} (it says what "
                             f"is run, not an input of it); allowed: workload.*, "
                             f"algorithm.*, network.*, platform.*, run.*", path=(*path, name))
        out.append(_parse_one(field, spec, (*path, name)))
    return tuple(out)
