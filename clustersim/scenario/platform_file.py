"""A scenario's ``platform:``: a topology file (found next to the scenario or among the shipped
ones), an inline description, or a file with inline overrides.

Why a module of its own: a platform file is a second input file, and its errors must say both
where the bad value is (the topology file, its line and field) and which scenario brought that
file in - the user may not know that ``platform: cori_knl`` means ``topologies/cori_knl.yaml``.
Files are looked up only where a scenario can mean them (its own folder, that folder's parent,
the shipped ``topologies/``), never in the working directory, so a scenario means the same
platform wherever it is run from; only ``.yaml``/``.yml`` files are read, so a scenario cannot
make the tool parse (and echo in an error) an unrelated file.
"""

from __future__ import annotations

import copy
import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clustersim.catalog import Catalog
from clustersim.errors import InputError, did_you_mean
from clustersim.scenario.fields import as_str
from clustersim.scenario.yamlio import LineDict, line_of, load_yaml
from clustersim.shipped import shipped_names, shipped_roots

__all__ = ["PROJECT_ROOT", "resolve_platform_file", "parse_platform", "named_by"]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
_SUFFIXES = (".yaml", ".yml")


def _shipped() -> list[str]:
    return shipped_names("topologies")


def resolve_platform_file(name: str, base: Path | None, path: tuple) -> Path:
    """Find a platform file: a path relative to the scenario's folder or its parent, an
    absolute path, or a bare name of a shipped topology (``cori_knl``)."""
    shipped = _shipped()
    allowed = f"a file name like {shipped[0] if shipped else 'cluster'}, or a path to a .yaml file"
    if not name.strip() or "\x00" in name or len(name) > 1024:
        raise InputError(f"platform file name {name[:80]!r} is not usable ({allowed})", path=path)
    p = Path(name)
    if name.endswith(("/", "\\")) or p.name in ("", ".", ".."):
        raise InputError(f"platform file {name!r} is a folder, not a file ({allowed})", path=path)
    if p.suffix and p.suffix.lower() not in _SUFFIXES:
        raise InputError(f"platform file {name!r} must be a YAML file (.yaml or .yml; {allowed})",
                         path=path)
    names = [p] if p.suffix else [Path(f"{name}.yaml"), Path("topologies") / f"{name}.yaml"]
    roots: list[Path] = []
    if p.is_absolute():
        cands = names
    else:
        # the checkout's topologies/, then the copies an installed wheel carries
        roots = ([base, base.parent] if base is not None else []) + shipped_roots()
        cands = [r / n for r in dict.fromkeys(roots) for n in names]
    for c in cands:
        if _is_file(c):
            return c
    as_written = [p] if p.is_absolute() else [r / p for r in roots]
    _not_a_file(cands + as_written, name, path)
    if not p.suffix and any(_is_file(c) for c in as_written):  # QA 19 L2: not "not found"
        raise InputError(f"platform file {name!r} has no .yaml or .yml name: only YAML files "
                         f"are read ({allowed})", path=path)
    hint = did_you_mean(p.stem, shipped)
    where = "next to the scenario, in its parent folder or among the shipped topologies"
    raise InputError(f"platform file {name!r} not found {where}{hint} (shipped: "
                     f"{', '.join(shipped) or 'none'})", path=path)


def _is_file(p: Path) -> bool:
    """``p.is_file()``, False where the name is too long or not allowed to be looked at."""
    try:
        return p.is_file()
    except OSError:
        return False


def _not_a_file(paths: list[Path], name: str, path: tuple) -> None:
    """Refuse a platform path that is there but is no readable file: a directory, a device or
    a link loop had been "not found", beside a name that ls shows (QA 10 M8)."""
    from clustersim.fsio import path_problem

    for c in paths:
        try:
            mode = os.stat(c).st_mode
        except OSError as exc:
            if os.path.lexists(c) or exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                raise InputError(f"platform file {name!r}: {path_problem(exc)}; give a "
                                 f"YAML file", path=path) from None
            continue
        what = ("a directory" if stat.S_ISDIR(mode) else
                "not a regular file (a device, FIFO or socket)" if not stat.S_ISREG(mode)
                else None)
        if what is not None:
            raise InputError(f"platform file {name!r} is {what}; give a YAML file", path=path)


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = dict(copy.deepcopy(dict(base)))
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def _in_file(exc: InputError, pfile: Path, file_raw: Any, scenario_file: str | None
             ) -> InputError:
    """An error inside the platform file: its file, line and field, and the scenario that
    named it."""
    sub = exc.path[1:] if exc.path[:1] == ("platform",) else exc.path
    line = exc.line if exc.line is not None else line_of(file_raw, sub)
    return InputError(exc.message + named_by(scenario_file), file=_shown(pfile),
                      path=exc.path, line=line)


