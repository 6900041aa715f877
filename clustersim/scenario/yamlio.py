"""YAML loading that remembers where every value came from.

Why: "platform.links[3].bandwidth must be positive" is good; "cluster.yaml:41:
platform.links[3].bandwidth must be positive" is better - the user jumps straight to it.
The loader builds ordinary dicts and lists (subclasses, so every consumer can treat them as
plain data) that also carry the line of each key and item.

Why the limits: a YAML file is input from anyone, and YAML can say a lot in a few bytes.  Nine
nested aliases ("billion laughs") expand a 600-byte file to 10^9 values; 300 nested brackets
exhaust Python's recursion.  Before anything is built we stream the parser's events once
(libyaml's parser is iterative, so this is safe on any input) and count what the document
would expand to - values, nesting depth, alias expansion - and refuse a file past the bounds
below with its line.  PyYAML has no such limits of its own, hence this hand-written pass.
Plain values follow the YAML 1.2 core schema, not PyYAML's YAML 1.1
(:mod:`clustersim.scenario.yamldialect`): ``1e9`` is a number as in JSON; only ``true`` and
``false`` are booleans (``yes``/``no``/``on``/``off`` are strings); ``0o17`` is octal and
``0x1F`` hex, while ``010`` is decimal 10 (YAML 1.1 read it as octal 8); ``1:04`` (base 60)
and dates are strings; ``!!set``, ``!!omap``, ``!!pairs``, ``!!binary`` and ``!!timestamp``
are refused, so every value read is a JSON type; a ``%YAML`` directive other than 1.2 is
refused (the file would be read otherwise than its author declared).  Numbers must be finite and integers fit in
64 bits; keys must be unique; tabs, NUL bytes and empty files get clear errors.  A rate
(bandwidth, peak) must carry its unit (:mod:`clustersim.scenario.rateunits`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from clustersim._yaml import SafeLoader
from clustersim.errors import InputError
from clustersim.scenario.inputs import note_input
from clustersim.scenario.rateunits import check_document
from clustersim.scenario.yamldialect import install

__all__ = ["LineDict", "LineList", "load_yaml", "load_yaml_text", "line_of", "origin_of", "value_at",
           "files_read", "MAX_BYTES", "MAX_DEPTH", "MAX_VALUES"]

#: largest YAML file read (the biggest shipped file is a few kB; a catalog a few tens)
MAX_BYTES = 1 << 20
#: deepest nesting of mappings and lists (shipped files nest at most 6 deep)
MAX_DEPTH = 48
#: most values (scalars, mappings, lists) a document may hold once aliases are expanded
MAX_VALUES = 200_000
#: the open :func:`files_read` records
_RECORDS: list[dict[str, str]] = []


@contextlib.contextmanager
def files_read() -> Iterator[dict[str, str]]:
    """``{resolved path: SHA-256 of the bytes read}`` of every file :func:`load_yaml` reads
    inside the block.

    Why: a scenario's result depends on the files it names (its platform file, a constants
    file, a calibration profile), and a cache of results must know their contents, not
    their names - the digest is of the very bytes parsed, so a file edited afterwards cannot
    be mistaken for the one read."""
    seen: dict[str, str] = {}
    _RECORDS.append(seen)
    try:
        yield seen
    finally:  # by identity: list.remove would take the first *equal* record (an outer one)
        del _RECORDS[next(i for i, r in enumerate(_RECORDS) if r is seen)]


def note_files(files: Mapping[str, str]) -> None:
    """Record ``files`` (``{path: digest}`` as an earlier :func:`files_read` block saw them)
    in every open block: a memo handing out an earlier parse reads no file itself."""
    for seen in _RECORDS:
        seen.update(files)
    any(map(note_input, files))  # the command's inputs too (clustersim.scenario.inputs)


def files_changed(files: Mapping[str, str]) -> bool:
    """Does any of ``files`` hold other bytes now than the digest recorded (or is it gone)?
    Why: a per-process memo keyed by names (a long-lived Dask worker's, a notebook's) had
    handed out the platform of a file edited since (audit B H3)."""
    return any(file_digest(path) != digest for path, digest in files.items())


def file_digest(path: str | Path | None) -> str | None:
    """The file's SHA-256, read again only when its size or modification time changed;
    None when there is no such file."""
    st = None
    with contextlib.suppress(OSError):
        st = os.stat(path) if path is not None else None
    return None if st is None else _digest_at(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _digest_at(path: str, _mtime_ns: int, _size: int) -> str | None:
    """The file's SHA-256, read once per size and modification time (a memo hit per point
    had read and hashed its platform file every time)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


class LineDict(dict):
    """A dict that knows the (1-based) line of itself and of each key, and which keys were
    set from elsewhere (``set_from[key] = "--set a.b=1"``) rather than read from the file."""

    line: int | None = None
    key_lines: dict[Any, int]
    set_from: dict[Any, str] = {}  # shared empty default; set per instance, never mutated


