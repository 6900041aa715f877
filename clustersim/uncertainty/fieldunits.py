"""An uncertain value's unit against the field it is set into (audit E H5).

Why a module of its own: the value set into the field is the SI number drawn, so a unit of
the wrong kind - ``network.overhead: {uniform: [1 KiB, 2 KiB]}``, ``workload.jitter:
{uniform: [10 ms, 20 ms]}`` - passed every check and the prediction ran with 1,024-2,048
*seconds* per message, exit 0.  A sweep's range already refused it
(:mod:`clustersim.explore.rangeunits`); both read what a field is from
:mod:`clustersim.scenario.fieldkinds`.
"""

from __future__ import annotations

from clustersim.errors import InputError
from clustersim.scenario.fieldkinds import FIELD_PARSER, field_kind
from clustersim.uncertainty.choice import _UNIT_NAMES, _is_bare

__all__ = ["check_field_unit"]


def check_field_unit(name: str, unit: str | None, raw: list, path: tuple) -> None:
    """Values with a unit must be of the kind the field reads, as a sweep range's ends must:
    the value set into the field is the SI number, so ``network.overhead: {uniform: [1 KiB,
    2 KiB]}`` was 1,024-2,048 *seconds* per message, exit 0 (audit E H5)."""
    kind = field_kind(name)
    if unit is None or unit == FIELD_PARSER.get(kind or ""):
        return
    i, v = next((i, v) for i, v in enumerate(raw) if isinstance(v, str) and not _is_bare(v))
    if kind is None:
        raise InputError(f"{name} takes plain numbers (no time, size, bandwidth or compute "
                         f"rate), not {v!r}", path=(*path, i))
    raise InputError(f"{name} is a {kind}, and {v!r} is {_UNIT_NAMES[unit]}; allowed: "
                     f"{kind}s with their unit, or plain numbers in SI units", path=(*path, i))
