"""Which algorithms an uncertain ``algorithm.X`` moves: every case whose algorithm takes
parameter X - the main one and each ``compare`` entry - as a sweep's ``algorithm.X`` axis
does (:func:`clustersim.explore.reach.axis_target`).

Why: the entry was set on the main algorithm only.  In ``scenarios/knl_4253.yaml``
(``algorithm.tau: {range: [1, 10]}``, "the paper tunes it per run") Sync EASGD's tau was
drawn while the seven master-based methods, which take ``tau`` too, stayed at 1 - and
``predict --uncertainty`` printed a band for each of them as if the same inputs had moved,
so the comparison was skewed and nothing said so.  A parameter no algorithm of the
scenario takes is refused when it is read; a run reduced to one algorithm that does not
take it (``sensitivity --algorithm BSP`` with ``algorithm.tau``) runs without it, where it
had been refused as "the sampled value 4 is refused".
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from clustersim.errors import InputError, did_you_mean

__all__ = ["spread_algorithm_fields"]

_OWN = ("name", "label")  # the main algorithm's only, as for a sweep axis


def _takes(entry: Any) -> tuple[str, ...] | None:
    """The parameters an algorithm entry's algorithm takes (None: not a known one - the
    scenario's parse reports it)."""
    from clustersim.algorithms.base import get_algorithm

    entry = _as_mapping(entry)
    name = entry.get("name") if isinstance(entry, Mapping) else None
    try:
        return tuple(get_algorithm(str(name)).params)
    except (InputError, KeyError, ValueError):
        return None


def _as_mapping(entry: Any) -> Any:
    """An algorithm written as a bare name (``algorithm: sync_easgd``), as the mapping a
    parameter can be set on (``{name: sync_easgd}``); a mapping as it is."""
    return {"name": entry} if isinstance(entry, str) else entry


def spread_algorithm_fields(plain: Mapping[str, Any], fields: Mapping[str, Any],
                            strict: bool = False) -> tuple[Any, dict[str, Any]]:
    """``(raw, fields)``: ``plain`` with each ``algorithm.X`` value also set on the
    ``compare`` entries that take X, and the fields to set on the main algorithm as before
    (an ``algorithm.X`` it does not take left out).  Algorithms written as bare names
    become ``{name: ...}`` where a parameter is set on them.

    A parameter no algorithm of the run takes: with ``strict`` (the scenario as written,
    checked when it is read) an input error naming the main algorithm's parameters; without
    (a run reduced to one algorithm: ``sensitivity --algorithm B``, the headline's focused
    runs) left out - the input does not move that algorithm, which its index of 0 says."""
    raw: Any = plain
    main_fields = dict(fields)

    def own() -> Any:
        nonlocal raw
        if raw is plain:
            raw = copy.deepcopy(plain)
        return raw

    for key, value in fields.items():
        parts = [p for p in str(key).split(".") if p]
        if len(parts) != 2 or parts[0] != "algorithm" or parts[1] in _OWN:
            continue
        param = parts[1]
        compare = raw.get("compare") if isinstance(raw, Mapping) else None
        hits = [i for i, e in enumerate(compare or ()) if param in (_takes(e) or ())]
        main = _takes(raw.get("algorithm"))
        if main is not None and param not in main:
            if not hits and strict:
                entry = raw["algorithm"]
                name = entry if isinstance(entry, str) else \
                    entry.get("label") or entry.get("name")
                raise InputError(f"unknown parameter {param!r}{did_you_mean(param, main)}: "
                                 f"no algorithm of this run takes it ({name}'s parameters: "
                                 f"{', '.join(main) or 'none'})", path=("uncertain", key))
            del main_fields[key]
        elif isinstance(raw.get("algorithm"), str):
            own()["algorithm"] = _as_mapping(raw["algorithm"])
        if hits:
            entries = own()["compare"]
            for i in hits:
                entries[i] = _as_mapping(entries[i])
                entries[i][param] = copy.deepcopy(value)
    return raw, main_fields
