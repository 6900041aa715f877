"""What ``clustersim calibrate`` prints: the status line, the fit table, the validation table
and how far the profile moved the platform's figures.

Apart from :mod:`clustersim.commands.calibrate` (the command's flow: arguments, measuring,
fitting, validating, writing) so that the flow reads on one screen; rich is imported only
when something is printed.
"""

from __future__ import annotations

import math
import sys
from typing import Any

__all__ = ["console_for", "say", "status", "fmt", "print_fit", "print_validation", "print_moved"]


def console_for(quiet: bool, wide: bool = False) -> Any:
    """The console of the rest of the tool (``clustersim.cli._console``: the terminal's
    width, which the tables below fit, and a closed pipe a quiet exit); ``wide``: never
    wrap.  Why not a fixed 160 when piped: a file or a pager read at 80 columns got
    143-column tables (QA)."""
    from clustersim.cli import _console

    return _console(quiet, wide)


def say(console: Any, text: str) -> None:
    """One line of progress on ``console`` (nothing with ``-q``: that console is quiet)."""
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


#: the head of the list of :func:`clustersim.calibration.fitlines.undetermined`: its rule,
#: in the words of docs/calibration.md (the three had said three different things)
UNDETERMINED_HEAD = (
    "not sampled as uncertain: not determined by these measurements (a 95% interval that "
    "reaches infinity or is wider than twice the value, a collective efficiency on the "
    "fit's bound 0.01 or 100) or fitted on a physical limit (device efficiency 1, time 0); "
    "kept in the profile, not in its covariance:")

#: the head of :func:`clustersim.calibration.fitlines.above_link`'s list
ABOVE_LINK_HEAD = (
    "warning: protocol segment efficiency above 1 - the segment would move bytes faster "
    "than the link it runs on: its time per byte is lost in its per-message cost at the "
    "sizes measured, so it is no rate of the link; kept as fitted, not clamped:")


def _head(console: Any, text: str, wide: bool) -> None:
    """A heading indented by two, wrapped at the console's width between words (fixed
    lines of 84-85 characters had wrapped mid-sentence at 80 columns; audit C L2)."""
    import textwrap

    width = 10**6 if wide else max(40, console.width)
    console.print(textwrap.fill(text, width=width, initial_indent="  ",
                                subsequent_indent="  "), markup=False, soft_wrap=True)


def fmt(value: float, unit: str) -> str:
    """``value`` in ``unit``, readable (:func:`clustersim.calibration.params.format_unit`)."""
    from clustersim.calibration.params import format_unit

    return format_unit(value, unit)


def print_fit(console: Any, cal: Any, wide: bool = False) -> None:
    """The fitted parameters, the notes, what the fit left undetermined, and the
    collectives' measured vs model; every cell by :mod:`.calibrate_fittable`'s rules (no
    ``nan``/``inf`` text, lower ends clipped at 0 and said)."""
    from clustersim.commands.calibrate_fittable import (
        CLIPPED_NOTE,
        cell,
        interval,
        percent,
        print_fit_table,
    )
    from clustersim.report.layout import Col, print_table

    rows, clipped = [], False
    for ln in cal.lines:
        span, cut = interval(ln.low, ln.high, ln.unit)
        clipped |= cut
        rows.append((ln.parameter, cell(ln.value, ln.unit), span, str(ln.points),
                     percent(ln.rms_rel), ln.bench))
    print_fit_table(console, "fitted parameters (95% confidence intervals from the Jacobian)",
                    ("parameter", "value", "95% interval", "points", "rms rel. resid.",
                     "from"), rows, wide=wide)
    for note in cal.notes:
        console.print(f"  note: {note}", markup=False)
    from clustersim.calibration.fitlines import above_link, loose_reason, undetermined

    loose = undetermined(cal.lines)
    if loose:
        _head(console, UNDETERMINED_HEAD, wide)
        for ln in loose:
            span, cut = interval(ln.low, ln.high, ln.unit)
            clipped |= cut
            console.print(f"    {ln.parameter} = {cell(ln.value, ln.unit)} [{span}]: "
                          f"{loose_reason(ln)}", markup=False)
    fast = above_link(cal.lines)
    if fast:  # sampled or not, a segment faster than its link is no rate the link has
        _head(console, ABOVE_LINK_HEAD, wide)
        for ln in fast:
            span, cut = interval(ln.low, ln.high, ln.unit)
            clipped |= cut
            console.print(f"    {ln.parameter} = {cell(ln.value, ln.unit)} [{span}]",
                          markup=False)
    if clipped:
        console.print(f"  {CLIPPED_NOTE}", markup=False)
    if cal.collective is not None and cal.collective.table:
        cols = [Col("op", priority=0), Col("algorithm"), Col("ranks"), Col("size", priority=0),
                Col("measured"), Col("model"), Col("error")]
        crow = [(op, alg, str(p), cell(size, "B"), cell(meas, "s"), cell(pred, "s"),
                 percent(pred / meas - 1 if meas else math.nan, signed=True))
                for op, alg, p, size, meas, pred in cal.collective.table]
        print_table(console, "collectives: measured vs model (fitted overheads)", cols, crow,
                    wide=wide)


