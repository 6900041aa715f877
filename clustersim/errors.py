"""Errors that reach the user.

Bad input must end in *one* clear sentence that names the file, the field path and, where we
know it, the line - never a traceback.  Everything that can be blamed on the input raises
:class:`InputError`; the CLI turns it into that sentence and exit code 2.  Anything else is a
bug and is allowed to show its traceback (exit code 1).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["InputError", "RunFailed", "allowed_listing", "closest", "did_you_mean",
           "escape_controls", "format_path", "unknown_name", "yaml_text"]

PathPart = str | int

#: longest message printed: an error that echoes a value must not print megabytes
MAX_MESSAGE = 1000

#: C0 and C1 control characters (tab and newline kept): an escape sequence echoed from a
#: value (``name: "\\e[2J"``, a ``--set`` item) must not clear or recolour the terminal
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: an undecodable byte of argv (os.fsdecode's surrogateescape: 0xe9 -> U+DCE9)
_SURROGATE = re.compile("[\udc80-\udcff]")
_SURROGATE_REPR = re.compile(r"\\udc([89a-f][0-9a-f])")


def escape_controls(text: str) -> str:
    """``text`` with control characters written as ``\\x1b`` escapes, as repr() does, and
    the bytes of a command line that were not UTF-8 (Python keeps them as lone surrogates,
    ``\\udce9``) as the byte they were: ``\\xe9``."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    text = _SURROGATE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)
    return _SURROGATE_REPR.sub(r"\\x\1", text)  # the same, as repr() wrote it


def yaml_text(value: object, limit: int = 80) -> str:
    """``value`` as YAML writes it, for a message: ``null``, ``true``, ``'ring'``, ``[a, b]``,
    ``{x: 1}`` - not Python's ``None``, ``True``, ``['a', 'b']`` (QA 16c LOW 2)."""
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = repr(value)
    elif isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, Mapping):
        text = "{" + ", ".join(f"{_plain(k)}: {_plain(v)}" for k, v in value.items()) + "}"
    elif isinstance(value, (list, tuple)):
        text = "[" + ", ".join(_plain(v) for v in value) + "]"
    else:
        text = str(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _plain(value: object) -> str:
    """A value inside a flow list or mapping: strings unquoted, as YAML allows."""
    return value if isinstance(value, str) else yaml_text(value)


def format_path(path: Sequence[PathPart]) -> str:
    """``("platform", "links", 3, "bandwidth")`` -> ``platform.links[3].bandwidth``."""
    out = ""
    for part in path:
        if isinstance(part, bool) or part is None:
            out += ("." if out else "") + yaml_text(part)
        elif isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The choice most like ``name`` (case aside), or None when nothing is close."""
    choices = list(choices)
    close = difflib.get_close_matches(str(name), choices, n=1, cutoff=0.5)
    if not close:
        lowered = {c.lower(): c for c in choices}
        close = difflib.get_close_matches(str(name).lower(), list(lowered), n=1, cutoff=0.5)
        close = [lowered[c] for c in close]
    return close[0] if close else None


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` — did you mean 'k80'?`` or an empty string when nothing is close."""
    close = closest(name, choices)
    return f" — did you mean {close!r}?" if close else ""


class InputError(Exception):
    """Input the user can fix: a scenario, platform, catalog or command-line value.

    ``file`` and ``path`` locate the problem; ``line`` is filled in by the YAML loader when the
    node's position is known.  ``origin`` replaces the line when the value did not come from
    the file at all (``--set run.seed=[1``): pointing at a line that does not hold the value
    would send the user to the wrong place.  ``str()`` gives the one-line message the CLI
    prints; a message that echoes a huge value is cut to :data:`MAX_MESSAGE` characters.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        path: Sequence[PathPart] = (),
        line: int | None = None,
        origin: str | None = None,
    ) -> None:
        if len(message) > MAX_MESSAGE:
            half = MAX_MESSAGE // 2
            message = f"{message[:half]} … {message[-half:]}"
        super().__init__(message)
        self.message = message
        self.file = file
        self.path = tuple(path)
        self.line = line
        # a long --set echoed in part says so: "...[16, 32, 64])" read as the whole value
        cut = MAX_MESSAGE // 4
        self.origin = (origin[:cut - 1] + "…") if origin and len(origin) > cut else origin
        #: (kind, name, allowed) of an "unknown X" refusal (:func:`unknown_name`): kept so
        #: that the scenario reader can reword it with where the name belongs (QA 18)
        self.unknown: tuple[str, str, tuple[str, ...]] | None = None

    def located(
        self,
        *,
        file: str | None = None,
        prefix: Sequence[PathPart] = (),
        line: int | None = None,
        origin: str | None = None,
    ) -> InputError:
        """A copy with more location filled in (outer layers know the file and prefix)."""
        own = self.origin or origin
        out = InputError(
            self.message,
            file=self.file or file,
            path=tuple(prefix) + self.path,
            line=None if own else (self.line if self.line is not None else line),
            origin=own,
        )
        out.unknown = self.unknown
        return out

    def __str__(self) -> str:
        where = []
        if self.origin:
            where.append(f"{self.file} ({self.origin})" if self.file else self.origin)
        elif self.file:
            where.append(self.file + (f":{self.line}" if self.line else ""))
        if self.path:
            where.append(format_path(self.path))
        head = ", ".join(where)
        return escape_controls(f"{head}: {self.message}" if head else self.message)


def unknown_name(kind: str, name: object, choices: Iterable[str], *, home: str = "",
                 **loc: object) -> InputError:
    """The standard "unknown X 'y' — did you mean 'z'? (choose from …)" error; a ``name``
    that is no string is shown as YAML writes it (``null``, ``true``, ``[a, b]``).

    ``home``: where else the name is a field (`` — 'overhead' is a field of network: …``).
    With it, "did you mean" is kept only for a near-exact misspelling: a loose match beside
    the real home had sent users to the wrong field (QA 18: overhead -> 'convergence')."""
    choices = sorted(set(choices))  # a selector listed under two ops is one name (QA 16c)
    close = closest(name, choices) if isinstance(name, str) else None
    if home and close and difflib.SequenceMatcher(
            None, str(name).lower(), close.lower()).ratio() < CLOSE_BESIDE_HOME:
        close = None
    hint = f" — did you mean {close!r}?" if close else ""
    err = InputError(f"unknown {kind} {yaml_text(name)}{home}{hint} (allowed: "
                     f"{allowed_listing(choices)})", **loc)  # type: ignore[arg-type]
    err.unknown = (kind, str(name), tuple(choices)) if isinstance(name, str) else None
    return err


#: how alike a name and its "did you mean" must be to keep the suggestion beside a home
#: elsewhere: a typo of one or two letters ('jiter', 'overlpa'), not a loose likeness
CLOSE_BESIDE_HOME = 0.8


def allowed_listing(choices: Iterable[str]) -> str:
    """``a, b, c`` sorted, cut at 600 characters (within :data:`MAX_MESSAGE`) saying how
    many are left out - the list an "allowed:" names."""
    choices = sorted(set(choices))
    listing = ", ".join(choices)
    if len(listing) > 600:
        shown = listing[:600].rsplit(", ", 1)[0]
        listing = f"{shown}, … ({len(choices) - shown.count(', ') - 1} more)"
    return listing


class RunFailed(Exception):
    """A run that could not finish for a reason outside the input (a worker process killed,
    out of memory): the command says so in one line and exits 1, with no traceback."""
