"""The tidy table of a sweep: one row per point, every input axis and every metric a column.

"Tidy" (Wickham, *Tidy Data*, J. Stat. Software 59(10), 2014): each variable a column, each
observation a row - what pandas, Polars, R, DuckDB and the explorer page read without
reshaping.  Columns: the inputs (``variant`` when the scenario has variants, ``algorithm``,
``workers``, each axis by its dotted field name - ``algorithm (axis)`` for an axis of whole
``algorithm`` mappings - and ``seed``), then the metrics in SI units
(seconds, samples/s, bytes; fractions 0..1), as :data:`clustersim.explore.points.METRICS`.
Speedup and efficiency are left out: "relative to the smallest point" has no meaning in a
design without a worker-count line; compute them from ``throughput`` per group.

Written as Parquet (pyarrow; typed columns), CSV and JSON; all three from the same rows, in
point order, so the bytes do not depend on the executor.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from clustersim.explore.axes import AxesSpec
from clustersim.explore.points import METRICS, Point, Study, applied

__all__ = ["tidy_rows", "input_columns", "axis_column", "design_description", "parquet_bytes",
           "csv_bytes", "json_bytes"]


#: the input columns every row has (``variant`` only with variants)
CASE_COLUMNS = ("variant", "algorithm", "workers", "seed")


def axis_column(name: str) -> str:
    """The column of the axis ``name``: its name, or ``NAME (axis)`` where that is one of
    :data:`CASE_COLUMNS`.  Why: an ``algorithm`` axis (whole algorithm mappings) made two
    columns named ``algorithm`` - a Parquet file no reader opens, and the case column's
    values written over the axis's."""
    return f"{name} (axis)" if name in CASE_COLUMNS else name


def input_columns(study: Study) -> list[str]:
    """The table's input columns, in order: ``variant`` (with variants), ``algorithm``,
    ``workers``, every other axis (:func:`axis_column`), ``seed``; the metrics follow them."""
    axes = [axis_column(n) for n in study.spec.names if n != "workers"]
    variant = ["variant"] if any(c.variant for c in study.cases) else []
    return [*variant, "algorithm", "workers", *axes, "seed"]


def _cell(v: Any) -> Any:
    """Scalars stay; a list or mapping value of an axis becomes its JSON text."""
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v, sort_keys=True)
    return v


def tidy_rows(study: Study, points: Sequence[Point], results: Mapping[int, Mapping[str, Any]]
              ) -> list[dict[str, Any]]:
    """The table's rows in point order (points skipped or failed are left out)."""
    inputs = input_columns(study)
    extra = sorted({k for r in results.values() for k in r
                    if k.endswith(("_lo", "_hi")) and "skipped" not in r})
    cols = [*METRICS, *extra]
    axis_of = {axis_column(n): n for n in study.spec.names}
    rows = []
    for p in points:
        r = results.get(p.index)
        if r is None or "skipped" in r or "error" in r:
            continue
        row: dict[str, Any] = {}
        case = study.cases[p.case]
        values = applied(study, p)  # an axis its algorithm does not take: an empty cell
        for c in inputs:
            if c == "variant":
                row[c] = case.variant
            elif c in ("algorithm", "workers", "seed"):
                row[c] = r.get(c)
            else:
                row[c] = _cell(values.get(axis_of[c]))
        for c in cols:
            row[c] = r.get(c)
        rows.append(row)
    return rows


def design_description(spec: AxesSpec) -> dict[str, Any]:
    """The design as written in the JSON beside the table: enough to draw it again (the
    method, n and seed of a sample, each axis's values or range, the constraints)."""
    axes = {}
    for a in spec.axes:
        axes[a.name] = list(a.values) if a.values else \
            {"from": a.low, "to": a.high, "log": a.log, "integer": a.integer}
    out: dict[str, Any] = {"design": spec.method or "grid", "axes": axes,
                           "constraints": list(spec.constraints)}
    if spec.method is not None:
        out.update(n=spec.n, seed=spec.seed)
    return out


def _arrow_type(values: list[Any]) -> Any:
    import pyarrow as pa

    vals = [v for v in values if v is not None]
    if vals and all(isinstance(v, bool) for v in vals):
        return pa.bool_()
    if vals and all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        return pa.int64()
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return pa.float64()
    return pa.string()


def parquet_bytes(rows: Sequence[Mapping[str, Any]], columns: Sequence[str],
                  inputs: Sequence[str] = (), scenario: str = "",
                  units: Mapping[str, str] | None = None) -> bytes:
    """Typed columns (int64, float64, bool, string; a mixed column as text); no index, no
    pandas metadata: the bytes depend on the rows only (and on the pyarrow version).
    ``inputs``: the sweep's axes, named in the schema metadata ``clustersim.inputs`` so that
    a reader (``clustersim explore``) tells them from the metrics without guessing - an
    integer counter such as ``sim_events`` looks like an axis.  ``scenario``: its name, as
    ``clustersim.scenario`` (``explore TABLE --scenario S`` checks that S is the table's).
    ``units``: a column's unit, as its field's metadata ``unit`` (the values are SI)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays, fields = [], []
    for c in columns:
        vals = [r.get(c) for r in rows]
        t = _arrow_type(vals)
        if t == pa.string():
            vals = [None if v is None else (v if isinstance(v, str) else json.dumps(v))
                    for v in vals]
        elif t == pa.float64():
            vals = [None if v is None else float(v) for v in vals]
        arrays.append(pa.array(vals, type=t))
        unit = (units or {}).get(c)
        fields.append(pa.field(c, t, metadata={b"unit": unit.encode()} if unit else None))
    meta = {b"clustersim.inputs": ",".join(inputs).encode()} if inputs else {}
    if scenario:
        meta[b"clustersim.scenario"] = scenario.encode()
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta or None))
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def _clean(v: Any) -> Any:
    """JSON has no inf/NaN (as clustersim.report.output.clean_json): None."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


def csv_bytes(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> bytes:
    """As clustersim.report.output.csv_text writes a table (empty cell for None), with the
    csv writer on lists: a resumed 10,000-point sweep writes its table in a fraction of a
    second."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    w.writerows([_clean(r.get(c)) for c in columns] for r in rows)
    return buf.getvalue().encode()


def json_bytes(meta: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
               columns: Sequence[str]) -> bytes:
    """``{meta..., "columns": [...], "rows": [[...], ...]}``, one row per line."""
    head = json.dumps({**meta, "columns": list(columns)}, sort_keys=True)[:-1]
    body = ",\n  ".join(json.dumps([_clean(r.get(c)) for c in columns]) for r in rows)
    return f'{head}, "rows": [\n  {body}\n]}}\n'.encode()
