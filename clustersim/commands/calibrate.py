"""``clustersim calibrate``: fit the simulator's parameters to measurements, write a profile.

Two sources of measurements:

* ``clustersim calibrate --real`` runs the microbenchmarks here (``mpiexec`` of the pip
  MPICH unless ``--mpiexec``; ``--np`` ranks; ``--hostfile`` for a cluster), fits, writes the
  profile, then validates it: the real-run scenarios (``scenarios/real_*.yaml``, or
  ``--scenarios``) are predicted with the profile and run for real, and the table shows
  predicted vs measured iteration time and communication share with the MAPE.  Nothing of
  those runs enters the fit.
* ``clustersim calibrate TRACES...`` fits traces recorded elsewhere (``trace.rank*.jsonl``
  files or directories holding them, e.g. a cluster's ``realrun microbench`` output).
* ``clustersim calibrate --convergence LOG.csv`` estimates the gradient noise scale of a
  training log instead (:mod:`clustersim.commands.calibrate_convergence`).
* ``clustersim calibrate --emulation`` fits the analytic convergence model's constants on
  convergence emulation (:mod:`clustersim.commands.calibrate_emulation`).

``--platform`` names the platform the ranks ran on (default ``topologies/localhost.yaml``):
it says which device and link class the numbers describe.  Exit codes: 0 success, 1 a failed
real run (the message names the rank and its log; after a failed validation run the profile
fitted from the microbenchmarks is written all the same), 2 bad input (checked before anything
starts: :mod:`.calibrate_checks`), 143/129 stopped by SIGTERM/SIGHUP (130 for Ctrl-C; every
MPI process is ended, the traces so far are kept and the command that fits them is printed).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import textwrap
from pathlib import Path
from typing import Any

from clustersim.commands.calibrate_checks import (
    check_link,
    check_rank_counts,
    check_work_dir,
    platform_path,
)
from clustersim.commands.calibrate_convergence import add_arguments as add_convergence_arguments
from clustersim.commands.calibrate_emulation import add_arguments as add_emulation_arguments
from clustersim.commands.calibrate_inputs import load_traces, validation_scenarios
from clustersim.commands.calibrate_real import validate_command
from clustersim.commands.calibrate_report import (
    console_for,
    print_fit,
    print_moved,
    print_validation,
    say,
    status,
)
from clustersim.errors import InputError

__all__ = ["add_parser", "cmd_calibrate"]

DEFAULT_TIMEOUT = 900.0
DEFAULT_PLATFORM = "topologies/localhost.yaml"
DEFAULT_OUT = "calibration.yaml"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``calibrate`` and its options to the CLI's ``subparsers``; the new parser."""
    p = subparsers.add_parser(
        "calibrate", help="fit the model to microbenchmarks (--real, or TRACES) and write a "
                          "calibration profile",
        description=textwrap.fill(  # wrapped here: the raw formatter keeps the epilog's lines
            "Fit piecewise alpha-beta per link class (eager/rendezvous breakpoints), "
            "per-message and per-step overheads, compute efficiency per kernel class, "
            "memory and reduction throughput - robust least squares with 95% "
            "confidence intervals - and write a profile for `predict --calibration`.  "
            "With --real the profile is then validated on end-to-end runs that were "
            "not in the fit.", 79),
        epilog="Examples:\n  clustersim calibrate --real --out profile.yaml\n"
               "  clustersim calibrate --real --quick --no-validate\n"
               "  clustersim calibrate cluster-run/ --platform topologies/dgx1_edr8.yaml "
               "--out dgx.yaml\n"
               "  clustersim predict scenarios/real_bsp_mlp.yaml --calibration profile.yaml\n"
               "  clustersim calibrate --convergence runs/bsp/grad_norms.csv --out gns.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("traces", nargs="*", metavar="TRACES",
                   help="trace.rank*.jsonl files or directories with them (instead of --real)")
    p.add_argument("--real", action="store_true", help="measure here on real MPI ranks")
    p.add_argument("--out", default=None, metavar="FILE",
                   help=f"profile to write (default {DEFAULT_OUT}; with --convergence: the "
                        "noise-scale snippet, printed when not given; with --emulation: the "
                        "constants file, default constants.yaml)")
    p.add_argument("--np", type=int, default=2, metavar="N",
                   help="MPI ranks for the microbenchmarks (default %(default)s)")
    p.add_argument("--mpiexec", metavar="PATH", help="mpiexec to use (a cluster's own MPI)")
    p.add_argument("--hostfile", metavar="FILE", help="hostfile passed to mpiexec")
    p.add_argument("--oversubscribe", action="store_true",
                   help="allow more ranks (--np, validation scenarios) than this machine has "
                        "cores (at most 8 per core; without a --hostfile the default is to "
                        "refuse, as run --real does)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="limit per real run (default %(default)s)")
    p.add_argument("--quick", action="store_true",
                   help="fewer sizes and shapes, shorter batches, one validation run each")
    p.add_argument("--plan", choices=["auto", "cpu", "gpu"], default="auto",
                   help="with --real: sizes and shapes chosen for CPU cores or for a GPU "
                        "(auto: gpu where an NVIDIA device is present; default %(default)s)")
    p.add_argument("--platform", default=DEFAULT_PLATFORM, metavar="FILE",
                   help="platform the ranks ran on (default %(default)s)")
    p.add_argument("--link", metavar="CLASS",
                   help="link class the ping-pong measures (default: the narrowest link "
                        "between ranks 0 and 1 on --platform)")
    p.add_argument("--collectives", choices=["library", "schedules"], default="library",
                   help="which collective implementation the step overhead describes and "
                        "the validation runs use (default %(default)s)")
    p.add_argument("--duplex", choices=["keep", "auto", "full", "half"], default="keep",
                   help="duplex mode of the measured link class: as the platform says, "
                        "chosen by the collective fit, or forced (default %(default)s)")
    p.add_argument("--breakpoints", metavar="SIZES",
                   help="ping-pong segment starts, e.g. 64KiB,1MiB (default: detected)")
    p.add_argument("--max-segments", type=int, default=4, metavar="K",
                   help="at most this many ping-pong segments (default %(default)s)")
    p.add_argument("--collective-splits", type=int, default=2, metavar="K",
                   help="at most this many breakpoints the collective fit may add inside "
                        "ping-pong segments, chosen by BIC; 0 = one collective efficiency "
                        "per ping-pong segment (default %(default)s)")
    p.add_argument("--statistic", choices=["mean", "median", "min"], default="mean",
                   help="per-point statistic over benchmark batches: mean (predicts mean "
                        "times on a busy machine), median (undisturbed), min (best case; the "
                        "validation then compares with the fastest real run, not the median); "
                        "default %(default)s")
    p.add_argument("--loss", choices=["soft_l1", "huber", "cauchy", "arctan", "linear"],
                   default="soft_l1", help="least-squares loss (default %(default)s)")
    p.add_argument("--f-scale", type=float, default=0.05, metavar="REL",
                   help="relative error beyond which the robust loss is linear "
                        "(default %(default)s)")
    p.add_argument("--validate", dest="validate", action="store_true", default=None,
                   help="run the validation scenarios (default with --real)")
    p.add_argument("--no-validate", dest="validate", action="store_false",
                   help="skip the end-to-end validation runs")
    p.add_argument("--scenarios", nargs="+", metavar="FILE",
                   help="validation scenarios (default: the shipped real_gpu_*.yaml with the gpu "
                        "plan, the other real_*.yaml with the cpu plan; with --runs DIR "
                        "only those with runs recorded there)")
    p.add_argument("--runs", metavar="DIR",
                   help="with TRACES: validate on runs recorded earlier under "
                        "DIR/<scenario>/run*/ (as --real's work dir holds them in "
                        "validation/) instead of running them here")
    p.add_argument("--repeats", type=int, metavar="N",
                   help="real runs per validation scenario, median kept (default 3; 1 with "
                        "--quick)")
    p.add_argument("--rounds", type=int, default=1, metavar="R",
                   help="with --real: R rounds of (microbenchmarks, validation runs); the fit "
                        "pools every round's benchmarks, the validation every round's runs - "
                        "on a shared machine this averages both over the same load "
                        "(default %(default)s)")
    p.add_argument("--work-dir", default="out/calibration-runs", metavar="DIR",
                   help="benchmark traces and validation runs (default %(default)s)")
    p.add_argument("--json", metavar="FILE", help="write fit and validation as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no tables")
    p.add_argument("--wide", action="store_true",
                   help="every table column, whatever the terminal's width")
    add_convergence_arguments(p)
    add_emulation_arguments(p)
    p.set_defaults(func=cmd_calibrate)
    return p


def _sizes(text: str | None) -> list[float] | None:
    if not text:
        return None
    from clustersim.units import UnitError, parse_size

    out = []
    for item in text.split(","):
        if not item.strip():
            continue
        try:
            out.append(parse_size(item.strip()))
        except UnitError as exc:
            raise InputError(f"--breakpoints: {exc}") from None
    return out


def _check(args: argparse.Namespace) -> None:
    if args.real and args.traces:
        raise InputError("give either --real (measure here) or TRACES (fit recorded traces), "
                         "not both")
    if not args.real and not args.traces:
        raise InputError("nothing to fit: use --real to measure here, or give TRACES (files "
                         "or directories of trace.rank*.jsonl)")
    if args.np < 2:
        raise InputError(f"--np must be at least 2 (ping-pong needs a pair), not {args.np}")
    if args.timeout <= 0:
        raise InputError(f"--timeout must be > 0 seconds, not {args.timeout!r}")
    if args.max_segments < 1:
        raise InputError(f"--max-segments must be >= 1, not {args.max_segments}")
    if args.collective_splits < 0:
        raise InputError(f"--collective-splits must be >= 0, not {args.collective_splits}")
    if not args.f_scale > 0:
        raise InputError(f"--f-scale must be > 0, not {args.f_scale!r}")
    if args.repeats is not None and args.repeats < 1:
        raise InputError(f"--repeats must be >= 1, not {args.repeats}")
    if args.rounds < 1:
        raise InputError(f"--rounds must be >= 1, not {args.rounds}")
    if args.runs is not None:
        if args.real:
            raise InputError("--runs validates on recorded runs: give it with TRACES, not "
                             "--real (which records its own)", path=("runs",))
        if not Path(args.runs).is_dir():
            raise InputError(f"--runs: directory {args.runs!r} not found", path=("runs",))
        if args.validate is False:
            raise InputError("--runs is a validation: it cannot go with --no-validate",
                             path=("runs",))
        args.validate = True
    if args.rounds > 1 and not args.real:
        raise InputError("--rounds needs --real (recorded traces are fitted as they are)")
    if args.real and args.plan == "gpu":
        from realrun.arrays import gpu_present  # a /dev scan: no CUDA import

        if not gpu_present():
            raise InputError("--plan gpu measures GEMMs of up to 550 GFLOP, hours on CPU "
                             "cores, and no NVIDIA GPU was found here (allowed: auto, cpu)",
                             path=("plan",))
    from clustersim.report.output import check_outputs

    # before minutes of measuring: an output that cannot be written is an input error now,
    # and so is one that would replace what is fitted (a trace, the platform: audit E H1)
    check_outputs({"--out": args.out, "--json": args.json}, inputs=_inputs(args))


def _inputs(args: argparse.Namespace) -> list[Path]:
    """The files this calibration reads: traces (a folder: every file in it), ``--runs``,
    ``--scenarios`` and the ``--platform`` file."""
    out: list[Path] = []
    for t in [*args.traces, *([args.runs] if args.runs else [])]:
        p = Path(t)
        out += [f for f in p.rglob("*") if f.is_file()] if p.is_dir() else [p]
    out += [Path(f) for f in args.scenarios or []]
    with contextlib.suppress(InputError):  # an unknown name is refused where it is loaded
        out.append(platform_path(args.platform))
    return out


def cmd_calibrate(args: argparse.Namespace) -> int:
    """``clustersim calibrate``: measure (``--real``) or read the microbenchmarks, fit, write
    the profile and validate it (by default with ``--real``); the exit code (module docs).
    ``--emulation`` and ``--convergence`` are commands of their own, handed over first."""
    from clustersim.calibration.pipeline import calibrate_rows, make_target
    from clustersim.platform.describe import load_platform

    if args.emulation:  # the analytic convergence model's constants, fitted on emulation
        from clustersim.commands.calibrate_emulation import cmd_emulation

        return cmd_emulation(args)  # (it refuses --real, TRACES and --convergence beside it)
    if args.convergence is not None:  # the gradient noise scale of a training log
        from clustersim.commands.calibrate_convergence import cmd_convergence

        return cmd_convergence(args)
    args.out = args.out or DEFAULT_OUT
    _check(args)
    breakpoints = _sizes(args.breakpoints)
    if args.real and breakpoints:  # the plan's sizes are known: refuse before measuring
        from clustersim.calibration.measure import bench_plan
        from clustersim.calibration.ppcheck import check_pingpong

        check_pingpong(bench_plan(args.quick, args.plan).pingpong_sizes, breakpoints,
                       measured=f"the {args.plan} plan{' --quick' if args.quick else ''} "
                                f"measures")
    platform = load_platform(platform_path(args.platform))
    validate = args.validate if args.validate is not None else bool(args.real)
    scenarios = validation_scenarios(args) if validate else []
    console = console_for(args.quiet, args.wide)
    work = Path(args.work_dir)
    source: dict[str, Any] = {"platform": str(args.platform), "statistic": args.statistic}
    runs: list[list[Any]] = [[] for _ in scenarios]
    repeats = args.repeats or (1 if args.quick else 3)
    # everything that can be refused is refused now, before the first process starts
    run_here = bool(scenarios) and args.runs is None
    check_link(platform, args.link)
    check_rank_counts(args, scenarios, run_here)
    if args.real or run_here:
        check_work_dir(args, scenarios if run_here else [], repeats)
    failure = None
    if args.real:
        from clustersim.commands.calibrate_real import measure_real

        got = measure_real(args, scenarios, console, repeats)
        if got is None:  # a benchmark failed: the error and what was kept are printed
            return 1
        rows, headers, runs, failure = got.rows, got.headers, got.runs, got.failure
        source.update(got.source)
        if failure is not None:  # the fit stands on the benchmarks alone: write it
            scenarios = []
    else:
        rows, headers = load_traces(list(args.traces), args.statistic)
        source.update(kind="traces", traces=[str(t) for t in args.traces])
    ranks = len(headers) or args.np
    hosts = [str(h.get("host", "")) for h in headers] if headers else None
    if headers:
        h0 = headers[0]
        source.update(ranks=ranks, hosts=sorted(set(hosts or [])),
                      mpi=str(h0.get("mpi", "")).splitlines()[0] if h0.get("mpi") else "",
                      arrays=str(h0.get("arrays", "")))
    target = make_target(platform, ranks, hosts, link=args.link)
    about = (f"fitted from microbenchmarks of {ranks} ranks on "
             f"{', '.join(sorted(set(hosts or []))) or 'unknown hosts'} "
             f"(platform {platform.name}: device {target.device}, link class {target.link})")
    cal = calibrate_rows(rows, target, breakpoints=breakpoints,
                         max_segments=args.max_segments, loss=args.loss, f_scale=args.f_scale,
                         collectives=args.collectives, duplex=args.duplex, about=about,
                         source=source, collective_splits=args.collective_splits)
    if not args.quiet:
        print_fit(console, cal, args.wide)
    report = None
    if scenarios:
        from clustersim.calibration.validate import build_report, run_cases
        from realrun.launch import RealRunError

        if args.runs is not None:  # recorded runs, measured again from their traces
            from clustersim.calibration.validate import recorded_cases

            runs = recorded_cases(scenarios, args.runs)
        elif not args.real:  # fitted from traces: run the validation now
            try:
                with status(console, "validation runs") as update:
                    runs = run_cases(scenarios, out_dir=work / "validation",
                                     timeout=args.timeout, collectives=args.collectives,
                                     repeats=repeats, mpiexec=args.mpiexec,
                                     hostfile=args.hostfile, progress=update)
            except RealRunError as exc:
                print(f"error: {exc}", file=sys.stderr)
                _write(cal.profile, args.out, console)
                _warn(cal.profile)
                return 1
        pick = "min" if args.statistic == "min" else "median"
        report = build_report(cal.profile, scenarios, runs, pick=pick)
        cal.profile.validation = {"note": "predicted with this profile, then compared with "
                                          "real runs that the fit never saw",
                                  "measured": f"the {pick} of the repeats", **report.as_dict()}
        if not args.quiet:
            print_validation(console, report, pick, args.wide)
    _write(cal.profile, args.out, console)
    if not args.quiet:
        print_moved(console, cal, platform, args.wide)
    _warn(cal.profile)
    if args.json:
        from clustersim.report.output import write_json

        write_json(args.json, {"profile": str(args.out), "fit": cal.profile.fit,
                               "notes": cal.notes,
                               "validation": report.as_dict() if report else None})
    if failure is not None:  # after the profile: the benchmarks all succeeded
        print(f"error: {failure}", file=sys.stderr)
        print(f"a validation run failed: {args.out} holds the profile fitted from the "
              f"microbenchmarks, not validated; to validate it without measuring the "
              f"benchmarks again: {validate_command(args)}", file=sys.stderr)
        return 1
    return 0


def _warn(profile: Any) -> None:
    """The profile's warnings on stderr, also with -q, after everything else: the verdict
    on a poor fit closes the output, where it cannot scroll away above the tables."""
    for warning in profile.warnings:
        print(f"warning: {warning} (kept in the profile's warnings:)", file=sys.stderr)


def _write(profile: Any, path: str, console: Any) -> None:
    from clustersim.calibration.profile import write_profile

    write_profile(profile, path)
    say(console, f"wrote {path}")
