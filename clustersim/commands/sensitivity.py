"""``clustersim sensitivity SCENARIO``: global sensitivity of the headline metrics to the
scenario's uncertain inputs (Sobol or Morris indices, SALib), as tables and a tornado chart.

What is analysed: one algorithm (the main one, or ``--algorithm LABEL`` of the compare list,
which then takes the main one's place so that ``algorithm.*`` inputs apply to it) of one
variant (the base case, or ``--algorithm 'VARIANT · TITLE'`` as the prediction's tables title
a variant's algorithm) at the largest sweep point, with the smallest point simulated too
(scaling efficiency is relative to it); the other points, algorithms and variants are left
out - they do not enter the indices and would multiply the cost.  A scenario with variants
says which one was analysed (the titles, a line under them and ``variant`` in the JSON):
the base case's "NCCL ring" had been printed bare beside four tables of that name.
"""

from __future__ import annotations

import argparse
from typing import Any

from clustersim.commands.parser import profile_file
from clustersim.errors import InputError

EXIT_OK = 0

def cmd_sensitivity(args: argparse.Namespace) -> int:
    """``clustersim sensitivity``: simulate the design (``--method``, ``-n``) on the focused
    algorithm (module docs), write ``--json``/``--plot``, print the indices; the exit code."""
    from clustersim.cli import _console, _progress
    from clustersim.report.output import check_outputs, json_text, write_outputs
    from clustersim.scenario.overrides import named_at_set, option_item
    from clustersim.scenario.schema import load_scenario
    from clustersim.shipped import scenario_path
    from clustersim.sim.sweep import default_jobs, worker_counts
    from clustersim.uncertainty.focus import WHAT, focus_case, headline_metrics
    from clustersim.uncertainty.predict import load_raw
    from clustersim.uncertainty.propagate import Sample, collect_inputs, sample_scenario
    from clustersim.uncertainty.sensitivity import run_sensitivity

    if not 2 <= args.n <= 4096:
        raise InputError(f"-n takes 2 to 4,096 base samples (Sobol: a power of two; "
                         f"Morris: trajectories), not {args.n}")
    path = str(scenario_path(args.scenario))
    sets = list(args.set or []) + ([option_item("run.seed", "--seed", args.seed)]
                                   if args.seed is not None else [])  # errors name --seed
    scn = load_scenario(path, sets)
    if scn.workload is None:
        raise InputError("sensitivity needs a training scenario ('workload' and 'algorithm')")
    check_outputs({"--json": args.json, "--plot": args.plot})
    if args.quiet and not (args.json or args.plot):  # every simulation run, shown nowhere
        raise InputError("-q shows the indices nowhere: add --json FILE or --plot FILE, or "
                         "leave out -q")
    profile = None
    if args.calibration:
        from clustersim.calibration.applyprofile import load_applicable, profile_identity

        profile = load_applicable(scn, args.calibration)
    try:
        inputs = collect_inputs(scn, profile)
    except InputError as exc:  # --set uncertain=~: name that item, not the file's line
        raise named_at_set(exc, sets) from None
    try:
        focus = focus_case(load_raw(path, sets), args.algorithm)
    except InputError as exc:  # a value of --algorithm: the file it names none of
        raise exc.located(file=path) from None
    raw, title = focus.raw, focus.title
    seed = scn.run.seed
    from clustersim.uncertainty.sensitivity import design

    rows = len(design(inputs, args.n, args.method, seed)[1])
    with _progress(rows, "simulations", not args.quiet) as advance:
        res = run_sensitivity(inputs, args.n, args.method, seed, headline_metrics, WHAT,
                              jobs=args.jobs or default_jobs(), advance=advance,
                              build=lambda s: sample_scenario(raw, path, s, profile))
    # the focused scenario's own largest point: a variant may set another sweep
    workers = int(worker_counts(sample_scenario(raw, path, Sample(), profile))[-1])
    res = {"scenario": scn.name, "algorithm": title, "workers": workers,
           **({"variant": focus.variant} if focus.variant is not None else {}),
           "inputs": [{"field": f.field, "distribution": f.describe()} for f in inputs.fields],
           **({"calibration": {**profile_identity(args.calibration),  # its sampled blocks
                               "blocks": [{"from": b.source, "parameters": list(b.parameters)}
                                          for b in inputs.blocks]}}
              if args.calibration else {}),
           **res}
    from clustersim.report.uncertainty import print_sensitivity, sensitivity_json

    def plot() -> str:
        from clustersim.report.tornado import tornado_html

        return tornado_html(res)

    write_outputs([(args.json, lambda: json_text(sensitivity_json(res))),
                   (args.plot, plot if args.plot else "")])
    if not args.quiet:
        console = _console(False, args.wide)
        print_sensitivity(console, res, wide=args.wide)
        for note in res["skipped"]:
            console.print(f"left out: {note}")
        if focus.variant is not None:
            from rich.markup import escape

            names = ", ".join(label for label, _ in scn_variants(scn))
            console.print(escape(f"variant analysed: {focus.variant} (of {names}; "
                                 "--algorithm 'VARIANT · TITLE', as the prediction's tables "
                                 "are titled, picks another)"))
    return EXIT_OK


def scn_variants(scn: Any) -> list[tuple[str, Any]]:
    """(label, scenario) of the base case and each variant, as the tables name them."""
    return [(scn.label, scn), *scn.variants]


def add_parser(sub: Any) -> None:
    """Add ``sensitivity`` and its options to the CLI's subparsers."""
    from clustersim.cli import _jobs

    p = sub.add_parser(
        "sensitivity", help="global sensitivity of the metrics to the uncertain inputs",
        description="Sobol (Saltelli sampling) or Morris indices of scaling efficiency, "
                    "throughput, iteration time, exposed communication and time to target "
                    "of one algorithm at the largest sweep point, for each input of the "
                    "scenario's 'uncertain:' section (docs/uncertainty.md).")
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped scenario")
    p.add_argument("--method", choices=("sobol", "morris"), default="sobol",
                   help="sobol: N (k + 2) simulations for k inputs; morris: N (k + 1), a "
                        "cheaper ranking (default %(default)s)")
    p.add_argument("-n", type=int, default=16, metavar="N",
                   help="Sobol base samples (a power of two) or Morris trajectories, 2 "
                        "to 4,096 (default %(default)s: a ranking; a note under the tables says "
                        "when the Sobol indices need more, and how many)")
    p.add_argument("--algorithm", metavar="LABEL",
                   help="analyse this algorithm of the compare list (default: the main one); "
                        "in a scenario with variants, 'VARIANT · TITLE' as the prediction's "
                        "table is titled (e.g. 'fast · ring') analyses that variant's "
                        "(default: the base case's)")
    p.add_argument("--plot", metavar="FILE", help="write a tornado chart (offline HTML)")
    p.add_argument("--json", metavar="FILE", help="write the indices as JSON")
    p.add_argument("--calibration", metavar="FILE", type=profile_file,
                   help="a calibration profile: applied, its covariance blocks uncertain too")
    p.add_argument("--seed", type=int, help="override run.seed (also seeds the design)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a scenario field, as in predict (repeatable)")
    p.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                   help="processes (default: CLUSTERSIM_JOBS or the usable cores); results do not "
                        "depend on it")
    p.add_argument("-q", "--quiet", action="store_true", help="no table, no progress")
    p.add_argument("--wide", action="store_true", help="every table column")
    p.set_defaults(func=cmd_sensitivity)
