"""Network model parameters that are not properties of a single link.

They are calibration parameters: defaults are documented here, a calibration profile may
override them, and both the flow and the analytic model read them from the same object.

Piecewise alpha-beta (``protocols``).  MPI libraries switch protocol with the message size -
eager (copy into a bounce buffer, no handshake) for small messages, rendezvous (handshake,
then a zero-copy or pipelined transfer) above a threshold - and shared-memory or NIC paths
change again when messages stop fitting in cache.  One alpha and one beta per link cannot
follow that; SimGrid's calibration tutorial segments ping-pong data by size and fits each
segment (its ``network/latency-factor`` and ``network/bandwidth-factor`` are piecewise in
the size).  Here a link class may carry such a table: a message of ``n`` bytes whose route's
bottleneck link is of class ``c`` pays the overhead of the segment of ``protocols[c]`` that
contains ``n`` (instead of ``overhead``) and drains at that segment's ``efficiency`` times
the link capacity (instead of ``efficiency``).  Under contention the flow is charged
``n * efficiency / segment.efficiency`` bytes of the shared ``capacity * efficiency``, i.e. a
protocol that reaches a smaller fraction of the wire uses the wire longer.  Without a table
(the default) nothing changes: one ``overhead`` and one ``efficiency`` for every message.

Transports (``transports``).  A link may name a catalog transport (TCP over Ethernet, RoCE,
InfiniBand verbs, NVLink, PCIe peer-to-peer...: ``clustersim/catalog/transports.yaml``) -
what share of the line rate software reaches and what a message costs.  Each becomes a
one-segment protocol table under the key ``"@" + name``; a link's key is its transport's when
its class has no calibrated table of its own (and there is no ``"*"`` table), so measured
tables keep priority over datasheet-level transport figures.  A scenario's explicit
``network.overhead`` / ``network.efficiency`` (``explicit``) replace the transport's figure of
the same name, so hand-fitted scenarios keep their numbers.  Which link limits a route is
then decided on achievable bandwidth (line rate times the transport's efficiency): a GPU
pair under one PCIe switch and one whose path crosses the CPU root complex differ there.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NetworkParams", "Segment", "ANY_CLASS", "EXECUTIONS", "TRANSPORT_KEY",
           "bottleneck_class"]

#: protocol table key that applies to every link class without a table of its own
ANY_CLASS = "*"
#: how a collective's steps run: all transfers of a step as one round, or each as soon as
#: its two ranks are free (``NetworkParams.execution``)
EXECUTIONS = ("rounds", "dependencies")
#: prefix of a transport's protocol table key (link classes cannot start with it in tables)
TRANSPORT_KEY = "@"
#: the network fields a scenario may set that take priority over transports
EXPLICIT_FIELDS = ("overhead", "efficiency")


@dataclass(frozen=True)
class Segment:
    """Protocol parameters for messages of ``start`` bytes and more (up to the next segment).

    ``overhead``: seconds paid before the first byte leaves, on top of the hop latencies;
    ``efficiency``: fraction of the bottleneck link's capacity a lone message reaches;
    ``collective_efficiency``: what a collective's transfer of this size reaches relative
    to a lone message (replaces :attr:`NetworkParams.collective_efficiency` for this
    segment - eager messages overlap freely, large copies compete for memory bandwidth).
    """

    start: float
    overhead: float
    efficiency: float
    collective_efficiency: float = 1.0

    def __post_init__(self) -> None:
        if not (self.start >= 0 and math.isfinite(self.start)):
            raise ValueError(f"segment start must be a finite size >= 0, not {self.start!r}")
        if not (self.overhead >= 0 and math.isfinite(self.overhead)):
            raise ValueError(f"segment overhead must be a finite time >= 0, not {self.overhead!r}")
        if not (self.efficiency > 0 and math.isfinite(self.efficiency)):
            raise ValueError(f"segment efficiency must be > 0, not {self.efficiency!r}")
        if not (self.collective_efficiency > 0 and math.isfinite(self.collective_efficiency)):
            raise ValueError(f"segment collective_efficiency must be > 0, not "
                             f"{self.collective_efficiency!r}")


def _as_table(segments: Sequence[Segment]) -> tuple[Segment, ...]:
    table = tuple(sorted(segments, key=lambda s: s.start))
    if not table:
        raise ValueError("a protocol table needs at least one segment")
    if table[0].start != 0:
        raise ValueError(f"the first segment must start at 0 B, not {table[0].start:g} B")
    starts = [s.start for s in table]
    if len(set(starts)) != len(starts):
        raise ValueError(f"segments start at the same size twice: {starts}")
    return table


def _transport_row(row: Sequence) -> tuple[str, float, float, float, float]:
    """``(name, overhead, efficiency[, inline, dma_read])`` as a full row (no DMA-read step
    when the last two are not given)."""
    if len(row) not in (3, 5):
        raise ValueError(f"a transport is (name, overhead, efficiency[, inline, dma_read]), "
                         f"not {row!r}")
    name, ovh, eff, *rest = row
    inline, dma_read = (float(rest[0]), float(rest[1])) if rest else (0.0, 0.0)
    if not all(v >= 0 and math.isfinite(v) for v in (inline, dma_read)):
        raise ValueError(f"transport {name!r}: inline size and DMA read time must be finite "
                         f"and >= 0, not {inline!r}, {dma_read!r}")
    return str(name), float(ovh), float(eff), inline, dma_read


@dataclass(frozen=True)
class NetworkParams:
    """``overhead``: per-message software cost (s) paid before the first byte leaves
    (MPI/NCCL call, matching, protocol handshake), added to the path latency.  Default 0 so that
    closed forms are exactly ``alpha = sum of hop latencies``; calibration sets it.
    ``efficiency``: fraction of link bandwidth a flow can use (protocol headers, flow control);
    1.0 = datasheet.  Paleo's fitted "comm percent of peak" (0.72-1.0) is this number.
    ``step_overhead``: software cost (s) of one step of a collective schedule executed by a
    runtime - posting its sends and receives, waiting for them - paid once per step
    occurrence that moves data.  0 for the textbook model; calibration fits it from
    collective benchmarks (large for a Python schedule executor, small for MPI's own).
    ``collective_efficiency``: the rate a collective's transfers reach relative to lone
    point-to-point messages of the same size (1.0: the same).  A runtime's collective may
    stage data through extra copies, or its simultaneous sends and receives may compete for
    memory bandwidth in ways link sharing does not show; calibration fits it together with
    ``step_overhead`` from collective benchmarks (an alpha-beta correction on top of
    point-to-point).  Point-to-point ``Send``/``Recv`` are not affected.
    ``protocols``: per link class, a piecewise table of :class:`Segment` by message size
    (module docs); ``"*"`` applies to classes without their own table.
    ``transports``: ``(name, overhead, efficiency)`` of the catalog transports the platform's
    links use, or ``(name, overhead, efficiency, inline, dma_read)`` for an RDMA transport
    whose messages above ``inline`` bytes pay ``dma_read`` more (module docs);
    ``explicit``: which of ``overhead``/``efficiency`` the scenario set - those replace the
    transports' own figures (an explicit overhead is then every message's, DMA read or not:
    a hand-fitted per-message cost already contains it).
    ``execution``: how a collective schedule's steps run (:data:`EXECUTIONS`).  ``rounds``
    (default): each step as one round of all its transfers, after the previous round - the
    model in which flow and analytic fidelity agree (docs/fidelity.md).  ``dependencies``:
    each transfer of a once-only step starts when its own two ranks are done, as MPI and NCCL
    execute collectives; closer to them (and to SimGrid's SMPI) for latency-bound trees on
    non-uniform fabrics; at analytic fidelity it ignores contention between overlapping
    steps (optimistic where they share links).
    """

    overhead: float = 0.0
    efficiency: float = 1.0
    step_overhead: float = 0.0
    protocols: tuple[tuple[str, tuple[Segment, ...]], ...] = field(default=())
    collective_efficiency: float = 1.0
    transports: tuple[tuple, ...] = field(default=())
    explicit: tuple[str, ...] = field(default=())
    execution: str = "rounds"

    def __post_init__(self) -> None:
        if self.execution not in EXECUTIONS:
            raise ValueError(f"execution must be one of {', '.join(EXECUTIONS)}, not "
                             f"{self.execution!r}")
        if self.overhead < 0:
            raise ValueError("overhead must be >= 0")
        if not 0 < self.efficiency <= 1:
            raise ValueError("efficiency must be in (0, 1]")
        if not (self.step_overhead >= 0 and math.isfinite(self.step_overhead)):
            raise ValueError("step_overhead must be >= 0")
        if not (self.collective_efficiency > 0 and math.isfinite(self.collective_efficiency)):
            raise ValueError("collective_efficiency must be > 0")
        protos = self.protocols.items() if isinstance(self.protocols, Mapping) \
            else self.protocols
        norm = tuple(sorted((str(k), _as_table(v)) for k, v in protos))
        if len({k for k, _ in norm}) != len(norm):
            raise ValueError("a link class has two protocol tables")
        if any(k.startswith(TRANSPORT_KEY) for k, _ in norm):
            raise ValueError(f"protocol table keys may not start with {TRANSPORT_KEY!r}")
        bad = set(self.explicit) - set(EXPLICIT_FIELDS)
        if bad:
            raise ValueError(f"explicit names {sorted(bad)}; allowed: {list(EXPLICIT_FIELDS)}")
        trans = tuple(sorted(map(_transport_row, self.transports)))
        object.__setattr__(self, "transports", trans)
        object.__setattr__(self, "explicit", tuple(sorted(set(self.explicit))))
        tables = dict(norm)
        weights: dict[str, float] = {}
        # both figures explicit: every transport would cost the global ones - no tables (and
        # the fast paths of a plain network stay open)
        live = () if set(EXPLICIT_FIELDS) <= set(self.explicit) else trans
        fixed = "overhead" in self.explicit
        for name, ovh, eff, inline, dma_read in live:
            cost = self.overhead if fixed else ovh
            rate = self.efficiency if "efficiency" in self.explicit else eff
            table = [Segment(0.0, cost, rate, self.collective_efficiency)]
            if dma_read > 0 and not fixed:  # above the inline size: fetched across PCIe first
                table.append(Segment(math.nextafter(inline, math.inf), cost + dma_read, rate,
                                     self.collective_efficiency))
            tables[TRANSPORT_KEY + name] = tuple(table)
            weights[TRANSPORT_KEY + name] = eff
        object.__setattr__(self, "protocols", norm)
        object.__setattr__(self, "_own", frozenset(k for k, _ in norm))
        object.__setattr__(self, "_weights", weights)
        object.__setattr__(self, "_tables", tables)
        object.__setattr__(self, "_starts", {k: [s.start for s in v] for k, v in tables.items()})

    @property
    def tabled(self) -> bool:
        """True when some message may pay a table's costs (calibrated or transport)."""
        return bool(self._tables)  # type: ignore[attr-defined]

    @property
    def weights(self) -> dict[str, float] | None:
        """Key -> the transport's achievable fraction of the line rate (``None``: no
        transports), for :func:`bottleneck_class`."""
        return self._weights or None  # type: ignore[attr-defined]

    @property
    def key_signature(self) -> tuple:
        """What the links' keys and the bottleneck choice depend on (cache keys)."""
        return (self._own, tuple(sorted(self._weights.items())))  # type: ignore[attr-defined]

    def link_keys(self, kinds: Sequence[str] | None,
                  transports: Sequence[str | None] | None = None) -> tuple[str, ...] | None:
        """The protocol table key of every link: its class, or ``"@" + transport`` when the
        link has a transport and its class no calibrated table (nor is there a ``"*"`` one).
        """
        if kinds is None:
            return None
        own = self._own  # type: ignore[attr-defined]
        if not self._weights or transports is None or ANY_CLASS in own:  # type: ignore[attr-defined]
            return tuple(kinds)
        tables = self._tables  # type: ignore[attr-defined]
        # decided once per distinct (class, transport): a platform has a handful of them but
        # may have 314,000 links (scenarios/bsp_100k.yaml), and engines ask once per run
        decided: dict[tuple[str, str | None], str] = {}
        for k, t in set(zip(kinds, transports)):
            key = TRANSPORT_KEY + t if t is not None else None
            decided[k, t] = key if key in tables and k not in own else k
        return tuple(map(decided.__getitem__, zip(kinds, transports)))

    def platform_keys(self, platform: Any) -> tuple[str, ...] | None:
        """:meth:`link_keys` of a platform's links, memoised on the platform."""
        kinds = getattr(platform, "link_kind", None)
        if not self.tabled or kinds is None:
            return None
        trans = getattr(platform, "link_transport", None)
        memo = getattr(platform, "memo", None)
        mkey = ("link_keys", self._own, tuple(self._weights))  # type: ignore[attr-defined]
        if memo is not None and mkey in memo:
            return memo[mkey]
        keys = self.link_keys(kinds, trans)
        if memo is not None:
            memo[mkey] = keys
        return keys

    def table(self, link_class: str | None) -> tuple[Segment, ...] | None:
        """The protocol table for messages whose bottleneck link is of ``link_class``."""
        tables = self._tables  # type: ignore[attr-defined]
        if not tables:
            return None
        t = tables.get(link_class) if link_class is not None else None
        return t if t is not None else tables.get(ANY_CLASS)

    def segment(self, nbytes: float, link_class: str | None) -> Segment | None:
        """The segment that applies to a message of ``nbytes`` (``None``: no table)."""
        t = self.table(link_class)
        if t is None:
            return None
        key = link_class if link_class in self._tables else ANY_CLASS  # type: ignore[attr-defined]
        starts = self._starts[key]  # type: ignore[attr-defined]
        return t[bisect.bisect_right(starts, nbytes) - 1]

    def message_cost(self, nbytes: float, link_class: str | None = None,
                     collective: bool = False) -> tuple[float, float]:
        """(overhead in s, bytes charged per byte sent) for one message.

        The second number scales the message to what it costs of the shared
        ``capacity * efficiency``: 1 for a point-to-point message without a protocol table.
        ``collective``: the message is a transfer of a collective schedule, which also pays
        the (segment's, else the global) ``collective_efficiency``.
        """
        seg = self.segment(nbytes, link_class)
        if seg is None:
            return self.overhead, (1.0 / self.collective_efficiency if collective else 1.0)
        charge = self.efficiency / seg.efficiency
        if collective:
            charge /= seg.collective_efficiency
        return seg.overhead, charge

    @property
    def plain(self) -> bool:
        """True when every message costs ``overhead`` and its own bytes (no table, no
        collective correction): the models' fast paths."""
        return not self._tables and self.collective_efficiency == 1.0  # type: ignore[attr-defined]


def bottleneck_class(route: Sequence[int], capacity: Sequence[float],
                     kinds: Sequence[str] | None,
                     weights: Mapping[str, float] | None = None) -> str | None:
    """Link class (protocol key) of the narrowest link of ``route`` (the first one on ties).

    The protocol of a message is the one of the link that limits it: on a GPU -> PCIe -> NIC
    -> switch path that is the network link, not the PCIe hops.  ``weights`` (transports'
    efficiencies by key) make "narrowest" the lowest *achievable* bandwidth.
    """
    if not route or kinds is None:
        return None
    # min keeps the first of equal keys: the first narrowest hop, in one pass (the hop's
    # position from route.index made it quadratic: 26 s for two 50,000-hop ring routes)
    if weights:
        best = min(route, key=lambda lk: capacity[lk] * weights.get(kinds[lk], 1.0))
    else:
        best = min(route, key=lambda lk: capacity[lk])
    return kinds[best]
