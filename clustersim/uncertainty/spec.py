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
whole numbers (a ``range`` then covers both ends with equal weight; other distributions are
rounded to the nearest whole number within their bounds and ``clip``, so a value never leaves
the declared range); ``clip: [low, high]`` truncates a distribution (values outside are not
piled up at the bounds: the distribution is renormalised between them); ``about:`` says why,
for people.

Why parse here, with the scenario: a typo in an uncertain input must fail ``clustersim
validate`` with the file and line, not minutes into a propagation; the scenario then sets
each entry's field at its :func:`~clustersim.scenario.uncertain.check_points`.  A
``clip`` must keep at least :data:`MIN_CLIP_MASS` of the distribution's probability: one that
keeps less (``{normal: [0.42, 0.04], clip: [0.9, 1]}``, 12 sd out) is a typo in the mean or
the clip, not a plan - every value would crowd at the clip's edge nearest the mean, whatever
distribution was written - so it is refused with the range where the distribution has mass.
This module imports nothing heavy (its probabilities are closed forms of :mod:`math`); the
distributions become scipy objects in :mod:`.sampling`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from clustersim.errors import InputError, unknown_name
from clustersim.uncertainty.choice import _UNIT_NAMES, _is_bare, parse_choice
from clustersim.uncertainty.fieldunits import check_field_unit

__all__ = ["UncertainInput", "parse_uncertain", "bounds", "clip_mass", "as_quantity",
           "DISTRIBUTIONS", "FORBIDDEN_TOP", "FORBIDDEN_RUN", "MIN_CLIP_MASS"]

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

#: run fields that are not inputs of what is predicted, and why (other run.* fields -
#: iterations, warmup, fidelity, emulation.* - are modelling choices a band may span)
FORBIDDEN_RUN = {
    "run.seed": "the seed is held fixed so that a band is the inputs' alone, not "
                "seed-to-seed noise (run.repeats gives that interval)",
    "run.repeats": "it says how many seeds are run, not an input of them",
    "run.convergence": "it says whether time to target is computed, not an input of it",
}

#: the least share of a distribution's probability a ``clip`` must keep (one in a million:
#: about 4.75 sd out on one side of a normal)
MIN_CLIP_MASS = 1e-6

#: z of the 1e-7 quantile: where a normal "has mass", for the message of a refused clip
_Z_EXTENT = -NormalDist().inv_cdf(1e-7)
_Z95 = NormalDist().inv_cdf(0.95)


@dataclass(frozen=True)
class UncertainInput:
    """One uncertain field: its dotted path, distribution and parameters (SI numbers).

    ``kind`` of a choice is what its values are (``name``, ``bool``, ``int``, ``float`` or
    ``mixed``), so that JSON says what was written; ``unit``: the quantity the numbers were
    written in (``time``, ``bandwidth``, ``size``, ``flops``), None for plain numbers."""

    field: str
    dist: str
    params: tuple[Any, ...]
    kind: str = "float"
    clip: tuple[float, float] | None = None
    weights: tuple[float, ...] | None = None
    about: str = ""
    unit: str | None = None

    @property
    def label(self) -> str:
        return self.field

    def format(self, v: Any) -> str:
        """One value as the scenario would write it: with its unit (``5 us``), else plain."""
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return str(v)
        if self.unit is not None and v != 0:
            from clustersim.units import format_bandwidth, format_size, format_time

            fmt = {"time": format_time, "size": format_size, "bandwidth": format_bandwidth}
            if self.unit in fmt:
                return fmt[self.unit](float(v))
            return f"{v:.3g} FLOP/s"
        return f"{v:g}" if isinstance(v, float) else str(v)

    def describe(self) -> str:
        """``uniform [0, 0.05]`` - the distribution as people write it (units included:
        ``uniform [5 us, 20 us]``, not the SI ``[5e-06, 2e-05]``)."""
        if self.dist in ("normal", "lognormal"):  # the spread of a lognormal has no unit
            ps = f"{self.format(self.params[0])}, " + (self.format(self.params[1])
                                                        if self.dist == "normal" else
                                                        f"{self.params[1]:g}")
        else:
            ps = ", ".join(self.format(p) for p in self.params)
        w = f" weights [{', '.join(f'{x:g}' for x in self.weights)}]" if self.weights else ""
        text = f"{self.dist} [{ps}]{w}"
        if self.kind == "int" and self.dist != "choice":
            text += " (whole numbers)"
        if self.clip is not None:
            text += f" within [{self.format(self.clip[0])}, {self.format(self.clip[1])}]"
        return text


def as_quantity(value: Any) -> tuple[float, str] | None:
    """``value`` as an entry's number and what it is (``"number"`` when plain, else its
    unit's quantity: ``"5 us"`` is ``(5e-6, "time")``), or None when it is not a number."""
    try:
        v, unit = _number(value, ())
    except InputError:
        return None
    return v, unit or "number"


