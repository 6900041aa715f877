"""``clustersim calibrate --convergence LOG.csv``: the gradient noise scale of a training log.

Reads a norm log (:func:`clustersim.convergence.noise_scale.read_log`; ``clustersim run
--real ... --math`` writes one as ``grad_norms.csv``), prints the simple noise scale
``B_simple`` over the whole log and per window of progress with confidence intervals, and
writes a YAML snippet for a scenario's ``workload.convergence`` (``--out``; printed when no
``--out``): ``noise_scale: {from: ..., to: ...}``, the geometric schedule fitted to the
windows, or a constant when the log supports no trend.  Exit codes: 0 success, 2 bad input
(the message names the file, line, column and allowed values).
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import sys
from typing import Any

from clustersim.errors import InputError

__all__ = ["add_arguments", "cmd_convergence"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``--convergence`` options of ``clustersim calibrate``."""
    g = p.add_argument_group("gradient noise scale (--convergence)")
    g.add_argument("--convergence", metavar="LOG.csv",
                   help="estimate the gradient noise scale from a norm log (columns step, "
                        "batch_small, batch_big, sq_norm_small, sq_norm_big; see "
                        "docs/calibration.md) and write a workload.convergence snippet to "
                        "--out (printed without --out)")
    g.add_argument("--windows", type=int, default=4, metavar="K",
                   help="with --convergence: windows of progress, each estimated on its own "
                        "(default %(default)s; 1 = one constant)")
    g.add_argument("--confidence", type=float, default=0.95, metavar="LEVEL",
                   help="with --convergence: level of the intervals (default %(default)s)")


