"""``clustersim explore SCENARIO|RESULTS.parquet``: the live what-if explorer (Dash).

A scenario is simulated at the starting bandwidth/latency factors (one process pool for all
of them) and served; more factors can be asked for from the page.  A Parquet table is served
as it is (``--scenario`` lets it grow: its rows are the scenario's network as written, 1x, and
rows computed later carry the scenario's values of the table's other axes; so a scenario that
is not the table's - a benchmark, another study - is refused at the start, and so is
``--scenario`` beside a scenario, which was silently ignored).  The server binds to 127.0.0.1
unless ``--host`` says otherwise (then a warning: the page runs simulations for whoever
reaches it) - and binds before anything is simulated, so a port in use is an error at once,
not after minutes of simulation - and runs until Ctrl-C.
dash is imported only here, inside the command.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from clustersim.errors import InputError

#: ``explore --help``'s description
_DESCRIPTION = (
    "Serve a live explorer of a scenario's sweep (simulated at the given network factors) or "
    "of a Parquet table of results: pick x, metric, colour and facet, fix the other axes, "
    "compute new bandwidth/latency factors on request, and, for a sweep's table with "
    "--scenario, grow the sweep itself (more samples, more axis values, as --set items). "
    "Bandwidth/latency points are kept in the what-if point cache (--cache below); a grown "
    "sweep runs through the sweep's own point cache (points.sqlite beside the table) on "
    "this machine's process pool (-j) or a Dask cluster (--dask), so only its new points "
    "are simulated and a later 'clustersim sweep' with the same change reads them.")
#: the factors a scenario is simulated at when the page starts (``--bandwidth``/``--latency``)
_BANDWIDTHS, _LATENCIES = "0.5,1,2", "1"


def _inputs(args: argparse.Namespace) -> dict[str, Any]:
    """Everything :func:`load` needs before it simulates - the table read, the scenario
    parsed, the factors checked - once per command (kept on ``args``).

    Why apart: ``cmd_explore`` checks these before it binds the port and the port before it
    simulates, so that a missing file is reported as missing even when the default port is
    taken (it was reported as "port 8050 in use"), and a port in use before minutes of
    simulation."""
    done = getattr(args, "_explore_inputs", None)
    if done is not None:
        return done
    from clustersim.explorer.table import read_table, split_columns

    st: dict[str, Any] = {"scn": None, "study": None, "path": args.source,
                          "defaults": {"bandwidth_factor": 1.0, "latency_factor": 1.0}}
    path = args.source
    if _is_parquet(path):
        given = [f"--{o}" for o in ("bandwidth", "latency") if getattr(args, o) is not None]
        if given:  # they were ignored: a table's rows are what was simulated
            verb = "apply" if len(given) > 1 else "applies"
            raise InputError(f"{' and '.join(given)} {verb} to a scenario, which is simulated "
                             "at those factors at the start; a Parquet table shows its rows "
                             "(with --scenario, the page computes other factors on request)")
        df, inputs = read_table(path)
        ins, _mets = split_columns(df, inputs, path)
        if args.scenario:
            scn, study = _scenario(args.scenario, args)
            _training(scn, f"--scenario {args.scenario}")
            _same_study(path, df, scn, study, args.scenario)
            st.update(scn=scn, study=study)
        st.update(df=df, inputs=inputs)
    else:
        _not_a_table(path)
        if args.scenario is not None:  # it was ignored, a missing file included (QA 7a M7)
            raise InputError(f"--scenario applies to a Parquet table (the scenario it was "
                             f"swept from, which computes its new points); {path} is a "
                             "scenario itself: drop --scenario, or give the table")
        from clustersim.report.factors import parse_factors as _factors

        scn, study = _scenario(path, args)
        _training(scn, path)
        st.update(scn=scn, study=study,
                  bws=_factors(args.bandwidth or _BANDWIDTHS, "bandwidth"),
                  lats=_factors(args.latency or _LATENCIES, "latency"))
    args._explore_inputs = st
    return st


def load(args: argparse.Namespace) -> tuple[Any, str]:
    """The :class:`~clustersim.explorer.app.Explorer` for the command's arguments, and a
    title (the sweep simulated here, after :func:`_inputs`)."""
    from clustersim.explorer.app import Explorer
    from clustersim.explorer.table import count_tasks, split_columns

    st = _inputs(args)
    scn, study, path, defaults = st["scn"], st["study"], st["path"], st["defaults"]
    if "df" in st:
        df = st["df"]
        ins, mets = split_columns(df, st["inputs"], path)
        if scn is not None:
            for col in ("bandwidth_factor", "latency_factor"):  # the file's rows: 1x
                if col not in df.columns:
                    df[col] = 1.0
                    ins.append(col)
            defaults.update(_scenario_values(scn, study, ins))
        title = path
    else:
        from clustersim.report.whatif import grid_points

        cells = grid_points(sorted({1.0, *st["bws"]}), sorted({1.0, *st["lats"]}))
        from clustersim.cli import _progress

        with _progress(len(cells) * count_tasks(scn), "simulating", not args.quiet) as adv:
            df = _cells(scn, study, args, cells, adv)
        ins, mets = split_columns(df, None, path)
        defaults["algorithm"] = scn.algorithm.title if scn.algorithm is not None else None
        title = scn.name
    ex = Explorer(table=df, inputs=ins, metrics=mets, defaults=defaults)
    if "df" in st:
        import pyarrow.parquet as pq  # the file's own columns (the factors may be added)

        from clustersim.explorer.table import sampled_inputs

        ex.sampled = sampled_inputs(path, pq.read_schema(path).names) & set(ins)
    if scn is not None and "df" in st:
        from pathlib import Path

        from clustersim.explorer.extend import SweepExtender
        from clustersim.sim.sweep import default_jobs

        ex.extend = SweepExtender(
            scenario=args.scenario, sets=list(args.set or []), inputs=list(ins),
            cache=None if args.no_cache else Path(path).parent / "points.sqlite",
            jobs=args.jobs or default_jobs(), dask=args.dask)
    if scn is not None:
        ex.compute = lambda bw, lat, adv: _cells(scn, study, args, [(bw, lat)], adv)
        ex.total = lambda: count_tasks(scn)
    return ex, title


def _is_parquet(path: str) -> bool:
    """A ``.parquet`` name, or a file that starts with Parquet's magic bytes."""
    if path.endswith(".parquet"):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def _not_a_table(path: str) -> None:
    """``explore sweep.json`` / ``sweep.csv``: say what explore reads, instead of reading the
    table as a scenario (whose error would be "unknown scenario section 'columns'")."""
    table = path.endswith(".csv")
    if path.endswith(".json"):  # a scenario may be written as JSON; a sweep's table has rows
        import json

        try:
            with open(path, encoding="utf-8") as f:
                head = json.load(f)
            table = isinstance(head, dict) and {"columns", "rows"} <= set(head)
        except (OSError, ValueError):
            table = False
    if table:
        raise InputError("explore reads a .parquet results table (clustersim sweep writes "
                         "sweep.parquet beside sweep.json and sweep.csv) or a scenario YAML, "
                         "not a JSON or CSV table", file=path)