def named_by(scenario_file: str | None) -> str:
    """The end of a platform file's error that names the scenario which brought the file in
    (empty without one).  Public so that ``clustersim sweep`` can tell a platform file's
    error from the scenario's own and say which sweep point named the file instead."""
    return f" (platform file of scenario {scenario_file})" if scenario_file else ""


def _shown(p: Path) -> str:
    """The file as the user would write it: relative to the working directory when inside."""
    try:
        return str(p.resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(p)


def parse_platform(raw: Any, base: Path | None, catalog: Catalog,
                   scenario_file: str | None) -> tuple[Any, dict[str, Any]]:
    """Build the scenario's platform; returns it and the merged raw description."""
    from clustersim.platform.describe import build_platform

    path = ("platform",)
    if raw is None:
        raise InputError("is required (a file in topologies/ or an inline description)",
                         path=path)
    overrides: Mapping[str, Any] = {}
    pfile: Path | None = None
    if isinstance(raw, str):
        pfile = resolve_platform_file(raw, base, path)
    elif isinstance(raw, Mapping):
        if "file" in raw:
            pfile = resolve_platform_file(as_str(raw["file"], (*path, "file")), base,
                                          (*path, "file"))
            overrides = {k: v for k, v in raw.items() if k != "file"}
        else:
            overrides = raw
    else:
        raise InputError("must be a platform file name or a mapping", path=path)
    file_raw: Any = None
    if pfile is not None:
        try:
            file_raw = load_yaml(pfile, what="platform file")
            if not isinstance(file_raw, Mapping):
                raise InputError("a platform file must hold a mapping (topology: ..., ...)",
                                 line=getattr(file_raw, "line", 1))
            lines = getattr(file_raw, "key_lines", {})
            file_raw = LineDict(file_raw)  # a copy that keeps the lines of the file
            file_raw.line, file_raw.key_lines = 1, dict(lines)
            # a platform file may carry its own catalog extensions
            # (read before it is popped: an error in it had been cited at line 1, QA 10 M10)
            catalog = catalog.extended(file_raw.get("catalog"))
            file_raw.pop("catalog", None)
        except InputError as exc:
            raise _in_file(exc, pfile, file_raw, scenario_file) from None
        merged = _deep_merge(file_raw, overrides)
    else:
        merged = dict(overrides)
    try:
        platform = build_platform(merged, catalog, path)
    except InputError as exc:
        sub = exc.path[1:] if exc.path[:1] == ("platform",) else exc.path
        if pfile is not None and not _given_in_scenario(overrides, sub):
            raise _in_file(exc, pfile, file_raw, scenario_file) from None
        raise
    return platform, merged


def _given_in_scenario(overrides: Mapping[str, Any], sub: tuple) -> bool:
    """Whether the scenario's overrides gave the field at ``sub`` (a path inside
    ``platform``) - then the scenario's line is the place to fix it; otherwise the value is
    the platform file's.

    Why a walk down the path and not its first key: the overrides merge into the file's
    mappings key by key (:func:`_deep_merge`), so a scenario that sets ``node:
    {intersocket: ...}`` leaves ``node.sockets`` the file's, and an error in it reported at
    the scenario's ``node:`` line sent the user to a line without the value.  A value that
    is not a mapping (a list, a scalar) replaces the file's whole, so everything under it is
    the scenario's; an error about the platform as a whole (no path) or a mapping both give
    stays with the scenario when it gave anything there, as it could be either's."""
    if not sub:
        return bool(overrides)
    node: Any = overrides
    for key in sub:
        if not isinstance(node, Mapping):
            return True
        if key not in node:
            return False
        node = node[key]
    return True
