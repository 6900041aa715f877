"""Where the shipped platform and scenario files are, in a checkout and once installed.

In the repository they are ``topologies/`` and ``scenarios/`` at the top; a regular (wheel)
install carries copies as package data in ``clustersim/_shipped/`` (``setup.py`` puts them
there), because a wheel holds packages only.  Both places are searched, the checkout first, so
that ``clustersim predict knl_4253`` works from any directory and an editable install sees the
files being edited.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["shipped_roots", "shipped_dir", "shipped_names", "find_shipped", "scenario_path"]

_PACKAGE = Path(__file__).resolve().parent
KINDS = ("topologies", "scenarios")


def shipped_roots() -> list[Path]:
    """Folders holding ``topologies/`` and ``scenarios/``: the checkout, then the package data.
    A scenario's ``platform: topologies/x.yaml`` resolves against these."""
    return [r for r in (_PACKAGE.parent, _PACKAGE / "_shipped") if (r / "topologies").is_dir()]


def shipped_dir(kind: str) -> Path | None:
    """The first folder of ``kind`` ("topologies" or "scenarios"), or None if none shipped."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    for root in shipped_roots():
        if (root / kind).is_dir():
            return root / kind
    return None


def shipped_names(kind: str) -> list[str]:
    """The names (file stems) of the shipped files of ``kind``, sorted."""
    d = shipped_dir(kind)
    return sorted(p.stem for p in d.glob("*.yaml")) if d is not None else []


def find_shipped(kind: str, name: str) -> Path | None:
    """The shipped file called ``name`` (with or without ``.yaml``), if there is one."""
    d = shipped_dir(kind)
    if d is None or Path(name).name != name or name in ("", ".", ".."):
        return None  # only bare names: a path means the user's own file
    f = d / (name if name.endswith(".yaml") else f"{name}.yaml")
    return f if f.is_file() else None


def scenario_path(arg: str) -> str:
    """A scenario argument as a file path: an existing file as given, else a bare name of a
    shipped scenario (``knl_4253``), else unchanged (the loader then says it is missing)."""
    try:
        if Path(arg).exists():
            return arg
    except OSError:  # a name too long: the loader says what is wrong with it (QA 10 H4)
        return arg
    found = find_shipped("scenarios", arg)
    if found is not None:
        return str(found)
    hint = _missing_hint(arg)
    if hint:
        from clustersim.errors import InputError

        raise InputError(f"cannot read scenario file: file not found{hint}", file=arg)
    return arg


def _missing_hint(arg: str) -> str:
    """What to say beside "file not found" for a scenario argument that names nothing: the
    shipped scenario it misspells, or - for a path into ``scenarios/`` that is not there
    from this folder - that the shipped one goes by its bare name from any folder.  Empty
    when the argument exists in any form (a dangling link, a folder: the loader says).

    Why: a misspelled name (``knl_4235``) got a bare "file not found", where every other
    name of the tool gets its closest match and the allowed values (QA 18b)."""
    import os

    try:
        if os.path.lexists(arg):
            return ""
    except (OSError, ValueError):
        return ""
    from clustersim.errors import did_you_mean

    names = shipped_names("scenarios")
    stem = Path(arg).name.removesuffix(".yaml")
    if stem in names and Path(arg).name != arg:
        return (f" here; the shipped scenario {stem!r} is found by its bare name from any "
                f"folder: give {stem}")
    close = did_you_mean(stem, names)
    if close or Path(arg).name == arg:
        return f"{close or ' and no shipped scenario has that name'} (clustersim list scenarios)"
    return ""
