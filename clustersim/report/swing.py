"""The headline's one-at-a-time band (:mod:`clustersim.uncertainty.swing`) for people (a
table under ``predict``'s tables) and programs (``headline_band`` in ``predict --json``).

It is a third kind of range beside the two of :mod:`clustersim.report.uncertainty` (seed
jitter intervals, input-uncertainty percentiles): the lowest and highest value the headline
takes when each uncertain input alone goes to the ends of its range.  The table's title and
note say so, and name the commands that give the other two.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from clustersim.report.layout import Col, print_hidden, print_table
from clustersim.report.uncertainty import _FMT, _HEAD

__all__ = ["print_swing", "swing_json", "SWING_NOTE"]

#: the metrics shown, in column order (time to target only where the scenario has it)
_KEYS = ("efficiency", "throughput", "time_to_target")

SWING_NOTE = ("one input at a time, the others at the scenario's values ({runs} of "
              "{alg} at {where}): a screening range, not a probability "
              "interval - 'predict --uncertainty N' moves the inputs together, 'clustersim "
              "sensitivity' gives global indices (docs/uncertainty.md)")


def _keys(sw: Any) -> list[str]:
    return [k for k in _KEYS if k in sw.nominal and sw.band(k) is not None]


def _value(key: str, v: Any) -> str:
    if v is None:
        return "never" if key == "time_to_target" else "—"
    return _FMT[key](v)


def _plain(v: Any) -> Any:
    """JSON has no infinity: a time to target never reached is null, as in the points."""
    return None if isinstance(v, float) and v == float("inf") else v


def _tried(field: Any, v: Any) -> str:
    """A value tried, as the scenario writes it (``5 us``, not ``5e-06``)."""
    fmt = getattr(field, "format", None)
    if fmt is not None and not (isinstance(v, float) and field.unit is None):
        return fmt(v)
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def print_swing(console: Console, sw: Any, wide: bool = False) -> None:
    """The table (the scenario's values first, then the inputs by how far they move the
    first metric), the band and top drivers of each metric, and the note."""
    keys = _keys(sw)
    if not keys:
        return
    head = keys[0]
    cols = [Col("input", "left", priority=0), Col("values", "left", priority=1)] + \
        [Col(_HEAD[k], priority=1) for k in keys]
    cells = [["(the scenario's own)", "—"] + [_value(k, sw.nominal.get(k)) for k in keys]]
    for m, _ in sw.drivers(head):
        cells.append([escape(m.input.field), escape(", ".join(_tried(m.input, v) for v in m.values))]
                     + [escape(", ".join(_value(k, r.get(k)) for r in m.metrics))
                        for k in keys])
    title = (f"{sw.algorithm} at {sw.workers:,} workers — each uncertain input alone over "
             f"its range")
    hidden = print_table(console, escape(title), cols, cells, wide=wide, note=False)
    print_hidden(console, hidden)
    for k in keys:
        lo, hi = sw.band(k)
        top = [m.input.field for m, s in sw.drivers(k) if s > 0][:3]
        console.print(f"  {_HEAD[k]} {_value(k, sw.nominal[k])}: {_value(k, lo)} to "
                      f"{_value(k, hi)}; top drivers "
                      f"{escape(', '.join(top)) if top else 'none (no input moves it)'}")
    for fld, own in sw.outside:
        inp = next(m.input for m in sw.moved if m.input.field == fld)
        console.print(f"  note: the scenario's own {escape(fld)} ({escape(str(own))}) is a "
                      f"value its uncertain entry never draws ({escape(inp.describe())}); "
                      "the band spans it because the nominal run does")
    runs = f"{sw.runs} run{'s' if sw.runs != 1 else ''}"
    # one worker count (no efficiency: it is 100 % there) is one point, not two ends
    where = "the sweep's two ends" if "efficiency" in sw.nominal else "its one point"
    console.print(SWING_NOTE.format(runs=runs, alg=escape(sw.algorithm), where=where))


def swing_json(sw: Any) -> dict[str, Any]:
    """``headline_band`` of ``predict --json``: plain numbers (efficiencies as fractions,
    times in seconds), every run's metrics, and each metric's band and drivers."""
    keys = _keys(sw)
    return {
        "what": "each uncertain input alone over its range, the others at the scenario's "
                "values (a screening range, not a probability interval)",
        "algorithm": sw.algorithm, "variant": sw.variant, "workers": sw.workers,
        "runs": sw.runs,
        "nominal": sw.nominal,
        "inputs": [{"field": m.input.field, "distribution": m.input.describe(),
                    "values": m.values, "metrics": m.metrics} for m in sw.moved],
        "band": {k: [_plain(v) for v in sw.band(k)] for k in keys},
        "drivers": {k: [[m.input.field, _plain(s)] for m, s in sw.drivers(k)] for k in keys},
        "outside": [{"field": f, "value": v} for f, v in sw.outside],
    }
