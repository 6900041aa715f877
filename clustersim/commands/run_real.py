"""``clustersim run --real SCENARIO``: run a training scenario on real MPI ranks and measure it.

One MPI rank per actor (workers, then servers) runs the scenario's algorithm for real
(:mod:`realrun.interpreter`); the command prints the measured metrics next to the
simulator's prediction for the same point (same scenario, overrides and seed; with
``--calibration``, the calibrated prediction) and leaves traces, logs and ``metrics.json`` in
``--out``.  Exit codes: 0 success, 1 a failed or hung run (the message names the rank and its
log; the partial traces stay in ``--out``), 2 bad input (also: more ranks than this machine
has cores without ``--oversubscribe``), 143/129 stopped by SIGTERM/SIGHUP (130 for Ctrl-C):
every process of the run is ended and the traces written so far are kept.  A failed or
stopped run whose workers all got past the warm-up also keeps its measured iterations as
``metrics.json`` marked ``"complete": false`` (:mod:`realrun.partial`).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import textwrap
from typing import Any

from clustersim._jobs import parse_count
from clustersim.commands.parser import profile_file
from clustersim.errors import InputError

__all__ = ["add_parser", "cmd_run"]

DEFAULT_TIMEOUT = 300.0
DEFAULT_OUT = "out/realrun"  # under out/ (git-ignored): a run leaves nothing in a work tree


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``run`` and its options to the CLI's ``subparsers``; the new parser."""
    p = subparsers.add_parser(
        "run", help="run a scenario for real on MPI ranks (--real) and measure it",
        # wrapped here: the raw formatter (kept for the epilog's example lines) does not
        description=textwrap.fill(
            "Run one point of a training scenario on real MPI processes (one rank per worker "
            "and server, the pip MPICH's mpiexec unless --mpiexec), trace every operation and "
            "print measured vs predicted metrics.", 79),
        epilog="Example:\n  clustersim run --real scenarios/real_bsp_mlp.yaml --out out/runs/bsp",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", help="training scenario YAML (see scenarios/real_*.yaml), or "
                   "the name of a shipped one (clustersim list scenarios)")
    p.add_argument("--real", action="store_true",
                   help="run on real MPI processes (required: simulating is `predict`)")
    p.add_argument("--np", type=int, metavar="N",
                   help="MPI ranks = workers + servers (default: from --workers or the sweep)")
    p.add_argument("--workers", type=parse_count, metavar="W", help="worker count (default: the "
                   "largest sweep point, or --np minus the algorithm's servers)")
    p.add_argument("--algorithm", metavar="NAME",
                   help="which of the scenario's algorithms (label or name; default the main)")
    p.add_argument("--iterations", type=parse_count, metavar="N", help="override run.iterations")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a scenario field (repeatable), as in predict")
    p.add_argument("--collectives", choices=["library", "schedules"], default="library",
                   help="MPI library collectives, or our schedules where the op names one "
                        "(default %(default)s)")
    p.add_argument("--math", action="store_true",
                   help="train the proxy model for real (algorithms that support it)")
    p.add_argument("--backend", choices=["auto", "numpy", "cupy"], default="auto",
                   help="array backend (default: CuPy when a GPU is present)")
    p.add_argument("--mpiexec", metavar="PATH", help="mpiexec to use (a cluster's own MPI)")
    p.add_argument("--hostfile", metavar="FILE", help="hostfile passed to mpiexec")
    p.add_argument("--oversubscribe", action="store_true",
                   help="allow more ranks than this machine has cores (at most "
                        "8 per core; without a --hostfile the default is to refuse)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="end the run (and name the culprit) after this long (default "
                        "%(default)s)")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help="traces, logs and metrics.json (default %(default)s)")
    p.add_argument("--calibration", metavar="FILE", type=profile_file,
                   help="predict with this calibration profile for the comparison")
    p.add_argument("--json", metavar="FILE", help="write measured + predicted as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no table")
    p.add_argument("--wide", action="store_true",
                   help="print every column of the table, never wrap (default: fit the "
                        "terminal, COLUMNS or 80 when piped, leaving out the time split)")
    p.set_defaults(func=cmd_run)
    return p