def _training(scn: Any, source: str) -> None:
    """Refuse a scenario that is not a training study, at start: explore simulates its sweep
    (given with a table, a collective benchmark started, and then every compute was an HTTP
    500 with a traceback in the log and nothing on the page)."""
    if scn.benchmark is not None or scn.workload is None or not scn.algorithms:
        raise InputError(f"{source}: explore takes a training scenario (a collective "
                         "benchmark has no sweep to explore: use 'clustersim whatif')")


def _same_study(path: str, df: Any, scn: Any, study: Any, source: str) -> None:
    """``explore TABLE --scenario S``: S computes the rows that join the table, so it must be
    the study the table came from - another scenario's rows (another model, other
    algorithms) joined unannounced as this study at another bandwidth.  Checked: S's name
    against the name the sweep wrote in the Parquet file (or, for older tables, in the
    sweep's JSON beside it), and the table's algorithm (and variant) labels against S's cases (the
    sweep writes its cases' labels there).  Called before the factor columns are added (the
    JSON is the table's only while its columns are the same)."""
    from clustersim.explorer.table import sweep_meta

    differ = []
    meta = sweep_meta(path, list(df.columns)) or {}
    name = meta.get("scenario")
    if isinstance(name, str) and name != scn.name:
        differ.append(f"the table is a sweep of {name!r}, the scenario "
                      f"is {scn.name!r}")
    for col in ("variant", "algorithm"):
        if col not in df.columns:
            continue
        own = {getattr(c, col) for c in study.cases}
        extra = sorted(set(df[col].dropna().astype(str)) - own)
        if extra:
            differ.append(f"the table's {col}s {_listed(extra)} are not the scenario's "
                          f"({_listed(sorted(own))})")
    if differ:
        raise InputError(f"--scenario {source} does not match the table: {'; '.join(differ)} "
                         "- give the scenario the table was swept from", file=path)


def _listed(items: list[str], most: int = 6) -> str:
    shown = ", ".join(items[:most])
    return shown + (f", ... ({len(items)} in all)" if len(items) > most else "")


