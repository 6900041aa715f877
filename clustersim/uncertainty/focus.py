"""The headline of a scenario, reduced to what its uncertainty is measured on: one algorithm
(the main one, or a compare entry moved into its place so that ``algorithm.*`` inputs apply
to it) of one variant (the base case, or one ``sensitivity --algorithm 'VARIANT · TITLE'``
names) at the sweep's two ends - the largest point, and the smallest that scaling efficiency
is relative to.  Shared by ``clustersim sensitivity`` (global indices) and the one-at-a-time
band that ``predict`` prints (:mod:`clustersim.uncertainty.swing`): the other points,
algorithms and variants do not enter either and would multiply their cost, so the title
names the variant measured as the tables do.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from clustersim.errors import InputError

__all__ = ["WHAT", "Focus", "focus_case", "focus_raw", "headline_metrics", "measured_points", "sweep_headline"]

#: the metrics measured at the largest point, for people
WHAT = {"efficiency": "scaling efficiency", "throughput": "samples/s",
        "iteration_time": "iteration time (s)", "comm_share": "communication exposed",
        "time_to_target": "time to target (s)"}


def _title(entry: Any) -> Any:
    """An algorithm entry's title, as its table prints it: its label (blanks around it
    dropped, as the scenario reader drops them), else its name."""
    if isinstance(entry, str):
        return entry
    return _label(entry) or (entry or {}).get("name")


def _label(entry: Any) -> Any:
    label = (entry or {}).get("label")
    return label.strip() if isinstance(label, str) else label


def _variants(raw: Any) -> list[tuple[str, Any]]:
    """(label, raw scenario) of the base case and each variant, the base first, as the
    tables name them (:func:`clustersim.sim.sweep.sweep_cases`); empty without variants."""
    from clustersim.scenario.overrides import set_fields

    items = raw.get("variants") or []
    if not items:
        return []
    plain = copy.deepcopy(raw)
    plain.pop("variants", None)
    base = raw.get("label") if isinstance(raw.get("label"), str) else "base"
    return [(base, plain), *((str(v["label"]), set_fields(plain, v["set"])) for v in items)]


def _pick(out: Any, label: str, qualified: list[str]) -> None:
    """Move the algorithm ``label`` names (a label, else a name) into the main one's place."""
    entries = list(out.get("compare") or [])

    def ids(e: Any) -> tuple[Any, Any]:
        if isinstance(e, str):
            return None, e
        return _label(e), (e or {}).get("name")

    cases = [out.get("algorithm"), *entries]
    by_label = [e for e in cases if ids(e)[0] == label]
    by_name = [e for e in cases if ids(e)[0] is None and ids(e)[1] == label] or \
        [e for e in cases if ids(e)[1] == label]
    hits = by_label or by_name
    if len(hits) > 1:  # six cases of name bsp: analysing the first would be a guess
        labels = [str(ids(e)[0] or ids(e)[1]) for e in hits]
        raise InputError(f"{label!r} names {len(hits)} algorithms; give one of their "
                         f"labels: {', '.join(labels)}", origin="--algorithm")
    if not hits:
        known = [n for e in cases for n in ([e] if isinstance(e, str) else
                                            [_label(e), (e or {}).get("name")]) if n]
        also = (" nor a variant's algorithm written 'VARIANT · TITLE' as its table is "
                "titled" if qualified else "")
        raise InputError(f"{label!r} is neither the main algorithm nor a 'label' or 'name' "
                         f"of the compare list{also} (allowed: "
                         f"{', '.join(dict.fromkeys(map(str, [*known, *qualified])))})",
                         origin="--algorithm")
    out["algorithm"] = hits[0]


@dataclass(frozen=True)
class Focus:
    """A focused scenario: its raw mapping, the title of its one algorithm as the
    prediction's table prints it (``VARIANT · TITLE`` when the scenario has variants) and
    the variant it is (None: the scenario has none)."""

    raw: Any
    title: str
    variant: str | None


