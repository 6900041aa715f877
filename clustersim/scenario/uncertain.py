"""The ``uncertain:`` entries applied to the scenario they belong to, when it is read.

Why: :mod:`clustersim.uncertainty.spec` checks an entry's distribution, but only the scenario
knows whether ``workload.jiter`` is a field or ``7`` an efficiency; without this step such an
entry passed ``clustersim validate`` and failed the first ``predict`` (or never, for a choice
drawn with weight 0).  Each entry's field is set to each value of
:func:`check_points` and the scenario parsed again - with the
nominal platform reused for fields outside ``platform.*`` and ``catalog.*``
(:func:`clustersim.scenario.schema.load_scenario`), so that it costs about a millisecond a
value instead of a platform build.  Only a scenario read from its file is checked (every
command, ``validate`` included): the scenarios derived from it (variants, samples, explore's
points) are parsed without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from statistics import NormalDist
from typing import Any

from clustersim.errors import InputError, format_path
from clustersim.uncertainty.spec import UncertainInput, bounds

__all__ = ["check_applied", "check_points", "names_the_field", "whole_advice"]


def names_the_field(exc: InputError, field: str) -> bool:
    """Whether a refusal is of the field's name (``unknown field 'jiter'``), not of its
    value: then "narrow the distribution" would be wrong advice."""
    head = exc.message.split(" — ")[0].split(" (allowed")[0]
    return head.startswith("unknown ") and any(f"{p!r}" in head for p in field.split("."))


def whole_advice(inp: UncertainInput, exc: InputError) -> str | None:
    """The advice for a field that takes whole numbers only, drawn from a continuous
    distribution: ``kind: int``, not a narrower distribution (no narrowing helps)."""
    if inp.kind != "int" and inp.dist != "choice" and "whole number" in exc.message:
        return "the field takes whole numbers: add 'kind: int' to the entry"
    return None


def _named_advice(raw: Mapping[str, Any], inp: UncertainInput) -> str | None:
    """The advice for a numeric distribution on a field the scenario sets to a name
    (``workload.model: {uniform: [1, 2]}``: a choice of names), or to another quantity
    (``network.overhead: {uniform: [5 GB, 20 GB]}`` beside ``10 us``) - not a narrower
    range, which cannot help."""
    from clustersim.uncertainty.spec import as_quantity

    node: Any = raw
    for part in inp.field.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    if not isinstance(node, str):
        return None
    read = as_quantity(node)
    if read is None:
        return f"the field takes a name (here {node!r}): give 'choice: [...]' of names"
    unit = read[1]
    if unit != "number" and inp.unit is not None and unit != inp.unit:
        return (f"the field is a {unit} (here {node!r}); the entry is written as a "
                f"{inp.unit}")
    return None


def _replaced_by_set(raw: Mapping[str, Any], field: str) -> bool:
    """Whether ``--set`` replaced a section above ``field`` as a whole or swapped its
    ``name`` (``--set algorithm={name: gosgd}``: the convergence fit's base scenario, whose
    algorithm has no ``tau``): the entry was written for what the file holds, and is checked
    where it is used (the headline's band, ``--uncertainty``), which names it too."""
    node: Any = raw
    parts = field.split(".")
    for i, part in enumerate(parts[:-1]):
        if part in (getattr(node, "set_from", None) or {}):
            return True
        node = node.get(part) if isinstance(node, Mapping) else None
        if "name" in (getattr(node, "set_from", None) or {}) and parts[i + 1] != "name":
            return True
    return False


def check_applied(raw: Mapping[str, Any], file: str | None,
                  inputs: tuple[UncertainInput, ...],
                  parse: Callable[[Any, str], Any]) -> None:
    """Set each input's field to each of its :func:`check_points` in the scenario ``raw``
    (its ``uncertain:`` and ``variants:`` left out) and parse it with ``parse(raw, field)``;
    the first refusal is an input error at the entry's line: a misspelled field or section
    names the field, a refused value names the value and where it was written.

    Why here and not only when predicting: ``clustersim validate`` must catch what a
    prediction would refuse (a value drawn with weight 0 never is, and would pass forever)."""
    from clustersim.scenario.overrides import set_fields
    from clustersim.scenario.yamlio import line_of, origin_of
    from clustersim.uncertainty.reach import spread_algorithm_fields

    plain = {k: v for k, v in raw.items() if k not in ("uncertain", "variants")}
    keys = {str(k).strip(): k for k in (raw.get("uncertain") or {})}
    for inp in inputs:
        if _replaced_by_set(raw, inp.field):
            continue
        entry_raw = (raw.get("uncertain") or {}).get(keys.get(inp.field, inp.field))
        for value, what, sub in check_points(inp):
            if inp.kind == "int":  # a continuous end is drawn as the float it checks
                value = _as_written(entry_raw, sub, value)
            try:  # algorithm.X as a run sets it: on every algorithm that takes X
                spread, own = spread_algorithm_fields(plain, {inp.field: value}, strict=True)
            except InputError as exc:
                entry = ("uncertain", keys.get(inp.field, inp.field))
                raise InputError(exc.message, file=file, path=entry,
                                 origin=origin_of(raw, entry),
                                 line=line_of(raw, entry)) from None
            try:
                parse(set_fields(spread, own), inp.field)
            except InputError as exc:
                inner = exc.message
                if exc.path and format_path(exc.path) != inp.field:
                    inner = f"{format_path(exc.path)}: {inner}"
                entry = ("uncertain", keys.get(inp.field, inp.field))
                if names_the_field(exc, inp.field):
                    path: tuple[Any, ...] = entry
                    msg = f"the field cannot be set: {inner}"
                else:
                    path = (*entry, *sub)
                    advice = ("remove it from the choice" if inp.dist == "choice" else
                              whole_advice(inp, exc) or _named_advice(plain, inp)
                              or "narrow the distribution or clip it")
                    msg = f"{what} {inp.format(value)} is refused: {inner} ({advice})"
                origin = origin_of(raw, path) or origin_of(raw, entry)
                # from a --set item: name it, not a line of the file that does not hold it
                raise InputError(msg, file=file, path=path, origin=origin,
                                 line=None if origin else
                                 line_of(raw, path) or line_of(raw, entry)) from None


def _as_written(entry: Any, sub: tuple[Any, ...], value: Any) -> Any:
    """``value``, or the integer the entry wrote at ``sub`` when it is that value: an end
    went through a float (the distribution's parameters are floats), so
    ``range: [1, 9223372036854775807]`` was checked and named as 9223372036854775808, one
    more than written.  Only what is checked and said changes; the draws are untouched."""
    from clustersim.scenario.yamlio import value_at

    node = value_at(entry, sub, None)
    written_int = isinstance(node, int) and not isinstance(node, bool)
    same = written_int and isinstance(value, (int, float)) and float(node) == float(value)
    return node if same and not isinstance(value, bool) else value


def _percentile(inp: UncertainInput, q: float) -> float:
    """The ``q`` quantile of an unbounded normal or lognormal (clip aside)."""
    z = NormalDist().inv_cdf(q)
    m, sd = inp.params
    return m + z * sd if inp.dist == "normal" else m * math.exp(z * sd)


def check_points(inp: UncertainInput) -> list[tuple[Any, str, tuple[Any, ...]]]:
    """The values that decide whether the scenario accepts ``inp``: (value, what it is, the
    path of what wrote it under the entry).  Every choice (a weight of 0 included: a value
    that is never drawn is still a typo), both ends of a bounded side (rounded inwards for
    ``kind: int``), and the 5th and 95th percentile of an unbounded side - the values the
    headline's one-at-a-time band runs - and, unless ``kind: int``, one value between them
    (a whole-number field refuses it)."""
    if inp.dist == "choice":
        return [(v, "the choice", ("choice", i)) for i, v in enumerate(inp.params)]
    lo, hi = bounds(inp)
    clip = inp.clip is not None
    out: list[tuple[Any, str, tuple[Any, ...]]] = []
    for end, x, q, i in (("low", lo, 0.05, 0), ("high", hi, 0.95, 1)):
        if math.isfinite(x) and not (inp.dist == "lognormal" and x == 0.0):
            clipped = clip and (inp.clip[i] == x)  # type: ignore[index]
            where = ("clip", i) if clipped else (inp.dist, 2 * i if inp.dist ==
                                                   "triangular" else i)
            what = f"the {end} end"
        else:
            x = _percentile(inp, q)
            where, what = (inp.dist,), f"the {round(q * 100)}th percentile"
        if inp.kind == "int":
            x = math.ceil(x) if i == 0 else math.floor(x)
        out.append((x, what, where))
    if inp.kind != "int":  # a value between the ends: a whole-number field refuses it
        from clustersim.uncertainty.sampling import to_value

        out.append((to_value(inp, _INSIDE), "a value inside it", (inp.dist,)))
    return out


#: where :func:`check_points` tries a continuous distribution inside its ends: a quantile
#: whose value is not a whole number for any whole-number ends (the golden section), so that
#: ``{uniform: [4, 32]}`` on ``batch_per_worker`` is refused by ``validate`` (its ends are
#: whole numbers) rather than at the first draw of ``predict --uncertainty``
_INSIDE = 0.3819660112501051
