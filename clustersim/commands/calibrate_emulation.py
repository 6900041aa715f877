"""``clustersim calibrate --emulation``: fit the analytic convergence model's constants.

Emulates the asynchronous, elastic and gossip algorithms on the emulation tasks
(:mod:`clustersim.sim.convfit`: a grid that moves each asynchrony term), fits ``k_s``,
``k_m``, ``k_d``, ``k_e``, ``k_g`` by robust least squares on ``log`` steps to target
(:mod:`clustersim.convergence.fit`), prints each constant with its interval, the residual
per run and the held-out error, and writes a constants file that ``load_constants`` and a
scenario's ``workload.convergence.constants:`` read.  Exit codes: 0 success, 2 bad input.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from clustersim.errors import InputError

__all__ = ["add_arguments", "cmd_emulation", "fit_warnings", "write_constants"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``--emulation`` options of ``clustersim calibrate``."""
    g = p.add_argument_group("convergence constants from emulation (--emulation)")
    g.add_argument("--emulation", action="store_true",
                   help="fit the analytic convergence model's asynchrony constants on "
                        "convergence emulation and write them to --out (constants file)")
    g.add_argument("--grid", choices=["small", "full"], default="small",
                   help="with --emulation: the grid of runs (small: seconds; full: minutes) "
                        "(default %(default)s)")
    g.add_argument("--seeds", type=int, default=None, metavar="N",
                   help="with --emulation: seeds per grid point (default 1 small, 3 full)")
    g.add_argument("--tasks", default="digits,teacher_student", metavar="LIST",
                   help="with --emulation: emulation tasks, comma-separated, of digits and "
                        "teacher_student (default %(default)s)")


def fit_warnings(cal: Any, tasks: Sequence[str] = (), grid: str = "small"
                 ) -> list[str]:
    """What makes the fitted constants unfit for use, in words (empty when nothing does),
    with what to try that the run did not (``tasks`` and ``grid``: what it fitted on).

    Why: where the fit cannot move the constants that decide whether runs converge (runs
    the analytic model says never reach the target at the fitted values, an infinite
    held-out error), the file written would make ``predict`` say "never" for runs that
    converge in ~50 steps.  It is still written (to look at), with the warning in its
    header and on stderr."""
    from clustersim.convergence.fit import analytic_steps

    f = cal.fit
    never = sum(1 for o in f.observations
                if math.isfinite(o.steps) and not math.isfinite(analytic_steps(o, f.constants)))
    out = []
    if never:
        out.append(f"the fitted constants predict 'never' for {never} of "
                   f"{len(f.observations)} fitted runs that reached the target")
    if not math.isfinite(cal.heldout_median):
        out.append("the held-out median error is infinite (runs predicted never to reach "
                   "the target)")
    if out:
        tries = []
        missing = [t for t in _all_tasks() if t not in tasks]
        if missing and tasks:
            tries.append(f"more tasks (--tasks {','.join([*tasks, *missing])})")
        if grid != "full":
            tries.append("a larger grid (--grid full --seeds 3)")
        more = (f"fit on {' or '.join(tries)}" if tries else "the grid and tasks are all "
                "there are: keep the shipped constants_emulation.yaml or the theory values")
        out.append(f"these constants are not fit for use; {more}")
    return out


def _all_tasks() -> list[str]:
    from clustersim.sim.convfit import TASK_DEFAULTS

    return list(TASK_DEFAULTS)


def write_constants(cal: Any, path: str, grid: str, seeds: int, tasks: list[str],
                    warnings: list[str] = ()) -> None:
    """The constants file: ``constants:`` as ``load_constants`` reads it, with provenance
    (and ``warnings`` as header comments)."""
    import yaml

    from clustersim.convergence.fit import constants_document

    shipped = _shipped_sources()
    date = dt.date.today().isoformat()
    doc = constants_document(
        cal.fit, f"convergence emulation, grid {grid}, tasks {', '.join(tasks)}, {seeds} "
        f"seed(s) per point, {len(cal.fit.observations)} fitted runs", date,
        cal.heldout_median, shipped)
    head = (f"# Written by clustersim calibrate --emulation --grid {grid} --seeds {seeds} "
            f"({date}); read by load_constants and workload.convergence.constants.\n")
    head += "".join(f"# WARNING: {w}\n" for w in warnings)
    with open(path, "w", encoding="utf-8") as fh:
        body = {"constants": doc, **({"warnings": list(warnings)} if warnings else {})}
        fh.write(head + yaml.safe_dump(body, sort_keys=False, width=100))


