"""Which algorithms an uncertain ``algorithm.X`` moves: every case whose algorithm takes
parameter X - the main one and each ``compare`` entry - as a sweep's ``algorithm.X`` axis
does (:func:`clustersim.explore.points.axis_target`).

Why: the entry was set on the main algorithm only.  In ``scenarios/knl_4253.yaml``
(``algorithm.tau: {range: [1, 10]}``, "the paper tunes it per run") Sync EASGD's tau was
drawn while the seven master-based methods, which take ``tau`` too, stayed at 1 - and
``predict --uncertainty`` printed a band for each of them as if the same inputs had moved,
so the comparison was skewed and nothing said so.  A parameter the main algorithm does not
take (``sensitivity --algorithm BSP`` with ``algorithm.tau``) is refused with the
algorithms that take it, not as "the sampled value 4 is refused".
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from clustersim.errors import InputError

__all__ = ["spread_algorithm_fields"]

_OWN = ("name", "label")  # the main algorithm's only, as for a sweep axis


def _takes(entry: Any) -> tuple[str, ...] | None:
    """The parameters an algorithm entry's algorithm takes (None: not a known one - the
    scenario's parse reports it)."""
    from clustersim.algorithms.base import get_algorithm

    name = entry if isinstance(entry, str) else (entry or {}).get("name") \
        if isinstance(entry, Mapping) else None
    try:
        return tuple(get_algorithm(str(name)).params)
    except (InputError, KeyError, ValueError):
        return None


def spread_algorithm_fields(plain: Mapping[str, Any], fields: Mapping[str, Any]
                            ) -> tuple[Any, dict[str, Any]]:
    """``(raw, fields)``: ``plain`` with each ``algorithm.X`` value also set on the
    ``compare`` entries that take X, and the fields to set on the main algorithm as before
    (an ``algorithm.X`` it does not take left out when a compare entry takes it)."""
    raw: Any = plain
    main_fields = dict(fields)
    compare = plain.get("compare") if isinstance(plain, Mapping) else None
    for key, value in fields.items():
        parts = [p for p in str(key).split(".") if p]
        if len(parts) != 2 or parts[0] != "algorithm" or parts[1] in _OWN:
            continue
        param = parts[1]
        hits = [i for i, e in enumerate(compare or ())
                if isinstance(e, Mapping) and param in (_takes(e) or ())]
        main = _takes(plain.get("algorithm"))
        if main is not None and param not in main:
            if not hits:
                name = plain["algorithm"] if isinstance(plain["algorithm"], str) else \
                    plain["algorithm"].get("label") or plain["algorithm"].get("name")
                raise InputError(f"{name} takes no parameter {param!r}, and no other "
                                 f"algorithm of this run does (its parameters: "
                                 f"{', '.join(main) or 'none'})",
                                 path=("uncertain", key))
            del main_fields[key]
        if hits:
            if raw is plain:
                raw = copy.deepcopy(plain)
            for i in hits:
                raw["compare"][i][param] = copy.deepcopy(value)
    return raw, main_fields
