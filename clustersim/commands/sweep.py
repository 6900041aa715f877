"""``clustersim sweep``: a design-space sweep to a tidy table (Parquet, CSV, JSON).

The points come from the scenario's ``sweep:`` section (``axes``, ``sample``, ``constraints``;
the old ``workers`` list and ``variants`` work as axes); they run on the local process pool,
Dask (``--dask local`` or ``--dask tcp://host:port``) or MPI (``--mpi`` under
``mpiexec -n N python -m mpi4py.futures -m clustersim sweep ...``), with a per-point cache in
the output folder so a rerun or an extended sweep only runs new points.  See
docs/exploration.md.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import time
from pathlib import Path
from typing import Any

from clustersim._jobs import parse_count
from clustersim._jobs import parse_jobs as _jobs
from clustersim.errors import InputError

EXIT_OK = 0
#: saturation lines printed: one per group, and a 292-value axis made 2,044 of them
MAX_SATURATION_LINES = 10


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``sweep`` and its options to the CLI's ``subparsers``; the new parser."""
    p = subparsers.add_parser(
        "sweep", help="sweep any scenario fields to a tidy table (Parquet/CSV/JSON)",
        description="Run every point of the scenario's sweep (sweep.axes: any field as a grid "
                    "or sampled with sobol/lhs; constraints) and write one tidy table: every "
                    "input axis and every metric a column.  Points already run (same "
                    "scenario fields, seed and code) come from the cache.")
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped scenario")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a scenario field, as in predict (repeatable)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--dask", metavar="ADDRESS",
                       help="run on Dask: 'local' starts a LocalCluster of -j workers; "
                            "tcp://host:port uses your scheduler (TLS and UCX are not "
                            "supported)")
    where.add_argument("--mpi", action="store_true",
                       help="run on the mpi4py.futures pool (start under mpiexec -n N python "
                            "-m mpi4py.futures -m clustersim sweep ...)")
    p.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                   help="local processes or LocalCluster workers (default: CLUSTERSIM_JOBS or "
                        "the usable cores); results do not depend on it")
    p.add_argument("--out", metavar="DIR",
                   help="folder for sweep.parquet, sweep.csv, sweep.json and the point cache "
                        "(default: <scenario name>.sweep in the working folder; characters "
                        "other than letters, digits, '_', '-' and '.' become '_', and the "
                        "name is cut to 100 characters)")
    p.add_argument("--parquet", metavar="FILE", help="the table as Parquet (instead of DIR's)")
    p.add_argument("--csv", metavar="FILE", help="the table as CSV (instead of DIR's)")
    p.add_argument("--json", metavar="FILE", help="the table as JSON (instead of DIR's)")
    cached = p.add_mutually_exclusive_group()  # --cache beside --no-cache was dropped
    cached.add_argument("--cache", metavar="FILE",
                   help="the point cache (SQLite; default: DIR/points.sqlite): points run "
                        "before for the same scenario, point and code are read from it, new "
                        "ones added - sweeps with different outputs can share one")
    cached.add_argument("--no-cache", action="store_true",
                        help="run every point; store nothing")
    p.add_argument("--chunk", type=parse_count, metavar="N",
                   help="points per task (default: about 4 tasks per worker, at most 64)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary")
    p.set_defaults(func=cmd_sweep)
    return p


#: seconds between progress lines when stderr is not a terminal (a batch job's log)
PROGRESS_EVERY = 30.0


#: designs of at least this many points show the progress of their check before the sweep
CHECK_PROGRESS_FROM = 2_000


