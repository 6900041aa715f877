"""What ``clustersim calibrate`` prints: the status line, the fit table, the validation table
and how far the profile moved the platform's figures.

Apart from :mod:`clustersim.commands.calibrate` (the command's flow: arguments, measuring,
fitting, validating, writing) so that the flow reads on one screen; rich is imported only
when something is printed.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["console_for", "say", "status", "fmt", "print_fit", "print_validation", "print_moved"]


def console_for(quiet: bool) -> Any:
    from rich.console import Console

    return Console(quiet=quiet, highlight=False, soft_wrap=False,
                   width=None if sys.stdout.isatty() else 160)


def say(console: Any, text: str) -> None:
    console.print(text)


class status:
    """A rich status line on stderr (when it is a terminal); yields an update function."""

    def __init__(self, console: Any, text: str) -> None:
        self.text = text
        self.live = None
        if sys.stderr.isatty() and not console.quiet:
            from rich.console import Console

            self.live = Console(stderr=True).status(text)

    def __enter__(self) -> Any:
        if self.live is not None:
            self.live.__enter__()
            return lambda msg: self.live.update(msg)  # type: ignore[union-attr]
        return lambda msg: None

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)


def fmt(value: float, unit: str) -> str:
    from clustersim.calibration.params import format_unit

    return format_unit(value, unit)


def print_fit(console: Any, cal: Any) -> None:
    from rich.table import Table

    t = Table(title="fitted parameters (95% confidence intervals from the Jacobian)",
              title_justify="left")
    for col, just in (("parameter", "left"), ("value", "right"), ("95% interval", "right"),
                      ("points", "right"), ("rms rel. resid.", "right"), ("from", "left")):
        t.add_column(col, justify=just)
    for ln in cal.lines:
        t.add_row(ln.parameter, fmt(ln.value, ln.unit),
                  f"{fmt(ln.low, ln.unit)} .. {fmt(ln.high, ln.unit)}", str(ln.points),
                  f"{ln.rms_rel:.1%}", ln.bench)
    console.print(t)
    for note in cal.notes:
        console.print(f"  note: {note}")
    from clustersim.calibration.fitlines import undetermined

    loose = undetermined(cal.lines)
    if loose:
        for text in ("  not sampled as uncertain: not determined by these measurements (a 95% "
                     "interval", "  wider than the value, a fit on the optimiser's bound) or "
                     "fitted on a physical", "  limit (efficiency 1, time 0); kept in the "
                     "profile, not in its covariance:"):
            console.print(text, markup=False)
        for ln in loose:
            console.print(f"    {ln.parameter} = {fmt(ln.value, ln.unit)} "
                          f"[{fmt(ln.low, ln.unit)} .. {fmt(ln.high, ln.unit)}]", markup=False)
    if cal.collective is not None and cal.collective.table:
        c = Table(title="collectives: measured vs model (fitted overheads)",
                  title_justify="left")
        for col in ("op", "algorithm", "ranks", "size", "measured", "model", "error"):
            c.add_column(col, justify="right")
        for op, alg, p, size, meas, pred in cal.collective.table:
            c.add_row(op, alg, str(p), fmt(size, "B"), fmt(meas, "s"), fmt(pred, "s"),
                      f"{pred / meas - 1:+.1%}")
        console.print(c)


def print_validation(console: Any, report: Any, pick: str = "median") -> None:
    from rich.table import Table

    t = Table(title="validation: end-to-end runs NOT in the fit (predicted with the profile)",
              title_justify="left")
    for col in ("scenario", "algorithm", "workers", "iter predicted", "iter measured",
                "error", "measured range", "comm share pred.", "comm share meas.",
                "load avg"):
        t.add_column(col, justify="right" if col != "scenario" else "left")
    for c in report.cases:
        p, m = c.predicted, c.measured
        rng = (f"{min(c.repeats) * 1e3:.2f}-{max(c.repeats) * 1e3:.2f} ms"
               if len(c.repeats) > 1 else "-")
        t.add_row(c.scenario, c.algorithm, str(c.workers), f"{p.iteration_time * 1e3:.2f} ms",
                  f"{c.measured_time * 1e3:.2f} ms", f"{c.error:+.1%}", rng,
                  f"{p.comm_share:.1%}", f"{m.comm_share:.1%}",
                  ", ".join(f"{x:.1f}" if x == x else "-" for x in c.loads))  # NaN: unknown
    t.caption = (f"MAPE of iteration time over {len(report.cases)} case(s): {report.mape:.1%} "
                 f"(measured: the {'fastest' if pick == 'min' else 'median'} of the repeats)")
    console.print(t)
    ops = Table(title="per operation: median time of one operation, predicted vs measured "
                      "(warm-up left out)", title_justify="left")
    for col in ("scenario", "role", "operation", "predicted", "measured", "error"):
        ops.add_column(col, justify="left" if col in ("scenario", "role", "operation")
                       else "right")
    for c in report.cases:
        for row in c.ops:
            p, m, e = row["predicted"], row["measured"], row["error"]
            ops.add_row(c.scenario, row["role"], f"{row['kind']}: {row['label']}",
                        f"{p * 1e3:.3f} ms" if p is not None else "-",
                        f"{m * 1e3:.3f} ms" if m is not None else "-",
                        f"{e:+.1%}" if e is not None else "-")
    if ops.row_count:
        console.print(ops)


def print_moved(console: Any, cal: Any, platform: Any) -> None:
    from clustersim.calibration.applyprofile import apply_profile_data, format_changes
    from clustersim.catalog import builtin_catalog
    from clustersim.network.params import NetworkParams
    from clustersim.scenario.schema import RunSpec, Scenario

    base = Scenario(name=platform.name, about="", file=None, catalog=builtin_catalog(),
                    platform=platform, platform_raw={}, network=NetworkParams(), run=RunSpec())
    _, changes, notes = apply_profile_data(base, cal.profile)
    console.print(format_changes(changes, notes,
                                 title=f"on platform {platform.name}, the profile"))
