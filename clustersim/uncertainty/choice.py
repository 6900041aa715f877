"""The ``choice`` distribution of an ``uncertain:`` entry: its values and their weights.

Kept apart from :mod:`.spec` (which parses every other distribution) because a choice is
the one distribution whose values are set into the scenario as written, names and units
included, so it has checks of its own (QA 16c):

* on a rate field (``platform.link.bandwidth``, ``catalog.devices.k80.peak``) every number
  needs its unit, the rule of :mod:`clustersim.scenario.rateunits`: ``{choice: [1.4, 2.8]}``
  had run a 1.4 B/s link, exit 0;
* values are all bare numbers or all the same quantity: ``{choice: [1 us, 2]}`` had read the
  ``2`` as 2 seconds;
* weights are finite, >= 0, with a positive and finite sum: ``[1e308, 1e308]`` overflowed the
  sampler's cumulative sum and every draw took one value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from clustersim.errors import InputError
from clustersim.scenario.rateunits import rate_kind
from clustersim.units import missing_unit

__all__ = ["parse_choice", "choice_kind"]

_UNIT_NAMES = {"time": "a time", "bandwidth": "a bandwidth", "size": "a size",
               "flops": "a compute rate"}


def choice_kind(vals: list[Any]) -> str:
    """What a choice's values are: ``bool``, ``int``, ``float``, ``name`` or ``mixed``."""
    if all(isinstance(v, bool) for v in vals):
        return "bool"
    if any(isinstance(v, bool) for v in vals):
        return "mixed"
    if all(isinstance(v, int) for v in vals):
        return "int"
    if all(isinstance(v, (int, float)) for v in vals):
        return "float"
    return "name" if all(isinstance(v, str) for v in vals) else "mixed"


def _is_bare(value: Any) -> bool:
    """A number without a unit (``2``, ``1.4``, ``'2'``)."""
    return missing_unit(value, "bandwidth") is not None


def _check_units(field: str, vals: list[Any], path: tuple) -> None:
    from clustersim.uncertainty.spec import as_quantity

    kind = rate_kind(field)
    if kind is not None:  # the rate rule: a bare number at a rate field is refused
        for i, v in enumerate(vals):
            why = missing_unit(v, kind)
            if why is not None:
                raise InputError(why, path=(*path, i))
    units = {}
    for i, v in enumerate(vals):
        if isinstance(v, str) and not _is_bare(v):
            q = as_quantity(v)
            if q is not None:
                units[i] = q[1]
    if not units:
        return
    first = next(iter(units.values()))
    for i, v in enumerate(vals):
        if i in units and units[i] != first:
            raise InputError(f"mixes units: {v!r} is {_UNIT_NAMES[units[i]]}, another value "
                             f"of this choice {_UNIT_NAMES[first]}; allowed: one quantity "
                             f"for every value", path=(*path, i))
        if i not in units and (_is_bare(v) or isinstance(v, (int, float))) \
                and not isinstance(v, bool):
            raise InputError(f"mixes a bare number with units: {v!r} has no unit while the "
                             f"other values are {_UNIT_NAMES[first]} (a bare number would be "
                             f"read in SI units); allowed: every value with its unit, like "
                             f"{vals[next(iter(units))]!r}", path=(*path, i))


def _weights(raw: Any, n: int, path: tuple) -> tuple[float, ...]:
    from clustersim.uncertainty.spec import as_quantity

    if not isinstance(raw, list) or len(raw) != n:
        raise InputError(f"must be a list of {n} numbers, one per choice", path=path)
    out = []
    for i, x in enumerate(raw):
        q = as_quantity(x)
        if q is None or q[1] != "number" or isinstance(x, str):
            raise InputError(f"must be a plain number, not {x!r}", path=(*path, i))
        out.append(q[0])
    total = sum(out)  # inf when it overflows (math.fsum would raise)
    if any(x < 0 for x in out) or not total > 0 or not math.isfinite(total):
        raise InputError("must be finite numbers >= 0 with a positive, finite sum (they are "
                         "relative: [1, 3] and [0.25, 0.75] are the same); allowed: weights "
                         "like [1, 2, 1]", path=path)
    return tuple(out)


def parse_choice(field: str, raw: Mapping[str, Any], path: tuple
                 ) -> tuple[tuple[Any, ...], str, tuple[float, ...] | None]:
    """``{choice: [...], weights: [...]}`` of ``field``, checked: (values, their kind,
    weights or None)."""
    p = (*path, "choice")
    vals = raw["choice"]
    if not isinstance(vals, list) or len(vals) < 2:
        raise InputError("must be a list of at least two values", path=p)
    for i, v in enumerate(vals):
        if isinstance(v, (Mapping, list)) or v is None:
            raise InputError("each choice must be a single value (a name or a number)",
                             path=(*p, i))
    if len({repr(v) for v in vals}) != len(vals):
        raise InputError("has a value twice", path=p)
    _check_units(field, vals, p)
    weights = _weights(raw["weights"], len(vals), (*path, "weights")) \
        if "weights" in raw else None
    if "clip" in raw or "kind" in raw:
        raise InputError("a choice takes no 'clip' or 'kind'", path=path)
    return tuple(vals), choice_kind(vals), weights
