"""``clustersim explore SCENARIO|RESULTS.parquet``: the live what-if explorer (Dash).

A scenario is simulated at the starting bandwidth/latency factors (one process pool for all
of them) and served; more factors can be asked for from the page.  A Parquet table is served
as it is (``--scenario`` lets it grow).  The server binds to 127.0.0.1 unless ``--host`` says
otherwise, and runs until Ctrl-C.  dash is imported only here, inside the command.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from clustersim.errors import InputError


def _factors(text: str, what: str) -> list[float]:
    from clustersim.cli import _factors as parse

    return parse(text, what)


def load(args: argparse.Namespace) -> tuple[Any, str]:
    """The :class:`~clustersim.explorer.app.Explorer` for the command's arguments, and a
    title."""
    from clustersim.explorer.app import Explorer
    from clustersim.explorer.table import count_tasks, read_table, split_columns

    scn = study = None
    path = args.source
    if path.endswith(".parquet"):
        df, inputs = read_table(path)
        if args.scenario:
            scn, study = _scenario(args.scenario, args)
        title = path
    else:
        scn, study = _scenario(path, args)
        if scn.benchmark is not None:
            raise InputError(f"{path}: explore takes a training scenario (a collective "
                             "benchmark has no sweep to explore: use 'clustersim whatif')")
        bws, lats = _factors(args.bandwidth, "bandwidth"), _factors(args.latency, "latency")
        from clustersim.report.whatif import grid_points

        cells = grid_points(sorted({1.0, *bws}), sorted({1.0, *lats}))
        from clustersim.cli import _progress

        with _progress(len(cells) * count_tasks(scn), "simulating", not args.quiet) as adv:
            df = _cells(scn, study, args, cells, adv)
        inputs, title = None, scn.name
    ins, mets = split_columns(df, inputs)
    ex = Explorer(table=df, inputs=ins, metrics=mets)
    if scn is not None:
        ex.compute = lambda bw, lat, adv: _cells(scn, study, args, [(bw, lat)], adv)
        ex.total = lambda: count_tasks(scn)
    return ex, title


def _scenario(path: str, args: argparse.Namespace) -> tuple[Any, Any]:
    from clustersim.explore import load_study

    return load_study(path, list(args.set or []))


def _cells(scn: Any, study: Any, args: argparse.Namespace, cells: list[tuple[float, float]],
           adv: Any) -> Any:
    """:func:`~clustersim.explorer.table.compute_cells` through the point cache, opened for
    this call only (the server asks from its own threads; an SQLite connection stays in the
    thread that made it)."""
    from clustersim.commands.whatif import open_cache
    from clustersim.explorer.table import compute_cells

    cache = open_cache(args, study)
    try:
        return compute_cells(scn, cells, adv, jobs=args.jobs, cache=cache)
    finally:
        if cache is not None:
            cache.close()


def cmd_explore(args: argparse.Namespace) -> int:
    try:
        import dash  # noqa: F401
    except ModuleNotFoundError:
        raise InputError("explore needs dash: pip install 'clustersim[dash]'") from None
    from clustersim.explorer.app import make_app
    from clustersim.explorer.server import serve

    ex, title = load(args)
    served = serve(make_app(ex, title), args.host, args.port)
    print(f"clustersim explore: {served.url}  (Ctrl-C stops it)", flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        served.stop()


def add_parser(sub: Any) -> None:
    from clustersim.cli import _jobs

    ex = sub.add_parser("explore", help="live what-if explorer in the browser (Dash)",
                        description="Serve a live explorer of a scenario's sweep (simulated "
                                    "at the given network factors) or of a Parquet table of "
                                    "results: pick x, metric, colour and facet, fix the other "
                                    "axes, compute new bandwidth/latency factors on request.")
    ex.add_argument("source", metavar="SCENARIO|RESULTS.parquet",
                    help="scenario YAML (or a shipped scenario's name), or a Parquet table")
    ex.add_argument("--scenario", help="with a Parquet table: the scenario that computes "
                    "new points")
    ex.add_argument("--bandwidth", default="0.5,1,2", metavar="FACTORS",
                    help="link bandwidth factors simulated at the start (default %(default)s)")
    ex.add_argument("--latency", default="1", metavar="FACTORS",
                    help="link latency factors simulated at the start (default %(default)s)")
    ex.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a scenario field, as in predict (repeatable)")
    ex.add_argument("--host", default="127.0.0.1",
                    help="address to listen on (default %(default)s: this machine only)")
    ex.add_argument("--port", type=int, default=8050, help="port (default %(default)s)")
    ex.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                    help="processes for the simulations (default: CLUSTERSIM_JOBS or all cores)")
    from clustersim.commands.whatif import add_cache_options

    add_cache_options(ex)
    ex.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ex.set_defaults(func=cmd_explore)