class LineList(list):
    """A list that knows the line of itself and of each item."""

    line: int | None = None
    item_lines: list[int]


class _Loader(SafeLoader):
    pass


install(_Loader)  # YAML 1.2 core schema: see clustersim.scenario.yamldialect
_MERGE = "tag:yaml.org,2002:merge"


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    # flatten_mapping puts the pairs merged in by "<<" first (of a list of merges, the last
    # first) and the mapping's own pairs after them: a key written beside "<<" overrides a
    # merged one, and of two merges the first wins (YAML's merge-key rules); only a key
    # written twice in the mapping itself is a duplicate
    own = sum(1 for k, _ in node.value if k.tag != _MERGE)
    loader.flatten_mapping(node)
    merged = len(node.value) - own
    written: set[Any] = set()
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for i, (key_node, value_node) in enumerate(node.value):
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise InputError("mapping keys must be plain values", line=key_node.start_mark.line + 1)
        if key in written:
            raise InputError(f"duplicate key {_key_text(key)}", line=key_node.start_mark.line + 1)
        if i >= merged:
            written.add(key)
        try:
            out[key] = loader.construct_object(value_node, deep=True)
        except InputError as exc:  # a bad number: name its field as well as its line
            raise exc.located(prefix=(key,)) from None
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _key_text(key: Any) -> str:
    """A key as YAML writes it: ``'label'``, ``true``, ``null``, ``3``."""
    if key is None or isinstance(key, bool):
        return "null" if key is None else str(key).lower()
    return repr(key) if isinstance(key, str) else str(key)


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    out = LineList()
    for i, child in enumerate(node.value):
        try:
            out.append(loader.construct_object(child, deep=True))
        except InputError as exc:
            raise exc.located(prefix=(i,)) from None
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def _check_events(text: str) -> None:
    """Refuse documents that nest too deep or expand past :data:`MAX_VALUES` through aliases.

    One pass over the parser's events: the size and depth of every anchored value are
    recorded when it closes, so an alias costs what its anchor holds without expanding it.
    """
    depth = 0
    values = 0
    open_: list[tuple[str | None, int, int]] = []  # (anchor, values before, depth then)
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (values, depth) of its value
    max_below: list[int] = [0]  # per open collection: deepest level reached beneath it
    for ev in yaml.parse(text, Loader=_Loader):
        line = ev.start_mark.line + 1
        if isinstance(ev, yaml.AliasEvent):
            if ev.anchor not in anchors:
                raise InputError(f"alias *{ev.anchor} names no anchor defined before it",
                                 line=line)
            n, d = anchors[ev.anchor]
            values += n
            max_below[-1] = max(max_below[-1], depth + d)
        elif isinstance(ev, yaml.ScalarEvent):
            values += 1
            if ev.anchor is not None:
                anchors[ev.anchor] = (1, 0)
            max_below[-1] = max(max_below[-1], depth)
        elif isinstance(ev, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            values += 1
            depth += 1
            if depth > MAX_DEPTH:
                raise InputError(f"nested more than {MAX_DEPTH} levels deep (lists and "
                                 f"mappings inside each other); flatten the file", line=line)
            open_.append((ev.anchor, values - 1, depth))
            max_below.append(depth)
        elif isinstance(ev, yaml.DocumentStartEvent) and ev.version not in (None, (1, 2)):
            raise InputError(_directive(".".join(map(str, ev.version))), line=line)
        elif isinstance(ev, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor, before, at = open_.pop()
            below = max_below.pop()
            max_below[-1] = max(max_below[-1], below)
            if anchor is not None:
                anchors[anchor] = (values - before, below - at + 1)
            depth -= 1
        else:
            continue
        if values > MAX_VALUES:
            raise InputError(f"the document expands to more than {MAX_VALUES:,} values "
                             f"(aliases included); a scenario or platform is far smaller",
                             line=line)
        if max_below[-1] > MAX_DEPTH:
            raise InputError(f"nested more than {MAX_DEPTH} levels deep once aliases are "
                             f"expanded; flatten the file", line=line)


def _directive(version: str) -> str:
    """Why a ``%YAML`` directive other than 1.2 is refused: PyYAML ignores it, and the file
    is read as YAML 1.2 whatever it says - a file declaring 1.1 would have ``010`` read as
    10 and ``yes`` as a string, not as the 8 and true its author declared."""
    return (f"a '%YAML {version}' directive: clustersim reads every file as YAML 1.2 "
            f"(010 is 10, yes is a string); remove the directive (or write %YAML 1.2)")


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


def _check_text(text: str) -> None:
    """Plain-text problems YAML reports badly (or not at all): NUL bytes and other binary
    junk, an empty document, a tab where indentation is expected."""
    m = _CONTROL.search(text)
    if m is not None:
        raise InputError(f"control character {m.group()!r} found: not a text YAML file",
                         line=text.count("\n", 0, m.start()) + 1)
    if not text.strip() or all(not ln.strip() or ln.lstrip().startswith("#")
                               for ln in text.splitlines()):
        raise InputError("the file is empty (no YAML content)")
    for i, ln in enumerate(text.splitlines(), 1):
        stripped = ln.lstrip(" ")
        if stripped.startswith("\t"):
            raise InputError("a tab in the indentation: YAML indents with spaces only",
                             line=i)


def load_yaml_text(text: str, *, source: str | None = None) -> Any:
    """Parse YAML text under the same limits and rules as a file; errors name ``source``
    (a file name, or the ``--set`` item a value came from) and the line."""
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark is legal at the start of a YAML stream
    try:
        if len(text) > MAX_BYTES:
            raise InputError(f"larger than {MAX_BYTES // 1024} KiB; a scenario or platform "
                             f"file is a few kB")
        _check_text(text)
        _check_events(text)
        doc = yaml.load(text, Loader=_Loader)  # noqa: S506 - SafeLoader subclass
        check_document(doc)  # a rate needs its unit (bandwidth: 1.4 is refused)
        return doc
    except InputError as exc:
        raise exc.located(file=source) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        msg = f"YAML syntax error: {exc.problem or exc.context}"
        if "incompatible YAML document" in str(exc.problem):  # %YAML 2.0
            found = re.search(r"^%YAML[ \t]+(\S+)", text, re.MULTILINE)
            msg = _directive(found.group(1)[:20] if found else "?")
        if "another document" in str(exc.problem):
            msg = ("a second YAML document starts here (a '---' line after the first "
                   "document): a file holds one document; remove the '---' and what follows "
                   "it, or merge the two")
        raise InputError(msg, file=source, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"YAML error: {str(exc)[:200]}", file=source) from None


def _short(path: str | Path) -> str:
    """A path fit for a message: a 5,000-character name is cut, not echoed whole."""
    text = str(path)
    return text if len(text) <= 200 else f"{text[:120]}...{text[-40:]} ({len(text)} characters)"


def load_yaml(path: str | Path, *, what: str = "file") -> Any:
    """Parse a YAML file; syntax errors and missing files become :class:`InputError`."""
    from clustersim.fsio import path_problem

    p = Path(path)
    try:
        # os.stat, not is_file()/exists(): those say False for a link loop, which was then
        # "file not found" beside a file that ls shows (QA 10 M8)
        mode = os.stat(p).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{what} is a directory, expected a YAML file", file=str(path))
        if not stat.S_ISREG(mode):
            raise InputError(f"{what} is not a regular file (a device, FIFO or socket); give "
                             f"a YAML file", file=str(path))
        with p.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        why = ("file not found" if not os.path.lexists(p)
               else "it is a symbolic link to a file that does not exist")
        raise InputError(f"cannot read {what}: {why}", file=_short(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {path_problem(exc)}", file=_short(path)) from None
    if len(data) > MAX_BYTES:
        raise InputError(f"{what} is larger than {MAX_BYTES // 1024} KiB; a scenario or "
                         f"platform file is a few kB", file=str(path))
    note_input(p)
    if _RECORDS:
        digest = hashlib.sha256(data).hexdigest()
        for seen in _RECORDS:
            seen[str(p.resolve())] = digest
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{what} is not UTF-8 text (byte {exc.start}); save it as UTF-8",
                         file=str(path), line=line) from None
    return load_yaml_text(text, source=str(path))


def value_at(root: Any, path: Sequence[Any], default: Any = None) -> Any:
    """The parsed value at ``path`` (mapping keys, list indices), ``default`` where the path
    leads nowhere: one walk for every check that reads a value back as written."""
    node = root
    for part in path:
        inside = (part in node if isinstance(node, Mapping) else
                  isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node))
        if not inside:
            return default
        node = node[part]
    return node


def origin_of(root: Any, path: Sequence[Any]) -> str | None:
    """Where the value at ``path`` came from when not from the file (a ``--set`` item).

    An error about a whole section ("the platform would have more than 16,384 devices")
    names a ``--set`` item that changed something inside it: that is what the user changed.
    """
    node = root
    for part in path:
        if isinstance(node, LineDict) and part in node:
            if part in node.set_from:
                return node.set_from[part]
            node = node[part]
        elif isinstance(node, LineList) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return None
    todo = [node]
    while todo:  # the subtree is a bounded document (MAX_VALUES)
        item = todo.pop()
        if isinstance(item, LineDict):
            if item.set_from:
                return next(iter(item.set_from.values()))
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return None


def line_of(root: Any, path: Sequence[Any]) -> int | None:
    """The line of the deepest node along ``path`` that we know a line for."""
    line = getattr(root, "line", None)
    node = root
    for part in path:
        if isinstance(node, LineDict) and part in node:
            line = node.key_lines.get(part, line)
            node = node[part]
        elif isinstance(node, LineList) and isinstance(part, int) and 0 <= part < len(node):
            line = node.item_lines[part]
            node = node[part]
        else:
            break
        inner = getattr(node, "line", None)
        if inner is not None and not isinstance(node, LineDict):
            line = inner
    return line