def cmd_convergence(args: argparse.Namespace) -> int:
    """``calibrate --convergence``: estimate, print, and write the snippet (``--out``, else on
    standard output, the table then going to stderr); the exit code (module docs)."""
    from clustersim.convergence.noise_scale import estimate, geometric_schedule, read_log, windows

    if args.real or args.traces:
        raise InputError("--convergence reads a norm log: give it without --real or TRACES "
                         "(calibrate those in a separate call)")
    if args.windows < 1:
        raise InputError(f"--windows must be >= 1, not {args.windows}")
    if not 0 < args.confidence < 1:
        raise InputError(f"--confidence must be between 0 and 1 (e.g. 0.95), not "
                         f"{args.confidence!r}")
    if args.out is not None and os.path.isdir(args.out):
        raise InputError(f"--out {args.out!r} is a directory; give a file name")
    from clustersim.report.output import check_outputs

    # the log itself is no place for the snippet (audit E H1)
    check_outputs({"--out": args.out, "--json": args.json}, inputs=[args.convergence])
    log = read_log(args.convergence)
    overall = estimate(log, args.confidence)
    if not overall.b_simple > 0 or not overall.grad_sq > 0:
        raise InputError(
            f"the log does not determine the noise scale: over its {len(log)} steps the mean "
            f"|G|^2 estimate is {overall.grad_sq:.4g} and the mean tr(Sigma) estimate "
            f"{overall.trace:.4g} (both must be > 0; log more steps, or check that "
            "sq_norm_small is the small batch's and sq_norm_big the all-reduced one's)",
            file=args.convergence)
    parts = windows(log, args.windows, args.confidence) if args.windows > 1 else [overall]
    schedule = geometric_schedule(parts) if args.windows > 1 else None
    text = snippet(log, overall, parts, schedule, args.convergence)
    if not args.quiet:
        # the table goes to stderr when the snippet goes to stdout (`... > snippet.yaml`)
        _print(overall, parts, schedule, args.confidence, stderr=args.out is None,
               wide=args.wide)
    if args.out is not None:
        from clustersim.report.output import atomic_write

        atomic_write(args.out, text)
        if not args.quiet:
            print(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    if args.json:
        from clustersim.report.output import write_json

        write_json(args.json, {
            "log": str(args.convergence), "steps": len(log), "confidence": args.confidence,
            "interval": "Fieller", "overall": _as_dict(overall),
            "windows": [_as_dict(e) for e in parts],
            "schedule": None if schedule is None else {"from": schedule[0],
                                                       "to": schedule[1]}})
    return 0


def _as_dict(e: Any) -> dict[str, Any]:
    return {"b_simple": e.b_simple, "low": e.low, "high": e.high, "grad_sq": e.grad_sq,
            "trace": e.trace, "steps": e.steps, "first_step": e.first_step,
            "last_step": e.last_step, "progress": list(e.progress)}


def _num(x: float) -> str:
    """Three significant digits, plain (YAML reads it as a number)."""
    if not math.isfinite(x):
        return "unbounded" if x > 0 else "-unbounded"
    return f"{float(f'{x:.3g}'):g}"


def _interval(e: Any) -> str:
    return f"{_num(e.low)} .. {_num(e.high)}" if e.bounded else "unbounded"


def _today() -> str:
    """Today (UTC), or the day of ``SOURCE_DATE_EPOCH`` when set (reproducible files)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc) if epoch and epoch.isdigit()
            else dt.datetime.now(dt.timezone.utc))
    return when.date().isoformat()


def _span(values: Any) -> str:
    lo, hi = float(min(values)), float(max(values))
    return f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"


def snippet(log: Any, overall: Any, parts: list[Any], schedule: tuple[float, float] | None,
            source: str) -> str:
    """The YAML written by ``--out``: the ``noise_scale`` key of ``workload.convergence`` and
    comments saying where it came from."""
    pct = f"{overall.confidence:.0%}"
    lines = [
        "# Gradient noise scale B_simple = tr(Sigma)/|G|^2 (McCandlish et al. 2018, "
        "arXiv 1812.06162),",
        f"# estimated by `clustersim calibrate --convergence` on {_today()} from {source}",
        f"# ({len(log)} steps, {overall.first_step}..{overall.last_step}; batch_small "
        f"{_span(log.batch_small)}, batch_big {_span(log.batch_big)}).",
        f"# Whole log: {_num(overall.b_simple)} ({pct} interval {_interval(overall)}, "
        "Fieller's interval for a ratio of means).",
    ]
    if len(parts) > 1:
        lines.append("# Per window of progress:")
        lines += [f"#   {e.progress[0]:.2f}-{e.progress[1]:.2f}: {_num(e.b_simple)} "
                  f"({_interval(e)})" for e in parts]
    if schedule is not None:
        lines.append("# from/to: B(p) = from * (to/from)^p over progress p, fitted to the "
                     "windows (weighted least squares on log B).")
        value = f"{{from: {_num(schedule[0])}, to: {_num(schedule[1])}}}"
    else:
        if len(parts) > 1:
            lines.append("# Fewer than two windows bound a positive noise scale: the whole "
                         "log's estimate, as a constant.")
        value = _num(overall.b_simple)
    lines.append("# Put it under a scenario's `workload: {convergence: ...}`.")
    lines.append(f"noise_scale: {value}")
    return "\n".join(lines) + "\n"


def _console(stderr: bool, wide: bool) -> Any:
    """The tool's console (:func:`clustersim.cli._console`: ``COLUMNS``, else the terminal's
    width, else 80 when piped; ``wide``: never wrap), on stderr when the snippet is on stdout.
    Why not a fixed 160 when piped: the table printed 89-character lines at any width."""
    from clustersim.cli import _console as tool_console

    console = tool_console(wide=wide)
    if stderr:  # same width rules; rich picks the stream when it prints
        console.stderr = True
    return console


def _print(overall: Any, parts: list[Any], schedule: tuple[float, float] | None,
           confidence: float, stderr: bool, wide: bool = False) -> None:
    """The estimates as a table fitted to the console like predict's
    (:func:`clustersim.report.layout.print_table`): the window's estimate and interval stay;
    at a narrow width the step range is left out first, then the raw |G|^2 and tr(Sigma)
    (the pair: one without the other says nothing of B), and said."""
    from rich.text import Text

    from clustersim.report.layout import Col, print_table

    console = _console(stderr, wide)
    cols = (Col("window", justify="left", priority=0), Col("progress", priority=2),
            Col("steps", priority=4), Col("B_simple"), Col("interval"),
            Col("|G|^2", priority=3), Col("tr(Sigma)", priority=3))
    named = [("whole log", overall)] + ([(str(i + 1), e) for i, e in enumerate(parts)]
                                        if len(parts) > 1 else [])
    rows = [[name, f"{e.progress[0]:.2f}-{e.progress[1]:.2f}",
             f"{e.steps} ({e.first_step}..{e.last_step})", _num(e.b_simple), _interval(e),
             f"{e.grad_sq:.4g}", f"{e.trace:.4g}"] for name, e in named]
    print_table(console, f"gradient noise scale B_simple = tr(Sigma)/|G|^2 ({confidence:.0%} "
                         "Fieller intervals)", cols, rows, wide=wide)
    if schedule is not None:
        console.print(Text(f"geometric schedule fitted to the windows: {_num(schedule[0])} "
                           f"at the start -> {_num(schedule[1])} at the end"))
