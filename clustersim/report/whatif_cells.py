"""The simulated cells of a what-if grid (``whatif`` and ``explore SCENARIO``), with a
per-point cache, so that a page asked again, or with more factors, only simulates the points
it has not simulated before.

Why a cache here: a what-if grid is tens to hundreds of full simulations (192 points for
``scenarios/knl_4253.yaml``: six cells of 32, 106 of them simulated and 86 extended past
their master's saturation: :mod:`clustersim.report.whatif_chains`), most of which a
user asks for again - the same page after a ``git pull`` of the docs, one more bandwidth
factor, ``explore`` after ``whatif``.  A point's result depends on its scenario, its seed,
the two factors and the code, nothing else, so it can be kept under a digest of exactly
those: the sweep's content-addressed key (:func:`clustersim.explore.cache.point_key`: the
code version, the fully resolved scenario, the platform file's bytes, the algorithm, the
workers and the seed, the files the scenario's parse read) extended with the factors and
the calibration profile's bytes.  A point is stored the moment it is done, so an
interrupted page keeps what it had simulated.

The cache is a convenience, never a condition: one that cannot be opened, read or written
(a read-only home, a locked or damaged file) is reported once and the page is simulated
without it.  What a cached point gives back is the metrics the simulation returned, as JSON
(floats round-trip exactly), so a page from the cache is the same bytes as one simulated.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

__all__ = ["default_cache_path", "CellCache", "simulate_cells"]

Cell = tuple[float, float]
_KIND = "whatif-metrics"  # keeps these rows apart from the sweep's, keyed by point_key alone
#: a case's emulated runs (``run.convergence: emulate``): one row per case and cell, all its
#: worker counts (they are run together, after the points)
_EMULATED = "whatif-emulation"


def default_cache_path() -> Path:
    """``$CLUSTERSIM_CACHE_DIR/points.sqlite``, else the XDG cache folder's
    ``clustersim/points.sqlite`` (``~/.cache`` when ``XDG_CACHE_HOME`` is unset)."""
    own = os.environ.get("CLUSTERSIM_CACHE_DIR")
    if own:
        return Path(own) / "points.sqlite"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "clustersim" / "points.sqlite"


class CellCache:
    """The sweep's point cache, for what-if points: keys made from a study, rows are
    :class:`~clustersim.sim.metrics.PointMetrics` as JSON.  Any SQLite error turns it off
    (one warning on stderr) instead of failing the page."""

    def __init__(self, path: str | Path, study: Any, extra: str | None = None) -> None:
        """``study``: from :func:`clustersim.explore.load_study`, the parse that gave the
        scenario; ``extra``: what else changed it (a calibration profile's digest)."""
        from clustersim.explore.cache import PointCache

        self.study = study
        self.path = Path(path)
        self.extra = extra
        self.hits = 0  # points read back so far (for the command's closing message)
        self.db: Any = None
        self._guard("be opened", lambda: setattr(self, "db", PointCache(self.path)))

    def _guard(self, what: str, fn: Callable[[], Any], default: Any = None) -> Any:
        if what != "be opened" and self.db is None:
            return default
        try:
            return fn()
        except (sqlite3.Error, OSError) as exc:
            print(f"clustersim: the point cache {self.path} could not {what} ({exc}); "
                  "going on without it", file=sys.stderr)
            if self.db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self.db.close()
            self.db = None
            return default

    def key(self, case: int, workers: int, seed: int, cell: Cell, kind: str = _KIND) -> str:
        """The row's key; ``kind`` keeps a case's emulated runs (:data:`_EMULATED`) apart
        from its points' metrics."""
        from clustersim.explore.cache import point_key
        from clustersim.explore.points import Point

        base = point_key(self.study, Point(0, case, workers, (), seed))
        text = json.dumps([kind, base, float(cell[0]), float(cell[1]), self.extra])
        return hashlib.sha256(text.encode()).hexdigest()

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self._guard("be read", lambda: self.db.get_many(keys), {})

    def put_many(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        self._guard("be written", lambda: self.db.put_many(items))

    def close(self) -> None:
        self._guard("be closed", lambda: self.db.close())
        self.db = None

    def matches(self, cases: Sequence[Any]) -> bool:
        """Whether the study's cases are these sweep cases, in order (they are, when both
        come from one parse; anything else and the keys would be wrong: no caching)."""
        return len(self.study.cases) == len(cases) and all(
            c.algorithm == alg.title for c, (_t, _s, alg) in zip(self.study.cases, cases))


def _metrics(row: dict[str, Any]) -> Any:
    """The stored row as the simulation's metrics, or None when it is not one (a row of
    another version's fields, or written by something else: a miss, simulated again and
    overwritten, as the sweep treats its damaged rows) - never a TypeError for the page."""
    from clustersim.sim.metrics import PointMetrics

    try:
        row = dict(row)
        row["interval"] = {k: tuple(v) for k, v in row.get("interval", {}).items()}
        return PointMetrics(**row)
    except (TypeError, ValueError, AttributeError):
        return None


def simulate_cells(scn: Any, combos: Sequence[Cell],
                   advance: Callable[[int], None] = lambda n=1: None,
                   jobs: int | None = None, cache: CellCache | None = None,
                   extend: bool = False) -> dict[Cell, dict[str, list[dict[str, Any]]]]:
    """Every point of every cell (the scenario with its links' bandwidth and latency scaled
    by the cell's factors), on one process pool, heaviest first; ``{cell: {title: [point
    dicts in workers order]}}``.  ``advance(1)`` once per point, cached or simulated.

    ``extend``: a master-based case's points past a worker count where its master is
    saturated are extended from that point where they may be (:mod:`clustersim.sim.
    saturated`), not simulated; their dicts say so (``"extended_from"``: the workers of the
    point they came from).  Such a case's counts are decided as a chain, smallest first:
    its next count that has no base to be extended from is queued on the same pool as soon
    as the count before it is done (:class:`~clustersim.report.whatif_chains.
    ExtensionChains`).  Which points are extended depends on the simulated points alone,
    never on what the cache holds or the order points finish in, so a page is the same
    bytes from the cache or not."""
    from clustersim.report.whatif import scaled_scenario
    from clustersim.report.whatif_chains import ExtensionChains
    from clustersim.sim.pool_run import run_tasks
    from clustersim.sim.sweep import assemble_sweep, sweep_cases, sweep_tasks

    cases: list[Any] = []
    spans: list[tuple[int, int]] = []
    tasks: list[tuple[int, int, int, int]] = []
    for bw, lat in combos:
        mine = sweep_cases(scaled_scenario(scn, bw, lat))
        if cache is not None and not cache.matches(mine):
            cache = None
        tasks += sweep_tasks(mine, first=len(cases))
        spans.append((len(cases), len(cases) + len(mine)))
        cases += mine
    results: dict[tuple[int, int, int], Any] = {}
    keys: dict[tuple[int, int, int], str] = {}
    hits: dict[str, dict[str, Any]] = {}
    if cache is not None:
        cell_of = [k for k, (a, b) in enumerate(spans) for _ in range(a, b)]
        for ci, w, r, seed in tasks:
            keys[(ci, w, r)] = cache.key(ci - spans[cell_of[ci]][0], w, seed,
                                         combos[cell_of[ci]])
        hits = cache.get_many(list(keys.values()))

    def from_cache(batch: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
        """The points of ``batch`` the cache lacks (the others into ``results``)."""
        if cache is None:
            return batch
        todo = []
        for t in batch:
            row = hits.get(keys[t[:3]])
            m = None if row is None else _metrics(row)
            if m is None:
                todo.append(t)
            else:
                results[t[:3]] = m
                cache.hits += 1  # type: ignore[union-attr]
                advance(1)
        return todo

    pending: list[tuple[str, dict[str, Any]]] = []
    last = time.monotonic()

    def store(task: tuple[int, int, int], m: Any) -> None:
        nonlocal last
        pending.append((keys[task], asdict(m)))
        if time.monotonic() - last > 1.0:  # a commit a second at most
            cache.put_many(pending)  # type: ignore[union-attr]
            pending.clear()
            last = time.monotonic()

    chains = ExtensionChains(cases, tasks) if extend else None

    def follow(key: tuple[int, int, int]) -> list[tuple[int, int, int, int]]:
        """A chain's next points to simulate once ``key`` is done (those in the cache are
        taken from it, and the chain goes on from them)."""
        ci = key[0]
        while chains is not None and chains.ready(ci, results):
            todo = from_cache(chains.step(ci, results, advance))
            if todo:
                return todo
        return []

    def order(t: tuple[int, int, int, int]) -> tuple[bool, int]:
        """Points a chain waits for first (they are small, and what follows them then
        joins the queue early), then the most workers first."""
        return (chains is None or not chains.chain_head(t), -t[1])

    try:
        todo = from_cache(tasks if chains is None else chains.first)
        for ci in [] if chains is None else list(chains.waiting):
            todo += follow((ci, 0, 0))  # a chain whose first points were all cached
        run_tasks(cases, todo, results, jobs, advance,
                  store=store if cache is not None else None,
                  follow=None if chains is None else follow, order=order)
    finally:
        if cache is not None and pending:  # what was done before an error or a signal
            cache.put_many(pending)
    extended = {} if chains is None else chains.extended
    cells: dict[Cell, dict[str, list[dict[str, Any]]]] = {}
    for cell, (a, b) in zip(combos, spans):
        res = assemble_sweep(cases[a:b], results, first=a,
                             emulate=None if cache is None else _cached_emulation(cache, cell,
                                                                                  a))
        cells[(float(cell[0]), float(cell[1]))] = {
            t: [_marked(_with_emulation(p.to_dict(), res, t, i), extended.get((ci, p.workers)))
                for i, p in enumerate(pts)]
            for ci, (t, pts) in enumerate(res.points.items(), start=a)}
    return cells


def _marked(point: dict[str, Any], base: int | None) -> dict[str, Any]:
    """The point, with ``"extended_from"`` where it was extended, not simulated."""
    if base is not None:
        point["extended_from"] = base
    return point


def _cached_emulation(cache: CellCache, cell: Cell, first: int
                      ) -> Callable[[int, Any, Any, str], Any]:
    """``assemble_sweep``'s ``emulate`` for one cell: a case's emulated runs from the cache,
    else run (:func:`clustersim.sim.sweep._emulate_case`) and stored.

    Why: the emulated training runs are most of an emulated scenario's page (13 s of 14 for
    ``emulate_digits``), and they were run again on every page that read every point from
    the cache - while the page said "20 of 20 points from the cache"."""
    from clustersim.sim.emulate import EmulationResult
    from clustersim.sim.sweep import _emulate_case

    def emulate(ci: int, s: Any, alg: Any, title: str) -> Any:
        # the row holds the runs of every worker count of the case's sweep, in order: the
        # counts and their sweep.at fields are part of its key (a page with other counts had
        # drawn the old runs at the new counts; audit B H1)
        sweep = s.sweep
        runs_of = json.dumps([list(sweep.workers), sweep.scaling,
                              {str(w): sweep.at[w] for w in sorted(sweep.at)}],
                             sort_keys=True, default=str)
        key = cache.key(ci - first, 0, s.run.seed, cell, f"{_EMULATED} {runs_of}")
        row = cache.get_many([key]).get(key)
        try:
            runs = [EmulationResult(**r) for r in row["runs"]]  # type: ignore[index]
            return runs, list(row["analytic"])  # type: ignore[index]
        except (TypeError, KeyError, ValueError):  # a miss, or a row of another shape
            pass
        runs, analytic = _emulate_case(s, alg, title)
        cache.put_many([(key, {"runs": [asdict(r) for r in runs], "analytic": analytic})])
        return runs, analytic

    return emulate


def _with_emulation(point: dict[str, Any], res: Any, title: str, i: int) -> dict[str, Any]:
    """The point, with its emulated run (``run.convergence: emulate``) under ``"emulation"``.

    Why: the sweep emulates every point but keeps the runs beside its points, and the page
    drew only the points, so ``whatif emulate_digits`` had no time to target at all.  A dict
    (explore's table skips dict values); never reached: ``time_to_target`` None, as in JSON."""
    from clustersim.sim.tta import finite

    runs = (getattr(res, "emulation", None) or {}).get(title) or []
    if i >= len(runs):
        return point
    r = runs[i]
    twins = (getattr(res, "emulation_analytic", None) or {}).get(title) or []
    point["emulation"] = {
        "time_to_target": finite(r.time_to_target),
        "analytic_time_to_target": finite(twins[i]) if i < len(twins) else None,
        "metric_name": r.metric_name, "target": r.target,
        "time": list(r.time), "metric": list(r.metric)}
    return point