def print_validation(console: Any, report: Any, pick: str = "median",
                     wide: bool = False) -> None:
    """The end-to-end validation and the per-operation comparison, fitted to the console
    (:func:`clustersim.report.layout.print_table`: details left out first, and said)."""
    from clustersim.commands.calibrate_fittable import UNDEFINED, percent
    from clustersim.report.layout import Col, print_table

    def ms(x: float | None, digits: int = 2) -> str:
        return f"{x * 1e3:.{digits}f} ms" if x is not None and math.isfinite(x) else UNDEFINED

    cols = [Col("scenario", "left", 0), Col("algorithm", priority=0), Col("workers"),
            Col("iter predicted"), Col("iter measured"), Col("error"),
            Col("measured range", priority=2), Col("comm share pred.", priority=3),
            Col("comm share meas.", priority=3), Col("load avg", priority=3)]
    rows = []
    for c in report.cases:
        p, m = c.predicted, c.measured
        rng = (f"{min(c.repeats) * 1e3:.2f}-{max(c.repeats) * 1e3:.2f} ms"
               if len(c.repeats) > 1 else UNDEFINED)
        rows.append((c.scenario, c.algorithm, str(c.workers), ms(p.iteration_time),
                     ms(c.measured_time), percent(c.error, signed=True), rng,
                     percent(p.comm_share), percent(m.comm_share),
                     ", ".join(f"{x:.1f}" if math.isfinite(x) else UNDEFINED
                               for x in c.loads)))  # NaN: unknown
    print_table(console, "validation: end-to-end runs NOT in the fit (predicted with the "
                         "profile)", cols, rows, wide=wide)
    console.print(f"MAPE of iteration time over {len(report.cases)} case(s): "
                  f"{percent(report.mape)} (measured: the "
                  f"{'fastest' if pick == 'min' else 'median'} of the repeats)", markup=False)
    ocols = [Col("scenario", "left", 0), Col("role", "left", 2), Col("operation", "left", 0),
             Col("predicted"), Col("measured"), Col("error")]
    orows = []
    for c in report.cases:
        for row in c.ops:
            p, m, e = row["predicted"], row["measured"], row["error"]
            orows.append((c.scenario, row["role"], f"{row['kind']}: {row['label']}",
                          ms(p, 3), ms(m, 3), percent(e, signed=True)))
    if orows:
        print_table(console, "per operation: median time of one operation, predicted vs "
                             "measured (warm-up left out)", ocols, orows, wide=wide)


def print_moved(console: Any, cal: Any, platform: Any, wide: bool = False) -> None:
    """How far the profile moves the platform's figures, as a table fitted to the console
    with the notes of applying it under it: ``change`` is left out before a name wraps (at
    its dots, audit L2: ``network.protocol.localhost_shm.0.`` / ``overhead`` at 80 columns),
    ``before`` only where a name's longest part would not fit beside ``after``."""
    from clustersim.calibration.applyprofile import apply_profile_data, change_rows
    from clustersim.catalog import builtin_catalog
    from clustersim.commands.calibrate_fittable import print_fit_table
    from clustersim.network.params import NetworkParams
    from clustersim.scenario.schema import RunSpec, Scenario

    base = Scenario(name=platform.name, about="", file=None, catalog=builtin_catalog(),
                    platform=platform, platform_raw={}, network=NetworkParams(), run=RunSpec())
    _, changes, notes = apply_profile_data(base, cal.profile)
    n = len(changes)
    title = f"on platform {platform.name}, the profile: {n} parameter{'s' * (n != 1)} moved"
    if changes:
        print_fit_table(console, title, ("parameter", "before", "after", "change"),
                        change_rows(changes), wide=wide, droppable=("change",),
                        cramped=("before",))
    else:
        console.print(title, markup=False)
    for note in notes:
        console.print(f"  note: {note}", markup=False)
