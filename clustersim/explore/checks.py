"""Checks of a study's points before anything runs: every point's scenario parses, its
algorithms are told apart, and the points that cannot run on their platform are counted.

Why up front: a bad axis value found while simulating came after every good point had run
(hours on a large sweep) and left an output folder behind; a parse costs milliseconds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from clustersim.errors import InputError
from clustersim.explore.axes import WORKERS
from clustersim.explore.points import (
    Point,
    Study,
    _scenario,
    field_parts,
    locate,
    no_machine,
    point_sets,
)

__all__ = ["check_points"]

#: points checked between two calls of the progress callback
TICK = 500


def check_points(study: Study, points: Sequence[Point],
                 advance: Callable[[int], Any] | None = None) -> int:
    """Parse every distinct point's scenario before anything runs; the number of points
    that would be skipped (more workers than the platform has devices, or no machine of
    its own left for a server with ``placement.server: machine``).  A design where every
    point is skipped is an input error.  ``advance(n)``: n more points checked (in steps
    of :data:`TICK`)."""
    seen: dict[str, tuple[int, Any]] = {}
    room: dict[tuple[str, int], str | None] = {}
    skipped = 0
    first = ""
    for k, p in enumerate(points, start=1):
        if advance is not None and k % TICK == 0:
            advance(TICK)
        key = json.dumps([p.case, p.sets, p.seed, study.at.get(p.workers) is not None
                          and p.workers], default=str)
        got = seen.get(key)
        if got is None:
            scn = _scenario(study, p)
            _distinct_titles(study, p, scn)
            machine = scn.placement is not None and scn.placement.server == "machine"
            got = seen[key] = (scn.platform.num_devices, scn if machine else None,
                               scn.algorithms[study.cases[p.case].alg]
                               if study.cases[p.case].alg < len(scn.algorithms) else None)
        devices, scn, alg = got
        why = None
        if p.workers is not None and p.workers <= devices and alg is not None:
            _count_fits(study, p, alg)
        if p.workers is not None and p.workers > devices:
            why = f"{p.workers} workers but the platform has {devices} devices"
        elif scn is not None and study.cases[p.case].alg < len(scn.algorithms):
            w = devices if p.workers is None else p.workers
            if (key, w) not in room:
                room[key, w] = no_machine(scn, scn.algorithms[study.cases[p.case].alg], w)
            why = room[key, w]
        if why is not None:
            skipped += 1
            first = first or why
    if advance is not None and len(points) % TICK:
        advance(len(points) % TICK)
    if points and skipped == len(points):
        hint = ("fewer workers, fewer shards or placement.server: device" if "machine" in first
                else "worker counts up to the platform's devices")
        raise locate(study, InputError(f"every point is skipped ({first}); use {hint}",
                                       path=("sweep", "axes", WORKERS)))
    return skipped


def _count_fits(study: Study, point: Point, alg: Any) -> None:
    """The point's worker count is one its algorithm's collective is defined for
    (:func:`clustersim.scenario.consistency.check_counts`), else an error at the workers
    axis naming the point: the copper tree's "not 7" had named neither (QA 17)."""
    from clustersim.scenario.consistency import check_counts

    try:
        check_counts([alg], [point.workers])
    except InputError as exc:
        fields = ", ".join([f"workers={point.workers}"]
                           + [f"{k}={v!r}" for k, v in point_sets(study, point)])
        raise locate(study, InputError(f"at the sweep point {{{fields}}}: {exc.message}",
                                       path=("sweep", "axes", WORKERS))) from None


#: axes that change the main algorithm's title (its label, or its name when unlabelled)
_TITLED = ("algorithm", "algorithm.label", "algorithm.name")


def _distinct_titles(study: Study, point: Point, scn: Any) -> None:
    """Refuse a point whose scenario reports two algorithms under one title, with
    ``predict``'s own check (:func:`clustersim.sim.sweep.sweep_cases`).  Why: an
    ``algorithm.label`` axis value equal to a ``compare`` label gave two rows with the same
    algorithm, workers and seed and different numbers."""
    from clustersim.sim.sweep import sweep_cases

    try:
        sweep_cases(scn)
    except InputError as exc:
        blame = next((k for k, _ in point.sets if ".".join(field_parts(k)) in _TITLED), None)
        fields = ", ".join(f"{k}={v!r}" for k, v in point_sets(study, point))
        raise locate(study, InputError(
            f"at the sweep point {{{fields}}}: {exc.message}"
            + (" (a value of this axis repeats another case's)" if blame else ""),
            path=("sweep", "axes", *((blame,) if blame else ())))) from None