def cmd_run(args: argparse.Namespace) -> int:
    """``clustersim run --real``: refuse bad input before any process starts, run the
    scenario on MPI ranks, print measured beside predicted; the exit code (module docs)."""
    if not args.real:
        raise InputError("`clustersim run` runs scenarios on real MPI processes: add --real "
                         "(to simulate a scenario use `clustersim predict SCENARIO`)")
    if not math.isfinite(args.timeout) or args.timeout <= 0:  # nan: no limit at all (M3)
        raise InputError(f"--timeout must be a finite number of seconds > 0, not "
                         f"{args.timeout!r}")
    from clustersim.report.output import check_outputs
    from clustersim.shipped import scenario_path
    from realrun.launch import RealRunError, check_rank_count, find_mpiexec
    from realrun.train import prepare, run_scenario

    sets = list(args.set or [])
    # a bare name is a shipped scenario, as in predict (`clustersim list scenarios`)
    args.scenario = scenario_path(args.scenario)
    # resolve first: bad input must fail (exit 2) before any process starts
    setup = prepare(args.scenario, algorithm=args.algorithm, workers=args.workers,
                    iterations=args.iterations, sets=sets, np=args.np)
    check_rank_count(setup.np, hostfile=args.hostfile, oversubscribe=args.oversubscribe)
    find_mpiexec(args.mpiexec)  # before --out exists: a bad one leaves nothing (QA 19 M4)
    if setup.asked is not None and not args.quiet:  # sim/runwindow.py: as predict runs it
        run, asked = setup.scenario.run, setup.asked
        print(f"note: {setup.algorithm.title} runs {run.warmup} warm-up + "
              f"{run.iterations - run.warmup} measured steps ({asked.warmup} + "
              f"{asked.iterations - asked.warmup} asked): whole exchange periods",
              file=sys.stderr)
    # the profile now, not after the run: a bad one is bad input, before any process starts
    # and before --json and --out are cleared (audit E H3)
    calibrated = _calibrated(setup, args.calibration, args.quiet)
    check_outputs({"--json": args.json})  # the profile read above counts as an input
    from pathlib import Path

    from realrun.arrays import check_backend
    from realrun.outdir import check_out_dir, clear_previous
    from realrun.partial import stop_reason

    check_out_dir(args.out)  # an existing file, no permission, a name too long: exit 2 (H4)
    if args.hostfile is None:  # --backend cupy without a GPU: bad input, not a failed run
        check_backend(args.backend)
    if args.json and Path(args.json).is_file():
        Path(args.json).unlink()  # a failed run must not leave the last run's --json (H2)
    # run_scenario clears them too; done here, before anything can be stopped, so that what
    # a failure or a stop finds in --out (traces, a success's metrics.json) is this run's
    clear_previous(Path(args.out))
    try:
        res = run_scenario(args.scenario, np=args.np, algorithm=args.algorithm,
                           iterations=args.iterations, out_dir=args.out, timeout=args.timeout,
                           mpiexec=args.mpiexec, hostfile=args.hostfile, sets=sets,
                           workers=args.workers, collectives=args.collectives, math=args.math,
                           backend=args.backend)
    except RealRunError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if any(Path(args.out).glob("trace.rank*.jsonl")):
            print(f"partial traces (everything measured before the failure) are in "
                  f"{args.out}", file=sys.stderr)
        else:  # no rank traced anything (mpiexec started none, or they died starting up)
            print(f"no rank wrote a trace; logs are in {Path(args.out) / 'logs'}",
                  file=sys.stderr)
        # a Ctrl-C while this measures ends the command as a stop (130), like any other
        _keep_partial(setup, args.out, stop_reason(exc), "failure")
        return 1
    except KeyboardInterrupt as exc:  # also SIGTERM/SIGHUP (clustersim._signals): processes
        try:  # are gone; main prints "interrupted" and exits 128 + the signal
            _say(f"partial traces (everything measured before the stop) are in {args.out}")
            _keep_partial(setup, args.out, stop_reason(exc), "stop")
        except KeyboardInterrupt:  # a second signal: skip the rest, end with the first's code
            _say("stopped again: partial metrics not written")
        raise exc from None
    predicted = _predict(setup, calibrated)
    if args.json:
        from clustersim.report.output import write_json

        write_json(args.json, {**res.to_dict(), "predicted": predicted.to_dict()})
    if not args.quiet:
        _print(res, predicted, args.wide)
    return 0