def _number(value: Any, path: tuple) -> tuple[float, str | None]:
    """A plain number, or a quantity with units (``"1 us"``, ``"10 Gb/s"``, ``"64 MiB"``),
    and the quantity it was written as (None for a plain number)."""
    from clustersim.units import UnitError, parse_quantity

    unit = None
    if isinstance(value, bool):
        raise InputError(f"must be a number, not {value}", path=path)
    if isinstance(value, (int, float)):
        v = float(value)
    elif isinstance(value, str) and _is_bare(value):
        v = float(value)  # a number quoted ("8"): read as "8 s" before, a time (audit E H5)
    elif isinstance(value, str):
        for unit in ("time", "bandwidth", "size", "flops"):
            try:
                v = parse_quantity(unit, value, allow_zero=True)
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
    return v, unit


def _numbers(raw: Any, n: int, path: tuple, what: str,
             unit: str | None = None) -> tuple[tuple[float, ...], str | None]:
    """``n`` numbers in one unit: ``[5 us, 20 Gb/s]`` is a typo, not a range (the bandwidth
    would be read as 2.5e9 seconds)."""
    if not isinstance(raw, list) or len(raw) != n:
        raise InputError(f"must be a list of {n} numbers [{what}]", path=path)
    vals = []
    for i, v in enumerate(raw):
        x, u = _number(v, (*path, i))
        if u is not None and unit is not None and u != unit:
            raise InputError(f"mixes units: {v!r} is {_UNIT_NAMES[u]}, the other numbers "
                             f"of this entry {_UNIT_NAMES[unit]}; allowed: one quantity "
                             f"for every number (or plain SI numbers)", path=(*path, i))
        unit = unit or u
        vals.append(x)
    return tuple(vals), unit


def _parse_one(name: str, raw: Any, path: tuple) -> UncertainInput:
    if not isinstance(raw, Mapping):
        raise InputError("must be a mapping with one distribution, like {range: [4, 32]}, "
                         "{normal: [0.9, 0.05]} or {choice: [ring, binomial_tree]}", path=path)
    for key in raw:
        if key not in _KEYS:
            raise unknown_name("key", key, _KEYS, path=(*path, key))
    dists = [k for k in raw if k in DISTRIBUTIONS]
    if len(dists) != 1:
        raise InputError(f"needs exactly one distribution ({', '.join(DISTRIBUTIONS)}), "
                         f"found {len(dists)}" + (f": {', '.join(dists)}" if dists else ""),
                         path=path)
    dist = str(dists[0])
    p = (*path, dist)
    kind = raw.get("kind", "float")
    if kind not in KINDS:
        raise unknown_name("kind", kind, KINDS, path=(*path, "kind"))
    about = raw.get("about", "")
    if not isinstance(about, str):
        raise InputError("must be a text", path=(*path, "about"))
    if dist == "choice":  # values set as written: checks of their own (.choice)
        vals, ckind, weights = parse_choice(name, raw, path)
        return UncertainInput(name, dist, vals, ckind, None, weights, about)
    if "weights" in raw:
        raise InputError("only a choice takes weights", path=(*path, "weights"))
    n = DISTRIBUTIONS[dist]
    assert n is not None
    hint = {"normal": "mean, sd", "lognormal": "median, sigma",
            "triangular": "low, mode, high"}.get(dist, "low, high")
    params, unit = _numbers(raw[dist], n, p, hint)
    check_field_unit(name, unit, raw[dist], p)
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
    if dist == "lognormal" and isinstance(raw[dist][1], str):
        raise InputError("sigma is the spread of the value's logarithm: a plain number, "
                         "without units", path=(*p, 1))
    inp = UncertainInput(name, dist, params, str(kind), None, None, about, unit)
    if "clip" in raw:
        clip, cunit = _numbers(raw["clip"], 2, (*path, "clip"), "low, high", unit)
        check_field_unit(name, cunit, raw["clip"], (*path, "clip"))
        if not clip[0] < clip[1]:
            raise InputError("low must be smaller than high", path=(*path, "clip"))
        inp = UncertainInput(name, dist, params, str(kind), clip, None, about, unit)
        _check_clip(inp, (*path, "clip"))
    if kind == "int":
        lo, hi = bounds(inp)
        if math.isfinite(lo) and math.isfinite(hi) and math.floor(hi) < math.ceil(lo):
            where = (*path, "clip") if inp.clip is not None else p
            raise InputError(f"holds no whole number (kind: int): its values lie in "
                             f"[{inp.format(lo)}, {inp.format(hi)}]; allowed: bounds with "
                             f"a whole number between them", path=where)
    return inp


def _support(inp: UncertainInput) -> tuple[float, float]:
    p = inp.params
    if inp.dist in ("range", "uniform", "loguniform"):
        return p[0], p[1]
    if inp.dist == "triangular":
        return p[0], p[2]
    return (0.0 if inp.dist == "lognormal" else -math.inf), math.inf


def bounds(inp: UncertainInput) -> tuple[float, float]:
    """The interval a continuous input's values lie in: its support within its ``clip``
    (infinite ends for an unbounded side)."""
    lo, hi = _support(inp)
    if inp.clip is not None:
        lo, hi = max(lo, inp.clip[0]), min(hi, inp.clip[1])
    return lo, hi


