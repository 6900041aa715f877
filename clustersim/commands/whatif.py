"""``clustersim whatif SCENARIO``: the offline what-if page (one HTML file, Plotly embedded),
and the point-cache options it shares with ``clustersim explore``.

The page's points go through the per-point cache of
:mod:`clustersim.report.whatif_cells` (by default in the user's cache folder): a page asked
again, or with more factors, only simulates the points it has not simulated before.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from clustersim.commands.parser import profile_file

__all__ = ["add_parser", "add_cache_options", "open_cache", "cmd_whatif"]


def add_cache_options(p: argparse.ArgumentParser) -> None:
    """``--cache FILE`` and ``--no-cache`` (whatif and explore)."""
    cached = p.add_mutually_exclusive_group()  # --cache beside --no-cache was dropped
    cached.add_argument("--cache", metavar="FILE",
                   help="point cache (SQLite): points simulated before, for the same "
                        "scenario, factors, seed and code, are read from it, new ones added "
                        "(default: $CLUSTERSIM_CACHE_DIR/points.sqlite, else "
                        "$XDG_CACHE_HOME/clustersim/points.sqlite, else "
                        "~/.cache/clustersim/points.sqlite; delete the file to empty it)")
    cached.add_argument("--no-cache", action="store_true",
                   help="simulate every point; read and write no cache")


def open_cache(args: argparse.Namespace, study: Any, extra: str | None = None) -> Any:
    """The :class:`~clustersim.report.whatif_cells.CellCache` the options ask for (None:
    ``--no-cache``)."""
    if args.no_cache:
        return None
    from clustersim.report.whatif_cells import CellCache, default_cache_path

    return CellCache(args.cache or default_cache_path(), study, extra)


def cmd_whatif(args: argparse.Namespace) -> int:
    """``clustersim whatif``: simulate the bandwidth x latency grid (cached points read back),
    write the offline page to ``--output`` and say how many points were extended or cached."""
    from clustersim.cli import EXIT_OK, _progress
    from clustersim.explore import load_study
    from clustersim.report.factors import parse_factors as _factors

    bws = _factors(args.bandwidth, "bandwidth")
    lats = _factors(args.latency, "latency")
    scn, study = load_study(args.scenario, list(args.set or []))
    extra = None
    if args.calibration:
        from clustersim.calibration.applyprofile import apply_profile
        from clustersim.scenario.yamlio import files_read

        with files_read() as seen:  # the profile's bytes, as parsed: part of the cache key
            scn = apply_profile(scn, args.calibration, quiet=args.quiet)
        extra = json.dumps(sorted(seen.values()))
    out = Path(args.output)
    from clustersim.report.output import atomic_write, check_outputs, need_charts

    need_charts("whatif")  # its page is Plotly's: refused before any point is simulated
    check_outputs({"--output": args.output})
    from clustersim.report.whatif import grid_points, grid_size, whatif_grid, whatif_html

    cells = len(grid_points(sorted({1.0, *bws}), sorted({1.0, *lats})))
    cache = None if scn.benchmark is not None else open_cache(args, study, extra)
    total = grid_size(scn, bws, lats)
    try:
        with _progress(total, "what-if grid", not args.quiet) as advance:
            grid = whatif_grid(scn, bws, lats, advance, cache=cache, extend=not args.exact)
    finally:
        if cache is not None:
            cache.close()
    atomic_write(out, whatif_html(scn, grid))
    if not args.quiet:
        print(f"wrote {out} ({cells} grid position{'' if cells == 1 else 's'}, each a whole "
              "sweep; open it in a browser, "
              "it works offline)")
        if scn.benchmark is None:
            from clustersim.report.whatif import extended_count

            ext, _all = extended_count(grid)
            if ext:
                print(f"{ext} of {_all} points are past their master's saturation: extended "
                      "from the saturated point, not simulated (--exact simulates them)")
        if cache is not None and cache.hits:
            print(f"{cache.hits} of {total} points from the cache {cache.path} (the same "
                  f"scenario, factors, seed and code; --no-cache simulates them again)")
    return EXIT_OK


def add_parser(sub: Any) -> None:
    """Add ``whatif`` and its options to the CLI's subparsers."""
    wi = sub.add_parser("whatif", help="interactive what-if charts (standalone HTML)",
                        description="Simulate the scenario with the network's bandwidth and "
                                    "latency scaled by factors and write one offline HTML page "
                                    "with Plotly charts and one control panel that switches "
                                    "them all between the factors.")
    wi.add_argument("scenario", help="scenario YAML file, or the name of a shipped scenario")
    wi.add_argument("-o", "--output", default="whatif.html", help="HTML file (default %(default)s)")
    wi.add_argument("--bandwidth", default="0.25,0.5,1,2,4", metavar="FACTORS",
                    help="link bandwidth factors, each 0.001 to 1000 and once, at most 12 with 1x "
                         "(default %(default)s)")
    wi.add_argument("--latency", default="1,10", metavar="FACTORS",
                    help="link latency factors, each 0.001 to 1000 and once, at most 12 with 1x "
                         "(default %(default)s)")
    wi.add_argument("--calibration", metavar="FILE", type=profile_file,
                    help="apply a calibration profile (YAML)")
    wi.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a scenario field, as in predict (repeatable)")
    add_cache_options(wi)
    wi.add_argument("--exact", action="store_true",
                    help="simulate every point; by default a master-based method's points "
                         "past the worker count where its master is busy all the time are "
                         "extended from that point (steady state of a saturated master: "
                         "throughput and update rate stay, iteration time and staleness grow "
                         "with the workers; marked on the page; docs/exploration.md)")
    wi.add_argument("-q", "--quiet", action="store_true", help="no progress, no message")
    wi.set_defaults(func=cmd_whatif)
