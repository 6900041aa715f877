"""The explorer's table: one row per simulated point, inputs and metrics as columns.

This is the one adapter between the explorer and whatever produces sweep results.  The columns
it expects (and :func:`sweep_table` writes from :func:`~clustersim.sim.sweep.run_sweep`
results):

* inputs (axes): ``algorithm`` (str), ``workers`` (int), ``bandwidth_factor`` and
  ``latency_factor`` (float, 1.0 = the scenario as written); any other column that is not a
  metric is an input too (a tidy table from ``clustersim.explore`` with more axes works as is);
* metrics (float; a column that is empty everywhere is dropped): every numeric field of
  :class:`~clustersim.sim.metrics.PointMetrics` that is not an input - ``throughput``,
  ``efficiency``, ``speedup``, ``iteration_time``, ``compute``, ``comm``, ``wait``,
  ``comm_share``, ... and, where the scenario has a convergence profile, ``time_to_target``,
  ``goodput``, ``statistical_efficiency``, ``steps_to_target``, ...; where it emulates its
  training (``run.convergence: emulate``), ``emulated_time_to_target`` and, beside it,
  ``analytic_time_to_target`` (the analytic model's prediction for the same run), the names
  ``predict --csv`` gives them;
* uncertainty (optional): ``<metric>_lo`` / ``<metric>_hi``, the 90% interval over seeds.

A table read from Parquet keeps its columns.  Which are inputs: the ones its schema metadata
``clustersim.inputs`` names (comma-separated), else the ``inputs`` of the ``clustersim sweep``
JSON written beside it (``sweep.json`` next to ``sweep.parquet``: the sweep writes the list of
its axes there), else by name - a column named like a sweep metric (:data:`METRIC_NAMES`: the
sweep's own list, integer counters such as ``sim_events`` included) is a metric, one of
:data:`INPUTS`, ``seed``, ``variant`` or a dotted scenario field is an input, and any other
column is an input unless it is floating point.  Why names before types: a counter is an
integer like ``workers``, and taking it for an axis fixes the chart at one row.  Such
counters stay metrics of the table, but the page does not offer them to chart
(:data:`BOOKKEEPING`, :func:`metric_choices`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from clustersim.errors import InputError

__all__ = ["INPUTS", "FACTORS", "METRIC_NAMES", "BOOKKEEPING", "sweep_table", "compute_cells",
           "read_table", "split_columns", "metric_choices", "metric_title", "time_scale",
           "sweep_meta", "sampled_inputs", "EMULATED", "unhashable_columns"]

#: input columns of a table built here, in the order the app offers them
INPUTS = ("algorithm", "workers", "bandwidth_factor", "latency_factor")
#: the inputs that are what-if factors of the scenario's network (1.0 = as written)
FACTORS = ("bandwidth_factor", "latency_factor")
#: PointMetrics fields that are neither inputs nor metrics worth plotting
_SKIP = {"algorithm", "workers", "interval", "tta_note", "seeds", "sim_events", "flows"}
#: a point's ``emulation`` figures (:func:`clustersim.report.whatif_cells.simulate_cells`) as
#: (column, key); the columns are ``predict --csv``'s names for them
EMULATED = (("emulated_time_to_target", "time_to_target"),
            ("analytic_time_to_target", "analytic_time_to_target"))
#: columns that are always metrics: the sweep table's (:data:`clustersim.explore.points.METRICS`)
#: and the numeric fields of a point (:func:`sweep_table`)
METRIC_NAMES = frozenset({
    "batch_per_worker", "iteration_time", "throughput", "compute", "comm", "wait",
    "comm_total", "comm_share", "comm_share_total", "worker_utilization", "server_utilization",
    "update_rate", "staleness_mean", "staleness_p90", "staleness_max", "bytes_per_iteration",
    "makespan", "sim_events", "flows", "seeds", "warmup_steps", "measured_steps",
    "steps_to_target", "samples_to_target",
    "epochs_to_target", "time_to_target", "statistical_efficiency", "goodput", "devices",
    "servers", "service_time", "saturation_workers", "speedup", "efficiency",
    *(col for col, _key in EMULATED)})
#: metric columns that say how a point was simulated, not how the design performs: the
#: simulation's own counts (``sim_events``, ``flows``), the seeds summarised and the steps run
#: (the run window), and a seed or repeat index where a table has one that is not named an
#: input.  They stay metrics (:func:`split_columns`: an integer counter taken for an axis
#: fixed the chart at one row) and in the table, but the page does not offer them as the
#: metric or x axis (:func:`metric_choices`)
BOOKKEEPING = frozenset({"sim_events", "flows", "seeds", "warmup_steps", "measured_steps",
                         "seed", "repeat"})
#: what a table must look like (said by every error about one)
EXPECTED = ("explore reads a .parquet results table (from 'clustersim sweep': input columns "
            "such as algorithm, workers and the sweep's axes, and numeric metric columns such "
            "as throughput) or a scenario YAML")


def sweep_table(cells: dict[tuple[float, float], dict[str, list[dict[str, Any]]]]) -> Any:
    """A pandas DataFrame from ``{(bandwidth, latency): {algorithm: [point dicts]}}`` (the
    ``cells`` of :func:`~clustersim.report.whatif.whatif_grid`), in a fixed row order.

    A point's ``emulation`` dict (its emulated training run) gives the columns
    :data:`EMULATED` (NaN where the run never reached the target): the point's own
    ``time_to_target`` is the analytic model's, empty when the scenario emulates, and the
    table skipped dicts, so ``explore emulate_digits`` - a study of time to accuracy - had no
    time-to-accuracy metric at all (QA 7a H1)."""
    import pandas as pd

    rows = []
    for (bw, lat), algs in sorted(cells.items()):
        for alg, pts in algs.items():
            for p in pts:
                row: dict[str, Any] = {"algorithm": alg, "workers": int(p["workers"]),
                                       "bandwidth_factor": float(bw),
                                       "latency_factor": float(lat)}
                for key, val in p.items():
                    if key in _SKIP or isinstance(val, (str, dict)):
                        continue
                    row[key] = float("nan") if val is None else float(val)
                emu = p.get("emulation")
                if isinstance(emu, dict):
                    for col, key in EMULATED:
                        val = emu.get(key)
                        row[col] = float("nan") if val is None else float(val)
                for key, (lo, hi) in (p.get("interval") or {}).items():
                    row[f"{key}_lo"], row[f"{key}_hi"] = float(lo), float(hi)
                rows.append(row)
    df = pd.DataFrame(rows)
    return df.dropna(axis=1, how="all")


def compute_cells(scn: Any, factors: Sequence[tuple[float, float]],
                  advance: Callable[[int], None] = lambda n=1: None,
                  jobs: int | None = None, cache: Any = None) -> Any:
    """Simulate the scenario at these (bandwidth, latency) factors - every algorithm and
    workers count, on one process pool, through ``cache`` when given - and return their
    rows (:func:`sweep_table`)."""
    from clustersim.report.whatif_cells import simulate_cells

    return sweep_table(simulate_cells(scn, factors, advance, jobs, cache))


def count_tasks(scn: Any) -> int:
    """Points one cell of :func:`compute_cells` simulates (for its progress bar)."""
    from clustersim.sim.sweep import sweep_cases, sweep_tasks

    return len(sweep_tasks(sweep_cases(scn)))


def read_table(path: str | Path) -> tuple[Any, list[str] | None]:
    """A Parquet table and the input columns its metadata (or the sweep's JSON beside it)
    names (None: not named).  A missing, unreadable or empty file is an :class:`InputError`
    naming it: the page would be an empty chart with nothing saying why."""
    import pyarrow.parquet as pq

    path = Path(path)
    if path.is_dir():  # "file not found" would send the user looking for a missing file
        raise InputError(f"is a directory, not a Parquet file ({EXPECTED})", file=str(path))
    if not path.is_file():
        raise InputError(f"file not found ({EXPECTED})", file=str(path))
    try:
        t = pq.read_table(path)
    except (OSError, ValueError) as exc:
        why = " ".join(str(exc).split())  # pyarrow's own newlines: one line (QA 19 L5)
        raise InputError(f"not a readable Parquet table ({why}); {EXPECTED}",
                         file=str(path)) from None
    if t.num_rows == 0:
        raise InputError("the table has no rows, nothing to explore (a sweep whose points "
                         "were all skipped or failed writes such a table)", file=str(path))
    meta = t.schema.metadata or {}
    inputs = meta.get(b"clustersim.inputs")
    names = inputs.decode().split(",") if inputs else _sweep_inputs(path, t.column_names)
    df = t.to_pandas()
    notes = []
    odd = unhashable_columns(df)
    if odd:  # left out by split_columns; said once here, where the file is read
        notes.append(f"column{'s' if len(odd) > 1 else ''} {', '.join(repr(c) for c in odd)} "
                     f"hold{'' if len(odd) > 1 else 's'} lists or mappings, not single "
                     "values: left out of the axes, metrics and fixed controls")
    # values, none finite (QA 19 M6: an all-inf column was charted without a word); an
    # empty one is a metric the sweep has none of (saturation_workers without a master)
    blank = [c for c in df.columns if c not in odd and df[c].dtype.kind == "f"
             and df[c].notna().any() and not _finite(df[c])]
    if blank:
        notes.append(f"column{'s' if len(blank) > 1 else ''} "
                     f"{', '.join(repr(c) for c in blank[:8])}"
                     f"{' …' if len(blank) > 8 else ''} hold{'' if len(blank) > 1 else 's'} "
                     "no finite value (only infinities): not offered as metrics")
    if names is not None and inputs:
        missing = [c for c in names if c not in df.columns]
        if missing:
            notes.append(f"its metadata clustersim.inputs names "
                         f"{', '.join(repr(c) for c in missing)}, which the table does not "
                         "have: ignored")
    if notes:
        import sys

        for note in notes:
            print(f"clustersim explore: note: {path}: {note}", file=sys.stderr, flush=True)
    return df, names


def _finite(col: Any) -> bool:
    """Whether a column holds at least one finite number (True for non-numeric ones)."""
    import numpy as np

    if col.dtype.kind not in "fiu":
        return True
    return bool(np.isfinite(col.to_numpy(dtype=float, na_value=np.nan)).any())


def unhashable_columns(df: Any) -> list[str]:
    """The columns of ``df`` whose cells hold lists, arrays, mappings or other values that
    are not one value each (a Parquet list or struct column).

    Why: the page offers an input's distinct values as a fixed control, and a list cell
    has none to offer - ``explore`` on a table whose ``workers`` held ``[1, 2]`` ended in a
    traceback (``unhashable type: 'numpy.ndarray'``, QA 16c H4).  Such a column is no axis
    anyone can fix or colour by, so it is left out (:func:`split_columns`) with a note,
    rather than refusing a table whose other columns are fine."""
    out = []
    for col in df.columns:
        if df[col].dtype.kind != "O":
            continue
        try:
            df[col].unique()  # hashes every cell (in C), as the page's controls do
        except TypeError:
            out.append(col)
    return out


def sweep_meta(path: str | Path, columns: Sequence[str]) -> dict[str, Any] | None:
    """``clustersim sweep``'s JSON beside the Parquet file (``scenario``, ``inputs``, the
    design) when it is that table's (the same columns); None otherwise."""
    import json

    named = _parquet_scenario(path)  # the sweep's name in the table itself, when written
    twin = Path(path).with_suffix(".json")
    try:
        head = json.loads(twin.read_text()) if twin.is_file() else None
    except (OSError, ValueError, UnicodeDecodeError):
        head = None
    if not isinstance(head, dict) or head.get("columns") != list(columns):
        return {"scenario": named} if named else None
    out = {k: v for k, v in head.items() if k != "rows"}
    if named:
        out["scenario"] = named
    return out


