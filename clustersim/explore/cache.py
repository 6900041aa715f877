"""A content-addressed cache of sweep points: an interrupted or extended sweep only runs the
points it has not run before.

Key of a point = SHA-256 of (the code version, the canonical JSON of the point's fully
resolved scenario - every field set, sorted keys - the digest of the platform file it names,
the digests of the other files the study's parse read (a constants file: ``Study.inputs``),
the algorithm's index, the worker count and the seed).  The code version is the digest of
every source and data file of the ``clustersim`` package (computed once per process), so a
changed model never serves an old number.  Two points that resolve to the same scenario
share a row, whichever sweep ran them.

Storage is SQLite (the standard library's): one file, atomic commits (a sweep killed
mid-write loses at most the batch being written, never corrupts older rows), and fast
lookups of thousands of keys; only the driver process writes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from clustersim.explore.points import Point, Study, point_raw

__all__ = ["code_version", "point_key", "PointCache"]


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """Digest of the package's ``.py`` and ``.yaml`` files (paths and bytes, sorted)."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.suffix in (".py", ".yaml") and "__pycache__" not in p.parts:
            h.update(p.relative_to(root).as_posix().encode() + b"\0")
            h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=256)
def _platform_digest(name: str, base: str | None) -> str:
    from clustersim.errors import InputError
    from clustersim.scenario.platform_file import resolve_platform_file

    try:
        p = resolve_platform_file(name, Path(base) if base else None, ("platform", "file"))
    except InputError:
        return "missing"  # the point itself reports the error
    return hashlib.sha256(p.read_bytes()).hexdigest()


def point_key(study: Study, point: Point) -> str:
    raw = point_raw(study, point)
    plat = raw.get("platform")
    name = plat if isinstance(plat, str) else (plat.get("file") if isinstance(plat, Mapping)
                                                else None)
    base = str(Path(study.file).resolve().parent) if study.file else None
    files = _platform_digest(str(name), base) if name is not None else None
    doc = {"code": code_version(), "scenario": raw, "platform_file": files,
           "inputs": study.inputs,
           "algorithm": study.cases[point.case].alg, "workers": point.workers,
           "seed": point.seed}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class PointCache:
    """``key -> row`` in an SQLite file (``None``: a cache that never hits, nothing stored)."""

    def __init__(self, path: str | Path | None) -> None:
        self.db: sqlite3.Connection | None = None
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(path))
            self.db.execute("CREATE TABLE IF NOT EXISTS points (key TEXT PRIMARY KEY, "
                            "row TEXT NOT NULL)")

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        if self.db is None:
            return {}
        keys = list(dict.fromkeys(keys))
        out: dict[str, dict[str, Any]] = {}
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            q = f"SELECT key, row FROM points WHERE key IN ({','.join('?' * len(part))})"
            out.update((k, json.loads(r)) for k, r in self.db.execute(q, part))
        return out

    def put_many(self, items: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        """Store rows (``error`` rows are not stored: a fixed input must run again)."""
        if self.db is None:
            return
        rows = [(k, json.dumps(r, sort_keys=True)) for k, r in items if "error" not in r]
        with self.db:  # one transaction
            self.db.executemany("INSERT OR REPLACE INTO points VALUES (?, ?)", rows)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
