"""Copying one machine: the nodes and links a builder added for machine 0, stamped again for
machines 1..n-1 instead of being added (and checked) one call at a time.

Why: a large fabric is thousands of identical machines - 12,500 DGX nodes of 10 nodes and 10
cables each in the 100,000-GPU fat tree - and adding them through
:meth:`~clustersim.platform.builder.PlatformBuilder.add_device` and ``add_link`` repeats, per
node and per cable, argument resolution and checks whose outcome is already known from the
first machine.  A stamp does what those calls would have done, in the same order (node ids,
resource ids, edge rows and names come out identical, which the tests check against the
call-by-call build), with the per-node and per-link work reduced to filling the builder's
columns; what can still fail (a name taken, a bound crossed, a switch that does not exist)
is checked once per copy.

The builder's internals are read and written here, not through its public methods: this
module is its friend, kept apart so that builder.py holds the checked, general path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, NamedTuple

import numpy as np

from clustersim.errors import InputError
from clustersim.platform.builder import (
    MAX_DEVICES,
    MAX_LINKS,
    MAX_NODES,
    PlatformBuilder,
    size_error,
)

__all__ = ["Cable", "Mark", "Template", "mark", "template", "stamp"]


@dataclass(frozen=True)
class Mark:
    """How much a builder held before a machine was added (what a template starts after)."""

    nodes: int
    devices: int
    edges: int


class Cable(NamedTuple):
    """One cable of a template machine: its ends (a node position in the machine, or
    ``-1 - j`` for the template's ``j``-th outside node) and what the builder recorded."""

    a: int
    z: int
    bandwidth: float
    latency: float
    kind: str
    duplex: bool
    transport: str | None
    cost: int


@dataclass(frozen=True)
class Template:
    """One machine as added: node name suffixes (after the machine's prefix) and attributes,
    which of them are devices, the nodes outside it that it plugs into (the switch), and its
    cables."""

    suffixes: tuple[str, ...]
    attrs: tuple[dict[str, Any], ...]
    devices: tuple[int, ...]
    outside: tuple[str, ...]
    cables: tuple[Cable, ...]


def mark(b: PlatformBuilder) -> Mark:
    """What ``b`` holds now: call before adding machine 0, then give it to :func:`template`."""
    return Mark(len(b._ids), len(b._devices), len(b._edges))  # noqa: SLF001


def template(b: PlatformBuilder, since: Mark, prefix: str) -> Template | None:
    """What ``b`` added after ``since``, every node named ``prefix`` + suffix; None when it
    cannot be stamped (a node outside the prefix, a parallel cable, a cable between two
    outside nodes: the general path then adds each machine itself)."""
    names = list(islice(b._ids, since.nodes, None))  # noqa: SLF001
    if not all(n.startswith(prefix) for n in names):
        return None
    local = {n: k for k, n in enumerate(names)}
    by_id = list(islice(b._ids, since.nodes))  # noqa: SLF001 - the nodes before it
    outside: list[str] = []
    links = b._links  # noqa: SLF001
    rows = b._edges[since.edges:]  # noqa: SLF001 - 8 per cable: there and back
    cables = []
    for k in range(0, len(rows), 8):
        ia, iz, rid = rows[k], rows[k + 1], rows[k + 2]
        if ia < since.nodes and iz < since.nodes:
            return None
        if b._cables[(ia, iz) if ia < iz else (iz, ia)] != 1:  # noqa: SLF001
            return None  # a parallel cable: its tag depends on the cables before it
        ends = []
        for node_id in (ia, iz):
            if node_id >= since.nodes:
                ends.append(node_id - since.nodes)
            else:
                name = by_id[node_id]
                if name not in outside:
                    outside.append(name)
                ends.append(-1 - outside.index(name))
        cables.append(Cable(ends[0], ends[1], links.bandwidth[rid], links.latency[rid],
                            links.kind[rid], rows[k + 6] != rid, links.transport[rid],
                            rows[k + 3]))
    devices = tuple(local[d] for d in b._devices[since.devices:])  # noqa: SLF001
    return Template(tuple(n[len(prefix):] for n in names), tuple(b.nodes[n] for n in names),
                    devices, tuple(outside), tuple(cables))


def stamp(b: PlatformBuilder, tpl: Template, prefixes: Sequence[str], hosts: Sequence[int],
          outside: Sequence[Sequence[str]]) -> None:
    """Add one machine like ``tpl`` per prefix, in order: nodes ``prefix`` + suffix, devices
    on ``hosts[m]``, cables to the template's outside nodes going to ``outside[m]`` instead
    (the same positions)."""
    ids = b._ids  # noqa: SLF001
    nodes = b.nodes
    per = len(tpl.suffixes)
    count = len(prefixes)
    names = [p + s for p in prefixes for s in tpl.suffixes]
    base = len(ids)
    if base + len(names) > MAX_NODES:
        raise size_error("nodes")
    if len(b._devices) + count * len(tpl.devices) > MAX_DEVICES:  # noqa: SLF001
        raise size_error("devices")
    cols = b._links  # noqa: SLF001
    rids = sum(2 if c.duplex else 1 for c in tpl.cables)  # resources per machine
    if len(cols.names) + count * rids > MAX_LINKS:
        raise size_error("links")
    if not nodes.keys().isdisjoint(names) or len(set(names)) < len(names):
        taken = next(n for k, n in enumerate(names) if n in nodes or n in names[:k])
        raise InputError(f"duplicate node {taken!r}")
    for name in dict.fromkeys(n for outs in outside for n in outs):  # file order (audit J L4)
        if name not in ids:
            raise InputError(f"a machine plugs into unknown node {name!r}")
    nodes.update(zip(names, [{**a, "host": h} if "host" in a else dict(a)
                             for h in hosts for a in tpl.attrs]))
    ids.update(zip(names, range(base, base + len(names))))
    b._devices.extend(names[m * per + k] for m in range(count) for k in tpl.devices)  # noqa: SLF001
    # per template cable, its ends in every copy (names, and node ids as arrays)
    out_ids = np.array([[ids[n] for n in outs] for outs in outside], dtype=np.int64
                       ).reshape(count, len(tpl.outside))
    firsts = base + per * np.arange(count, dtype=np.int64)

    def ends(e: int) -> tuple[list[str], np.ndarray]:
        if e >= 0:
            return names[e::per], firsts + e
        return [outs[-1 - e] for outs in outside], out_ids[:, -1 - e]

    # resources: per machine, the template's in its order (two per full-duplex cable), so
    # columns are built per cable and interleaved machine by machine
    per_cable: list[list[str]] = []
    rows = []
    off = 0  # resource id of the cable within a machine
    rbase = len(cols.names) + rids * np.arange(count, dtype=np.int64)
    for c in tpl.cables:
        (na, ia), (nz, iz) = ends(c.a), ends(c.z)
        dup = c.duplex
        costs = np.full(count, c.cost, dtype=np.int64)
        back = rbase + off + 1 if dup else rbase + off
        if dup:
            per_cable += ([f"{x}->{y}" for x, y in zip(na, nz)],
                          [f"{y}->{x}" for x, y in zip(na, nz)])
        else:
            per_cable.append([f"{x}<->{y}" for x, y in zip(na, nz)])
        rows.append(np.stack((ia, iz, rbase + off, costs, iz, ia, back, costs), axis=1))
        # the pair's first cable (a new node at one end at least): no parallel tag
        b._cables.update(dict.fromkeys(zip(np.minimum(ia, iz).tolist(),  # noqa: SLF001
                                           np.maximum(ia, iz).tolist()), 1))
        off += 2 if dup else 1
    cols.names.extend(n for machine in zip(*per_cable) for n in machine)
    b._edges += np.stack(rows, axis=1).ravel().tolist()  # noqa: SLF001 - machine by machine
    for field in ("bandwidth", "latency", "kind", "transport"):  # the same in every machine
        one = [getattr(c, field) for c in tpl.cables for _ in range(2 if c.duplex else 1)]
        getattr(cols, field).extend(one * count)
