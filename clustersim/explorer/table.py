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
  ``goodput``, ``statistical_efficiency``, ``steps_to_target``, ...;
* uncertainty (optional): ``<metric>_lo`` / ``<metric>_hi``, the 90% interval over seeds.

A table read from Parquet keeps its columns; a column is a metric when it is floating point
and not named in :data:`INPUTS`, unless the file's metadata lists ``clustersim.inputs``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from clustersim.errors import InputError

__all__ = ["INPUTS", "sweep_table", "compute_cells", "read_table", "split_columns"]

#: input columns of a table built here, in the order the app offers them
INPUTS = ("algorithm", "workers", "bandwidth_factor", "latency_factor")
#: PointMetrics fields that are neither inputs nor metrics worth plotting
_SKIP = {"algorithm", "workers", "interval", "tta_note", "seeds", "sim_events", "flows"}


def sweep_table(cells: dict[tuple[float, float], dict[str, list[dict[str, Any]]]]) -> Any:
    """A pandas DataFrame from ``{(bandwidth, latency): {algorithm: [point dicts]}}`` (the
    ``cells`` of :func:`~clustersim.report.whatif.whatif_grid`), in a fixed row order."""
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
    """A Parquet table and the input columns its metadata names (None: not named)."""
    import pyarrow.parquet as pq

    try:
        t = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable Parquet table ({exc})") from None
    meta = t.schema.metadata or {}
    inputs = meta.get(b"clustersim.inputs")
    names = inputs.decode().split(",") if inputs else None
    return t.to_pandas(), names


def split_columns(df: Any, inputs: Iterable[str] | None = None) -> tuple[list[str], list[str]]:
    """(input columns, metric columns) of a table; interval columns are neither."""
    cols = [c for c in df.columns if not (c.endswith("_lo") or c.endswith("_hi"))]
    if inputs is not None:
        ins = [c for c in cols if c in set(inputs)]
    else:
        ins = [c for c in cols if c in INPUTS or df[c].dtype.kind not in "f"]
    mets = [c for c in cols if c not in ins and df[c].dtype.kind in "fiu"]
    if not ins or not mets:
        raise InputError(f"the table needs input and metric columns; it has {list(df.columns)}")
    return ins, mets
