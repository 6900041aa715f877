"""A design point and the pure function that turns it into one row of metrics.

A :class:`Study` is what every executor ships once (pickled, scattered): the scenario as
written minus its sweep, and its *cases* (each variant x each algorithm, as ``predict``
lists them).  A :class:`Point` is small: a case, a worker count, the axis values and an
optional seed.  :func:`run_point` applies the point's fields to the raw scenario, parses it
(the same validation as a file: a bad value is an error naming the axis), simulates it with
:func:`clustersim.sim.sweep.simulate_point` (``run.repeats`` seeds summarised, as in
``predict``) and returns plain JSON values, so the row is the same bytes wherever it ran.

Parsed scenarios are kept per process, keyed by their fields without the worker count: the
points of a worker-count axis share one parse (a platform build is tens of milliseconds).
"""

from __future__ import annotations

import contextlib
import copy
import gc
import json
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clustersim.errors import InputError
from clustersim.explore.axes import MAX_POINTS, WORKERS, AxesSpec, expand_counted
from clustersim.explore.blame import locate, point_error
from clustersim.explore.reach import (
    applied,
    axis_target,
    field_parts,
    plain,
    point_raw,
    point_sets,
    reach_is_fixed,
)

__all__ = ["Case", "Study", "Point", "DesignCounts", "study_points", "study_design",
           "point_sets", "point_raw", "run_point", "run_chunk", "no_machine", "applied",
           "axis_target", "field_parts", "plain", "locate", "METRICS"]

#: metric columns of a row, in table order (PointMetrics fields, then the master's figures)
METRICS = ("batch_per_worker", "iteration_time", "throughput", "compute", "comm", "wait",
           "comm_total", "comm_share", "comm_share_total", "worker_utilization",
           "server_utilization", "update_rate", "staleness_mean", "staleness_p90",
           "staleness_max", "bytes_per_iteration", "makespan", "sim_events", "flows", "seeds",
           "warmup_steps", "measured_steps",
           "steps_to_target", "samples_to_target", "epochs_to_target", "time_to_target",
           "statistical_efficiency", "goodput",
           "devices", "servers", "service_time", "saturation_workers")


@dataclass(frozen=True)
class Case:
    """One variant x one algorithm: ``sets`` are the variant's fields, ``alg`` the index in
    the point scenario's ``algorithms`` (main first, then ``compare``)."""

    variant: str
    algorithm: str
    sets: tuple[tuple[str, Any], ...]
    alg: int
    #: the algorithm's parameter names: an ``algorithm.X`` axis reaches the cases that take X
    takes: tuple[str, ...] = ()
    #: whether its algorithm may place servers (:func:`clustersim.explore.reach.has_servers`):
    #: a ``placement.server`` axis reaches only the cases that do
    servers: bool = True


