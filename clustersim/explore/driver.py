"""Running a study: cached points looked up, the others sent to an executor, results
streamed into the cache and the progress bar as they finish.

Why the cache is written per finished chunk (not at the end): a sweep stopped by Ctrl-C, a
batch job's time limit or a lost Dask worker keeps everything that finished, and the next
run only does the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from clustersim import _signals
from clustersim._signals import deferred
from clustersim.errors import InputError, RunFailed
from clustersim.explore.cache import PointCache, point_inputs, point_key
from clustersim.explore.executors import iter_results
from clustersim.explore.points import INPUTS, METRICS, Point, Study, point_raw

__all__ = ["Outcome", "run_study"]


@dataclass
class Outcome:
    """``cached``: points whose row came from the cache; ``ran``: points simulated now.  A
    skipped point (more workers than devices) is in neither, only in ``skipped``, so that
    ``cached + ran + len(skipped)`` is the number of points and a rate over ``ran`` is the
    simulation's (a skip costs nothing: counted as run, it inflated both)."""

    results: dict[int, dict[str, Any]] = field(default_factory=dict)
    cached: int = 0
    ran: int = 0
    skipped: list[str] = field(default_factory=list)


def run_study(study: Study, points: Sequence[Point], *, executor: str = "local",
              jobs: int = 1, address: str | None = None, cache: PointCache | None = None,
              advance: Callable[[int], Any] | None = None, chunk: int | None = None
              ) -> Outcome:
    """Every point's row (``results[index]``), from the cache where it has one.  The first
    input error of a point (a bad axis value) is raised once the finished rows are stored."""
    out = Outcome()
    keys = {p.index: point_key(study, p) for p in points} if cache is not None else {}
    hits = cache.get_many(keys.values()) if cache is not None else {}
    todo = []
    for p in points:
        row = hits.get(keys.get(p.index, ""))
        if row is None or not _usable(row):
            todo.append(p)
        else:
            out.results[p.index] = row
            out.cached += "skipped" not in row
    if advance is not None and len(out.results):
        advance(len(out.results))
    error: str | None = None
    # the bytes each point's files had when it was keyed: a worker that read others (the
    # file edited while the sweep ran) must not have its row stored under them
    named = {p.index: point_inputs(study, point_raw(study, p)) for p in todo}
    # closing(): a stop while a batch is stored (Ctrl-C) stops the workers at once, not
    # whenever the suspended generator is collected; deferred(): a batch is stored whole
    with closing(iter_results(study, todo, executor, jobs, address, chunk)) as results:
        for batch in results:
            _signals.check()  # a SIGTERM swallowed meanwhile (a Dask weakref callback)
            changed = _read_as_keyed(batch, named)
            _take([(i, row) for i, row in batch if i not in changed], out, cache, keys,
                  advance)
            if changed:
                raise RunFailed(
                    f"{sorted(set(changed.values()))[0]} changed while the sweep ran: "
                    f"{len(changed)} point(s) read other bytes than the sweep had checked; "
                    f"the {len(out.results)} points done before are kept"
                    f"{' in the point cache' if cache is not None else ''}: run it again")
            if error is None:
                error = next((row["error"] for _i, row in batch if "error" in row), None)
    if error is not None:
        raise InputError(error)
    out.skipped = [r["skipped"] for r in out.results.values() if "skipped" in r]
    return out


def _read_as_keyed(batch: list[tuple[int, dict[str, Any]]],
                   named: dict[int, dict[str, str]]) -> dict[int, str]:
    """``{index: path}`` of the batch's points whose parse read one of the files they name
    with other bytes than when they were keyed; every row loses :data:`INPUTS` (a file the
    driver did not name - another spelling of its path - is not compared: only a file
    known to both, with two digests, is a change)."""
    changed = {}
    for i, row in batch:
        read = row.pop(INPUTS, None) or {}
        for path, digest in named.get(i, {}).items():
            if path in read and read[path] != digest:
                changed[i] = path
                break
    return changed


#: what every simulated row holds besides the metrics (run_point's row)
_ROW_KEYS = frozenset((*METRICS, "algorithm", "workers", "seed"))


def _usable(row: dict[str, Any]) -> bool:
    """Whether a cached row is one the table can use: a skipped point's, or a simulated one
    with every column.  Anything else (a row damaged or written by something else) is a
    miss, run again, rather than a table row with empty cells."""
    if "skipped" in row:
        return isinstance(row["skipped"], str)
    return row.keys() >= _ROW_KEYS


def _take(batch: list[tuple[int, dict[str, Any]]], out: Outcome, cache: PointCache | None,
          keys: dict[int, str], advance: Callable[[int], Any] | None) -> None:
    """One finished chunk into the cache (first: it is what survives a stop), the outcome
    and the progress bar - all three under one deferred() block, so a stop (Ctrl-C) lands
    before or after them, never between: the count the driver reports on a stop is the
    count the cache holds (a stop between the store and the count had said 64 rows kept
    of 128 stored)."""
    with deferred():
        if cache is not None:
            cache.put_many((keys[i], row) for i, row in batch)
        for i, row in batch:
            out.results[i] = row
        out.ran += sum("skipped" not in row for _i, row in batch)
        if advance is not None:
            advance(len(batch))