def _keep_partial(setup: Any, out: str, stopped: str, what: str) -> None:
    """Keep what a failed or stopped run measured as ``metrics.json`` (``complete: false``;
    :mod:`realrun.partial`) and say so, or why there was not enough, in one line.

    ``--json`` stays unwritten: its readers take it for a finished run with its prediction
    beside it, and predicting here would lengthen the stop path; the partial record is in
    ``--out``, marked as such."""
    from realrun.partial import keep_partial

    _say(keep_partial(setup, out, stopped, what=what))


def _say(line: str) -> None:
    """One line on stderr, if it can still be written (after SIGHUP the terminal may be
    gone: an OSError here would replace the stop with a traceback)."""
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr)


def _calibrated(setup: Any, calibration: str | None, quiet: bool) -> Any:
    """The point's scenario with the ``--calibration`` profile applied (read and checked)."""
    if not calibration:
        return setup.scenario
    from clustersim.calibration.applyprofile import apply_profile

    return apply_profile(setup.scenario, calibration, quiet=quiet)


def _predict(setup: Any, scn: Any) -> Any:
    """The simulator's prediction for the point that ran, on the (calibrated) scenario."""
    from clustersim.sim.sweep import simulate_point

    m, _ = simulate_point(scn, setup.algorithm, setup.workers, scn.run.seed)
    return m


def _print(res: Any, predicted: Any, wide: bool = False) -> None:
    """The measured vs predicted table and where the run left its files.  Why through
    :func:`clustersim.report.layout.print_table` and the tool's console: a boxed table at a
    fixed 160 columns when piped printed 85-character lines at any ``COLUMNS``."""
    from rich.markup import escape
    from rich.text import Text

    from clustersim.cli import _console
    from clustersim.report.layout import Col, print_table

    # as predict's (clustersim.report.training): the headline figures stay at a narrow
    # width, the time split is left out first (and said)
    cols = (Col("", justify="left", priority=0), Col("iter (ms)"),
            Col("compute ms", priority=4), Col("comm ms", priority=4),
            Col("wait ms", priority=4), Col("comm exposed", priority=2), Col("samples/s"))
    console = _console(wide=wide)
    m = res.metrics
    console.print(f"[bold]{escape(str(res.scenario))}[/bold] · {escape(str(res.algorithm))} · "
                  f"{res.workers} worker(s), {res.np} MPI rank(s) · "
                  f"{res.launch.elapsed:.1f} s wall")
    rows = [[name, f"{x.iteration_time * 1e3:.2f}", f"{x.compute * 1e3:.2f}",
             f"{x.comm * 1e3:.2f}", f"{x.wait * 1e3:.2f}", f"{x.comm_share:.1%}",
             f"{x.throughput:,.0f}"] for name, x in (("measured", m), ("predicted", predicted))]
    print_table(console, "measured vs predicted (per worker, per iteration, warmup excluded)",
                cols, rows, wide=wide)
    if m.iteration_time > 0:  # calibrate's convention: predicted against measured (QA 15)
        err = predicted.iteration_time / m.iteration_time - 1.0
        console.print(Text(f"iteration time: prediction error {err:+.1%} (predicted / measured "
                           "- 1, as calibrate's validation prints it)"))
    if m.staleness_mean is not None:
        console.print(f"staleness: mean {m.staleness_mean:.2f}, max {m.staleness_max:.0f}; "
                      f"server utilisation {m.server_utilization or 0.0:.1%}")
    for row in res.math:
        console.print(f"math rank {row['rank']} ({row['role']}): loss {row['loss_start']:.4f}"
                      f" -> {row['loss_end']:.4f}, accuracy {row['accuracy']:.1%}, "
                      f"{row['steps']} steps, weights {row['digest'][:12]}")
    console.print(f"traces: {res.out_dir}/trace.rank*.jsonl, {res.out_dir}/trace.chrome.json; "
                  f"metrics: {res.out_dir}/metrics.json")
    if (res.out_dir / "grad_norms.csv").is_file():
        console.print(f"gradient norms: {res.out_dir}/grad_norms.csv (noise scale: `clustersim "
                      f"calibrate --convergence {res.out_dir}/grad_norms.csv`)")
