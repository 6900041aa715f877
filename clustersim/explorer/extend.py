"""Growing a sweep's table from the explore page: the sweep itself run again with changes.

Why the sweep and not the what-if cells: a sweep applies its axes by its own rules (an
``algorithm.X`` axis reaches each ``compare`` entry that takes X, variants, constraints, a
seed per point), through its executor and its content-addressed point cache.  So the page
asks for new points the way the command line does - ``sweep.sample.n=32`` for more Sobol'
points, ``sweep.axes.workload.batch_per_worker=[32, 64, 128]`` for another grid value - and
:func:`~clustersim.explore.driver.run_study` runs the changed design on the executor the
``explore`` command was given (``-j``, ``--dask``) with the sweep's own ``points.sqlite``
beside the table: the points already there are read back, only new ones are simulated, and a
later ``clustersim sweep`` with the same change reads what the page computed (issue 14:
"asks for points not yet computed - run through the same executor and cache").  A change that
would alter the table's columns (a new axis) is refused: the page's controls are its columns.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clustersim.errors import InputError

__all__ = ["SweepExtender", "parse_changes", "start_extend"]


def parse_changes(text: Any) -> list[str]:
    """The page's text as ``--set`` items: one ``KEY=VALUE`` per line or separated by ``;``
    (a value of its own with ``;`` in it is not needed by a sweep's fields)."""
    items = [s.strip() for s in re.split(r"[;\n]", str(text or "")) if s.strip()]
    if not items:
        raise InputError("give a change of the sweep as KEY=VALUE, e.g. sweep.sample.n=32 or "
                         "sweep.axes.workload.batch_per_worker=[32, 64, 128]")
    bad = next((s for s in items if "=" not in s), None)
    if bad is not None:
        raise InputError(f"{bad!r} is not KEY=VALUE (e.g. sweep.sample.n=32)")
    other = next((s for s in items if not s.split("=", 1)[0].strip().startswith("sweep.")), None)
    if other is not None:  # audit L M1: rows of another configuration joined the table unmarked
        raise InputError(f"{other!r} is not a change of the sweep's design: the page grows the "
                         "sweep (sweep.sample..., sweep.axes...); another field changes what "
                         "every row means - run 'clustersim sweep --set ...' for that")
    return items


@dataclass
class SweepExtender:
    """Runs the table's sweep with the page's changes (see the module docstring)."""

    scenario: str
    sets: list[str]  # the command's own --set items, first
    inputs: list[str]  # the table's input columns, which a change must keep
    cache: Path | None  # the sweep's points.sqlite (None: --no-cache)
    jobs: int
    dask: str | None = None

    def plan(self, text: Any) -> tuple[Any, list[Any]]:
        """The changed study and its points, checked as ``clustersim sweep`` checks them
        (every point's scenario parses) before anything runs; an :class:`InputError`
        otherwise."""
        from clustersim.explore import input_columns, load_study
        from clustersim.explore.checks import check_points
        from clustersim.explore.points import study_design

        _scn, study = load_study(self.scenario, [*self.sets, *parse_changes(text)])
        cols = input_columns(study)
        if cols != [c for c in self.inputs if c in cols] or not set(cols) <= set(self.inputs):
            new = [c for c in cols if c not in self.inputs]
            what = ", ".join(new) if new else "their order"
            raise InputError(f"that changes the table's columns ({what}); the page can grow "
                             "the design of its axes, not add axes: run 'clustersim sweep' "
                             "for that")
        points, _counts = study_design(study)
        check_points(study, points)
        return study, points

    def run(self, study: Any, points: list[Any], advance: Callable[[int], None]) -> Any:
        """The design's rows as a DataFrame typed as the table was read (through the same
        Parquet writer and reader as ``clustersim sweep`` and ``explore TABLE``)."""
        import pyarrow.parquet as pq

        from clustersim.explore import input_columns, run_study
        from clustersim.explore.cache import open_cache
        from clustersim.explore.table import parquet_bytes, tidy_rows

        cache = open_cache(self.cache) if self.cache is not None else None
        try:
            res = run_study(study, points, executor="dask" if self.dask else "local",
                            jobs=self.jobs, address=self.dask, cache=cache, advance=advance)
        finally:
            if cache is not None:
                cache.close()
        rows = tidy_rows(study, points, res.results)
        inputs = input_columns(study)
        cols = [*inputs, *(c for c in (rows[0] if rows else {}) if c not in inputs)]
        return pq.read_table(io.BytesIO(parquet_bytes(rows, cols, inputs))).to_pandas()


def start_extend(ex: Any, text: Any) -> str:
    """Begin running the changed sweep in the background for the page ``ex`` (an
    :class:`~clustersim.explorer.app.Explorer` with ``extend`` set); a message for the page.
    The new rows join the table (a row of the same inputs replaced), at the network as
    written (1x), so every control sees them."""
    import pandas as pd

    ext = ex.extend
    if ext is None:
        return "this table has no scenario: give --scenario to grow its sweep"
    try:
        study, points = ext.plan(text)
    except InputError as exc:
        return str(exc)

    def job(advance: Callable[[int], None]) -> tuple[Any, str]:
        rows = ext.run(study, points, advance)
        for col in ("bandwidth_factor", "latency_factor"):
            if col in ex.inputs and col not in rows.columns:
                rows[col] = 1.0
        keep = [c for c in ex.inputs if c in rows.columns]
        table = pd.concat([ex.table, rows], ignore_index=True)
        table = table.drop_duplicates(subset=keep, keep="last").reset_index(drop=True)
        return table, f"the sweep now has {len(rows)} rows here ({len(table)} in the table)"

    return ex.background(len(points), f"running the sweep with {'; '.join(parse_changes(text))}"
                         f": {len(points)} points" + (" (those in the point cache "
                         f"{ext.cache} are read back)" if ext.cache is not None else
                         " (--no-cache: every one simulated)"),
                         job, "clustersim-explore-sweep")