def sampled_inputs(path: str | Path, columns: Sequence[str]) -> frozenset[str]:
    """The columns of a Sobol'/LHS sweep's sampled axes (a range, not a list of values),
    from the sweep's JSON beside the table; empty for a grid or a table without it.

    Why from the design and not the table's shape: with a ``compare`` entry, seeds or computed
    network factors every sampled value repeats, and a count of distinct values took an
    8-point design's axes for a grid's (audit L H2)."""
    from clustersim.explore.table import axis_column

    head = sweep_meta(path, columns) or {}
    axes = head.get("axes")
    if head.get("design") in (None, "grid") or not isinstance(axes, dict):
        return frozenset()
    return frozenset(n if n == "workers" else axis_column(n)  # workers: the case's column
                     for n, a in axes.items() if isinstance(a, dict))


def _parquet_scenario(path: str | Path) -> str | None:
    """The scenario name ``clustersim sweep`` writes in the Parquet schema metadata
    (``clustersim.scenario``), None for another table."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, ValueError):
        return None
    name = meta.get(b"clustersim.scenario")
    return name.decode(errors="replace") if name else None


def _sweep_inputs(path: Path, columns: Sequence[str]) -> list[str] | None:
    """The ``inputs`` of the sweep's JSON beside the Parquet file (:func:`sweep_meta`)."""
    head = sweep_meta(path, columns)
    if head is None or not isinstance(head.get("inputs"), list):
        return None
    return [c for c in head["inputs"] if c in columns]


