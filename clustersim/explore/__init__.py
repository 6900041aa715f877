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

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clustersim.explore.axes import AxesSpec, Axis, expand, parse_axes
from clustersim.explore.cache import PointCache, code_version, point_key
from clustersim.explore.driver import Outcome, run_study
from clustersim.explore.points import (
    METRICS,
    Case,
    Point,
    Study,
    make_study,
    run_chunk,
    run_point,
    study_points,
)
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
    import hashlib
    import json

    from clustersim.scenario.overrides import apply_overrides
    from clustersim.scenario.schema import parse_scenario
    from clustersim.scenario.yamlio import files_read, load_yaml
    from clustersim.shipped import scenario_path

    file = str(scenario_path(path))
    raw = load_yaml(file, what="scenario file")
    if sets:
        from clustersim.errors import InputError

        if not isinstance(raw, dict):
            raise InputError("a scenario must be a YAML mapping", file=file)
        try:
            raw = apply_overrides(raw, sets)
        except InputError as exc:
            raise exc.located(file=file) from None
    with files_read() as seen:
        scn = parse_scenario(raw, file)
    seen.pop(str(Path(file).resolve()), None)  # its fields are the study's own
    inputs = hashlib.sha256(json.dumps(sorted(seen.values())).encode()).hexdigest()
    return scn, dataclasses.replace(make_study(scn, raw), inputs=inputs)
