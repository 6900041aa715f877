"""Point-to-point messages in the simulated backend: how a message travels (a flow, a FIFO
reservation of its route's links, a header-only latency, a local copy), its delivery to the
receiver's mailbox or straight to a receiver blocked in ``Recv``, and non-blocking receives.

A mixin of :class:`~clustersim.sim.engine.Engine`, kept apart from the collectives and the
actor interpreter so that each module holds one topic (and stays under 400 lines).
"""

from __future__ import annotations

from heapq import heappush
from typing import Any

import simpy
from simpy.events import NORMAL as _NORMAL

from clustersim.algorithms.ops import ANY, Message, Recv, Send
from clustersim.sim.actor import _Actor
from clustersim.sim.events import _MSG_SET, _new, _Post
from clustersim.sim.inflight import add_span

__all__ = ["P2P_FLOW_MAX_ACTORS", "PointToPoint"]

#: ``auto`` fidelity runs point-to-point messages as flows (max-min sharing) up to this many
#: actors, and above it as FIFO link queues (clustersim.network.queueing: same link
#: throughput, O(hops) per message) - a parameter server with thousands of clients would
#: otherwise re-solve max-min over thousands of flows at every message.
P2P_FLOW_MAX_ACTORS = 64

#: how a point-to-point message travels (see ``Engine._plan``)
_LOCAL, _QUEUED, _FLOW, _HEADER = 0, 1, 2, 3


