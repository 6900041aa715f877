"""The ``uncertain:`` entries applied to the scenario they belong to, when it is read.

Why: :mod:`clustersim.uncertainty.spec` checks an entry's distribution, but only the scenario
knows whether ``workload.jiter`` is a field or ``7`` an efficiency; without this step such an
entry passed ``clustersim validate`` and failed the first ``predict`` (or never, for a choice
drawn with weight 0).  Each entry's field is set to each value of
:func:`~clustersim.uncertainty.spec.check_points` and the scenario parsed again - with the
nominal platform reused for fields outside ``platform.*`` and ``catalog.*``
(:func:`clustersim.scenario.schema.load_scenario`), so that it costs about a millisecond a
value instead of a platform build.  Only a scenario read from its file is checked (every
command, ``validate`` included): the scenarios derived from it (variants, samples, explore's
points) are parsed without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from clustersim.errors import InputError, format_path
from clustersim.uncertainty.spec import UncertainInput, check_points

__all__ = ["check_applied", "names_the_field"]


def names_the_field(exc: InputError, field: str) -> bool:
    """Whether a refusal is of the field's name (``unknown field 'jiter'``), not of its
    value: then "narrow the distribution" would be wrong advice."""
    head = exc.message.split(" — ")[0].split(" (allowed")[0]
    return head.startswith("unknown ") and any(f"{p!r}" in head for p in field.split("."))


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

    plain = {k: v for k, v in raw.items() if k not in ("uncertain", "variants")}
    keys = {str(k).strip(): k for k in (raw.get("uncertain") or {})}
    for inp in inputs:
        if _replaced_by_set(raw, inp.field):
            continue
        for value, what, sub in check_points(inp):
            try:
                parse(set_fields(plain, {inp.field: value}), inp.field)
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
                              "narrow the distribution or clip it")
                    msg = f"{what} {inp.format(value)} is refused: {inner} ({advice})"
                origin = origin_of(raw, path) or origin_of(raw, entry)
                # from a --set item: name it, not a line of the file that does not hold it
                raise InputError(msg, file=file, path=path, origin=origin,
                                 line=None if origin else
                                 line_of(raw, path) or line_of(raw, entry)) from None
