"""The ``clustersim`` command.

Exit codes: 0 success, 1 failure (a bug or a failed real run), 2 bad input (with one clear
message naming file, field and allowed values; never a traceback).  Heavy modules are imported
inside the commands so that ``clustersim --help`` and bad-input errors are instant.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from collections.abc import Sequence

from clustersim import __version__
from clustersim._jobs import parse_jobs as _jobs
from clustersim.commands.listing import KINDS as LIST_KINDS
from clustersim.commands.parser import Parser as _Parser
from clustersim.commands.parser import profile_file
from clustersim.errors import InputError, RunFailed

EXIT_OK, EXIT_FAIL, EXIT_INPUT = 0, 1, 2


def _console(quiet: bool = False, wide: bool = False):
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich's own handler exits 1; main() turns this into a quiet exit 141
            raise BrokenPipeError

    # the terminal's width (COLUMNS, else the tty's, else 80 when piped): tables fit it by
    # leaving out or stacking columns (clustersim.report.layout); --wide: never wrap
    width = 100_000 if wide else None
    return _Console(stderr=False, quiet=quiet, highlight=False, soft_wrap=False, width=width)


def _progress(total: int, what: str, enabled: bool):
    """A rich progress bar on stderr, or a no-op when disabled or not a terminal."""
    from contextlib import nullcontext

    if not enabled or total < 2 or not sys.stderr.isatty():
        return nullcontext(lambda n=1: None)
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from clustersim._progress import ProgressAdvance

    prog = Progress(TextColumn(what), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                    TimeRemainingColumn(), transient=True, console=Console(stderr=True))
    return ProgressAdvance(prog, total)


# --------------------------------------------------------------------------------------------
def cmd_predict(args: argparse.Namespace) -> int:
    """``clustersim predict``: simulate a scenario, print and write its prediction; exit code."""
    # The cyclic garbage collector is off for the command: start-up builds the platform
    # graph and imports numpy, networkx and simpy - a few hundred thousand objects, which
    # trigger a dozen collections (~0.1 s, a fifth of the start) that find nothing to free.
    # The simulation turns it off per point anyway (sweep.simulate_point); what a run
    # allocates is freed by reference counting.
    from clustersim._exit import exiting_fast

    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        return _predict(args)
    finally:
        if gc_was_on and not exiting_fast():  # see clustersim._exit
            gc.enable()


def _predict(args: argparse.Namespace) -> int:
    from clustersim._exit import retain
    from clustersim.scenario.overrides import option_item
    from clustersim.scenario.schema import load_scenario

    sets = list(args.set or [])
    if args.fidelity:
        sets.append(option_item("run.fidelity", "--fidelity", args.fidelity))
    if args.seed is not None:  # an error in it names --seed, not a --set never typed
        sets.append(option_item("run.seed", "--seed", args.seed))
    from clustersim.shipped import scenario_path

    scn = load_scenario(scenario_path(args.scenario), sets)
    retain(scn)  # freed by the operating system, not object by object (clustersim._exit)
    if args.calibration:
        from clustersim.calibration.applyprofile import apply_profile

        scn = apply_profile(scn, args.calibration, quiet=bool(getattr(args, "quiet", False)))
    from clustersim.report.output import check_outputs

    # before any simulating: a bad output path is an input error, not a traceback later
    check_outputs({"--json": args.json, "--csv": args.csv, "--trace": args.trace,
                   "--plot": getattr(args, "plot", None),
                   **({"--uncertainty-plot": args.uncertainty_plot}
                      if args.uncertainty_plot is not None else {})})
    if args.uncertainty_plot is not None and args.uncertainty is None:
        raise InputError("--uncertainty-plot needs --uncertainty N")
    if args.quiet and args.uncertainty is not None and not (
            args.json or args.csv or args.uncertainty_plot):  # N sweeps, shown nowhere
        raise InputError("--uncertainty with -q shows its bands nowhere: add --json, --csv "
                         "or --uncertainty-plot FILE, or leave out -q")
    console = _console(args.quiet, args.wide)
    args.all_sets = sets
    if scn.benchmark is not None:
        if args.uncertainty is not None:
            raise InputError("--uncertainty propagates into training predictions; this "
                             "scenario is a collective benchmark")
        if args.plot:  # it wrote nothing and said nothing (exit 0): refuse before simulating
            raise InputError("--plot draws time to accuracy for training scenarios; this "
                             "scenario is a collective benchmark (its charts: clustersim "
                             "whatif)")
        return _predict_benchmark(scn, args, console)
    return _predict_training(scn, args, console)


def _predict_benchmark(scn, args, console) -> int:
    from clustersim.report.output import csv_text, json_text, write_outputs
    from clustersim.report.tables import BENCH_CSV_COLUMNS, print_benchmark, with_units
    from clustersim.report.training import print_assumed
    from clustersim.scenario.assumed import assumed_figures
    from clustersim.sim.collective_bench import benchmark_chrome, benchmark_points, run_benchmark

    trace = benchmark_chrome(scn) if args.trace else ""  # refuses a too-large trace up front
    total = sum(1 for _ in benchmark_points(scn))
    with _progress(total, "collectives", not args.quiet) as advance:
        rows = run_benchmark(scn, progress=advance)
    write_outputs([  # all or none, before the table: a closed pipe cannot lose them
        (args.json, lambda: json_text({"scenario": scn.name, "kind": "collective_benchmark",
                                       "assumed_figures": [f.to_dict() for f in
                                                           assumed_figures(scn)],
                                       "rows": [r.to_dict() for r in rows]})),
        (args.csv, lambda: csv_text(with_units([r.to_dict() for r in rows], BENCH_CSV_COLUMNS))),
        (args.trace, trace)])
    if not args.quiet:
        from rich.markup import escape

        console.print(f"[bold]{escape(scn.name)}[/bold] — {escape(scn.about)}" if scn.about
                      else escape(scn.name))
        console.print(f"platform: {escape(scn.platform.describe())}; "
                      f"fidelity: {scn.run.fidelity}")
        print_assumed(console, scn)
        print_benchmark(console, rows, scn.benchmark.op, wide=args.wide)
    return EXIT_OK


def _plot(scn, result) -> str:
    from clustersim.report.convergence import plot_html

    return plot_html(scn, result)


def _predict_training(scn, args, console) -> int:
    import json

    from clustersim.calibration.applyprofile import profile_identity
    from clustersim.report.output import csv_text, json_text, write_outputs
    from clustersim.report.swing import swing_json
    from clustersim.report.tables import TRAINING_CSV_COLUMNS, with_bands, with_units
    from clustersim.report.training import print_training, training_json, training_rows
    from clustersim.trace import to_chrome
    from clustersim.uncertainty.predict import sweep_with_band

    prepared = None
    if args.uncertainty is not None:  # refused now, not after the sweep (QA 18b)
        from clustersim.scenario.overrides import named_at_set
        from clustersim.uncertainty.predict import prepare_propagation

        try:
            prepared = prepare_propagation(scn, scn.file, args.all_sets, args.calibration,
                                           args.uncertainty)
        except InputError as exc:  # --set uncertain=~: name that item, not the file's line
            raise named_at_set(exc, args.all_sets) from None
    # the headline's range (scenarios with 'uncertain:'), its runs in the sweep's own pool
    result, swing = sweep_with_band(
        scn, scn.file, args.all_sets, args.calibration,
        not args.no_band and bool(args.json or not args.quiet), bool(args.trace),
        lambda n: _progress(n, "simulating", not args.quiet), args.jobs)
    unc = None
    if args.uncertainty is not None:  # the nominal prediction above stays as it is; the bands beside it
        from clustersim.report.uncertainty import bands_json
        from clustersim.sim.sweep import default_jobs
        from clustersim.uncertainty.predict import propagate_prediction

        bands, inputs = propagate_prediction(
            scn, scn.file, args.all_sets, args.calibration, args.uncertainty,
            args.jobs or default_jobs(), lambda n: _progress(n, "samples", not args.quiet),
            nominal=result, prepared=prepared)
        unc = bands_json(bands, inputs, args.uncertainty, scn.run.seed)
    write_outputs([  # all or none, before the table: a closed pipe cannot lose them
        (args.json, lambda: json_text({**training_json(scn, result),
                                       **({"calibration": profile_identity(args.calibration)}
                                          if args.calibration else {}),
                                       **({"uncertainty": unc} if unc else {}),
                                       **({"headline_band": swing_json(swing)}
                                          if swing else {})})),
        (args.csv, lambda: csv_text(with_bands(with_units(
            training_rows(scn, result), TRAINING_CSV_COLUMNS), unc, TRAINING_CSV_COLUMNS))),
        (args.trace, lambda: json.dumps(to_chrome(result.trace_events(), scn.name))),
        (args.plot, lambda: _plot(scn, result)),
        *([(args.uncertainty_plot, lambda: _band_html(scn.name, unc))] if unc else [])])
    if not args.quiet:  # -q renders nothing (a large table takes seconds to lay out)
        print_training(console, scn, result, wide=args.wide)
        if swing:
            from clustersim.report.swing import print_swing

            print_swing(console, swing, args.wide)
        if unc:
            from clustersim.report.uncertainty import print_bands

            jitter = any(p.interval for pts in result.points.values() for p in pts)
            print_bands(console, bands, inputs, args.uncertainty, scn.run.seed, args.wide,
                        jitter)
    return EXIT_OK


def _band_html(name: str, unc) -> str:
    from clustersim.report.tornado import band_html

    return band_html(name, unc)




def _validate(args: argparse.Namespace) -> int:
    from clustersim.commands.validate import cmd_validate

    return cmd_validate(args)


def cmd_list(args: argparse.Namespace) -> int:
    """``clustersim list``: the catalog entries, components or shipped scenarios of one kind."""
    from clustersim.commands.listing import list_entries

    return list_entries(_console(wide=args.wide), args.what, args.name)


# --------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The ``clustersim`` parser: predict, validate and list, then each of ``MODULES``' own."""
    p = _Parser(
        prog="clustersim",
        description="Predict, measure and explain data-parallel training scaling on clusters.",
        epilog="Examples:\n  clustersim predict scenarios/knl_4253.yaml\n"
               "  clustersim predict scenarios/allreduce_crossbar16.yaml --json out.json\n"
               "  clustersim list collectives",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"clustersim {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    pr = sub.add_parser("predict", help="simulate a scenario and print the prediction",
                        description="Simulate a scenario: a collective benchmark (nccl-tests "
                                    "style table) or a training sweep (scaling table).")
    pr.add_argument("scenario", help="scenario YAML file, or the name of a shipped scenario "
                    "(knl_4253, allreduce_crossbar16, ...: clustersim list scenarios)")
    pr.add_argument("--json", metavar="FILE", help="write the full result as JSON")
    pr.add_argument("--csv", metavar="FILE", help="write one row per point as CSV")
    pr.add_argument("--plot", metavar="FILE",
                    help="write accuracy (emulated) or modelled progress against simulated "
                         "time, and time to target against workers, as a standalone HTML "
                         "chart")
    pr.add_argument("--trace", metavar="FILE",
                    help="write a Chrome/Perfetto trace (open in ui.perfetto.dev)")
    pr.add_argument("--calibration", metavar="FILE", type=profile_file,
                    help="apply a calibration profile (YAML)")
    pr.add_argument("--fidelity", choices=["flow", "analytic", "auto"],
                    help="override run.fidelity")
    pr.add_argument("--seed", type=int, help="override run.seed")
    pr.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a scenario field, e.g. --set run.iterations=10 (repeatable)")
    pr.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                    help="processes for the sweep's points, a whole number >= 1 (default: "
                         "CLUSTERSIM_JOBS or the usable cores; 1 = this process; at most 8 per "
                         "usable core); results do not "
                         "depend on it")
    pr.add_argument("-q", "--quiet", action="store_true", help="no table, no progress")
    pr.add_argument("--wide", action="store_true",
                    help="every table column, whatever the terminal's width (by default "
                         "tables fit it: less important columns left out, grids stacked)")
    pr.add_argument("--uncertainty", type=int, metavar="N",
                    help="also propagate the scenario's 'uncertain:' inputs (and the "
                         "calibration profile's covariance): N quasi-Monte-Carlo samples "
                         "(2 to 4,096), each a whole sweep; prints median and 90%% interval of every "
                         "headline metric (docs/uncertainty.md)")
    pr.add_argument("--uncertainty-plot", metavar="FILE",
                    help="with --uncertainty: write the bands as an offline HTML chart")
    pr.add_argument("--no-band", action="store_true",
                    help="skip the headline's one-at-a-time range (a scenario with "
                         "'uncertain:' otherwise moves each input alone over its range and "
                         "prints the band and top drivers under the tables)")
    pr.set_defaults(func=cmd_predict)

    va = sub.add_parser("validate", help="check a scenario file without simulating it",
                        description="Read and check a scenario (every field, the platform it "
                                    "names, --set overrides) without simulating it: prints "
                                    "'ok' and the platform, or one error naming file, line, "
                                    "field and the allowed values (exit 2).")
    va.add_argument("scenario", help="scenario YAML file, or the name of a shipped scenario "
                    "(clustersim list scenarios)")
    va.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a scenario field, as in predict (repeatable)")
    va.set_defaults(func=_validate)

    li = sub.add_parser(
        "list", help="list catalog entries, components and shipped scenarios",
        description="List what a scenario can name: catalog devices, link classes and "
                    "transports, platform topologies and routing policies, collective "
                    "algorithms (with the library selectors), training algorithms (with "
                    "their parameters), models, and the shipped scenarios.",
        epilog="Examples:\n  clustersim list scenarios\n  clustersim list algorithms "
               "async_easgd\n  clustersim list devices",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    li.add_argument("what", choices=LIST_KINDS, help="'scenarios': the shipped scenarios that "
                    "every command taking a scenario takes by bare name")
    li.add_argument("name", nargs="?", help="with 'algorithms': one algorithm's parameters, "
                    "defaults, allowed values and sources; with 'scenarios': the file's path "
                    "and header comment")
    li.add_argument("--wide", action="store_true", help="print every column whole, never "
                    "cut or wrapped to the terminal's width (the scenarios' about text)")
    li.set_defaults(func=cmd_list)

    import importlib

    from clustersim.commands import MODULES

    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a command not written yet
            if exc.name != name:
                raise
            continue
        mod.add_parser(sub)

    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line (``None``: ``sys.argv[1:]``); its exit code (module docs)."""
    from clustersim import _signals

    _signals.handled()  # nothing pending from an earlier main() in this process
    # SIGTERM/SIGHUP unwind like Ctrl-C (real runs stop their processes, temporary files go);
    # the previous handlers come back when main returns (it is also called in-process)
    try:
        with _signals.as_interrupt():
            parser = build_parser()
            args = parser.parse_args(argv)
            if not getattr(args, "func", None):
                parser.print_help()
                return EXIT_INPUT
            from clustersim.scenario.inputs import inputs_scope

            with inputs_scope():  # the files it reads: no output may overwrite them
                code = int(args.func(args) or 0)
            _signals.check()  # a SIGTERM swallowed on the way (a weakref callback) counts
            return code
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except RunFailed as exc:
        print(f"failed: {exc}", file=sys.stderr)
        return EXIT_FAIL
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (_signals.Terminated)
        _signals.handled()
        signum = getattr(exc, "signum", 2)
        with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
            print("interrupted" if signum == 2 else f"terminated by {exc}", file=sys.stderr)
        return 128 + signum
    except OSError as exc:  # a reader gone (141) or a full disk: _signals.output_failed
        # an output file the user named (--csv /dev/full) is theirs to change, as every
        # other unwritable output is: exit 2 (QA 16c); standard output on a full disk, 1
        code = _signals.output_failed(exc)
        return EXIT_INPUT if code == EXIT_FAIL and exc.filename else code


def console_main() -> int:
    """The ``clustersim`` console script: :func:`main`, then an exit that skips freeing the
    run's objects one by one (``clustersim._exit``: 0.6-0.8 s at 100,000 GPUs)."""
    from clustersim._exit import exit_now, fast_exit

    fast_exit()
    return exit_now(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console_main())
