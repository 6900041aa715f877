"""The flow model under adaptive routing: a flow's route is chosen when it starts.

Why a subclass: adaptive routing (UGAL on a dragonfly, :mod:`clustersim.platform.dragonfly_routing`)
needs the number of flows on every link at the moment a flow starts, and keeping that count
costs a loop over the route at every start and finish.  :class:`FlowNetwork` itself stays
exactly as it was - platforms with static routes never pay for the count -
and :meth:`FlowNetwork.for_platform` hands out this class only when the platform's policy is
adaptive.

``load[link]`` counts flows started and not yet finished (their latency phase included: a
collective step starts all its flows at once, and the later ones must see the earlier ones).
Flows of one call are routed one after the other, each seeing those routed before it.
"""

from __future__ import annotations

from collections.abc import Sequence

import simpy

from clustersim.network.flow import FlowNetwork
from clustersim.network.flowrecords import _Flow, _Group
from clustersim.network.params import NetworkParams

__all__ = ["AdaptiveFlowNetwork"]


class AdaptiveFlowNetwork(FlowNetwork):
    """A :class:`FlowNetwork` that routes flows between devices at their start
    (:meth:`transfer_pairs`) from the per-link flow counts it keeps (:attr:`load`)."""

    def __init__(self, env: simpy.Environment, platform,
                 params: NetworkParams = NetworkParams()) -> None:
        # the link classes and their transports, as FlowNetwork.for_platform passes them
        # (the transports had been left out: a ugal run on a platform with TCP/PCIe
        # transports drained its links at line rate, ~10 % fast on 25 GbE)
        super().__init__(env, platform.capacity, platform.latency, params,
                         getattr(platform, "link_kind", None),
                         getattr(platform, "link_transport", None))
        self.platform = platform
        #: flows started and not finished, per link resource
        self.load: list[int] = [0] * len(platform.capacity)
        self._counted = False

    def choose(self, src: int | str, dst: int | str) -> tuple[int, ...]:
        """The route a flow from ``src`` to ``dst`` would take if it started now."""
        return self.platform.choose_route(src, dst, self.load)

    def transfer_pair(self, src: int | str, dst: int | str, nbytes: float) -> simpy.Event:
        """:meth:`transfer` of one flow routed now (device ranks or node names)."""
        return self.transfer_pairs([(src, dst)], [nbytes])

    def transfer_pairs(self, pairs: Sequence[tuple[int | str, int | str]],
                       nbytes: Sequence[float] | float, *, collective: bool = False
                       ) -> simpy.Event:
        """:meth:`transfer_all` with each flow's route chosen at its start, in order."""
        sizes = ([float(nbytes)] * len(pairs) if isinstance(nbytes, (int, float))
                 else [float(x) for x in nbytes])
        if len(sizes) != len(pairs):
            raise ValueError(f"{len(pairs)} pairs but {len(sizes)} sizes")
        ev = simpy.Event(self.env)
        if not pairs:
            return ev.succeed()
        load = self.load
        choose = self.platform.choose_route
        routes = []
        for s, d in pairs:
            r = choose(s, d, load)
            for lk in r:
                load[lk] += 1
            routes.append(r)
        self._counted = True
        try:
            self._start(routes, sizes, _Group(ev, len(routes)), collective)
        finally:
            self._counted = False
        return ev

    def _start(self, routes: Sequence[tuple[int, ...]], sizes: Sequence[float],
               group: _Group, collective: bool = False) -> None:
        if not self._counted:  # routes given by the caller: count them here
            load = self.load
            for r in routes:
                for lk in r:
                    load[lk] += 1
        super()._start(routes, sizes, group, collective)

    def _finish(self, f: _Flow) -> None:
        load = self.load
        for lk in f.route:
            load[lk] -= 1
        super()._finish(f)