def split_columns(df: Any, inputs: Iterable[str] | None = None, source: str | None = None
                  ) -> tuple[list[str], list[str]]:
    """(input columns, metric columns) of a table; interval columns are neither, nor is a
    metric without one finite value (empty, NaN or infinite everywhere).  ``source`` names
    the file in an error."""
    odd = set(unhashable_columns(df))  # no values to offer: left out (read_table says so)
    cols = [c for c in df.columns if not (c.endswith("_lo") or c.endswith("_hi"))
            and c not in odd]
    if inputs is not None:
        ins = [c for c in cols if c in set(inputs)]
    else:
        ins = [c for c in cols if c not in METRIC_NAMES and (
            c in INPUTS or c in ("seed", "variant") or "." in c or df[c].dtype.kind != "f")]
    mets = [c for c in cols if c not in ins and df[c].dtype.kind in "fiu" and _finite(df[c])]
    if not ins or not mets:
        raise InputError(f"the table needs input columns (axes such as {', '.join(INPUTS)}) "
                         "and numeric metric columns (such as throughput, efficiency); it has "
                         f"inputs {ins or 'none'} and metrics {mets or 'none'} (as 'clustersim "
                         "sweep' writes them, or name the inputs in the Parquet schema "
                         "metadata 'clustersim.inputs')", file=source)
    return ins, mets


