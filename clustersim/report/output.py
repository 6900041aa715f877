"""The commands' outputs: checked before any work, then written whole, all or none.

* :func:`check_outputs` runs *before* a simulation or a real run: an output that cannot be
  written (its directory cannot be created, is not a directory, is read-only, the path is a
  directory, two options name the same file, it is one of the command's inputs) is a clear
  input error (exit 2) at once, not a traceback after minutes of work.
* Writing is :mod:`clustersim.fsio`'s (a core module, so that the scenario loader and the
  calibration profile use it without importing this layer): every file to a temporary
  sibling, renamed into place only when all are complete; its names are re-exported here.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from clustersim.errors import InputError
from clustersim.fsio import (
    _is_stream,
    _target,
    atomic_write,
    path_problem,
    unwritable,
    write_outputs,
)

__all__ = ["CHART_FLAGS", "atomic_write", "check_outputs", "clean_json", "csv_text",
           "json_text", "need_charts", "path_problem", "unwritable", "write_csv", "write_json",
           "write_outputs"]


def _cannot(flag: str, path: Any, why: str) -> InputError:
    return InputError(f"cannot write {flag} {str(path)!r}: {why}")


#: options whose file is a Plotly page (the ``charts`` extra): ``check_outputs`` refuses them
#: up front when Plotly is not installed - a traceback after the whole simulation had been it
CHART_FLAGS = ("--plot", "--uncertainty-plot")


def need_charts(flag: str) -> None:
    """Refuse ``flag`` (exit 2) when Plotly, which writes its page, is not installed."""
    import importlib.util

    try:
        found = importlib.util.find_spec("plotly") is not None
    except (ImportError, ValueError):  # a stand-in module without a spec
        found = False
    if not found:
        raise InputError(f"{flag} writes a Plotly page and Plotly is not installed: pip "
                         f"install 'clustersim[charts]'")


def check_outputs(outputs: Mapping[str, str | Path | None],
                  inputs: Iterable[str | Path | None] = ()) -> None:
    """Raise :class:`InputError` naming the option for the first output that cannot be written.

    ``outputs`` maps an option (``--json``) to its path (``None``: not asked for; an empty
    path was asked for, and is refused: ``--json ''`` wrote nothing, silently).  Writability
    is tested by creating (and removing) a temporary file or directory where the output will
    go - the only test that also holds for root and for file systems such as ``/proc``.  An
    output that is one of the command's inputs - ``inputs``, or any file read so far in the
    command's :func:`~clustersim.scenario.yamlio.inputs_scope` (the scenario, the files it
    names, a profile) - is refused: it would be replaced (audit E H1).
    """
    from clustersim.scenario.inputs import inputs_read

    read = inputs_read() | {os.path.realpath(i) for i in inputs if i}
    seen: dict[str, str] = {}
    for flag, raw in outputs.items():
        if raw is None:
            continue
        if flag in CHART_FLAGS:
            need_charts(flag)
        if str(raw).strip() == "":
            raise _cannot(flag, raw, "an empty file name; give a file name")
        try:
            p = _target(raw)
            key = os.path.abspath(p)
            if key in seen:
                raise _cannot(flag, raw, f"{seen[key]} writes the same file")
            seen[key] = flag
            if os.path.realpath(p) in read and not _is_stream(p):
                raise _cannot(flag, raw, "it is an input of this command (the scenario, a "
                                         "file it names or a file given to read); writing "
                                         "it would replace it - name another file")
            why = unwritable(p)
        except (OSError, RuntimeError) as exc:  # a name too long, a link loop (QA 10 H4)
            raise _cannot(flag, raw, path_problem(exc)) from None
        if why is not None:
            raise _cannot(flag, raw, why)


def clean_json(obj: Any) -> Any:
    """numpy scalars to Python, non-finite floats to None (JSON has no inf/NaN)."""
    if isinstance(obj, dict):
        return {str(k): clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def json_text(obj: Any) -> str:
    """``obj`` as indented JSON text with sorted keys (:func:`clean_json` first): stable bytes."""
    return json.dumps(clean_json(obj), indent=2, sort_keys=True) + "\n"


def csv_text(rows: Sequence[dict[str, Any]]) -> str:
    """``rows`` as CSV text, the columns the first row's keys (no row may have others); a
    non-finite number is an empty cell.  No rows: the empty string."""
    buf = io.StringIO()
    if rows:
        fields = list(rows[0].keys())
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: clean_json(v) for k, v in r.items()})
    return buf.getvalue()


def write_json(path: str | Path, obj: Any) -> None:
    """Write :func:`json_text` of ``obj`` to ``path``, whole or not at all."""
    atomic_write(path, json_text(obj))


def write_csv(path: str | Path, rows: Sequence[dict[str, Any]]) -> None:
    """Write :func:`csv_text` of ``rows`` to ``path``, whole or not at all."""
    atomic_write(path, csv_text(rows))
