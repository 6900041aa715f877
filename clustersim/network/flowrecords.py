"""The flow model's records: a flow, a group of flows with one completion event, what a route
costs, and the public snapshot of a flow.

Plain ``__slots__`` classes, not dataclasses: the flow engine creates and touches one
:class:`_Flow` per transfer in its hot loop, and slots keep those objects small and their
attribute access fast.  They live apart from :mod:`clustersim.network.flow` (the engine) and
:mod:`clustersim.network.sharing` (the rates), which both use them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy

__all__ = ["FlowState"]


@dataclass(frozen=True)
class FlowState:
    """A snapshot of one flow in its bandwidth phase (see :meth:`FlowNetwork.snapshot`)."""

    flow_id: int
    route: tuple[int, ...]
    nbytes: float
    remaining: float
    rate: float


class _Group:
    """Flows whose common completion event fires when the last of them has arrived."""

    __slots__ = ("event", "pending")

    def __init__(self, event: simpy.Event, pending: int) -> None:
        self.event = event
        self.pending = pending


class _Flow:
    __slots__ = ("fid", "route", "info", "size", "remaining", "rate", "t_last", "version",
                 "group", "done")

    def __init__(self, fid: int, route: tuple[int, ...], info: _RouteInfo, size: float,
                 group: _Group) -> None:
        self.fid = fid
        self.route = route
        self.info = info
        self.size = size
        self.remaining = size
        self.rate = 0.0  # 0 until rated: "new in this batch"
        self.t_last = 0.0
        self.version = 0
        self.group = group
        self.done = False


class _RouteInfo:
    """What the engine needs of a route, computed once per distinct route.

    ``latency`` includes ``params.overhead``; ``hops`` is the bare sum of hop latencies and
    ``link_class`` the class of its narrowest link (which picks a protocol table, if any).
    """

    __slots__ = ("latency", "lone", "repeats", "_links", "hops", "link_class")

    def __init__(self, route: tuple[int, ...], latency: float, lone: float,
                 hops: float = 0.0, link_class: str | None = None) -> None:
        self.latency = latency
        self.lone = lone
        self.repeats = len(set(route)) != len(route)
        self._links: np.ndarray | None = None
        self.hops = hops
        self.link_class = link_class

    def links(self, route: tuple[int, ...]) -> np.ndarray:
        if self._links is None:
            self._links = np.array(route, dtype=np.int64)
        return self._links
