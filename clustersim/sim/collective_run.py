"""Collectives in the simulated backend: groups, rendezvous by call order, the run of a
collective's schedule on the network (flow by flow or costed analytically) and its result.

A mixin of :class:`~clustersim.sim.engine.Engine` (it reads the engine's environment,
platform, network, costs and statistics): kept apart because the collective path - matching,
ordering per group, schedule caching, accounting - is one topic, and the engine module
would otherwise pass 400 lines.
"""

from __future__ import annotations

from typing import Any

import simpy

from clustersim.algorithms.ops import Collective
from clustersim.collectives import build_schedule
from clustersim.collectives.nccl_machine import machine_for
from clustersim.network.analytic import cost_schedule
from clustersim.network.flowsim import schedule_process
from clustersim.sim.inflight import add_span
from clustersim.sim.reductions import collective_results

__all__ = ["COLLECTIVE_FLOW_MAX_RANKS", "CollectiveRunner"]

#: ``auto`` fidelity runs a collective flow by flow up to this group size, analytically above
#: (flow and analytic agree within 5% on the regular cases up to 64 ranks; see docs/fidelity.md)
#: - except in a run with servers beside its workers and point-to-point flows, where the
#: collective shares links with their traffic and always runs as flows (``Engine._mixed_flows``).
COLLECTIVE_FLOW_MAX_RANKS = 16


class _Group:
    """A collective group resolved once: members, their devices and machines, and the
    matching state of its collectives (``seq[i]``: how many collectives actor ``i`` has
    issued on the group; ``open[k]``: the rendezvous of the k-th, until complete)."""

    __slots__ = ("gid", "members", "devices", "hosts", "shared", "n", "seq", "open")

    def __init__(self, gid: int, members: tuple[int, ...], devices: tuple[int, ...],
                 hosts: tuple[int, ...], arrivals: int | None = None) -> None:
        self.gid = gid
        self.members = members
        self.devices = devices
        self.hosts = hosts
        self.shared = len(set(devices)) < len(devices)
        #: actors that must arrive before a collective starts: every member, except in a
        #: grouped run (:mod:`clustersim.sim.grouped`), where one representative per class
        #: of identical workers arrives for the whole class
        self.n = len(members) if arrivals is None else arrivals
        self.seq: dict[int, int] = {}
        self.open: dict[int, _Rendezvous] = {}


class _Rendezvous:
    """Arrivals at one collective instance: (actor index, arrival time, blocking)."""

    __slots__ = ("n", "parts", "done", "last", "data")

    def __init__(self, env: simpy.Environment, n: int) -> None:
        self.n = n
        self.parts: list[tuple[int, float, bool]] = []
        self.done = env.event()
        self.last = 0.0
        #: actor index -> the data it brought (``None`` until one brings some: timing-only
        #: collectives never build it)
        self.data: dict[int, Any] | None = None