class PointToPoint:
    """The engine's point-to-point methods (mixed into :class:`~clustersim.sim.engine.Engine`)."""

    env: Any
    platform: Any
    net: Any
    placement: list[int]
    stats: list
    trace: bool
    _queues: Any
    _latency: dict
    _shared_plans: dict
    _ranks: list[int]
    _mail: list
    _mail_wait: list
    _nb_recv: list[int]
    _adaptive: bool
    _msg_log: list | None
    _plan_routes: Any
    params: Any

    # -- point to point ----------------------------------------------------------------------
    def _new_plan(self, src_dev: int, dst_dev: int, nbytes: float) -> tuple:
        """How a message of ``nbytes`` from device ``src_dev`` to ``dst_dev`` travels:
        ``(mode, route, latency, bytes to drain, per-link drain times)``.  Pure in the devices
        and the size (routes are deterministic, protocol costs depend on the route and size
        only), so :meth:`_start_send` computes it once per device pair and size and keeps it
        on the platform for every later run in this process with the same network parameters
        (a 4,000-worker point needs 8,000 of them, a few milliseconds each time otherwise)."""
        route = self.platform.route(src_dev, dst_dev)
        if not route:
            return _LOCAL, route, 0.0, 0.0, ()
        if nbytes > 0 and self._queues is not None:
            lat, drain = self.net.message_plan(route, nbytes)
            rate = self._queues.rate
            # what LinkQueues.reserve divides per link, divided once
            return _QUEUED, route, lat, drain, tuple(drain / rate[lk] for lk in route)
        if nbytes > 0:
            return _FLOW, route, 0.0, nbytes, ()
        lat = self._latency.get(route)
        if lat is None:
            lat = self._latency[route] = self.net.message_latency(route, 0.0)
        return _HEADER, route, lat, 0.0, ()

    def _numbered(self, src_dev: int, dst_dev: int, nbytes: float) -> tuple:
        """:meth:`_new_plan` with its id (``plan[5]``) in the plans' route table: each link's
        drain time at its full rate, for the servers' link demand."""
        plan = self._new_plan(src_dev, dst_dev, nbytes)
        route = plan[1]
        if plan[0] == _QUEUED:
            dts: Any = plan[4]
        elif nbytes > 0 and route:
            drain = self.net.message_plan(route, nbytes)[1]
            eff = self.params.efficiency
            dts = [drain / (float(self.platform.capacity[lk]) * eff) for lk in route]
        else:
            dts = [0.0] * len(route)
        return (*plan, self._plan_routes.add(src_dev, dst_dev, route, dts, nbytes))

    def _start_send(self, i: int, op: Send) -> simpy.Event | None:
        """Start a point-to-point message; the returned event fires when it has arrived
        (``None``: delivered already, sender and receiver share a device).

        The message is delivered and accounted by a callback of the transfer event, so a
        non-blocking send needs no process of its own.  A header-only message (``nbytes`` 0)
        never competes for bandwidth: it takes the route's latency (plus the per-message
        overhead), exactly what a zero-byte flow takes, without the flow bookkeeping - and is
        therefore not counted in ``RunResult.flows``.
        """
        placement = self.placement
        # actor ranks are actor indices (0..n-1, checked by the sweep runner); one lookup in
        # the shared plans: a point of few iterations sends each (actor, peer, size) only a
        # few times, so a per-actor cache in front would mostly miss
        key = (placement[i], placement[op.dst], op.nbytes)
        plan = self._shared_plans.get(key)
        if plan is None:
            plan = self._shared_plans[key] = self._numbered(*key)
        log = self._msg_log  # the servers' link demand (sim/linkdemand.py); a header
        if log is not None and op.nbytes:  # drains nothing
            log.append(plan[5])
        mode = plan[0]
        env = self.env
        t0 = env._now
        if mode == _QUEUED:
            post = _Post(self._arrived, i, op, t0)
            # env.schedule(), inline: at the booked arrival
            arrival = self._queues.reserve_times(plan[1], plan[4], t0, plan[2])
            # now + (arrival - now), as a timeout's delay adds up (not always == arrival)
            heappush(env._queue, (t0 + (arrival - t0), _NORMAL, next(env._eid), post))
            return post
        if mode == _HEADER:
            post = _Post(self._arrived, i, op, t0)
            heappush(env._queue, (t0 + plan[2], _NORMAL, next(env._eid), post))
            return post
        if mode == _LOCAL:
            self._arrived(_Post(None, i, op, t0))
            return None
        if self._adaptive:  # routed now, from the load (the plan's route is the minimal one)
            ev = self.net.transfer_pair(key[0], key[1], op.nbytes)
        else:
            ev = self.net.transfer(plan[1], op.nbytes)
        ev.callbacks.append(lambda _ev: self._arrived(_Post(None, i, op, t0)))
        return ev

    def _arrived(self, post: _Post) -> None:
        """The message has arrived (the callback of its :class:`_Post`, or called at once by
        a local copy): deliver it and account the sender's time.

        A receiver blocked in a ``Recv`` that this message matches, with nothing else that
        could take it (no other waiter, no non-blocking ``Recv`` under way), gets it handed
        over with its wake-up (``_Actor.got``) instead of through its mailbox: the message
        would be the earliest match in the box (the receiver blocked because there was
        none), so the wake-up would take exactly this one - the same result, the same
        events, without filing and taking it.
        """
        env = self.env
        now = env._now
        i = post.src
        op = post.op
        t0 = post.t0
        j = op.dst  # actor ranks are 0..n-1 in list order (checked by the sweep runner)
        m = _new(Message)  # Message(src, tag, nbytes, data, sent_at), slots filled directly
        s_src, s_tag, s_nbytes, s_data, s_sent = _MSG_SET
        s_src(m, self._ranks[i])
        s_tag(m, op.tag)
        s_nbytes(m, op.nbytes)
        s_data(m, op.data)
        s_sent(m, t0)
        waiters = self._mail_wait[j]
        if waiters:
            self._mail_wait[j] = []
            w = waiters[0]
            if (len(waiters) == 1 and type(w) is _Actor and not self._nb_recv[j]
                    and ((src := w.recv_op.src) == ANY or src == m.src)
                    and ((tag := w.recv_op.tag) == ANY or tag == m.tag)):
                w.got = m
                wake = w.wake
                wake.callbacks = [w._mailed]
                env.push_now((now, _NORMAL, next(env._eid), wake))  # at once
            else:
                self._mail[j].put(m)
                for w in waiters:
                    if type(w) is _Actor:  # the actor itself, blocked in Recv: its own timer
                        wake = w.wake
                        wake.callbacks = [w._mailed]
                        env.push_now((now, _NORMAL, next(env._eid), wake))  # at once
                    else:  # a non-blocking Recv's process
                        w.succeed()
        else:
            self._mail[j].put(m)
        st = self.stats[i]
        nbytes = op.nbytes
        st.bytes_sent += nbytes
        spans = st.inflight  # add_span's common case inline: after everything in flight
        if spans and t0 <= spans[-1][1]:
            st.comm_total += add_span(spans, t0, now)
        elif now > t0:
            spans.append([t0, now])
            st.comm_total += now - t0
        if op.blocking:
            st.comm += now - t0
        if self.trace:
            self._ev(i, "send", t0, now, op.label or "send", nbytes=nbytes, peer=j,
                     meta={} if op.blocking else {"nb": True})
        sender = post.sender
        if sender is not None:  # its _resumed(post), the post's next callback
            sender.run(None, None)

    def _recv(self, i: int, op: Recv):
        """A non-blocking ``Recv``: a process beside the actor (the blocking one is inlined
        in :class:`_Actor`)."""
        env = self.env
        st = self.stats[i]
        t0 = env.now
        box = self._mail[i]
        try:
            while True:
                m = box.take(op.src, op.tag)
                if m is not None:
                    if op.blocking:
                        st.wait += env.now - t0
                    if self.trace and env.now > t0:
                        self._ev(i, "recv", t0, env.now, op.label or "recv", nbytes=m.nbytes,
                                 peer=m.src, meta={} if op.blocking else {"nb": True})
                    return m
                if op.poll:
                    return None
                ev = env.event()
                self._mail_wait[i].append(ev)
                yield ev
        finally:
            self._nb_recv[i] -= 1  # counted up by the actor when it spawned this receive