def metric_choices(metrics: Sequence[str]) -> list[str]:
    """The metrics the page offers to chart: ``metrics`` without :data:`BOOKKEEPING`.

    Why: a sweep's table has the simulation's counters beside its performance figures, and
    the metric list put ``sim_events``, ``flows``, ``seeds`` and the run window's step counts
    among them - not performance metrics, just a longer scroll to throughput (QA 10).  Why
    not as fixed controls either: they vary with the point (events and flows grow with the
    workers), so fixing one would only hide rows.  A table of nothing but such counters
    keeps them all: an empty metric list would leave the page nothing to draw."""
    shown = [m for m in metrics if m not in BOOKKEEPING and m not in _INPUT_LIKE]
    return shown or list(metrics)


#: metric columns that restate an input, not a result: the batch each worker ran (the
#: sweep's ``workload.batch_per_worker`` axis, or the scenario's), the platform's device count
#: (audit K L3: offered as a metric, a flat line or the axis itself)
_INPUT_LIKE = frozenset({"batch_per_worker", "devices"})


#: unit of a CSV column name's suffix (:data:`clustersim.report.tables.TRAINING_CSV_COLUMNS`)
_UNITS = (("_samples_per_s", "samples/s"), ("_per_s", "per s"), ("_fraction", "%"),
          ("_s", "s"), ("_B", "bytes"), ("_versions", "versions"), ("_steps", "steps"),
          ("_samples", "samples"), ("_epochs", "epochs"))
_TITLES = {"iteration_time": "iteration time", "comm": "communication (exposed)",
           "comm_total": "communication (total)", "comm_share": "exposed communication",
           "efficiency": "scaling efficiency", "speedup": "speedup",
           "time_to_target": "time to target accuracy",
           "emulated_time_to_target": "emulated time to target",
           "analytic_time_to_target": "analytic model's time to target, same run"}


def metric_title(col: str, unit: str | None = None) -> tuple[str, str | None]:
    """A metric's axis title with its unit, and a plotly tick format (None: the default):
    the tables hold SI values (seconds, samples/s, 0..1 fractions), which a raw column name
    leaves the reader to guess.  ``unit``: the unit the values are shown in, when not the
    table's (:func:`time_scale`)."""
    name = _TITLES.get(col, col.replace("_", " "))
    if col in ("efficiency", "speedup"):
        return (f"{name} (%)", ".0%") if col == "efficiency" else (f"{name} (x)", None)
    own = _unit(col)
    if own is None:
        return name, None
    fmt = {"%": ".0%", "samples/s": "~s", "bytes": "~s"}.get(own)
    return f"{name} ({unit or own})", None if unit else fmt


def _unit(col: str) -> str | None:
    """The unit of a metric's values, from its CSV column's suffix (None: none known)."""
    from clustersim.report.tables import TRAINING_CSV_COLUMNS

    csv = TRAINING_CSV_COLUMNS.get(col, "")
    return next((unit for suffix, unit in _UNITS if csv.endswith(suffix)), None)


def time_scale(col: str, values: Iterable[Any]) -> tuple[float, str] | None:
    """(seconds per unit, unit word) to show a duration metric in, when not seconds: the
    unit the rest of the tool reads durations in (days, hours, minutes: the what-if page's
    axes, :func:`clustersim.report.plot_axes.time_unit`; the tables'
    :func:`clustersim.units.format_duration`).  Why: a time to target of 450,000 s showed as
    "450k" seconds, which nobody reads as five days (QA 7a L4).  None: not a duration, or one
    best read in seconds (an iteration time)."""
    from clustersim.report.plot_axes import time_unit

    if _unit(col) != "s":
        return None
    vals = []
    for v in values:
        try:
            vals.append(float(v))
        except (TypeError, ValueError):
            continue
    if not any(math.isfinite(v) and v > 0 for v in vals):
        return None
    size, word, _short = time_unit(vals)
    return None if size == 1.0 else (size, word)
