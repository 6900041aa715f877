"""Where the nominal prediction sits in its own input-uncertainty band, and why it may not.

Why this exists: a band of ``predict --uncertainty N`` is the spread of the headline over the
uncertain inputs' distributions.  When the scenario's own value of an input is at an end of
its entry (``tau: 1`` with ``algorithm.tau: {range: [1, 10]}``), nearly every sample moves
that input the same way, and the band can lie wholly beside the nominal: knl_easgd_compare's
original EASGD printed 272 samples/s above a band of [561, 1,681].  Such a band answers "what
if this input were unknown", not "how sure is the nominal", and nothing said so.  This module
finds the headline metrics whose nominal lies strictly outside their 90 % band and names the
likely cause from the ``uncertain:`` entries themselves: the inputs whose nominal value is at
or beyond an end of their range or support (first), or has under :data:`NEAR` of its draws
on one side (in parentheses).  Kept out of propagate.py and spec.py (both near the 400-line
limit); the printers in ``clustersim.report.uncertainty`` and ``.tornado`` show the notes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from clustersim.uncertainty.spec import UncertainInput, _cdf, bounds

__all__ = ["Bands", "NEAR", "HEADLINE_KEYS", "nominal_value", "input_position",
           "outside_notes"]

#: an input with less than this share of its draws on one side of its nominal value pushes
#: most samples the other way: named as a contributing cause ("near the lower end")
NEAR = 0.2
#: the headline metrics checked, in the order a note names them
HEADLINE_KEYS = ("throughput", "efficiency", "time_to_target")
_NAME = {"throughput": "samples/s", "efficiency": "efficiency",
         "time_to_target": "time to target"}
#: float noise: a nominal equal to a band's end (100.0 % efficiency at 1 worker) is inside
_TOL = 1e-9


class Bands(dict):  # type: ignore[type-arg]
    """The bands of :func:`clustersim.uncertainty.bands.band` (title -> rows), with the
    notes of :func:`outside_notes` beside them (a dict, so that every printer that iterates
    the bands reads it unchanged)."""

    notes: list[dict[str, Any]]

    def __init__(self, bands: Mapping[str, Any], notes: list[dict[str, Any]]) -> None:
        super().__init__(bands)
        self.notes = notes


def nominal_value(scn: Any, field: str, title: str) -> Any:
    """The scenario's own value of a dotted field (defaults included: the parsed scenario,
    not the file) of the case whose table is titled ``title``: for ``algorithm.X`` that
    algorithm's, and a variant's own (``fast · ring``: the variant sets its own fields) - the
    base case and its main algorithm when no table has that title; None where the field
    cannot be read (it then names no cause)."""
    from clustersim.sim.sweep import sweep_cases

    spec = scn.algorithm
    if scn.workload is not None and scn.algorithms:
        scn, spec = next(((s, a) for t, s, a in sweep_cases(scn) if t == title), (scn, spec))
    head, _, rest = field.partition(".")
    if head == "algorithm":
        return spec.name if rest == "name" else spec.params.get(rest)
    node: Any = scn
    for part in field.split("."):
        node = getattr(node, part, None)
        if node is None:
            return None
    return node


def _share_below(inp: UncertainInput, x: float) -> tuple[float, float]:
    """(share of the draws below ``x``, share above), within the entry's clip."""
    lo, hi = bounds(inp)
    if inp.kind == "int" and inp.dist in ("range", "uniform"):
        a, b = math.ceil(lo), math.floor(hi)
        count = b - a + 1
        return max(0, min(count, math.ceil(x) - a)) / count, \
            max(0, min(count, b - math.floor(x))) / count
    f_lo = _cdf(inp, lo) if math.isfinite(lo) else 0.0
    f_hi = _cdf(inp, hi) if math.isfinite(hi) else 1.0
    mass = max(f_hi - f_lo, 1e-300)
    below = (min(max(_cdf(inp, x), f_lo), f_hi) - f_lo) / mass
    return below, 1.0 - below


def _where(inp: UncertainInput) -> str:
    """``range [1, 10]``: the entry as people wrote it, without the whole-number remark."""
    return inp.describe().replace(" (whole numbers)", "")


def input_position(inp: UncertainInput, value: Any) -> tuple[int, str] | None:
    """(rank, phrase) of an input whose nominal ``value`` may one-side the band: rank 0 at
    or beyond an end of its range or support (or a choice it is not among), rank 1 with
    less than :data:`NEAR` of its draws on one side; None otherwise (a choice among its
    options: unordered, no end)."""
    from clustersim.uncertainty.spec import as_quantity

    if value is None or isinstance(value, bool):
        return None
    shown = inp.format(value) if isinstance(value, (int, float)) else str(value)
    if inp.dist == "choice":
        weights = inp.weights or (1.0,) * len(inp.params)
        if any(v == value for v, w in zip(inp.params, weights) if w > 0):
            return None
        return 0, f"{inp.field}'s nominal {shown} is not among its {_where(inp)}"
    read = as_quantity(value)
    if read is None:
        return None
    x = read[0]
    lo, hi = bounds(inp)
    eps_lo, eps_hi = 1e-12 * abs(lo), 1e-12 * abs(hi)
    if x < lo - eps_lo or x > hi + eps_hi:
        side = "below" if x < lo else "above"
        return 0, f"{inp.field}'s nominal {shown} is {side} its {_where(inp)}"
    if abs(x - lo) <= eps_lo or abs(x - hi) <= eps_hi:
        end = "lower" if abs(x - lo) <= eps_lo else "upper"
        return 0, f"{inp.field}'s nominal {shown} is the {end} end of its {_where(inp)}"
    below, above = _share_below(inp, x)
    if min(below, above) < NEAR:
        end = "lower" if below < above else "upper"
        return 1, f"{inp.field}'s {shown} is near the {end} end of its {_where(inp)}"
    return None


