"""Writing machine-readable output safely.

"Nothing half-written": every file is written to a temporary sibling and renamed into place
only when complete, so an error or Ctrl-C never leaves a truncated JSON/CSV behind.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "write_json", "write_csv", "clean_json"]


def atomic_write(path: str | Path, text: str) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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


def write_json(path: str | Path, obj: Any) -> None:
    atomic_write(path, json.dumps(clean_json(obj), indent=2, sort_keys=True) + "\n")


def write_csv(path: str | Path, rows: Sequence[dict[str, Any]]) -> None:
    buf = io.StringIO()
    if rows:
        fields = list(rows[0].keys())
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: clean_json(v) for k, v in r.items()})
    atomic_write(path, buf.getvalue())