def _cdf(inp: UncertainInput, x: float, upper: bool = False) -> float:
    """P(X <= x), or P(X > x) with ``upper`` (from erfc: a far upper tail keeps its digits
    where 1 - cdf would round to 0)."""
    p = inp.params
    if inp.dist in ("normal", "lognormal"):
        if inp.dist == "lognormal":
            if x <= 0:
                return 1.0 if upper else 0.0
            z = (math.log(x) - math.log(p[0])) / p[1]
        else:
            z = (x - p[0]) / p[1]
        return 0.5 * math.erfc((z if upper else -z) / math.sqrt(2.0))
    lo, hi = _support(inp)
    x = min(max(x, lo), hi)
    if inp.dist == "loguniform":
        f = math.log(x / lo) / math.log(hi / lo)
    elif inp.dist == "triangular":
        mode = p[1]
        f = ((x - lo) ** 2 / ((hi - lo) * (mode - lo)) if x < mode else
             1.0 - (hi - x) ** 2 / ((hi - lo) * (hi - mode)) if x > mode else
             (mode - lo) / (hi - lo))
    else:
        f = (x - lo) / (hi - lo)
    return 1.0 - f if upper else f


def clip_mass(inp: UncertainInput) -> float:
    """The share of the distribution's probability inside its ``clip`` (1 without one)."""
    if inp.clip is None:
        return 1.0
    a, b = inp.clip
    if _cdf(inp, a) > 0.5:  # an upper tail: differences of survival functions
        return max(_cdf(inp, a, upper=True) - _cdf(inp, b, upper=True), 0.0)
    return max(_cdf(inp, b) - _cdf(inp, a), 0.0)


def _extent(inp: UncertainInput) -> tuple[float, float]:
    """Where the distribution has mass, for people: its support, or the 1e-7 and 1 - 1e-7
    quantiles of an unbounded one."""
    p = inp.params
    if inp.dist == "normal":
        return p[0] - _Z_EXTENT * p[1], p[0] + _Z_EXTENT * p[1]
    if inp.dist == "lognormal":
        return p[0] * math.exp(-_Z_EXTENT * p[1]), p[0] * math.exp(_Z_EXTENT * p[1])
    return _support(inp)


def _check_clip(inp: UncertainInput, path: tuple) -> None:
    assert inp.clip is not None
    a, b = inp.clip
    lo, hi = (float(f"{x:.3g}") for x in _extent(inp))
    dist = f"{inp.dist} [{', '.join(inp.format(x) for x in inp.params)}]"
    allowed = (f"allowed: a clip overlapping [{inp.format(lo)}, {inp.format(hi)}], where "
               f"the distribution has its mass")
    s_lo, s_hi = _support(inp)
    if b <= s_lo or a >= s_hi:
        raise InputError(f"[{inp.format(a)}, {inp.format(b)}] lies outside every value of "
                         f"{dist}: nothing would be left to sample; {allowed}", path=path)
    mass = clip_mass(inp)
    if mass < MIN_CLIP_MASS:
        share = f"{mass:.2g}" if mass > 0 else "no representable share (< 1e-300)"
        raise InputError(f"[{inp.format(a)}, {inp.format(b)}] keeps {share} of {dist}'s "
                         f"probability (less than one in a million): every value would sit "
                         f"at the clip's edge, whatever the distribution; move the "
                         f"distribution into the clip or write the range you mean "
                         f"({{uniform: [low, high]}}); {allowed}", path=path)


def parse_uncertain(raw: Any) -> tuple[UncertainInput, ...]:
    """The ``uncertain:`` section, checked; fields in the order written."""
    path = ("uncertain",)
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise InputError("must map dotted field names to distributions, like "
                         "'workload.jitter: {uniform: [0, 0.05]}'", path=path)
    if not raw:
        raise InputError("is empty: give entries like 'workload.jitter: {uniform: [0, "
                         "0.05]}', or leave the section out (or 'uncertain: null') when "
                         "nothing is uncertain", path=path)
    out = []
    for name, spec in raw.items():
        field = str(name).strip()
        parts = [p for p in field.split(".") if p]
        if len(parts) < 2:
            split = (isinstance(spec, Mapping) and spec
                     and not set(map(str, spec)) & set(_KEYS))
            hint = (f"; --set splits its key at the dots, so give the section whole: "
                    f"--set 'uncertain={{{field}.{next(iter(spec))}: {{...}}}}'"
                    if split else "")
            raise InputError("must be a dotted field like workload.jitter or "
                             f"network.efficiency{hint}", path=(*path, name))
        if parts[0] in FORBIDDEN_TOP:
            raise InputError(f"an uncertain input cannot change {parts[0]!r} (it says what "
                             f"is run, not an input of it); allowed: workload.*, "
                             f"algorithm.*, network.*, platform.*, catalog.*, placement.*, "
                             f"run.*", path=(*path, name))
        why = FORBIDDEN_RUN.get(".".join(parts[:2]))
        if why:
            raise InputError(f"an uncertain input cannot change {'.'.join(parts[:2])}: {why}",
                             path=(*path, name))
        out.append(_parse_one(field, spec, (*path, name)))
    return tuple(out)