def focus_case(raw: Any, label: str | None) -> Focus:
    """The raw scenario reduced to one algorithm of one variant and the sweep's two ends.

    ``label``: an algorithm of the base case (a label or a name), or ``VARIANT · TITLE`` as
    the tables title a variant's (the base case's too); None: the base case's main one.
    Why the variant is named in the title: the band under ``predict``'s tables and
    ``sensitivity`` measure the base case only, while four tables were titled "... · NCCL
    ring" - "NCCL ring at 128 workers" did not say which of them it was."""
    from clustersim.scenario.yamlio import LineDict

    out = copy.deepcopy(raw)
    cases = _variants(out)
    variant = cases[0][0] if cases else None
    if cases:
        out = cases[0][1]
    if label is not None:
        qualified = {f"{v} · {_title(e)}": (v, vraw, str(_title(e))) for v, vraw in cases
                     for e in [vraw.get("algorithm"), *(vraw.get("compare") or [])]}
        if label in qualified:
            variant, out, label = qualified[label]
        _pick(out, label, list(qualified))
    title = str(_title(out["algorithm"]))
    out.pop("compare", None)
    out.pop("variants", None)
    sweep = out.get("sweep")
    if isinstance(sweep, dict) and isinstance(sweep.get("workers"), list) \
            and len(sweep["workers"]) > 2:
        ends = [sweep["workers"][0], sweep["workers"][-1]]
        at = sweep.get("at")
        sweep["workers"] = ends
        if isinstance(at, dict):
            for key in [k for k in at if k not in ends]:
                del at[key]
    if not isinstance(out, LineDict):  # pragma: no cover - load_yaml gives LineDicts
        raise InputError("a scenario must be a YAML mapping")
    return Focus(out, title if variant is None else f"{variant} · {title}", variant)


def focus_raw(raw: Any, label: str | None) -> tuple[Any, str]:
    """:func:`focus_case`'s raw scenario and title."""
    f = focus_case(raw, label)
    return f.raw, f.title


def headline_metrics(scn: Any) -> dict[str, float | None]:
    """The headline's metrics of a focused scenario: its sweep (one process), last point."""
    from clustersim.sim.sweep import run_sweep

    return sweep_headline(run_sweep(scn, jobs=1))


def measured_points(result: Any) -> dict[str, list[Any]]:
    """A sweep's points, with an emulated run's time to target as the point's own
    (``run.convergence: emulate``), as the prediction's table shows it.

    Why: an emulated scenario's points carry no time to target (the emulation is the
    measure, kept beside the points), so every band, the headline's swing and
    ``sensitivity`` left out the one figure such a scenario is for, while they paid for
    its emulations in every sample.  A run that never reaches its target is ``None`` with
    a note, which the bands read as "never"."""
    import math
    from dataclasses import replace

    runs = getattr(result, "emulation", None) or {}
    out: dict[str, list[Any]] = {}
    for title, pts in result.points.items():
        mine = runs.get(title) or []
        out[title] = [p if i >= len(mine) else replace(
            p, time_to_target=(t if math.isfinite(t := mine[i].time_to_target) else None),
            tta_note=p.tta_note or ("" if math.isfinite(t) else
                                    "the emulated run did not reach its target"))
            for i, p in enumerate(pts)]
    return out


def sweep_headline(result: Any) -> dict[str, float | None]:
    """The metrics of :data:`WHAT` of a sweep's headline: its first (main) algorithm at its
    largest point (time to target where it has one, emulated ones included)."""
    pts = next(iter(measured_points(result).values()))
    p = pts[-1]
    out: dict[str, float | None] = {"efficiency": p.efficiency, "throughput": p.throughput,
                                    "iteration_time": p.iteration_time,
                                    "comm_share": p.comm_share}
    if len(pts) < 2:  # one worker count: efficiency is 100 % by definition, no metric (its
        del out["efficiency"]  # band read "100.0% to 100.0%, no input moves it")
    if p.time_to_target is not None or p.tta_note:
        out["time_to_target"] = p.time_to_target
    return out
