"""What quantity a scenario field reads (a time, a size, a bandwidth, a compute rate), by name.

Why a module of its own, in the scenario layer: a sweep's range ends
(:mod:`clustersim.explore.rangeunits`) and an uncertain value's unit
(:mod:`clustersim.uncertainty.fieldunits`) are both checked against it, and the uncertainty
check runs on every scenario load - it had imported the whole sweep layer (its cache, its
executors) to read this table (audit J H1).  What a field reads is known by its last key, as
the rule that a rate or a time needs its unit knows it
(:data:`clustersim.scenario.rateunits.RATE_FIELDS`), plus the fields read as sizes.
"""

from __future__ import annotations

from clustersim.scenario.rateunits import rate_kind

__all__ = ["FIELD_PARSER", "field_kind", "si_unit"]

#: fields whose parsers read a size (``as_size``/``parse_size``: a bucket, a fusion buffer, a
#: device's memory, a transport's inline size, a layer's or a sample's bytes) or a time that
#: the unit rule leaves out (a fusion cycle), by last key
_MORE_KINDS = {
    **dict.fromkeys(("bucket", "threshold", "bucket_cap", "first_bucket", "memory", "inline",
                     "mem_bytes", "bytes_per_sample"), "size"),
    "cycle_time": "time",
}
#: a field's kind -> the name of the parser (:func:`clustersim.units.parse_quantity`) and of
#: what :func:`~clustersim.uncertainty.spec.as_quantity` reports for it
FIELD_PARSER = {"time": "time", "size": "size", "bandwidth": "bandwidth",
                "compute rate": "flops"}


def field_kind(name: str) -> str | None:
    """The quantity the field ``name`` (an axis name, dotted) reads: ``"time"``, ``"size"``,
    ``"bandwidth"`` or ``"compute rate"``; None for a field of plain numbers (and for
    ``workers``, a count)."""
    return rate_kind(name) or _MORE_KINDS.get(name.rsplit(".", 1)[-1].strip())


#: what a field reads -> the unit of the SI numbers a sweep's table holds it in
_SI_UNITS = {"time": "s", "size": "bytes", "bandwidth": "bytes/s", "compute rate": "FLOP/s"}


def si_unit(name: str) -> str | None:
    """The unit of the field ``name``'s SI values in a table (``platform.link.bandwidth`` ->
    ``bytes/s``); None for a field of plain numbers.  One map for the sweep's column units
    and the explorer's axis titles."""
    return _SI_UNITS.get(field_kind(name) or "")