def _scenario_values(scn: Any, study: Any, inputs: list[str]) -> dict[str, Any]:
    """The scenario's own value of each input column it has: a dotted field (a sweep's axis,
    as in its table), ``seed`` (``run.seed``), ``algorithm`` (the main one's label)."""
    out: dict[str, Any] = {}
    for col in inputs:
        if col == "seed":
            out[col] = scn.run.seed
        elif col == "algorithm" and scn.algorithm is not None:
            out[col] = scn.algorithm.title
        elif "." in col:
            node: Any = study.raw
            for part in col.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if node is not None and not isinstance(node, (dict, list)):
                out[col] = node
    return out


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
    """``clustersim explore``: check the inputs, bind the port, simulate the starting points,
    then serve the page until Ctrl-C (it never returns: the interrupt ends it)."""
    try:
        import dash  # noqa: F401
    except ModuleNotFoundError:
        raise InputError("explore needs dash: pip install 'clustersim[dash]'") from None
    from clustersim.explorer.app import make_app
    from clustersim.explorer.server import bind, is_local, serve

    _inputs(args)  # a missing or bad input first, then the port, then the simulations
    if args.dask is not None:
        if not (_is_parquet(args.source) and args.scenario):
            raise InputError("--dask runs a grown sweep: it applies to a sweep's Parquet table "
                             "with --scenario (a scenario's bandwidth/latency points run on "
                             "the local process pool, -j)")
        from clustersim.explore.dask_exec import check_dask_address

        check_dask_address(args.dask)
    sock = bind(args.host, args.port)  # before the simulations: a port in use fails at once
    if not is_local(sock):
        _warn_public(args.host, sock.getsockname()[1])
    try:
        ex, title = load(args)
        served = serve(make_app(ex, title), args.host, args.port, sock)
    finally:
        sock.close()  # the server holds its own copy
    _announce(served.url, args.host)
    try:
        while True:
            time.sleep(3600)
    finally:
        served.stop()


def _warn_public(host: str, port: int) -> None:
    """A warning on stderr that the server listens beyond this machine - printed once the
    port is bound, before anything is simulated, so it can be stopped at once.  Why: the page
    runs simulations for whoever opens it (each "compute" takes this machine's CPU for as
    long as the sweep takes, and its messages name local files), and ``--host 0.0.0.0`` said
    nothing of that (QA 7a L5)."""
    import sys

    print(f"clustersim explore: warning: listening on {host} port {port}, not on this machine "
          "only: anyone who can reach it can open the page and run simulations here on "
          "request; --host 127.0.0.1 (the default) keeps it to this machine",
          file=sys.stderr, flush=True)


def _announce(url: str, host: str) -> None:
    """Print the URL to open (:func:`~clustersim.explorer.server.open_url`: the one printed
    for ``--host 0.0.0.0`` was ``http://0.0.0.0:8050/``, not one to open, and for ``::``
    the malformed ``http://:::8050/``)."""
    where = (" on this machine (from another: this machine's address)"
             if host.strip("[]") in ("0.0.0.0", "::", "") else "")
    print(f"clustersim explore: {url}{where}  (Ctrl-C stops it)", flush=True)


def _port(text: str) -> int:
    """``--port``: a TCP port number, 0 (any free port) to 65535; argparse reports anything
    else (exit 2) before a simulation starts."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number: give 0 to 65535 "
                                         "(0: any free port)")
    return port


def add_parser(sub: Any) -> None:
    """Add ``explore`` and its options to the CLI's subparsers."""
    from clustersim.cli import _jobs

    ex = sub.add_parser("explore", help="live what-if explorer in the browser (Dash)",
                        description=_DESCRIPTION)
    ex.add_argument("source", metavar="SCENARIO|RESULTS.parquet",
                    help="scenario YAML (or a shipped scenario's name), or a Parquet table")
    ex.add_argument("--scenario", help="with a Parquet table (only): the scenario it was "
                    "swept from, which computes new points, at its own values of the table's "
                    "other axes")
    ex.add_argument("--bandwidth", metavar="FACTORS",
                    help="with a scenario: link bandwidth factors simulated at the start "
                    f"(default {_BANDWIDTHS})")
    ex.add_argument("--latency", metavar="FACTORS",
                    help="with a scenario: link latency factors simulated at the start "
                    f"(default {_LATENCIES})")
    ex.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a scenario field, as in predict (repeatable)")
    ex.add_argument("--host", default="127.0.0.1",
                    help="address to listen on (default %(default)s: this machine only)")
    ex.add_argument("--port", type=_port, default=8050,
                    help="port, 0 to 65535 (0: any free port; default %(default)s)")
    ex.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                    help="processes for the simulations (default: CLUSTERSIM_JOBS or the usable "
                         "cores)")
    ex.add_argument("--dask", metavar="ADDRESS",
                    help="with a sweep's table and --scenario: grow the sweep on this Dask "
                         "scheduler (tcp://host:port, or 'local' for a LocalCluster of -j "
                         "workers) instead of the local process pool")
    from clustersim.commands.whatif import add_cache_options

    add_cache_options(ex)
    ex.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ex.set_defaults(func=cmd_explore)