def _shipped_sources() -> dict[str, str]:
    from importlib import resources

    from clustersim._yaml import safe_load

    text = resources.files("clustersim.convergence").joinpath("constants_emulation.yaml").read_text()
    raw = safe_load(text)["constants"]
    return {k: str(v.get("source", "")) for k, v in raw.items() if isinstance(v, dict)}


def cmd_emulation(args: argparse.Namespace) -> int:
    """``calibrate --emulation``: emulate the grid, fit, print, and write the constants file
    (``--out``, default ``constants.yaml``); the fit's warnings last, also with ``-q``."""
    from clustersim.sim.convfit import TASK_DEFAULTS, calibrate

    if args.real or args.traces or args.convergence is not None:
        raise InputError("--emulation runs its own emulations: give it without --real, "
                         "TRACES or --convergence")
    seeds = args.seeds if args.seeds is not None else (3 if args.grid == "full" else 1)
    if seeds < 1:
        raise InputError(f"--seeds must be >= 1, not {seeds}")
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    bad = [t for t in tasks if t not in TASK_DEFAULTS]
    if bad or not tasks:
        raise InputError(f"--tasks: unknown emulation task(s) {', '.join(bad) or '(none)'} "
                         f"(allowed: {', '.join(TASK_DEFAULTS)})")
    out = args.out or "constants.yaml"
    if os.path.isdir(out):
        raise InputError(f"--out {out!r} is a directory; give a file name")
    say = (lambda s: None) if args.quiet else print
    cal = calibrate(tasks, args.grid, range(seeds), lambda label: say(f"  emulated {label}"))
    if not args.quiet:
        print_fit(cal)
    warnings = fit_warnings(cal, tasks, args.grid)
    write_constants(cal, out, args.grid, seeds, tasks, warnings)
    say(f"wrote {out}")
    for w in warnings:  # also with -q, after everything else (as calibrate's profile warnings)
        print(f"warning: {w}", file=sys.stderr)
    return 0


def print_fit(cal: Any) -> None:
    """The constants with intervals, the residual of every run, the held-out errors."""
    from clustersim.convergence.fit import analytic_steps

    f = cal.fit
    print(f"constants (robust {f.loss} least squares on log steps, {f.confidence:.0%} "
          f"intervals), {len(f.observations)} fitted runs:")
    for c in f.fits:
        if c.identifiable:
            print(f"  {c.name} = {c.value:.4g}  [{c.low:.4g}, {c.high:.4g}]  (theory "
                  f"{c.theory:g})")
        else:
            print(f"  {c.name} = {c.value:.4g}  kept: {c.note}")
    print("runs: emulated vs analytic steps to target (log residual at fit; at theory); "
          "seed spread = sd of log steps")
    for o, r, r0 in zip(f.observations, f.residuals, f.residuals_theory):
        a = analytic_steps(o, f.constants)
        print(f"  {o.label:52s} {_n(o.steps):>8s} {_n(a):>8s}  {r:+.3f}  {r0:+.3f}  "
              f"sd {o.spread:.3f}")
    print(f"  log-residual rms {f.rms:.3f}")
    print("held out (not in the fit): emulated vs analytic steps, |error|")
    for o, e in zip(cal.heldout, cal.heldout_errors):
        print(f"  {o.label:52s} {_n(o.steps):>8s} "
              f"{_n(analytic_steps(o, f.constants)):>8s}  {e:.1%}")
    print(f"  median |error| {cal.heldout_median:.1%}")


def _n(x: float) -> str:
    return f"{x:.1f}" if math.isfinite(x) else "never"