class CollectiveRunner:
    """The engine's collective methods (mixed into :class:`~clustersim.sim.engine.Engine`)."""

    env: Any
    platform: Any
    net: Any
    costs: Any
    params: Any
    fidelity: str
    defaults: dict[str, str]
    stats: list
    trace: bool
    placement: list[int]
    _workers: tuple[int, ...]
    _world: tuple[tuple[int, ...], tuple[int, ...]] | None
    _groups: dict
    _by_members: dict
    _tail: dict
    _sched_cache: dict
    _cost_cache: dict
    _mixed_flows: bool

    # -- collectives -------------------------------------------------------------------------
    def _group(self, members: tuple[int, ...] | None) -> _Group:
        """Resolve a group: by tuple identity first (hashing a 4,000-rank tuple on every call
        would dominate the run), then by content, so equal groups built separately by
        different actors still meet in one rendezvous."""
        key = id(members)
        hit = self._groups.get(key)
        if hit is not None and hit[0] is members:
            return hit[1]
        world = self._world
        if world is not None:  # a grouped run: the world group stands for every worker
            if members is not None:
                raise RuntimeError("a grouped run supports collectives on all workers only")
            ranks, devices = world
            g = self._by_members.get(ranks)
            if g is None:
                host = self.platform.host
                g = _Group(len(self._by_members), ranks, devices,
                           tuple([host(d) for d in devices]), len(self._workers))
                self._by_members[ranks] = g
            self._groups[key] = (members, g)
            return g
        ranks = self._workers if members is None else tuple(members)
        g = self._by_members.get(ranks)
        if g is None:
            devices = tuple(self.placement[r] for r in ranks)
            g = _Group(len(self._by_members), ranks, devices,
                       tuple(self.platform.host(d) for d in devices))
            self._by_members[ranks] = g
        self._groups[key] = (members, g)  # keeps `members` alive, so its id is not reused
        return g

    def _arrive(self, i: int, op: Collective, g: _Group) -> _Rendezvous:
        """Actor ``i`` arrives at its next collective on group ``g`` (matched by call order,
        as in MPI); the last member to arrive starts it."""
        seqs = g.seq
        seq = seqs.get(i, 0)
        seqs[i] = seq + 1
        opened = g.open
        rv = opened.get(seq)
        if rv is None:
            rv = opened[seq] = _Rendezvous(self.env, g.n)
        now = self.env._now
        parts = rv.parts
        parts.append((i, now, op.blocking))
        if op.data is not None:
            if rv.data is None:
                rv.data = {}
            rv.data[i] = op.data
        if len(parts) == rv.n:
            del opened[seq]
            rv.last = now
            # collectives of one group run in order, as on one NCCL stream / MPI communicator:
            # a bucket's all-reduce starts when the previous one has finished
            gid = g.gid
            prev = self._tail.get(gid)
            self._tail[gid] = rv.done
            self.env.process(self._run_collective(op, g, rv, prev))
        return rv

    def _settle(self, op: Collective, rv: _Rendezvous) -> None:
        """Account a finished collective for every member at once."""
        now = self.env._now
        last = rv.last
        busy = now - last
        nbytes = op.nbytes
        stats = self.stats
        trace = self.trace
        for i, t_arr, blocking in rv.parts:
            st = stats[i]
            st.comm_total += add_span(st.inflight, last, now)
            st.bytes_sent += nbytes
            if blocking:
                st.wait += last - t_arr
                st.comm += busy
            if trace:
                if blocking and last > t_arr:
                    self._ev(i, "wait", t_arr, last, f"wait for {op.op}",
                             meta={"waited": last - t_arr})
                self._ev(i, op.op, last, now, op.label or op.op, nbytes=nbytes,
                         meta={} if blocking else {"nb": True})

    def _schedule(self, op: Collective, g: _Group):
        alg = op.algorithm or self.defaults.get(op.op, "ring")
        nbytes = op.nbytes if op.op != "barrier" else 1.0
        name = "allreduce" if op.op == "barrier" else op.op
        key = (name, alg, g.gid, nbytes, op.fp16, op.root)
        s = self._sched_cache.get(key)
        if s is None:
            s = build_schedule(name, alg, len(g.devices), nbytes, hosts=list(g.hosts),
                               root=op.root, fp16=op.fp16,
                               library=getattr(self.platform, "library", None),
                               machine=machine_for(alg, self.platform, g.devices))
            self._sched_cache[key] = s
        return s

    def _run_collective(self, op: Collective, g: _Group, rv: _Rendezvous,
                        prev: simpy.Event | None = None):
        if prev is not None and not prev.processed:
            yield prev
        devices = g.devices
        if len(devices) > 1 and not g.shared:
            sched = self._schedule(op, g)
            flow = self.fidelity == "flow" or (self.fidelity == "auto" and (
                len(devices) <= COLLECTIVE_FLOW_MAX_RANKS or self._mixed_flows))
            staging = self.costs.staging_time(op, devices)
            if staging:
                yield self.env.timeout(staging)
            if flow:
                yield self.env.process(schedule_process(self.env, self.net, sched, self.platform,
                                                        list(devices)))
            else:
                ck = (id(sched), g.gid)
                t = self._cost_cache.get(ck)
                if t is None:
                    t = float(cost_schedule(sched, self.platform, list(devices),
                                            self.params).time)
                    self._cost_cache[ck] = t
                yield self.env.timeout(t)
            if staging:
                yield self.env.timeout(staging)
        # actors sharing a device (or a group of one) exchange through memory: no network time
        self._settle(op, rv)
        # every member's own result (see clustersim.sim.reductions); None without data
        data = rv.data
        rv.done.succeed(None if data is None
                        else collective_results(op.op, op.root, g.members, data))
