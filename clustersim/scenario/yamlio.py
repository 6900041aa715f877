"""YAML loading that remembers where every value came from.

Why: "platform.links[3].bandwidth must be positive" is good; "cluster.yaml:41:
platform.links[3].bandwidth must be positive" is better - the user jumps straight to it.
The loader builds ordinary dicts and lists (subclasses, so every consumer can treat them as
plain data) that also carry the line of each key and item.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from clustersim._yaml import SafeLoader
from clustersim.errors import InputError

__all__ = ["LineDict", "LineList", "load_yaml", "line_of"]


class LineDict(dict):
    """A dict that knows the (1-based) line of itself and of each key."""

    line: int | None = None
    key_lines: dict[Any, int]


class LineList(list):
    """A list that knows the line of itself and of each item."""

    line: int | None = None
    item_lines: list[int]


class _Loader(SafeLoader):
    pass


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise InputError("mapping keys must be plain values", line=key_node.start_mark.line + 1)
        if key in out:
            raise InputError(f"duplicate key {key!r}", line=key_node.start_mark.line + 1)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    out = LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_yaml(path: str | Path, *, what: str = "file") -> Any:
    """Parse a YAML file; syntax errors and missing files become :class:`InputError`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} not found", file=str(path)) from None
    except IsADirectoryError:
        raise InputError(f"{what} is a directory, expected a YAML file", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what}: {exc}", file=str(path)) from None
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - SafeLoader subclass
    except InputError as exc:
        raise exc.located(file=str(path)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        msg = f"YAML syntax error: {exc.problem or exc.context}"
        raise InputError(msg, file=str(path), line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"YAML error: {exc}", file=str(path)) from None


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
