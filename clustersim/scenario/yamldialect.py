"""The YAML dialect of every input file: the YAML 1.2 core schema, JSON types only.

Why: PyYAML's SafeLoader reads YAML 1.1, where ``no`` is false (``optimizer: no`` was
"unknown optimizer 'False'"), ``1:04`` is the base-60 number 64 (``batch_per_worker: 1:04``
ran 64 per worker), ``010`` is the octal 8, ``2026-11-29`` is a date object, and explicit
tags build sets, ordered pairs, bytes and datetimes - a set echoed in a message printed its
items in string-hash order, different on each run.  What a user means by a plain value must
not depend on a YAML version few people know, so the loader follows YAML 1.2's core schema
(what JSON means by a value, and what current YAML libraries read) and refuses the rest:

* null: ``~``, ``null``, ``Null``, ``NULL`` or nothing;
* booleans: ``true``, ``True``, ``TRUE``, ``false``, ``False``, ``FALSE`` only - ``yes``,
  ``no``, ``on``, ``off``, ``y``, ``n`` are strings;
* integers: ``42``, ``-7``, ``0o17`` (octal), ``0x1F`` (hex); a leading zero is decimal
  (``010`` is 10, as in YAML 1.2 - YAML 1.1 read 8); no ``0b`` binary and no base 60
  (``1:04`` is a string).  One liberty: decimal digits may be grouped, ``1_000`` (YAML 1.1
  and Python read it so; YAML 1.2 core would make it a string that no one means) - one
  ``_`` between two digits, as Python writes it: ``1_`` and ``1__0`` are strings;
* floats: ``1.5``, ``1e9``, ``.5``, ``-.inf``, ``.nan`` (the loader then refuses the last
  two: numbers must be finite);
* everything else plain is a string, dates (``2026-11-29``) included;
* explicit ``!!set``, ``!!omap``, ``!!pairs``, ``!!binary``, ``!!timestamp`` values are
  refused at their line with what to write instead; ``!!int``, ``!!float`` and ``!!bool``
  accept only the forms above.  ``<<`` merge keys still work;
* a string may not hold control characters written as escapes (``"\\e[2J"``, ``"\\x07"``):
  a name echoed to the terminal would clear or recolour it (raw ones are refused earlier).

A field that expects a number or a boolean and receives one of the strings YAML 1.1 read
otherwise names the rule (:func:`dialect_hint`), so the change explains itself.
Kept apart from :mod:`.yamlio` (limits and line numbers) because this is one decision, with
its own tests (tests/test_yaml_dialect.py).
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

from clustersim.errors import InputError

__all__ = ["install", "dialect_hint", "bool_hint", "YAML11_BOOLS"]

_T = "tag:yaml.org,2002:"
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
# decimal digits may be grouped with "_" (1_000): YAML 1.1 and Python read it so, and no one
# means a string by it (YAML 1.2 core would read a string - the one liberty taken)
# (one "_" between two digits: "1_" and "1__0" are strings, not 1 and 10)
_INT = re.compile(r"^(?:[-+]?[0-9](?:_?[0-9])*|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9](?:_?[0-9])*(?:\.(?:[0-9](?:_?[0-9])*)?)?)"
                    r"(?:[eE][-+]?[0-9]+)?$"
                    r"|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$")
_INT64 = 2**63
#: digits of the longest decimal that can be a 64-bit integer (a longer one is refused before
#: int() reads it: Python refuses strings of more than 4,300 digits with a ValueError)
_INT64_DIGITS = len(str(_INT64))

#: the words YAML 1.1 read as booleans and YAML 1.2 reads as strings
YAML11_BOOLS = frozenset(w for base in ("yes", "no", "on", "off", "y", "n")
                         for w in (base, base.capitalize(), base.upper()))
# what YAML 1.1 also read as numbers: base 60, 0b binary
_SEXAGESIMAL = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_BINARY = re.compile(r"^[-+]?0b[01_]+$")

#: explicit tags SafeLoader builds into non-JSON values -> (what they build, what to write)
_REFUSED = {
    "set": ("sets, which have no order", "a list, like [a, b]"),
    "omap": ("ordered mappings", "a mapping, like {a: 1, b: 2} (its order is kept)"),
    "pairs": ("lists of pairs", "a mapping, like {a: 1, b: 2}, or a list of mappings"),
    "binary": ("binary data", "a string"),
    "timestamp": ("dates and times", "a string, like '2026-11-29'"),
}


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _refuse(tag: str) -> Any:
    what, instead = _REFUSED[tag]

    def construct(loader: Any, node: yaml.Node) -> Any:
        raise InputError(f"!!{tag} values ({what}) are not read: input files hold JSON "
                         f"types only (strings, numbers, true/false, null, lists, "
                         f"mappings); write {instead}", line=_line(node))
    return construct


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int:
    text = str(node.value)
    if not _INT.match(text):  # an explicit !!int in a YAML 1.1 form (1:04, 0b101, 1_000)
        raise InputError(f"!!int {text[:40]!r} is not a YAML 1.2 integer (42, -7, 0o17, "
                         f"0x1F)", line=_line(node))
    out_of_range = InputError(f"integer {text[:40]!r} is out of range (a 64-bit integer, "
                              f"|n| < 2**63)", line=_line(node))
    if text.startswith(("0o", "0x")):
        value = int(text[2:], 8 if text[1] == "o" else 16)  # no digit limit in base 8, 16
    else:
        digits = text.replace("_", "").lstrip("+-").lstrip("0") or "0"
        if len(digits) > _INT64_DIGITS:
            raise out_of_range
        value = int(digits, 10)  # "010" is 10: YAML 1.2 has no such octal
        value = -value if text.startswith("-") else value
    if not -_INT64 <= value < _INT64:
        raise out_of_range
    return value


def _construct_float(loader: Any, node: yaml.ScalarNode) -> float:
    text = str(node.value)
    if _INT.match(text):  # !!float 3 (or 0x10) is the number 3.0
        return float(_construct_int(loader, node))
    if not _FLOAT.match(text):
        raise InputError(f"!!float {text[:40]!r} is not a YAML 1.2 number (1.5, 1e9, .5)",
                         line=_line(node))
    special = text.lstrip("+-").lower() in (".inf", ".nan")
    value = math.nan if special else float(text.replace("_", ""))
    if not math.isfinite(value):
        raise InputError(f"number {text[:40]!r} is not finite (NaN and infinity are not "
                         f"allowed; give a finite number)", line=_line(node))
    return value


#: control characters a string may not hold once its escapes are read (tab and newlines may)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _construct_str(loader: Any, node: yaml.ScalarNode) -> str:
    text = loader.construct_scalar(node)
    m = _CONTROL.search(text)
    if m is not None:  # "\e[2J" printed in a header clears the terminal (QA 16c M6)
        raise InputError(f"control character \\x{ord(m.group()):02x} in a string (written "
                         f"as an escape in double quotes): strings are plain text; allowed: "
                         f"printable characters, tabs and newlines", line=_line(node))
    return str(text)


def _construct_bool(loader: Any, node: yaml.ScalarNode) -> bool:
    text = str(node.value)
    if not _BOOL.match(text):
        raise InputError(f"!!bool {text[:40]!r} is not a YAML 1.2 boolean (true or false)",
                         line=_line(node))
    return text.lower() == "true"


def install(loader: type) -> None:
    """Make ``loader`` (a SafeLoader subclass) read plain scalars by the YAML 1.2 core schema
    and refuse the tags that build non-JSON values.  Replaces, not adds to, the YAML 1.1
    resolvers SafeLoader inherits: a resolver added on top of them (as the float one once
    was) never sees what an earlier 1.1 rule took (``1:04`` as an int, ``no`` as false)."""
    loader.yaml_implicit_resolvers = {}
    loader.add_implicit_resolver(_T + "null", _NULL, ["~", "n", "N", ""])
    loader.add_implicit_resolver(_T + "bool", _BOOL, list("tTfF"))
    loader.add_implicit_resolver(_T + "int", _INT, list("-+0123456789"))  # before float
    loader.add_implicit_resolver(_T + "float", _FLOAT, list("-+0123456789."))
    loader.add_implicit_resolver(_T + "merge", re.compile(r"^(?:<<)$"), ["<"])
    loader.add_constructor(_T + "int", _construct_int)
    loader.add_constructor(_T + "float", _construct_float)
    loader.add_constructor(_T + "bool", _construct_bool)
    loader.add_constructor(_T + "str", _construct_str)
    for tag in _REFUSED:
        loader.add_constructor(_T + tag, _refuse(tag))


def dialect_hint(value: Any) -> str:
    """Why a string where a number was expected may surprise its writer (YAML 1.1 read it as
    a number), as a parenthesis to append to the message; empty for any other value."""
    if not isinstance(value, str):
        return ""
    text = value.strip()
    if _SEXAGESIMAL.match(text):
        return f" (YAML 1.2 has no base-60 numbers: {text[:20]!r} is a string)"
    if _BINARY.match(text):
        return f" (YAML 1.2 has no 0b binary numbers: write {int(text.replace('_', ''), 0)})"
    return ""


def bool_hint(value: Any) -> str:
    """`` (YAML 1.2: yes/no/on/off are strings)`` for a word YAML 1.1 read as a boolean,
    empty otherwise: what a true/false field adds to its message."""
    if isinstance(value, str) and value in YAML11_BOOLS:
        return " (YAML 1.2: yes/no/on/off are strings)"
    return ""