def _progress(total: int, enabled: bool, what: str = "sweep"):
    """Points done, rate and ETA on stderr: a bar on a terminal, a line every
    :data:`PROGRESS_EVERY` seconds elsewhere (``mpiexec`` pipes, batch logs); ``what``
    names the phase (the points' check before the sweep has one of its own)."""
    from contextlib import nullcontext

    if not enabled or total < 2:
        return nullcontext(lambda n=1: None)
    if not sys.stderr.isatty():
        from clustersim._progress import ProgressLines

        return ProgressLines(total, what, PROGRESS_EVERY)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    from clustersim._progress import ProgressAdvance

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text("" if task.speed is None else f"{task.speed:,.1f} points/s")

    prog = Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), Rate(),
                    TimeRemainingColumn(), console=Console(stderr=True))
    return ProgressAdvance(prog, total)


#: the longest scenario name kept in the default folder (a file name has 255 bytes at most)
NAME_IN_FOLDER = 100


def default_out(name: str) -> Path:
    """The folder ``sweep`` writes to without ``--out``: ``<name>.sweep`` in the working
    folder, with the name made a safe file name.  A scenario's ``name`` is data from whoever
    wrote it: ``name: /tmp/x`` or ``../../x`` wrote outside the working folder, and a
    5,000-character name was a traceback (QA 10 M7, H4)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:NAME_IN_FOLDER].lstrip(".")
    return Path(f"{safe or 'scenario'}.sweep")


def cmd_sweep(args: argparse.Namespace) -> int:
    """``clustersim sweep``: check every point's scenario, run the points not in the point
    cache on the chosen executor, write the tables all or none, print the summary."""
    from clustersim.explore import input_columns, load_study, run_study
    from clustersim.explore.cache import open_cache
    from clustersim.explore.checks import check_points
    from clustersim.explore.points import METRICS, study_design
    from clustersim.explore.saturation import saturation_summary
    from clustersim.explore.table import (
        csv_bytes,
        design_description,
        json_bytes,
        parquet_bytes,
        tidy_rows,
    )
    from clustersim.report.output import check_outputs, unwritable, write_outputs
    from clustersim.sim.sweep import default_jobs

    if args.mpi:  # before anything is read: under a plain mpiexec every rank is here
        from clustersim.explore.executors import check_mpi_launch

        check_mpi_launch()
    scn, study = load_study(args.scenario, list(args.set or []))
    if scn.workload is None:
        raise InputError("a sweep needs a training scenario ('workload' and 'algorithm')",
                         file=scn.file)
    if args.out is not None and not args.out.strip():
        raise InputError("cannot write --out '': an empty folder name; give a folder name")
    out = Path(args.out) if args.out is not None else default_out(scn.name)
    # an empty name given for a file is refused by check_outputs, not replaced by the default
    files = {flag: out / f"sweep.{flag[2:]}" if given is None else given
             for flag, given in (("--parquet", args.parquet), ("--csv", args.csv),
                                 ("--json", args.json))}
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:  # Parquet is optional (the explore extra)
        if args.parquet:
            raise InputError("--parquet needs pyarrow (pip install 'clustersim[explore]')")
        files["--parquet"] = None
    check_outputs(files)
    if args.cache is not None and not args.cache.strip():
        raise InputError("cannot use --cache '': an empty file name; give a file name")
    db = Path(args.cache) if args.cache else out / "points.sqlite"
    if not args.no_cache:
        _check_cache_path(db, out, files, args.cache is not None)
    points, counts = study_design(study)
    # every point's scenario parses: nothing runs before that (a bar of its own for a large
    # design: 10^5 points take a minute, which had passed in silence)
    with _progress(len(points), not args.quiet and len(points) >= CHECK_PROGRESS_FROM,
                   "checking points") as tick:
        check_points(study, points, tick)
    if not args.no_cache and not db.exists():
        # (an existing cache is opened below; a damaged one is skipped with a warning)
        why = unwritable(db)
        if why is not None:
            raise InputError(f"cannot keep the point cache in {db.parent}: {why}; give a "
                             f"writable {'--cache file' if args.cache else '--out folder'}, "
                             f"or --no-cache")
    if args.mpi and args.jobs:  # it had been dropped without a word (audit 22)
        raise InputError("is for local processes or LocalCluster workers; under --mpi the "
                         "workers are the MPI ranks (mpiexec -n N): leave out -j",
                         path=("-j",))
    executor = "dask" if args.dask is not None else ("mpi" if args.mpi else "local")
    if args.dask is not None:  # '' too: it ran on the local pool, quietly
        from clustersim.explore.dask_exec import check_dask_address

        check_dask_address(args.dask)
    jobs = args.jobs or default_jobs()
    cache = None if args.no_cache else open_cache(db)
    t0 = time.perf_counter()
    done = [0]
    try:
        with _progress(len(points), not args.quiet) as advance:
            def counted(n: int = 1) -> None:
                done[0] += n
                advance(n)

            res = run_study(study, points, executor=executor, jobs=jobs, address=args.dask,
                            cache=cache, advance=counted, chunk=args.chunk)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: say what a rerun finds (QA 19 M5)
        if cache is not None and cache.path is not None and done[0]:
            with contextlib.suppress(OSError):
                print(f"{done[0]:,} of {len(points):,} points are kept in the point cache "
                      f"{db}: the same command resumes from them", file=sys.stderr)
        raise
    finally:
        # (a cache that failed on the way closed itself and dropped its path)
        used = cache is not None and cache.path is not None
        if cache is not None:
            cache.close()
    wall = time.perf_counter() - t0
    rows = tidy_rows(study, points, res.results)
    inputs = input_columns(study)
    cols = [*inputs, *(c for c in (rows[0] if rows else METRICS) if c not in inputs)]
    from clustersim.report.tables import column_units

    units = column_units(cols)
    meta = {"scenario": scn.name, "inputs": inputs, "points": len(points), "units": units,
            **design_description(study.spec)}
    try:
        write_outputs([(files["--parquet"],
                        lambda: parquet_bytes(rows, cols, inputs, scn.name, units)),
                       (files["--csv"], lambda: csv_bytes(rows, cols)),
                       (files["--json"], lambda: json_bytes(meta, rows, cols))])
    except OSError as exc:
        if used and db.exists():
            _say_cache_kept(exc, db)
        raise
    if not args.quiet:
        _summary(scn, points, res, rows, inputs, wall, executor, files,
                 saturation_summary(rows, inputs), db if used else None, counts)
    return EXIT_OK


def _say_cache_kept(exc: OSError, db: Path) -> None:
    """Add to a failed write's one-line message that the point cache stays.

    Why: a sweep whose table could not be written (``--csv /dev/full``) left its ``--out``
    folder with ``points.sqlite`` and said nothing of it (QA 16c).  Keeping it is by design -
    the points simulated are the costly part, and a rerun with a writable output reads them
    instead of simulating them again - so it stays, and the message says where; the tables
    themselves are all or none (:func:`~clustersim.report.output.write_outputs`)."""
    exc.strerror = (f"{exc.strerror or exc}; no table was written, the points simulated are "
                    f"kept in the point cache {db}, which a rerun reads (delete it, or give "
                    f"--no-cache, for none)")


def _check_cache_path(db: Path, out: Path, files: dict, given: bool) -> None:
    """Refuse a point cache that is the output folder, one of the output files, a folder
    above them or a file below one of the output files.  Why: ``--out X --cache X`` made the cache the file ``X`` and the tables
    then failed with a traceback after every point had run; ``--cache X/sweep.csv`` had
    the CSV overwrite the cache (and the next run advise deleting the user's CSV)."""
    import os

    from clustersim.scenario.inputs import inputs_read

    cache = os.path.realpath(db)  # a link to an output file is that file
    if cache in inputs_read():  # then "delete the file to start a new cache" (audit E)
        raise InputError(f"--cache {db} is an input of this command (the scenario or a file "
                         f"it names): the point cache is a file of its own; give another "
                         f"--cache file")
    for flag, f in (("--out", out), *((k, v) for k, v in files.items() if v)):
        target = os.path.realpath(f)
        inside = flag != "--out" and cache.startswith(target.rstrip(os.sep) + os.sep)
        if cache == target or target.startswith(cache.rstrip(os.sep) + os.sep) or inside:
            what = ("the --out folder" if flag == "--out" and cache == target
                    else f"where {flag} writes ({f})")
            if not given:
                raise InputError(f"{flag} {f} is the point cache's file ({db}); give "
                                 f"{flag} another name, or --cache FILE elsewhere")
            raise InputError(f"--cache {db} is {what}: the point cache is a file of its own; "
                             f"give another --cache file, or leave it out (default: "
                             f"{out / 'points.sqlite'})")


def _summary(scn: Any, points: list, res: Any, rows: list, inputs: list, wall: float,
             executor: str, files: dict, saturation: list, db: Path | None = None,
             counts: Any = None) -> None:
    from clustersim.explore.saturation import saturation_text, shown, summary_creep

    rate = res.ran / wall if wall > 0 and res.ran else 0.0
    print(f"{scn.name}: {len(points)} point{'' if len(points) == 1 else 's'} - {res.cached} "
          f"from the cache, {res.ran} run ({executor}, {rate:,.1f} points/s), "
          f"{len(res.skipped)} skipped; {wall:.1f} s")
    shrunk = [f"{n:,} {what}" for n, what in (
        (counts.excluded if counts else 0, "excluded by the constraints"),
        (counts.duplicates if counts else 0, "duplicate samples dropped")) if n]
    if shrunk:
        print(f"  design points: {', '.join(shrunk)}")
    longer = sorted(i for i, r in res.results.items() if "stretched" in r)
    if longer:  # the first point's, so that the line does not depend on the executor
        r = res.results[longer[0]]
        sets = next((pt.sets for pt in points if pt.index == longer[0]), ())
        at = "".join(f", {k}={shown(v)}" for k, v in sets)
        print(f"  {len(longer):,} point{'' if len(longer) == 1 else 's'} ran longer than "
              f"'run:' asked, in whole exchange periods (e.g. {r['algorithm']} at "
              f"{r['workers']} workers{at}: {r['warmup_steps']} warm-up + {r['measured_steps']} "
              f"measured steps for {r['stretched'][0]} + {r['stretched'][1]}); the table's "
              "warmup_steps and measured_steps are the steps run")
    if res.skipped:
        print(f"  skipped: {res.skipped[0]}" + (f" (and {len(res.skipped) - 1} more)"
                                                if len(res.skipped) > 1 else ""))
    creeps = summary_creep(rows, inputs)
    for label, w_star, s, step, w0 in saturation[:MAX_SATURATION_LINES]:
        print(f"  {label}: {saturation_text(w_star, s, step, w0, creeps.get(label))}")
    if len(saturation) > MAX_SATURATION_LINES:
        print(f"  … {len(saturation) - MAX_SATURATION_LINES:,} more master-based groups, "
              f"their knees not printed")
    if saturation:  # two figures, two definitions (docs/exploration.md): say which is which
        print("  (the knee above is from the smallest point's step without queueing; the "
              "table's saturation_workers is each point's step as measured, queueing "
              "included, over the same service time)")
    if rows:
        best = max(rows, key=lambda r: r["throughput"] or 0.0)
        where = ", ".join(f"{k}={shown(best[k])}" for k in inputs
                          if best.get(k) not in ("", None))
        print(f"  highest throughput: {best['throughput']:,.1f} samples/s at {where}")
    print("wrote " + ", ".join(str(f) for f in files.values() if f)
          + ("" if files["--parquet"] else " (no Parquet: pyarrow is not installed)"))
    if db is not None:  # said: with every file given elsewhere, the folder holds only this
        print(f"point cache: {db} (--cache FILE to keep it elsewhere, --no-cache for none)")
