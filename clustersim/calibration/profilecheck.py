"""Physical sense of a calibration profile a person hands to ``--calibration``.

Why: a profile may hold bare numbers, read as SI (bytes/s, FLOP/s) - the documented form
(docs/scenarios.md: "older or hand-made ones may hold bare numbers"; ``clustersim calibrate``
writes units) - so ``bandwidth: 1.4`` meant for 1.4 GB/s was applied as 1.4 B/s, exit 0,
with a -100 % line on stderr the only hint (QA 16c M1).  The scenario files' rule (a rate
needs its unit, :mod:`clustersim.scenario.rateunits`) cannot be applied to profiles without
breaking the ones that are valid SI, but no device or link is slower than the floors below:
a rate under one is a unit slip, refused naming file, line, field and the unit rule.

And a collective efficiency beyond what the fitter can produce
(:data:`clustersim.calibration.collfit.EFFICIENCY_BOUNDS`, 0.01 to 100) is no calibration of
anything: ``collective_efficiency: 1e9`` made every collective free of its bandwidth term.

Apart from :mod:`.profile` (the file format, its writer and parser, which every reader of
profiles shares) because these are checks of what a person wrote, made where a profile is
applied to a scenario (:mod:`.applyprofile`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clustersim.calibration.profile import Profile, parse_profile
from clustersim.errors import InputError

__all__ = ["RATE_FLOORS", "load_checked", "check_profile"]

#: the slowest rate a profile may give, per field: (floor in SI units, its unit, as text)
RATE_FLOORS = {
    **dict.fromkeys(("bandwidth", "mem_bw", "reduce_rate", "pack_rate"), (1e3, "B/s", "1 kB/s")),
    "peak": (1e6, "FLOP/s", "1 MFLOP/s"),
}
_EXAMPLE = {"B/s": "1.4 GB/s or 10 Gb/s", "FLOP/s": "50 GFLOP/s"}


def load_checked(path: str | Path) -> Profile:
    """Read, validate and sense-check the profile at ``path`` (:func:`check_profile`)."""
    from clustersim.scenario.yamlio import load_yaml

    raw = load_yaml(path, what="calibration profile")
    prof = parse_profile(raw, str(path))
    check_profile(raw, prof, str(path))
    return prof


def check_profile(raw: Any, prof: Profile, file: str | None = None) -> None:
    """Refuse a rate below its floor (:data:`RATE_FLOORS`) and a collective efficiency
    outside the fitter's bounds; ``raw`` (the parsed YAML) gives the line."""
    from clustersim.calibration.collfit import EFFICIENCY_BOUNDS

    for section, entries in (("devices", prof.devices), ("links", prof.links)):
        for name, fields in entries.items():
            for key, value in fields.items():
                floor = RATE_FLOORS.get(key)
                if floor is not None and isinstance(value, float) and value < floor[0]:
                    _refuse(_slow(value, *floor, raw, (section, name, key)),
                            (section, name, key), raw, file)
    lo, hi = EFFICIENCY_BOUNDS
    wheres: list[tuple[tuple[Any, ...], float]] = []
    if "collective_efficiency" in prof.network:
        wheres.append((("network", "collective_efficiency"),
                       prof.network["collective_efficiency"]))
    rows = _raw_at(raw, ("network", "protocols"))
    for cls in rows if isinstance(rows, Mapping) else ():
        for i, seg in enumerate(_raw_at(rows, (cls,)) or ()):
            if isinstance(seg, Mapping) and "collective_efficiency" in seg:
                wheres.append((("network", "protocols", cls, i, "collective_efficiency"),
                               float(seg["collective_efficiency"])))
    for path, value in wheres:
        if not lo <= value <= hi:
            _refuse(f"must be in [{lo:g}, {hi:g}], the range 'clustersim calibrate' fits a "
                    f"collective efficiency in (1 = the protocol's own cost), not {value:g}",
                    path, raw, file)


def _slow(value: float, floor: float, unit: str, shown: str, raw: Any,
          path: tuple[Any, ...]) -> str:
    """The message for a rate under its floor; it says the bare-number rule when the file
    wrote a bare number."""
    bare = isinstance(_raw_at(raw, path), (int, float))
    rule = (f"a bare number in a calibration profile is read in {unit}: write the unit, like "
            f"{_EXAMPLE[unit]}" if bare else f"check the unit (like {_EXAMPLE[unit]})")
    return (f"{value:g} {unit} is below {shown}, slower than any real "
            f"{'device' if path[0] == 'devices' else 'link'}; {rule}")


def _refuse(message: str, path: tuple[Any, ...], raw: Any, file: str | None) -> None:
    from clustersim.scenario.yamlio import line_of

    raise InputError(message, path=path, file=file, line=line_of(raw, path))


def _raw_at(raw: Any, path: tuple[Any, ...]) -> Any:
    """The value at ``path`` in the parsed YAML, None where there is none."""
    from clustersim.scenario.yamlio import value_at

    return value_at(raw, path)
