"""The ``benchmark:`` section of a scenario (a collective benchmark: one operation, its
algorithms, rank counts and message sizes).

Kept apart from :mod:`.schema`, which reads the training sections, so that each module holds
one kind of scenario and stays under 400 lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clustersim.errors import InputError, yaml_text
from clustersim.scenario.fields import (
    Section,
    as_bool,
    as_choice,
    as_float,
    as_int,
    as_list,
    as_message_size,
)
from clustersim.scenario.specs import BenchmarkSpec
from clustersim.units import format_size

__all__ = ["parse_benchmark"]


def _sizes(raw: Any, path: tuple) -> tuple[float, ...]:
    if isinstance(raw, Mapping):
        s = Section(raw, path, ("from", "to", "factor"))
        lo = s.get("from", as_message_size)
        hi = s.get("to", as_message_size)
        factor = s.get("factor", as_float, 2.0, minimum=1.0001)
        if hi < lo:
            raise InputError(f"'to' ({format_size(hi)}) is smaller than 'from' "
                             f"({format_size(lo)})", path=path)
        out = []
        v = lo
        while v <= hi * (1 + 1e-9):
            out.append(float(round(v)))
            v *= factor
        return tuple(out)
    return tuple(as_list(raw, path, as_message_size))


def parse_benchmark(raw: Any) -> BenchmarkSpec:
    """The ``benchmark:`` section: one collective, its algorithms, rank counts and sizes."""
    from clustersim.collectives import list_algorithms

    path = ("benchmark",)
    s = Section(raw, path, ("op", "algorithms", "ranks", "sizes", "fp16", "root"))
    ops = list_algorithms()
    op = s.get("op", as_choice, choices=list(ops), kind="collective")
    algs_raw = s.get("algorithms", default="all")
    if algs_raw == "all":
        # every algorithm that needs no extra input (a user tree must be given by name)
        # (the library selectors are asked for by name: they run the algorithms listed here)
        from clustersim.collectives.selection import is_selector

        algs = [a for a in ops[op] if a != "user_tree" and not is_selector(a)]
    else:
        algs = as_list(algs_raw, (*path, "algorithms"),
                       lambda v, p: as_choice(v, p, ops[op], f"{op} algorithm"))
    # a collective needs two ranks (one gave algbw inf, busbw nan), each count once (QA 16c)
    ranks = tuple(as_list(s.get("ranks"), (*path, "ranks"), lambda v, p: as_int(v, p, minimum=2)))
    if len(set(ranks)) < len(ranks):
        raise InputError(f"lists a rank count twice ({yaml_text(list(ranks))}); allowed: each "
                         f"count once", path=(*path, "ranks"))
    sizes = _sizes(s.get("sizes"), (*path, "sizes"))
    return BenchmarkSpec(op, tuple(algs), ranks, sizes, s.get("fp16", as_bool, False),
                         s.get("root", as_int, 0, minimum=0))
