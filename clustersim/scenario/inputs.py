"""The files one command reads: an output option must not name one of them.

Why: an output option naming one of the command's own inputs (``predict s.yaml --json
s.yaml``, ``--trace`` over the platform file the scenario names, ``calibrate --out`` over its
own trace) replaced it, exit 0 (audit E H1); ``clustersim.report.output.check_outputs``
refuses such a path.  The YAML loader counts every file it reads; commands add the inputs it
does not read (traces, CSVs) with :func:`note_input` or pass them to ``check_outputs``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["inputs_scope", "note_input", "inputs_read"]

#: the open :func:`inputs_scope` sets (resolved paths of every file read in them)
_INPUTS: list[set[str]] = []


@contextlib.contextmanager
def inputs_scope() -> Iterator[set[str]]:
    """The resolved paths of every file the YAML loader reads (or a memo hands out) inside the
    block, and any :func:`note_input` adds.  Scoped to one command (``cli.main``) so that a
    process running many (tests, a notebook) does not refuse a file that an earlier command
    read."""
    seen: set[str] = set()
    _INPUTS.append(seen)
    try:
        yield seen
    finally:
        del _INPUTS[next(i for i, r in enumerate(_INPUTS) if r is seen)]


def note_input(path: str | Path) -> None:
    """Count ``path`` among the inputs of every open :func:`inputs_scope` (a trace, a CSV:
    files not read through :func:`load_yaml`)."""
    if _INPUTS:
        key = os.path.realpath(path)
        for seen in _INPUTS:
            seen.add(key)


def inputs_read() -> set[str]:
    """Every input of the open scopes (empty outside :func:`inputs_scope`)."""
    return set().union(*_INPUTS) if _INPUTS else set()
