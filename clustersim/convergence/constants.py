"""The asynchrony terms' constants: the shipped ``constants.yaml`` or a file of one's own.

A module of its own so that a convergence profile can carry its constants (a scenario's
``workload.convergence.constants:``, e.g. the output of ``clustersim calibrate
--emulation``) without the profile module importing the prediction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from clustersim._yaml import safe_load
from clustersim.errors import InputError, PathPart

__all__ = ["Constants", "load_constants", "load_constants_file", "parse_constants",
           "shipped_statuses"]


@dataclass(frozen=True)
class Constants:
    """The asynchrony terms' constants (``constants.yaml``; theory values until refitted)."""

    k_s: float = 1.0
    k_m: float = 1.0
    k_d: float = 1.0
    k_e: float = 1.0
    k_g: float = 1.0
    gossip_share: float = 1.0 / 3.0


@lru_cache(maxsize=2)
def _shipped_constants(name: str = "constants.yaml") -> Constants:
    text = resources.files("clustersim.convergence").joinpath(name).read_text()
    return load_constants(safe_load(text)["constants"])


@lru_cache(maxsize=1)
def shipped_statuses() -> dict[str, str]:
    """``{name: status}`` of the shipped ``constants.yaml`` (``theory`` or ``assumed``).

    Why: the tables said "theory" for all of them, while two (k_d, k_g: every local-SGD,
    EASGD tau > 1 and gossip figure) are assumed weights (audit I M2)."""
    text = resources.files("clustersim.convergence").joinpath("constants.yaml").read_text()
    return {k: str(v.get("status", "")) if isinstance(v, Mapping) else ""
            for k, v in safe_load(text)["constants"].items()}


def emulation_constants() -> Constants:
    """The constants fitted on convergence emulation (``constants_emulation.yaml``): what the
    analytic prediction shown beside an emulated run uses (same tasks, same LR regime)."""
    return _shipped_constants("constants_emulation.yaml")


def load_constants(raw: Mapping[str, Any] | None = None) -> Constants:
    """Constants from a mapping ``name: value`` or ``name: {value: ..., source: ...}``.

    ``None`` gives the shipped ``constants.yaml``; missing names keep the dataclass defaults.
    """
    if raw is None:
        return _shipped_constants()
    names = {f.name for f in fields(Constants)}
    values: dict[str, float] = {}
    for key, item in raw.items():
        if key not in names:
            raise ValueError(f"unknown convergence constant {key!r} (allowed: "
                             f"{', '.join(sorted(names))})")
        value = item.get("value") if isinstance(item, Mapping) else item
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"convergence constant {key} must be a number >= 0, not {value!r}")
        values[key] = float(value)
    return Constants(**values)


def parse_constants(raw: Any, path: Sequence[PathPart], base: Path | None = None) -> Constants:
    """A scenario's ``constants:`` value: a mapping of constants, or the path of a YAML file
    holding one under ``constants:`` (relative to the scenario's directory ``base``); every
    error is an :class:`InputError` at ``path`` (the file's errors name the file too)."""
    if isinstance(raw, str):
        return load_constants_file(constants_file(raw, base), path)
    if not isinstance(raw, Mapping):
        raise InputError(f"must be a mapping of constants ({_allowed()}) or the path of a "
                         f"constants file (clustersim calibrate --emulation writes one), not "
                         f"{raw!r}", path=tuple(path))
    try:
        return load_constants(raw)
    except ValueError as exc:
        raise InputError(f"{exc}", path=tuple(path)) from None


def constants_file(name: str, base: Path | None) -> Path:
    """Where a scenario's ``constants: FILE`` is: relative to the scenario's folder
    ``base``, or absolute."""
    return Path(name) if base is None or Path(name).is_absolute() else base / name


def constants_warnings(raw: Any, base: Path | None = None,
                       path: Sequence[PathPart] = ("constants",)) -> tuple[str, ...]:
    """The ``warnings:`` a constants file was written with (``calibrate --emulation``: a
    fit whose constants predict "never" for runs that converged); () for a mapping, or a
    file without any.  Why: they had been comments only, and a scenario using such a file
    said nothing of them (audit A L5).  Read after :func:`parse_constants` succeeded."""
    if not isinstance(raw, str):
        return ()
    from clustersim.scenario.yamlio import load_yaml

    p = constants_file(raw, base)
    doc = load_yaml(p, what="constants file")
    got = doc.get("warnings") if isinstance(doc, Mapping) else None
    if got is None:
        return ()
    if not isinstance(got, list) or not all(isinstance(w, str) for w in got):
        bad = got if not isinstance(got, list) else next(w for w in got if not isinstance(w, str))
        raise InputError(f"{p}: 'warnings' must be a list of texts (as calibrate --emulation "
                         f"writes it), not {repr(bad)[:60]}", path=tuple(path))
    return tuple(got)


def load_constants_file(file: str | Path, path: Sequence[PathPart] = ("constants",)
                        ) -> Constants:
    """Constants from a YAML file with a top-level ``constants:`` mapping."""
    from clustersim.scenario.yamlio import load_yaml  # file and line in its errors

    p = Path(file)
    if not p.is_file():
        raise InputError(f"constants file {str(p)!r} not found (a path relative to the "
                         f"scenario's directory, or absolute)", path=tuple(path))
    doc = load_yaml(p, what="constants file")
    if not isinstance(doc, Mapping) or not isinstance(doc.get("constants"), Mapping):
        raise InputError(f"{p}: needs a top-level 'constants:' mapping ({_allowed()})",
                         path=tuple(path))
    try:
        return load_constants(doc["constants"])
    except ValueError as exc:
        raise InputError(f"{p}: {exc}", path=tuple(path)) from None


def _allowed() -> str:
    return "names " + ", ".join(f.name for f in fields(Constants))
