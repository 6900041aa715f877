"""Design-space exploration: sweeps over any scenario field, on a local pool, Dask or MPI.

The API other modules build on (uncertainty, sensitivity, the explorer page)::

    from clustersim.explore import (load_study, study_points, Point, run_point, run_study,
                                    PointCache, tidy_rows, input_columns)

    scn, study = load_study("scenarios/x.yaml", sets=["run.iterations=5"])
    points = study_points(study)              # the scenario's design: every case x axis point
    row = run_point(study, points[0])         # pure, picklable: {metric: value} (JSON values)
    # your own points (e.g. a SALib sample): fields set by dotted name, like --set
    p = Point(index=0, case=0, workers=16, sets=(("network.overhead", "5 us"),), seed=3)
    out = run_study(study, [p, ...], executor="dask", jobs=2, address="local",
                    cache=PointCache("points.sqlite"))   # or executor="local" / "mpi"
    rows = tidy_rows(study, points, out.results)   # the tidy table, in point order

* :class:`Study` - the scenario (raw, without its sweep) and its cases (variant x algorithm);
  shipped once to every worker.  :class:`Point` - (case, workers, axis values, seed).
* :func:`run_point` - one point -> ``{metric: value}``, or ``{"skipped": why}`` (more workers
  than the point's platform has devices).  Same point, same bytes, in any process.
* :func:`run_study` - many points on an executor, cached rows reused, rows streamed to the
  cache and a progress callback as chunks finish.  Executors: ``local`` (process pool;
  ``jobs=1`` in this process), ``dask`` (``address="local"`` or ``"tcp://host:port"``),
  ``mpi`` (mpi4py.futures under ``mpiexec -n N python -m mpi4py.futures ...``).
* Metric columns: :data:`METRICS` (SI units); input columns: :func:`input_columns`.

Modules: ``axes`` (axis spec, grid, Sobol/LHS sampling, constraints), ``points``,
``executors``, ``cache`` (content-addressed SQLite cache), ``table`` (tidy table; Parquet,
CSV, JSON), ``saturation`` (where a master stops scaling), ``driver``.  Nothing here is
imported by the simulator; dask, pyarrow and mpi4py are imported only when used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from clustersim.errors import InputError, did_you_mean, format_path
from clustersim.explore.axes import WORKERS, AxesSpec, Axis, axis_name, expand, parse_axes
from clustersim.explore.cache import PointCache, code_version, point_key
from clustersim.explore.driver import Outcome, run_study
from clustersim.explore.points import (
    METRICS,
    Case,
    Point,
    Study,
    field_parts,
    locate,
    plain,
    run_chunk,
    run_point,
    study_points,
)
from clustersim.explore.reach import has_servers, named_takes
from clustersim.explore.table import input_columns, tidy_rows

__all__ = ["AxesSpec", "Axis", "Case", "METRICS", "Outcome", "Point", "PointCache", "Study",
           "code_version", "expand", "input_columns", "load_study", "make_study",
           "parse_axes", "point_key", "run_chunk", "run_point", "run_study", "study_points",
           "tidy_rows"]


def load_study(path: str, sets: Sequence[str] = ()) -> tuple[Any, Study]:
    """A scenario file (a path or a shipped name; ``sets``: ``--set`` overrides) as its parsed
    scenario and its :class:`Study` (whose ``inputs`` digest the other files the parse read:
    the platform file, a constants file - what the point cache must know besides the
    scenario's own fields)."""
    import dataclasses

    from clustersim.scenario.overrides import apply_overrides
    from clustersim.scenario.schema import parse_scenario
    from clustersim.scenario.yamlio import files_read, load_yaml
    from clustersim.shipped import scenario_path

    file = str(scenario_path(path))
    raw = load_yaml(file, what="scenario file")
    if sets:
        if not isinstance(raw, dict):
            raise InputError("a scenario must be a YAML mapping", file=file)
        try:
            raw = apply_overrides(raw, sets)
        except InputError as exc:
            raise exc.located(file=file) from None
    _check_constraints(raw, file)
    with files_read() as seen:
        try:
            scn = parse_scenario(raw, file)
        except InputError as exc:
            raise _at_hint(exc, raw) from None
    seen.pop(str(Path(file).resolve()), None)  # its fields are the study's own
    inputs = hashlib.sha256(json.dumps(sorted(seen.values())).encode()).hexdigest()
    return scn, dataclasses.replace(make_study(scn, raw), inputs=inputs)


def _check_constraints(raw: Any, file: str) -> None:
    """``sweep.constraints`` is a list of conditions as text.  Checked before the scenario
    is parsed, whose message for a mapping named an internal type (``must be a string,
    not LineDict {...}``) and for an empty item said "not empty None"."""
    from clustersim.scenario.yamlio import line_of, origin_of

    sweep = raw.get("sweep") if isinstance(raw, Mapping) else None
    given = sweep.get("constraints") if isinstance(sweep, Mapping) else None
    items = given if isinstance(given, list) else [given]
    for i, c in enumerate(items):
        if c is None and not isinstance(given, list) or isinstance(c, str):
            continue
        what = ("a mapping" if isinstance(c, Mapping) else "a list" if isinstance(c, list)
                else "empty" if c is None else repr(c))
        path = ("sweep", "constraints", *((i,) if isinstance(given, list) else ()))
        raise InputError(f"a constraint is a condition as text, such as \"workers * "
                         f"workload.batch_per_worker <= 4096\" (constraints: a list of them), "
                         f"not {what}", file=file, path=path, line=line_of(raw, path),
                         origin=origin_of(raw, path))


def _at_hint(exc: InputError, raw: Any) -> InputError:
    """``sweep.at`` keys are points of ``sweep.workers``: with the counts given as the
    ``workers`` axis the parser saw an empty list ("not a point of sweep.workers []"),
    which names a list the user never wrote."""
    sweep = raw.get("sweep") if isinstance(raw, Mapping) else None
    axes = sweep.get("axes") if isinstance(sweep, Mapping) else None
    if exc.path[:2] == ("sweep", "at") and isinstance(axes, Mapping) and WORKERS in axes \
            and "sweep.workers []" in exc.message:
        return InputError("sweep.at needs its worker counts in sweep.workers; they are given "
                          "as the 'workers' axis: move them to sweep.workers (a list) to use "
                          "sweep.at", file=exc.file, path=exc.path, line=exc.line,
                          origin=exc.origin)
    return exc


def make_study(scn: Any, raw: Mapping[str, Any]) -> Study:
    """The study of a parsed scenario and its raw mapping (the one ``scn`` was parsed from)."""
    sweep = scn.sweep
    axes = sweep.axes if sweep else {}
    # sweep.workers set to null or [] (``--set sweep.workers=null`` over a file that lists
    # them) is not given: the 'workers' axis may take over
    given = (raw.get("sweep") or {}).get("workers") if isinstance(raw.get("sweep"),
                                                                  Mapping) else None
    old_workers = sweep.workers if sweep and given not in (None, []) else ()
    where = _locations(raw)
    try:
        spec = parse_axes(axes, sweep.sample if sweep else None,
                          sweep.constraints if sweep else (), old_workers)
    except InputError as exc:
        from clustersim.scenario.yamlio import line_of, origin_of

        raise exc.located(file=scn.file, line=line_of(raw, exc.path),
                          origin=origin_of(raw, exc.path)) from None
    variants = [(scn.label if scn.variants else "", ())]
    for v in (raw.get("variants") or []) if scn.variants else []:
        variants.append((str(v.get("label", "")), tuple((str(k), plain(x))
                                                        for k, x in v["set"].items())))
    cases = []
    for (label, sets), vscn in zip(variants, (scn, *(s for _, s in scn.variants))):
        for i, alg in enumerate(vscn.algorithms):
            cases.append(Case(label, alg.title, sets, i, tuple(sorted(alg.params)),
                              has_servers(alg, i == 0, spec.names)))
    _distinct_rows(scn, raw)
    base = {k: plain(v) for k, v in raw.items() if k not in ("sweep", "variants")}
    at = {int(w): plain(s) for w, s in (sweep.at.items() if sweep else ())}
    scaling = sweep.scaling if sweep else "weak"
    token = hashlib.sha256(json.dumps([base, scn.file, scaling, sorted(at.items()),
                                       [c.__dict__ for c in cases]], sort_keys=True,
                                      default=str).encode()).hexdigest()[:16]
    study = Study(base, scn.file, scaling, at, tuple(cases), spec, token, where=where)
    try:
        _check_axes_reach(study)
    except InputError as exc:
        raise locate(study, exc) from None
    return study


def _distinct_rows(scn: Any, raw: Mapping[str, Any]) -> None:
    """Refuse two algorithms reported under one title, with predict's own check
    (:func:`~clustersim.sim.sweep.sweep_cases`), located in the file.

    Why: a row is told apart by its input columns, and the algorithm column holds the
    title; two untitled ``bsp`` entries (nccl32 and ar) gave rows with the same inputs and
    different numbers, which a pivot table or the explorer silently averaged."""
    if scn.workload is None or not scn.algorithms:
        return  # not a training scenario: the command says so itself
    from clustersim.scenario.yamlio import line_of
    from clustersim.sim.sweep import sweep_cases

    try:
        sweep_cases(scn)
    except InputError as exc:
        raise exc.located(file=scn.file, line=line_of(raw, exc.path)) from None


def _check_axes_reach(study: Study) -> None:
    """Refuse an axis that no case would run with, or that a variant's ``set`` or a
    ``sweep.at`` entry would undo.

    Why: a row is labelled with its axis values; an axis applied after a variant's field
    replaced that variant's setting (the row named after the variant did not run it), an
    axis on a field that ``sweep.at`` sets at some worker count silently dropped that
    entry, and an ``algorithm.X`` axis that no algorithm takes would label rows with a value
    nobody used (an algorithm that an ``algorithm``/``algorithm.name`` axis names counts:
    the points that run it take the value)."""
    # (field another setting sets, what it is, what the axis would do to it)
    others = [(key, f"sweep.at sets at {w} workers", "that entry would be dropped at every "
               "point; give the values as the axis only, or drop the sweep.at entry")
              for w, fields in sorted(study.at.items()) for key in fields]
    others += [(key, f"the variant {case.variant!r} sets", "its rows would not run the "
                "variant's value; give the values as the axis only, or drop the variant's "
                "field") for case in study.cases for key, _ in case.sets]
    takes = sorted({t for c in study.cases for t in c.takes} | named_takes(study))
    for name in study.spec.names:
        if name == WORKERS:
            continue
        parts = field_parts(name)
        for key, who, why in others:
            other = field_parts(key)
            n = min(len(parts), len(other))
            if parts[:n] == other[:n]:
                raise InputError(f"the axis {name!r} changes {key!r}, which {who}: {why}",
                                 path=("sweep", "axes", name))
        if parts[0] == "algorithm" and len(parts) > 1 and parts[1] not in ("name", "label") \
                and parts[1] not in takes:
            raise InputError(f"no algorithm of this scenario takes a parameter {parts[1]!r}"
                             f"{did_you_mean(parts[1], takes)} (allowed: "
                             f"{', '.join(takes) or 'none'})",
                             path=("sweep", "axes", name))


def _locations(raw: Mapping[str, Any]) -> dict[str, tuple[int | None, str | None]]:
    """Line and ``--set`` item of each axis and constraint, for errors found later."""
    from clustersim.scenario.yamlio import line_of, origin_of

    sweep = raw.get("sweep")
    paths: list[tuple] = [("sweep", "axes"), ("sweep", "constraints"), ("sweep", "sample")]
    named: list[tuple[str, tuple]] = []  # an axis by its name as the sweep uses it
    if isinstance(sweep, Mapping):
        if isinstance(sweep.get("axes"), Mapping):
            paths += [("sweep", "axes", str(k)) for k in sweep["axes"]]
            named = [(f"sweep.axes.{axis_name(k)}", ("sweep", "axes", str(k)))
                     for k in sweep["axes"] if axis_name(k) not in (None, str(k))]
        if isinstance(sweep.get("constraints"), list):
            paths += [("sweep", "constraints", i) for i in range(len(sweep["constraints"]))]
    where = {format_path(p): (line_of(raw, p), origin_of(raw, p)) for p in paths}
    where.update((name, where[format_path(p)]) for name, p in named)
    return where