@dataclass(frozen=True)
class Study:
    """What every executor gets once (module docs): the raw scenario, its sweep's ``scaling``
    and ``at`` (the fields ``sweep.at`` sets per worker count), its cases and the design."""

    raw: Mapping[str, Any]  # the scenario without sweep and variants
    file: str | None
    scaling: str
    at: Mapping[int, Mapping[str, Any]]
    cases: tuple[Case, ...]
    spec: AxesSpec
    token: str  # digest of the above: per-process caches of two studies never mix
    inputs: str = ""  # digest of the other files its parse read (load_study), for the cache
    #: "sweep.axes.NAME" / "sweep.constraints[i]" -> (line, --set item): where errors point
    where: Mapping[str, tuple[int | None, str | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class Point:
    """One point of the design: ``sets`` are the axis values (without ``workers``)."""

    index: int
    case: int
    workers: int | None  # None: the platform's device count
    sets: tuple[tuple[str, Any], ...]
    seed: int | None = None  # None: run.seed of the point's scenario


@dataclass(frozen=True)
class DesignCounts:
    """How the design shrank before it became points: ``excluded`` by the constraints, and
    ``duplicates``: draws of a sampled design that repeat an earlier one (a sample of a
    2-value axis with n = 64 draws 62 of them).  The summary says both."""

    excluded: int = 0
    duplicates: int = 0


def study_points(study: Study) -> list[Point]:
    """Every case at every design point, in table order (case, then the design's order).
    A case that an axis does not reach (an ``algorithm.X`` its algorithm does not take -
    at a point whose ``algorithm``/``algorithm.name`` axis replaces the main algorithm, the
    point's algorithm -, ``placement.server`` for an algorithm without servers:
    :mod:`clustersim.explore.reach`) runs each of its other points once, not once per value
    of that axis."""
    return study_design(study)[0]


def study_design(study: Study) -> tuple[list[Point], DesignCounts]:
    """:func:`study_points` and the :class:`DesignCounts` of its design."""
    try:
        values_list, excluded = expand_counted(study.spec)
    except InputError as exc:
        raise locate(study, exc) from None
    distinct = {json.dumps(list(v.items()), default=str) for v in values_list}
    counts = DesignCounts(excluded, len(values_list) - len(distinct))
    if reach_is_fixed(study):  # every case runs every distinct point: the count is known
        _cap(study, len(distinct) * len(study.cases), len(values_list))
    out = []
    for ci, case in enumerate(study.cases):
        seen: set[str] = set()
        for values in values_list:
            sets = tuple((k, v) for k, v in values.items() if k != WORKERS)
            key = json.dumps([values.get(WORKERS), [(k, v) for k, v in sets
                                                    if axis_target(case, k, sets) is not None]],
                             default=str)
            if key in seen:
                continue
            seen.add(key)
            out.append(Point(len(out), ci, values.get(WORKERS), sets))
            if len(out) > MAX_POINTS:  # the cap is on what runs: the design x the cases
                _cap(study, len(out), len(values_list))
    return out, counts


def _cap(study: Study, total: int, design: int) -> None:
    """Refuse a sweep of more than :data:`MAX_POINTS` points (``total`` so far or in all)."""
    if total > MAX_POINTS:
        raise locate(study, InputError(
            f"the sweep has more than {MAX_POINTS:,} points ({design:,} design points x "
            f"{len(study.cases)} cases: each algorithm of each variant runs the design); "
            "sample fewer (sweep.sample.n), use fewer values or compare fewer algorithms",
            path=("sweep",)))


#: per process: canonical raw -> (Scenario, the files its parse read: {path: digest})
_PARSED: OrderedDict[str, tuple[Any, dict[str, str]]] = OrderedDict()
#: per process: platform fields -> (built platform, the files its build read)
_PLATFORMS: OrderedDict[str, tuple[Any, dict[str, str]]] = OrderedDict()


@contextlib.contextmanager
def _shared_platforms(raw: Mapping[str, Any]) -> Iterator[None]:
    """Build each distinct platform once per process.  Why: most axes (batch, algorithm,
    overheads) leave the platform as it is, and building a 256-GPU leaf-spine graph costs
    more than simulating a point; ``predict`` shares one platform between the points of its
    sweep in the same way.  The key is the platform's and catalog's fields as written and
    the scenario's folder (where a platform file is looked up); a platform whose file holds
    other bytes now than when it was built is built again (a long-lived worker's memo had
    handed out the old one, audit B H3)."""
    from clustersim.scenario import schema
    from clustersim.scenario.yamlio import files_changed, files_read, note_files

    build = schema.parse_platform
    cat = json.dumps(raw.get("catalog"), sort_keys=True, default=str)

    def memo(praw: Any, base: Any, catalog: Any, file: Any) -> Any:
        key = json.dumps([plain(praw), str(base), cat], sort_keys=True, default=str)
        got = _PLATFORMS.get(key)
        if got is not None and files_changed(got[1]):  # its file edited since: built again
            got = None
        if got is None:
            with files_read() as seen:
                built = build(praw, base, catalog, file)
            got = _PLATFORMS[key] = (built, dict(seen))
            while len(_PLATFORMS) > 8:
                _PLATFORMS.popitem(last=False)
        else:
            note_files(got[1])
        return got[0]

    schema.parse_platform = memo
    try:
        yield
    finally:
        schema.parse_platform = build


def _scenario(study: Study, point: Point) -> Any:
    """The point's parsed scenario (:func:`_parsed`)."""
    return _parsed(study, point)[0]


def _parsed(study: Study, point: Point) -> tuple[Any, dict[str, str]]:
    """The point's parsed scenario and the files its parse read (``{path: digest}``), from
    this process's memo unless one of those files holds other bytes now; the files are
    recorded in the open :func:`~clustersim.scenario.yamlio.files_read` blocks either way."""
    from clustersim.scenario.schema import parse_scenario
    from clustersim.scenario.yamlio import files_changed, files_read, note_files

    raw = point_raw(study, point)
    key = study.token + json.dumps(raw, sort_keys=True, default=str)
    got = _PARSED.get(key)
    if got is not None and files_changed(got[1]):
        got = None
    if got is None:
        try:
            with files_read() as seen, _shared_platforms(raw):
                scn = parse_scenario(copy.deepcopy(raw), study.file)
        except InputError as exc:
            raise point_error(study, point, exc) from None
        got = _PARSED[key] = (scn, dict(seen))
        while len(_PARSED) > 32:
            _PARSED.popitem(last=False)
        return got
    _PARSED.move_to_end(key)
    note_files(got[1])
    return got


def no_machine(scn: Any, alg: Any, workers: int) -> str | None:
    """Why ``placement.server: machine`` finds no machine of its own for each of ``alg``'s
    servers with ``workers`` workers (None: it does, or the servers sit on devices).

    Why a skip and not an error: a design crossing worker counts with replica sizes has
    points where the workers fill every machine, as it has points with more workers than
    devices; one such combination failed the whole sweep after the others had run."""
    if scn.placement is None or scn.placement.server != "machine":
        return None
    from clustersim.algorithms.base import get_algorithm
    from clustersim.scenario.placement import free_machines

    count = get_algorithm(alg.name).servers(alg.params)
    free = len(free_machines(scn.platform, workers, count)) if count else 0
    if free >= count:
        return None
    return (f"{workers} workers leave {free} machine(s) free for the {count} server(s) of "
            f"{alg.title} (placement.server: machine; platform {scn.platform.name!r})")


def run_point(study: Study, point: Point) -> dict[str, Any]:
    """Simulate one point: ``{metric: value}`` (JSON values), or ``{"skipped": why}``."""
    from clustersim.explore.saturation import master_figures, mean_figures
    from clustersim.sim.metrics import summarize
    from clustersim.sim.runwindow import aligned_run
    from clustersim.sim.sweep import simulate_point

    scn = _scenario(study, point)
    devices = scn.platform.num_devices
    w = devices if point.workers is None else int(point.workers)
    if w > devices:
        return {"skipped": f"{w} workers but the platform has {devices} devices"}
    if scn.workload is None or not scn.algorithms:
        raise InputError("a sweep needs 'workload' and 'algorithm' sections", file=study.file)
    case = study.cases[point.case]
    if case.alg >= len(scn.algorithms):
        return {"skipped": "the point's scenario has no such algorithm"}
    alg = scn.algorithms[case.alg]
    why = no_machine(scn, alg, w)
    if why is not None:
        return {"skipped": why}
    seed = scn.run.seed if point.seed is None else point.seed
    repeats = scn.run.repeats if scn.workload.jitter > 0 else 1
    samples, figures = [], []
    for r in range(repeats):
        m, res = simulate_point(scn, alg, w, seed + r, False)
        samples.append(m)
        figures.append(master_figures(res, m))
    m = summarize(samples) if repeats > 1 else samples[0]
    row = {k: v for k, v in m.to_dict().items() if k in METRICS}
    row["devices"] = devices
    # the run as simulated: run:'s steps rounded up to whole exchange periods (a sweep's
    # run.iterations axis or a tau axis would otherwise show steps that did not run)
    ran = aligned_run(scn.run, alg)
    row["warmup_steps"] = ran.warmup
    row["measured_steps"] = ran.iterations - ran.warmup
    if ran is not scn.run:
        row["stretched"] = [scn.run.warmup, scn.run.iterations - scn.run.warmup]
    row.update(figures[0] if repeats == 1 else mean_figures(figures))
    for key, (lo, hi) in sorted(m.interval.items()):
        row[f"{key}_lo"], row[f"{key}_hi"] = lo, hi
    row["workers"] = w
    row["algorithm"] = alg.title
    row["seed"] = seed
    return json.loads(json.dumps(row, default=float))


#: the key under which :func:`run_chunk` hands the driver a row's input digests
INPUTS = "_inputs"


def run_chunk(study: Study, chunk: Sequence[Point], freeze: bool = True
              ) -> list[tuple[int, dict[str, Any]]]:
    """Points of one task, in order: ``[(index, row), ...]``.  An input error at a point
    becomes that row's ``{"error": message}`` (the driver reports the first one): an
    exception would lose the chunk's other rows.  What survives the chunk is frozen out of
    the cyclic collector's sight, as in the local pool of ``predict`` (sim/sweep.py);
    ``freeze=False`` in the caller's own process."""
    out = []
    for p in chunk:
        try:
            row = run_point(study, p)
        except InputError as exc:
            out.append((p.index, {"error": str(exc)}))
            continue
        # the digests of the files the point's parse read: the driver keyed the row on the
        # bytes it saw, and a file edited meanwhile must not be stored under them (audit C H1)
        out.append((p.index, {**row, INPUTS: dict(_parsed(study, p)[1])}))
    if freeze:
        gc.freeze()
    return out