def _cause(scn: Any, fields: Sequence[UncertainInput], title: str) -> tuple[str, list[str]]:
    """The sentence naming the likely cause, and the fields it names (for JSON)."""
    found = []
    for inp in fields:
        pos = input_position(inp, nominal_value(scn, inp.field, title))
        if pos is not None:
            found.append((pos[0], pos[1], inp.field))
    ends = [p for r, p, _ in found if r == 0]
    near = [p for r, p, _ in found if r == 1]
    named = [f for r, _, f in sorted(found, key=lambda t: t[0])]
    if not ends and not near:
        return (", though no uncertain input's nominal sits at an end of its range (the "
                "metric responds unevenly to them: a threshold, or a choice)"), []
    head, tail = (ends, near) if ends else (near, [])
    text = " because " + " and ".join(head)
    if tail:
        text += " (and " + " and ".join(tail) + ")"
    return text, named


def _fmt(key: str, v: float, like: float | None = None) -> str:
    """A metric as the prediction's table prints it (``like``: a band's median, whose unit
    a band's ends take, as the band tables write them)."""
    from clustersim.units import format_duration

    if key == "time_to_target":
        return format_duration(v, like)
    if key == "efficiency":
        return f"{100 * v:.1f}%"
    return f"{v:,.0f}"


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def outside_notes(bands: Mapping[str, Any], nominal: Mapping[str, Sequence[Any]], scn: Any,
                  fields: Sequence[UncertainInput]) -> list[dict[str, Any]]:
    """One note per algorithm whose nominal headline metrics at the largest sweep point lie
    strictly outside their 90 % band (below the 5th or above the 95th percentile), by more
    than the printed digits; a second algorithm with the same cause refers to the first.

    ``nominal``: the nominal run's points per algorithm title (``measured_points`` of the
    prediction's sweep); a time to target never reached counts as infinite, as in the
    bands.  Each note: ``algorithm``, ``workers``, ``metrics`` (metric, nominal, p05, p95),
    ``inputs`` (the fields named as the cause) and ``text``, the line people read."""
    notes = []
    said: dict[str, tuple[str, list[str]]] = {}  # cause -> the first algorithm it was given for
    for title, rows in bands.items():
        pts = nominal.get(title)
        if not rows or not pts:
            continue
        workers, bs = rows[-1]
        p = pts[-1]
        out = []
        for key in HEADLINE_KEYS:
            b = bs.get(key)
            if b is None:
                continue
            v = getattr(p, key, None)
            if v is None and key != "time_to_target":
                continue
            x = math.inf if v is None else float(v)
            lo_tol = _TOL * max(1.0, abs(b.low)) if math.isfinite(b.low) else 0.0
            hi_tol = _TOL * max(1.0, abs(b.high)) if math.isfinite(b.high) else 0.0
            end = b.low if x < b.low - lo_tol else b.high if x > b.high + hi_tol else None
            # outside by less than the printed digits ("2.05 d outside [2.05 d, 2.29 d]"):
            # the band reaches the nominal as people read it, and the note would contradict
            # its own numbers
            if end is not None and _fmt(key, x, b.median) != _fmt(key, end, b.median):
                out.append((key, x, b))
        if not out:
            continue
        cause, named = _cause(scn, fields, title)
        if named and named == said.get(cause, (None, None))[1]:  # short: said above
            cause = f", for the same reason as {said[cause][0]}'s ({', '.join(named)})"
        else:
            said.setdefault(cause, (title, named))
        one = len(out) == 1
        # the nominal in its own unit, as its table cell ("8.15 h"): in the band's unit it
        # read "(0.34 d)" under a table that printed 8.15 h (audit L8)
        what = _join([f"{_NAME[k]} ({_fmt(k, x)})" for k, x, b in out])
        where = _join([f"[{_fmt(k, b.low, b.median)}, {_fmt(k, b.high, b.median)}]"
                       for k, _x, b in out])
        text = (f"note: {title}'s nominal {what} at {workers:,} workers "
                f"{'is' if one else 'are'} outside {'its' if one else 'their'} 90% "
                f"band{'' if one else 's'} {where}: the band{'' if one else 's'} "
                f"{'is' if one else 'are'} not spread around the nominal{cause}; read "
                f"{'it' if one else 'them'} as \"if these were unknown\", not as the "
                f"nominal's error bar{'' if one else 's'}")

        def num(v: float) -> float | None:
            return None if not math.isfinite(v) else v

        notes.append({"algorithm": title, "workers": workers,
                      "metrics": [{"metric": k, "nominal": num(x), "p05": num(b.low),
                                   "p95": num(b.high)} for k, x, b in out],
                      "inputs": named, "text": text})
    return notes
