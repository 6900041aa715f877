"""What ``clustersim calibrate`` reads: recorded traces, validation scenarios, recorded runs.

Kept apart from :mod:`.calibrate` (the command's flow) so that each stays small.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from clustersim.errors import InputError

__all__ = ["load_traces", "validation_scenarios", "trace_files"]


def trace_files(items: list[str]) -> list[Path]:
    """The trace files ``items`` name: files as given, directories searched recursively."""
    files: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            found = sorted(p.rglob("trace.rank*.jsonl"))
            if not found:
                raise InputError(f"no trace.rank*.jsonl in directory {item!r}")
            files += found
        elif p.is_file():
            files.append(p)
        else:
            raise InputError(f"trace {item!r} not found")
    return files


def load_traces(items: list[str], statistic: str
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows, headers) from recorded traces; headers in rank order."""
    from clustersim.calibration.rows import rows_from_events
    from clustersim.trace import read_jsonl

    headers: dict[int, dict[str, Any]] = {}
    events = []
    runs: dict[Path, int] = {}  # one run per directory: its ranks share batch numbers
    for f in trace_files(items):
        try:
            head, evs = read_jsonl(f)
        except UnicodeDecodeError as exc:  # the codec's own words were the message (L1)
            raise InputError(f"cannot read trace: it is not UTF-8 text (byte {exc.start}); a "
                             "trace is the JSON lines a real run writes", file=str(f)) from None
        except (OSError, TypeError, ValueError) as exc:
            raise InputError(f"cannot read trace: {exc}", file=str(f)) from None
        rank = head.get("rank", len(headers))
        headers.setdefault(int(rank), head)
        run = runs.setdefault(Path(f).resolve().parent, len(runs))
        if run:  # batches of different runs are different repeats of the same points
            for ev in evs:
                if ev.meta and "repeat" in ev.meta:
                    ev.meta = {**ev.meta, "repeat": run * 100000 + int(ev.meta["repeat"])}
        events += evs
    rows = rows_from_events(events, statistic)
    if not rows:
        raise InputError("the traces hold no microbenchmark events (bench: pingpong, "
                         "collective, gemm, memory, reduce) - record them with "
                         "`python -m realrun microbench` under mpiexec")
    return rows, [headers[r] for r in sorted(headers)]


def validation_scenarios(args: argparse.Namespace) -> list[Path]:
    """``--scenarios``; else, with ``--runs DIR``, the shipped real-run scenarios that have
    runs recorded in DIR; else the shipped ``scenarios/real_*.yaml`` of the plan's device
    (``real_gpu_*`` with ``--plan gpu``, the others with ``cpu``)."""
    from clustersim.calibration.validate import default_scenarios
    from clustersim.commands.calibrate_checks import check_training_scenario

    if args.scenarios:
        out = []
        for s in args.scenarios:
            if not Path(s).is_file():
                raise InputError(f"validation scenario {s!r} not found")
            check_training_scenario(s)  # a collective benchmark crashed after measuring
            out.append(Path(s))
        return out
    if getattr(args, "runs", None):
        found = [f for f in default_scenarios() if (Path(args.runs) / f.stem).is_dir()]
        if not found:
            raise InputError(f"no runs of a shipped real-run scenario in {args.runs!r} "
                             f"(expected <scenario>/run0/ ...); give --scenarios",
                             path=("runs",))
    else:
        device = getattr(args, "plan", "auto")
        if device == "auto":
            from realrun.arrays import gpu_present  # a /dev scan: no CUDA import

            device = "gpu" if gpu_present() else "cpu"
        found = default_scenarios(device=device)
    if not found:
        raise InputError("no validation scenarios (scenarios/real_*.yaml); give --scenarios "
                         "or --no-validate")
    return found
