"""Changing fields of a raw scenario: ``--set a.b=value``, ``variants[].set``, ``sweep.at``.

Why values are set as parsed objects and not re-serialised: a variant's values come from the
file and keep their lines, so an error in one points at the line that holds it; a ``--set``
value is marked with the ``--set`` item it came from, so its error names that item instead of a
line of the file that does not hold the value.  ``--set`` values are read with the same loader
and limits as files (YAML 1.2 numbers: ``--set run.iterations=1e3`` is a number).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from clustersim.errors import InputError, format_path
from clustersim.scenario.fields import Section, as_list, as_str
from clustersim.scenario.rateunits import check_set
from clustersim.scenario.yamlio import LineDict, load_yaml_text

__all__ = ["apply_overrides", "key_parts", "option_item", "named_at_set", "set_fields",
           "set_origin", "parse_variants", "with_points"]

#: the deepest dotted field a scenario has is 4 parts (platform.catalog.devices.x)
MAX_KEY_PARTS = 12

#: the scenario parser (raw mapping, file) -> Scenario; passed in to avoid an import cycle
Parse = Callable[[Any, "str | None"], Any]


def key_parts(dotted: Any, origin: str | None = None) -> list[str]:
    """The parts of a dotted field name, each stripped of the spaces around it.

    One rule for every part (QA 16c LOW): ``--set ' run . seed =1'`` is ``run.seed``, as
    ``'run.seed =1'`` was - it had stripped the ends of the whole key only, so the first
    read as the section ``'run '``.  An empty part is refused: ``run..seed`` had been read
    as ``run.seed`` with the typo dropped in silence."""
    text = str(dotted)
    parts = [p.strip() for p in text.split(".")]
    if not any(parts):
        raise InputError(f"needs a field name like run.seed, got {text[:80]!r}",
                         origin=origin)
    if not all(parts):
        raise InputError(f"the field name {text[:80]!r} has an empty part (two dots in a row, "
                         f"or a dot at an end); allowed: names joined by single dots, like "
                         f"run.seed", origin=origin)
    return parts


def _put(raw: Any, dotted: str, value: Any, origin: str | None) -> None:
    parts = key_parts(dotted, origin)
    if len(parts) > MAX_KEY_PARTS:
        raise InputError(f"a field path has at most {MAX_KEY_PARTS} parts (like "
                         f"platform.node.devices), not {len(parts)}", origin=origin)
    node = raw
    for i, p in enumerate(parts):
        last = i == len(parts) - 1
        if i == 0 and p == "platform" and not last and isinstance(node.get(p), str):
            # a platform named by its file: a field of it changes that file's field
            # ({file: name, field: value}), as a sweep's platform.* axis does - not a
            # one-field inline platform missing its topology
            named = LineDict(file=node[p])
            named.key_lines = {}
            named.line = getattr(node, "key_lines", {}).get(p, getattr(node, "line", None))
            node[p] = named
        if not last and isinstance(node.get(p), dict):
            node = node[p]
            continue
        if not last and isinstance(node.get(p), list):
            # compare.1.name had replaced the whole list by {'1': {name: ...}} (QA 16c M5)
            whole = ".".join(parts[:i + 1])
            how = f"--set '{whole}=[...]'" if origin else f"'{whole}: [...]'"
            raise InputError(f"is a list: a dotted field cannot index into it "
                             f"({'.'.join(parts)}); give the whole list, like {how}",
                             origin=origin, path=tuple(parts[:i + 1]))
        if origin is not None:
            node.set_from = {**node.set_from, p: origin}
        if last:
            node[p] = value
        else:
            node[p] = LineDict()
            node[p].key_lines = {}
            node = node[p]


def set_fields(raw: Mapping[str, Any], sets: Mapping[Any, Any]) -> Any:
    """A deep copy of ``raw`` with ``{dotted.field: value}`` applied (values already parsed)."""
    out = copy.deepcopy(raw)
    for key, value in sets.items():
        _put(out, key, copy.deepcopy(value), None)
    return out


def apply_overrides(raw: Any, sets: Sequence[str]) -> Any:
    """Apply ``--set a.b.c=value`` overrides (value parsed as YAML) to a raw scenario."""
    raw = copy.deepcopy(raw)
    for item in sets:
        origin = _origin(item)
        try:
            item.encode("utf-8")
        except UnicodeEncodeError as exc:  # a byte of argv that was not UTF-8
            bad = ord(item[exc.start]) - 0xDC00
            raise InputError(f"not UTF-8 text (byte 0x{bad:02x} at position {exc.start + 1}):"
                             " write the item in UTF-8", origin=origin) from None
        if "=" not in item:
            raise InputError(f"--set needs KEY=VALUE, got {item[:120]!r}")
        key, text = item.split("=", 1)
        key = ".".join(key_parts(key, origin))  # spaces around '=' and the dots go
        value = None
        if text.strip():
            try:
                value = load_yaml_text(text)
            except InputError as exc:
                # the field inside the value too: `catalog={links: {x: {bandwidth: 1.4}}}`
                # had been refused at `catalog` alone (audit 22)
                raise InputError(f"the value {text[:80]!r} cannot be used: {exc.message}",
                                 origin=origin,
                                 path=(*key.split("."), *(exc.path or ()))) from None
            check_set(key, value, origin)  # --set x.bandwidth=1.4: a rate needs its unit
        _put(raw, key, value, origin)
    return raw


class OptionItem(str):
    """A ``--set`` item written by a command-line option (``--seed -1`` is
    ``run.seed=-1``): an error in its value names the option the user typed - not
    ``(--set run.seed=-1)``, which was never on the command line."""

    origin: str

    def __new__(cls, item: str, origin: str) -> OptionItem:
        self = super().__new__(cls, item)
        self.origin = origin
        return self

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]
        # pickled with its origin (a pool, Dask or MPI worker gets the sets)
        return str(self), self.origin


def option_item(field: str, flag: str, value: object) -> str:
    """The ``--set`` item of ``flag value`` (``--seed 3`` -> ``run.seed=3``), marked so that
    its errors name ``flag value``."""
    return OptionItem(f"{field}={value}", f"{flag} {value}")


def set_origin(sets: Sequence[str], path: Sequence[Any]) -> str | None:
    """The origin of the last ``--set`` item that replaced ``path`` or a section above it
    (``--set uncertain=~`` for ``uncertain``), or None: an error about that value must name
    the item, not a line of the file that no longer holds it."""
    want = [str(p) for p in path]
    found = None
    for item in sets:
        key = item.split("=", 1)[0] if "=" in item else ""
        parts = [p.strip() for p in key.split(".")]
        if all(parts) and parts == want[:len(parts)]:
            found = _origin(item)
    return found


def named_at_set(exc: InputError, sets: Sequence[str]) -> InputError:
    """``exc`` located at the ``--set`` item that replaced its field, if one did: a check
    that reads the file again (``nothing is uncertain`` after ``--set uncertain=~``) had
    named the file's ``uncertain:`` line, which the user's value had replaced."""
    origin = None if exc.origin else set_origin(sets, exc.path)
    return exc.located(origin=origin) if origin else exc


def _origin(item: str) -> str:
    """Where a ``--set`` item's value came from, for a message: the option that wrote it
    (``--seed -1``: the user typed no ``--set``), else the item, cut and said so."""
    shown = item.replace("\n", "\\n").replace("\r", "\\r")  # one line (QA 19 L4)
    return getattr(item, "origin", None) or \
        f"--set {shown if len(shown) <= 120 else shown[:119] + '…'}"


def parse_variants(raw: Mapping[str, Any], file: str | None, parse: Parse
                   ) -> tuple[tuple[str, Any], ...]:
    """The ``variants:`` list: (label, the scenario with that variant's fields set)."""
    if raw["variants"] == []:  # QA 19 L8: say how to drop them
        raise InputError("must not be empty: list the variants, or set variants: null to "
                         "run without any", path=("variants",))
    items = as_list(raw["variants"], ("variants",), lambda v, p: (v, p), allow_scalar=False)
    out = []
    plain = {k: v for k, v in raw.items() if k != "variants"}
    # the base case is reported under its own label beside the variants: a variant of the
    # same label (or two variants of one) would give two rows of one name, which predict
    # and sweep refuse only after the parse, naming no line (why it is checked here)
    base = raw.get("label") if isinstance(raw.get("label"), str) else "base"
    taken = {base: "the base case's label (top-level 'label', default 'base')"}
    for v, path in items:
        sv = Section(v, path, ("label", "set"))
        label = sv.get("label", as_str)
        if label in taken:
            raise InputError(f"label {label!r} is already {taken[label]}: give each variant "
                             "a label of its own", path=(*path, "label"))
        taken[label] = f"variant {len(out) + 1}'s label"
        sets = sv.get("set")
        if not isinstance(sets, Mapping) or not sets:
            raise InputError("must be a mapping of dotted.field: value", path=(*path, "set"))
        try:  # a misspelled key (run..seed) names the variant's set: and its line
            vraw = set_fields(plain, sets)
        except InputError as exc:
            raise InputError(exc.message, path=(*path, "set")) from None
        try:
            out.append((label, with_points(parse(vraw, file), vraw, file, parse)))
        except InputError as exc:
            raise InputError(f"in variant {label!r}: {exc.message}", path=(*path, "set"),
                             line=exc.line) from None
    return tuple(out)


def with_points(scn: Any, raw: Any, file: str | None, parse: Parse) -> Any:
    """Attach the scenarios of the sweep points that have ``sweep.at`` overrides.

    Why per point: a measured setup can differ at one scale in a way the model does not
    produce by itself (Theano-MPI's VGG16-16 row: compute per GPU 23% slower at 8 GPUs than
    at 1-4); writing that point's measured efficiency beside the sweep keeps it visible
    instead of folding it into every point.
    """
    if scn.sweep is None or not scn.sweep.at:
        return scn
    plain = {k: v for k, v in raw.items() if k != "variants"}
    points = []
    for w, sets in scn.sweep.at.items():
        praw = set_fields(plain, sets)
        try:
            points.append((w, parse(praw, file)))
        except InputError as exc:
            where = f"{format_path(exc.path)}: " if exc.path else ""
            raise InputError(f"at {w} workers: {where}{exc.message}", path=("sweep", "at", w),
                             line=exc.line) from None
    return replace(scn, points=tuple(sorted(points, key=lambda p: p[0])))
