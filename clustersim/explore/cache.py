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

import contextlib
import functools
import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from clustersim.explore.points import Point, Study, point_raw

__all__ = ["code_version", "point_key", "point_inputs", "PointCache", "open_cache"]


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


# where a name leads is looked up once per process (a resolve() is a system call per part
# of the path: 10,000 keys spent 1.7 s of a 5 s resumed sweep in them); what the file holds
# is read again whenever its size or time changes (_digest)
@functools.lru_cache(maxsize=64)
def _folder(file: str | None) -> Path | None:
    return Path(file).resolve().parent if file else None


@functools.lru_cache(maxsize=256)
def _platform_path(name: str, base: Path | None) -> Path | None:
    from clustersim.errors import InputError
    from clustersim.scenario.platform_file import resolve_platform_file

    try:
        return resolve_platform_file(name, base, ("platform", "file")).resolve()
    except InputError:
        return None  # the point itself reports the error


@functools.lru_cache(maxsize=256)
def _constants_path(name: str, base: Path | None) -> Path:
    from clustersim.convergence.constants import constants_file

    return constants_file(name, base).resolve()


def _digest(path: Path | None) -> str:
    from clustersim.scenario.yamlio import file_digest

    return file_digest(path) or "missing"


def point_inputs(study: Study, raw: Mapping[str, Any]) -> dict[str, str]:
    """``{resolved path: digest}`` of the files the point's own scenario names - its platform
    file and its constants file - which its parse reads (``raw``: :func:`point_raw`'s).

    Why per point: a constants file an axis value names had been keyed by its name, and
    editing it served the old rows (audit B H2); the driver also checks the files a worker
    read against these (:func:`clustersim.explore.driver.run_study`)."""
    base = _folder(study.file)
    out: dict[str, str] = {}
    plat = raw.get("platform")
    name = plat if isinstance(plat, str) else (plat.get("file") if isinstance(plat, Mapping)
                                                else None)
    if name is not None:
        path = _platform_path(str(name), base)
        out[str(path or name)] = _digest(path)
    wl = raw.get("workload")
    conv = wl.get("convergence") if isinstance(wl, Mapping) else None
    const = conv.get("constants") if isinstance(conv, Mapping) else None
    if isinstance(const, str) and const.strip():
        path = _constants_path(const, base)
        out[str(path)] = _digest(path)
    return out


#: the scenario's text fields: no simulation reads them, so editing them keeps the cache
_TEXT_ONLY = ("name", "about", "assumptions")


def point_key(study: Study, point: Point) -> str:
    """The cache key of a point: the code version, its resolved scenario (without
    :data:`_TEXT_ONLY`: a reworded ``about`` had re-run every point), the bytes of the
    files it names (:func:`point_inputs`) and of those the base scenario's parse read
    (``study.inputs``: a variant's, a ``sweep.at`` entry's), its algorithm, workers and
    seed."""
    raw = {k: v for k, v in point_raw(study, point).items() if k not in _TEXT_ONLY}
    files = sorted(point_inputs(study, raw).values())
    doc = {"code": code_version(), "scenario": raw, "files": files,
           "inputs": study.inputs,
           "algorithm": study.cases[point.case].alg, "workers": point.workers,
           "seed": point.seed}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class PointCache:
    """``key -> row`` in an SQLite file (``None``: a cache that never hits, nothing stored).

    A file that does not exist yet is created at the first row stored, not when the cache
    is opened: a run refused before it simulated anything (a bad ``--dask`` address) leaves
    no ``points.sqlite`` behind.  An existing file is opened at once, so a damaged one is an
    error here (``sqlite3.Error``), where the caller can decide to go on without it."""

    def __init__(self, path: str | Path | None, tolerant: bool = False) -> None:
        """``tolerant``: a row that cannot be stored (disk full, the file removed) is
        reported once on stderr and the cache turned off, instead of stopping the run."""
        self.db: sqlite3.Connection | None = None
        self.tolerant = tolerant
        self.path = None if path is None else Path(path)
        if self.path is not None and (self.path.exists() or self.path.is_symlink()):
            self._open()

    def _open(self) -> sqlite3.Connection:
        if self.db is None:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(self.path))
            try:
                db.execute("CREATE TABLE IF NOT EXISTS points (key TEXT PRIMARY KEY, "
                           "row TEXT NOT NULL)")
            except sqlite3.Error:
                db.close()
                raise
            self.db = db
        return self.db

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored rows of ``keys`` that are there and readable.  A row that is not a
        JSON object (damaged) is left out: a miss, run again and overwritten.  A file whose
        reads fail (not this cache's table, a damaged page): ``sqlite3.Error``, or with
        ``tolerant`` reported once and the cache turned off (every key a miss)."""
        if self.db is None:  # nothing stored yet (or no cache)
            return {}
        keys = list(dict.fromkeys(keys))
        out: dict[str, dict[str, Any]] = {}
        try:
            for i in range(0, len(keys), 500):
                part = keys[i:i + 500]
                q = f"SELECT key, row FROM points WHERE key IN ({','.join('?' * len(part))})"
                for k, r in self.db.execute(q, part):
                    row = _decoded(r)
                    if row is not None:
                        out[k] = row
        except sqlite3.Error as exc:
            self._fail("be read", exc)
            return {}
        return out

    def put_many(self, items: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        """Store rows (``error`` rows are not stored: a fixed input must run again)."""
        if self.path is None:
            return
        rows = [(k, json.dumps(r, sort_keys=True)) for k, r in items if "error" not in r]
        if not rows:
            return
        try:
            db = self._open()
            with db:  # one transaction
                db.executemany("INSERT OR REPLACE INTO points VALUES (?, ?)", rows)
        except (sqlite3.Error, OSError) as exc:
            self._fail("be written", exc)

    def _fail(self, what: str, exc: Exception) -> None:
        """Raise ``exc`` or (``tolerant``) report it once and turn the cache off: after
        :meth:`close` nothing is read or written, so there is no second message."""
        if not self.tolerant:
            raise exc
        import sys

        print(f"clustersim: the point cache {self.path} cannot {what} ({exc}); going on "
              f"without it (delete the file to start a new cache)", file=sys.stderr)
        self.close()

    def close(self) -> None:
        if self.db is not None:
            with contextlib.suppress(sqlite3.Error):  # nothing is pending: commits are per put
                self.db.close()
            self.db = None
        self.path = None


def _decoded(text: Any) -> dict[str, Any] | None:
    """A stored row, or None when it is not a JSON object (a damaged or foreign row)."""
    try:
        row = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return None
    return row if isinstance(row, dict) else None


def open_cache(path: Path) -> PointCache | None:
    """The sweep's cache at ``path``; a file that cannot be opened or read (damaged, a
    folder) is reported once on stderr and the sweep runs without it, as the what-if cache
    does: the cache saves time, it is not the result."""
    import sys

    try:
        return PointCache(path, tolerant=True)
    except (sqlite3.Error, OSError) as exc:
        print(f"clustersim: the point cache {path} cannot be used ({exc}); running every point "
              f"without it (delete the file to start a new cache)", file=sys.stderr)
        return None
