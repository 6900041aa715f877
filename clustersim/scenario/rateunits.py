"""Rates in input files carry their unit: ``bandwidth: 1.4`` is refused, ``1.4 GB/s`` read.

Why here, when files are read, and not in :func:`clustersim.units.parse_bandwidth` or the
catalog: the same parsers take the program's own numbers - a scenario's ``uncertain:`` draws
and a sweep's range axes set plain floats (bytes/s) into the raw scenario before it is
parsed, the built-in catalog and platforms built in Python pass floats - and those must keep
working.  What a person wrote is what the loader reads: every scenario, platform file and
``--set`` value goes through :func:`clustersim.scenario.yamlio.load_yaml_text`, which calls
:func:`check_document`, and ``--set a.b.bandwidth=1.4`` (a bare scalar, its key outside the
text) through :func:`check_set`.  A bare number at a rate field (a key below, or a dotted
field ending in one, as ``variants[].set`` and ``sweep.at`` write them) - alone or in a list -
is refused at its line.

A calibration profile (``format: clustersim-calibration/...``) is left alone: it is written by
``clustersim calibrate`` (with units since its first version) and read by its own parser,
which keeps accepting bare SI numbers so that no profile written earlier stops loading.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clustersim.errors import InputError
from clustersim.units import missing_unit

__all__ = ["RATE_FIELDS", "rate_kind", "check_document", "check_set"]

#: the fields (of devices, link classes, transports, ``network``, ``workload.compute`` and
#: ``run.emulation``) that are rates or times, and their kind: a time too needs its unit
#: (``latency: 1`` was a second per hop, QA 16c and QA 18b), except 0
RATE_FIELDS = {
    **dict.fromkeys(("bandwidth", "mem_bw", "reduce_rate", "pack_rate"), "bandwidth"),
    **dict.fromkeys(("peak", "peak_fp16", "peak_tf32", "peak_bf16"), "compute rate"),
    **dict.fromkeys(("latency", "overhead", "step_overhead", "dma_read", "eval_every",
                     "max_time"), "time"),
}


def rate_kind(key: Any) -> str | None:
    """``"bandwidth"``/``"compute rate"`` when ``key`` (or its last dotted part) is a rate
    field, else None."""
    if not isinstance(key, str):
        return None
    return RATE_FIELDS.get(key.rsplit(".", 1)[-1].strip())


def _check(value: Any, kind: str, path: tuple, line: int | None,
           item_lines: list[int] | None = None) -> None:
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        why = missing_unit(item, kind)
        if why is not None:
            at = (*path, i) if isinstance(value, list) else path
            where = item_lines[i] if item_lines and i < len(item_lines) else line
            raise InputError(why, path=at, line=where)


def check_document(doc: Any) -> None:
    """Refuse a bare number at a rate field anywhere in a parsed YAML document (lines from
    the loader's mappings and lists)."""
    if isinstance(doc, Mapping) and str(doc.get("format", "")).startswith(
            "clustersim-calibration"):
        return  # machine-written; its parser reads bare SI numbers (see the module docs)
    # depth first, in the file's order (children pushed reversed), so that of two bad values
    # the first is reported; iterative: the document is bounded but may nest 48 deep
    todo: list[tuple[Any, tuple, str | None, int | None]] = [(doc, (), None, None)]
    while todo:
        node, path, kind, line = todo.pop()
        if kind is not None:
            _check(node, kind, path, line, getattr(node, "item_lines", None))
        if isinstance(node, Mapping):
            lines = getattr(node, "key_lines", {})
            todo.extend((v, (*path, k), rate_kind(k), lines.get(k))
                        for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            todo.extend((v, (*path, i), None, None) for i, v in reversed(list(enumerate(node))))


def check_set(key: str, value: Any, origin: str) -> None:
    """``--set KEY=VALUE``: a bare number given to a rate field is refused naming the item
    (its mapping or list values were checked when the value was read)."""
    kind = rate_kind(key)
    if kind is not None:
        try:
            _check(value, kind, tuple(p for p in key.strip().split(".") if p), None)
        except InputError as exc:
            raise exc.located(origin=origin) from None
