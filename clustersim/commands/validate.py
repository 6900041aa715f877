"""``clustersim validate SCENARIO``: the scenario parsed as every command parses it, and its
sweep design's points checked as ``clustersim sweep`` checks them - nothing simulated."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["cmd_validate"]


def cmd_validate(args: argparse.Namespace) -> int:
    """``clustersim validate``: load the scenario, check its sweep design's points, print "ok"
    with the platform and the assumed figures; bad input is an ``InputError`` (exit 2)."""
    from clustersim.cli import EXIT_OK, _console
    from clustersim.report.training import print_assumed
    from clustersim.scenario.schema import load_scenario
    from clustersim.shipped import scenario_path

    scn = load_scenario(scenario_path(args.scenario), list(args.set or []))
    console = _console()
    from rich.markup import escape

    design = _check_design(args, scn)
    console.print(f"ok: {escape(scn.name)} — {escape(scn.platform.describe())}")
    if design:
        console.print(escape(design))
    print_assumed(console, scn)
    return EXIT_OK


def _check_design(args: argparse.Namespace, scn: Any) -> str | None:
    """A sweep design's points checked as ``clustersim sweep`` checks them before it runs
    (each point's scenario parsed; constraints, reach, devices), or None without axes.

    Why: validate said "ok" for a scenario whose ``sweep.axes`` held a value that every
    command running the design refuses (a batch of -1, a platform file with a bad field):
    the axes are parsed, but their points are scenarios of their own."""
    sweep = scn.sweep
    if scn.workload is None or sweep is None or not getattr(sweep, "axes", None):
        return None
    from clustersim.commands.sweep import CHECK_PROGRESS_FROM, _progress
    from clustersim.explore import load_study
    from clustersim.explore.checks import check_points
    from clustersim.explore.points import study_design

    _, study = load_study(args.scenario, list(args.set or []))
    points, counts = study_design(study)
    with _progress(len(points), len(points) >= CHECK_PROGRESS_FROM, "checking points") as tick:
        skipped = check_points(study, points, tick)
    n = len(points)
    notes = [f"{k:,} {what}" for k, what in ((skipped, "would be skipped (not enough devices "
                                                      "or machines)"),
                                           (counts.excluded, "excluded by the constraints"),
                                           (counts.duplicates, "duplicate samples dropped"))
             if k]
    return (f"sweep design: {n:,} point{'' if n == 1 else 's'} checked"
            + (f" ({'; '.join(notes)})" if notes else ""))
