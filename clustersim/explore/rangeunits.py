"""A sampled range's ends written with their unit: ``network.overhead: {from: 1 us, to: 20
us, log: true}``.

Why: a scenario file must give a time its unit (``network.overhead: 5`` is refused) and the
``uncertain:`` section reads ``{loguniform: [1 us, 20 us]}``, yet a sweep's range refused
``1 us`` and wanted ``1e-06``: the same field, written three ways.  An end with a unit is
read by the ``uncertain:`` section's own reader (:func:`clustersim.uncertainty.spec.
as_quantity`), so the two accept the same text, and becomes the SI number the range is drawn
on: the points carry SI numbers, as they do from plain ends, which keep working.  The unit
must be of the kind the field reads (``1 GB`` is not a time): the points are numbers, so a
size drawn for ``network.overhead`` would be read as seconds without a word.  What a field
reads is known by its last key, as the rule that a rate or a time needs its unit knows it
(:data:`clustersim.scenario.rateunits.RATE_FIELDS`), plus the fields read as sizes; a field
in neither takes plain numbers, and a unit there is refused as before.
"""

from __future__ import annotations

import math
from typing import Any

from clustersim.errors import InputError
from clustersim.scenario.fieldkinds import FIELD_PARSER, field_kind
from clustersim.scenario.fields import as_float
from clustersim.units import UNIT_EXAMPLES, UnitError, missing_unit, parse_quantity

__all__ = ["field_kind", "range_end"]

_PARSER = FIELD_PARSER
_KIND_OF = {v: k for k, v in _PARSER.items()}
_SI = {"time": "seconds", "size": "bytes", "bandwidth": "bytes/s", "compute rate": "FLOP/s"}
_EXAMPLES = {**UNIT_EXAMPLES, "size": "'64 MiB', '1 GB', '8 kb'"}


def range_end(value: Any, path: tuple, name: str) -> float:
    """A range's end on the axis ``name`` as the SI number it is drawn on: a plain number as
    written, or a quantity with its unit when the field reads that kind of quantity."""
    if not isinstance(value, str) or missing_unit(value, "bandwidth") is not None:
        return as_float(value, path)  # a number, or a bare number quoted ('5'): as before
    from clustersim.uncertainty.spec import as_quantity  # local, as its other users import it

    kind = field_kind(name)
    if kind is None:
        if value.strip()[:1].isdigit() and name == "workers":
            raise InputError(f"a worker count is a plain whole number, not {value!r}",
                             path=path)
        if value.strip()[:1].isdigit():
            raise InputError(f"{name} takes plain numbers (no time, size, bandwidth or "
                             f"compute rate): a range's ends on it are plain numbers, not "
                             f"{value!r}", path=path)
        return as_float(value, path)  # a word: "must be a number"
    allowed = f"allowed: {kind}s like {_EXAMPLES[kind]}, or plain numbers in {_SI[kind]}"
    read = as_quantity(value)
    if read is None:  # the field's own parser says why (no such unit, out of its range)
        try:
            parse_quantity(_PARSER[kind], value, allow_zero=True)
            why = "not a quantity"
        except (UnitError, ValueError) as exc:
            why = str(exc)
        raise InputError(f"{name} is a {kind}: cannot read the range's end {value!r} ({why}); "
                         f"{allowed}", path=path)
    got = _KIND_OF.get(read[1], read[1])
    if got != kind:
        raise InputError(f"{name} is a {kind}, and {value!r} is a {got}; {allowed}",
                         path=path)
    return _decimal(read[0])


def _decimal(v: float) -> float:
    """``v`` as the shortest decimal within 2 ulps of it: the number written in SI units.

    Why: the unit's scale is applied in binary floating point, ``20 us`` is 20 * 1e-06 =
    1.9999999999999998e-05, one ulp off the ``2e-05`` a plain end reads; a range drawn on it
    gave points other than the plain range's in their last digits, and a table of other
    bytes for the same range.  Reading the number, its scale and their product rounds three
    times (at most about 1.5 ulps), so the written value lies within 2 ulps."""
    for digits in range(1, 18):
        x = float(f"{v:.{digits}g}")
        if abs(x - v) <= 2 * math.ulp(v):
            return x
    return v
