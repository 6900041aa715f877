"""``clustersim calibrate --real``: the measuring - microbenchmarks and validation runs, per
round - and what a stop or a failure leaves the user with.

Why apart from :mod:`.calibrate`: the measuring is the part that can be cut short (Ctrl-C,
SIGTERM, a rank that fails), and then the command must say what it kept and how to use it.
The benchmark traces on disk are complete enough to fit (``clustersim calibrate
WORK/bench``), and a failed *validation* run must not throw away the benchmarks that all
succeeded: the caller fits and writes the profile, then reports the failure (QA 10 M1).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clustersim.commands.calibrate_report import say, status

__all__ = ["RealMeasurement", "kept_note", "measure_real", "refit_command", "validate_command"]

#: fit options passed on to the offline command when they differ from these defaults
FIT_OPTIONS = {"platform": "topologies/localhost.yaml", "link": None,
               "collectives": "library", "duplex": "keep", "statistic": "mean",
               "breakpoints": None, "max_segments": 4, "collective_splits": 2,
               "loss": "soft_l1", "f_scale": 0.05}


@dataclass
class RealMeasurement:
    """What ``--real`` measured: fit rows, trace headers, validation runs per scenario, the
    profile's ``source`` fields, and the failed validation run's message (None: none)."""

    rows: list[dict[str, Any]]
    headers: list[dict[str, Any]]
    runs: list[list[Any]]
    source: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None


def refit_command(args: argparse.Namespace) -> str:
    """The command that fits the kept benchmark traces of ``args.work_dir`` with the fit
    options of ``args``, without measuring again."""
    cmd = ["clustersim", "calibrate", str(Path(args.work_dir) / "bench")]
    for name, default in FIT_OPTIONS.items():
        value = getattr(args, name, default)
        if value is not None and value != default:
            cmd += [f"--{name.replace('_', '-')}", str(value)]
    cmd += ["--out", str(args.out)]
    return " ".join(shlex.quote(c) for c in cmd)


def validate_command(args: argparse.Namespace) -> str:
    """:func:`refit_command` that also runs the validation scenarios here (TRACES mode)."""
    cmd = refit_command(args) + " --validate"
    if args.scenarios:
        cmd += " --scenarios " + " ".join(shlex.quote(str(s)) for s in args.scenarios)
    for name in ("repeats", "timeout", "mpiexec", "hostfile"):
        value = getattr(args, name, None)
        if value is not None and not (name == "timeout" and value == 900.0):
            cmd += f" --{name} {shlex.quote(str(value))}"
    return cmd


def kept_note(args: argparse.Namespace, when: str) -> str | None:
    """Where the traces measured before the stop or failure are, and the command that fits
    them; None when no benchmark trace was written yet."""
    work = Path(args.work_dir)
    if not any((work / "bench").rglob("trace.rank*.jsonl")):
        return None
    text = (f"the microbenchmark traces measured before the {when} are kept in "
            f"{work / 'bench'}; fit them without measuring again: {refit_command(args)}")
    if (work / "validation").is_dir():
        text += (f" (validation runs are in {work / 'validation'}; a run cut short there is "
                 f"partial)")
    return text


def measure_real(args: argparse.Namespace, scenarios: list[Path], console: Any,
                 repeats: int) -> RealMeasurement | None:
    """Run ``args.rounds`` rounds of microbenchmarks and validation runs.

    None: a benchmark failed (the error and what was kept are printed; exit 1).  A failed
    validation run ends the measuring with :attr:`RealMeasurement.failure` set: the
    benchmarks of the rounds so far are all there, so the profile can still be fitted.
    A stop (KeyboardInterrupt, also SIGTERM/SIGHUP) says what was kept and goes on up.
    """
    from clustersim.calibration.measure import bench_plan, classify_rows, run_benchmarks
    from clustersim.calibration.rows import rows_from_events
    from clustersim.calibration.validate import run_cases
    from realrun.launch import RealRunError

    work = Path(args.work_dir)
    plan = bench_plan(args.quick, args.plan)
    events: list[Any] = []
    loads: list[float] = []
    headers: list[dict[str, Any]] = []
    runs: list[list[Any]] = [[] for _ in scenarios]
    failure = None
    try:
        for rnd in range(args.rounds):
            bench_dir = work / "bench" / (f"round{rnd}" if args.rounds > 1 else "")
            tag = f"round {rnd + 1}/{args.rounds}: " if args.rounds > 1 else ""
            say(console, f"{tag}measuring microbenchmarks on {args.np} MPI ranks "
                          f"({'quick' if args.quick else 'full'} plan; traces in {bench_dir})")
            loads.append(_loadavg())
            try:
                with status(console, "microbenchmarks running"):
                    evs, headers = run_benchmarks(plan, np=args.np, out_dir=bench_dir,
                                                  timeout=args.timeout, mpiexec=args.mpiexec,
                                                  hostfile=args.hostfile)
            except RealRunError as exc:
                print(f"error: {exc}", file=sys.stderr)
                _note(args, "failure")
                return None
            # batches of different rounds are different repeats of the same points
            for ev in evs:
                ev.meta = {**ev.meta, "repeat": rnd * 100000 + int(ev.meta.get("repeat", 0))}
            events += evs
            if not scenarios:
                continue
            say(console, f"{tag}running {len(scenarios)} validation scenario(s) for real, "
                          f"{repeats} time(s) each (not used by the fit)")
            try:
                with status(console, "validation runs") as update:
                    got = run_cases(scenarios, out_dir=work / "validation",
                                    timeout=args.timeout, collectives=args.collectives,
                                    repeats=repeats, first=rnd * repeats,
                                    mpiexec=args.mpiexec, hostfile=args.hostfile,
                                    progress=update)
            except RealRunError as exc:
                failure = str(exc)
                break
            for i, g in enumerate(got):
                runs[i] += g
    except KeyboardInterrupt:  # also SIGTERM/SIGHUP (clustersim._signals): processes are gone
        _note(args, "stop")
        raise
    rows = classify_rows(rows_from_events(events, args.statistic), plan)
    (work / "bench").mkdir(parents=True, exist_ok=True)
    (work / "bench" / "calibration_rows.json").write_text(
        json.dumps(rows, indent=1, sort_keys=True))
    source = {"kind": "real", "traces": str(work / "bench"), "plan": plan.describe(),
              "rounds": args.rounds, "load_average": [round(x, 2) for x in loads]}
    return RealMeasurement(rows, headers, runs, source, failure)


def _note(args: argparse.Namespace, when: str) -> None:
    text = kept_note(args, when)
    if text is not None:
        with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
            print(text, file=sys.stderr)


def _loadavg() -> float:
    import math
    import os

    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return math.nan
