"""The actor interpreter of the simulated backend: pulls each actor's operations from its
algorithm generator and turns them into events (the hot path of every simulation), and the
non-blocking ``Compute`` that runs beside an actor.
"""

from __future__ import annotations

from heapq import heappush
from math import fsum
from typing import TYPE_CHECKING, Any

import simpy
from simpy.events import NORMAL as _NORMAL

from clustersim.algorithms.base import ActorSpec
from clustersim.algorithms.ops import (
    Collective,
    Compute,
    Handle,
    Message,
    Record,
    Recv,
    Send,
    Wait,
)
from clustersim.sim.events import _AllOf, _at, _new, _Post, _set_handle_id, _Wake

if TYPE_CHECKING:
    from clustersim.sim.collective_run import _Group
    from clustersim.sim.engine import Engine


def _result(entry: tuple, i: int) -> Any:
    """The value a ``Wait`` hands actor ``i`` for one handle's ``(event, rendezvous)``: a
    collective's result for this member (:class:`~clustersim.sim.reductions.PerMember`), or
    the event's value."""
    v = entry[0]._value  # noqa: SLF001
    if entry[1] is not None and v is not None:
        return v.values[i]
    return v


class _SideCompute:
    """A non-blocking ``Compute`` in flight (see :meth:`Engine._compute`)."""

    __slots__ = ("eng", "i", "spec", "op", "done", "t0", "dt")

    def __init__(self, eng: Engine, i: int, spec: ActorSpec, op: Compute,
                 done: simpy.Event) -> None:
        self.eng = eng
        self.i = i
        self.spec = spec
        self.op = op
        self.done = done
        self.t0 = 0.0
        self.dt = 0.0

    def start(self, _ev: simpy.Event) -> None:
        eng = self.eng
        env = eng.env
        self.t0 = env.now
        dt = self.dt = eng.costs.compute(self.op, self.spec, eng.placement[self.i],
                                         eng._iter[self.i])
        if dt > 0:
            _at(env, dt, _NORMAL, self.finish)
        else:
            self.finish(None)

    def finish(self, _ev: simpy.Event | None) -> None:
        eng = self.eng
        op = self.op
        eng.stats[self.i].compute += self.dt
        if eng.trace:
            eng._ev(self.i, "compute", self.t0, eng.env.now, op.label or op.phase)
        self.done.succeed(op.fn(op.data) if op.fn is not None else None)



class _Actor:
    """The interpreter of one actor: pulls operations from its generator, turns them into
    events - the hot path of every simulation.

    It is driven by callbacks rather than by a SimPy process: every wait registers one bound
    method on the event it waits for (``_flushed``, ``_resumed``, ``_mailed``, ``_waited``,
    ``_ended``), and :meth:`run` goes on from there until the actor blocks again.  That is
    what a process does (its ``_resume`` callback sends the event's value into a generator),
    without the generator frame in between; the events themselves - which are scheduled,
    when, in which order - are the ones the process-based interpreter scheduled, so a run is
    the same run.

    Consecutive blocking ``Compute`` and ``Record`` operations are run ahead of the clock and
    waited for with *one* timer (``ahead`` holds the compute time not yet waited for): they
    touch nothing but the actor itself, so only the number of SimPy events changes - a
    worker's forward, backward and update become one event instead of three.  Any other
    operation first waits out ``ahead``.
    """

    __slots__ = ("eng", "i", "spec", "st", "device", "send", "wake", "pending", "t0",
                 "entries", "recv_op", "table", "jbuf", "jdraw", "box", "gkey", "group", "got")

    def __init__(self, eng: Engine, i: int, spec: ActorSpec) -> None:
        self.eng = eng
        self.i = i
        self.spec = spec
        self.st = eng.stats[i]
        self.device = eng.placement[i]
        self.send = None
        self.wake = _Wake()
        self.pending: Any = None  # the operation that waits for the compute run ahead
        self.t0 = 0.0  # when the current blocking Recv or Wait started
        self.entries: list | None = None  # the handles' (event, rendezvous) of a Wait
        self.recv_op: Recv | None = None
        self.got: Message | None = None  # a message handed over with the wake-up (_arrived)
        # the cost model's per-kind operation table and this rank's jitter buffer, read
        # inline below; a cost model without them is asked through compute() every time
        op_table, jitter_buffer, self.jdraw = eng._cost_hooks
        self.table: dict = op_table(self.device) if op_table is not None else {}
        self.jbuf: list[float] = jitter_buffer(spec.rank) if jitter_buffer is not None else []
        self.box = eng._mail[i]
        # the group of this actor's last collective (``op.group`` -> resolved group): an
        # algorithm issues its collectives on the same few group tuples
        self.gkey: Any = None
        self.group: _Group | None = None

    # -- callbacks ---------------------------------------------------------------------------
    def start(self, _ev: simpy.Event) -> None:
        self.send = self.spec.start(self.eng.job).send
        self.run(None, None)

    def _flushed(self, _ev: simpy.Event) -> None:
        """The compute run ahead is over: the operation that waited for it starts now."""
        op, self.pending = self.pending, None
        self.run(None, op)

    def _resumed(self, ev: simpy.Event) -> None:
        """A blocking collective or send is done (its value goes back to the generator)."""
        self.run(ev._value, None)  # noqa: SLF001

    def _collected(self, ev: simpy.Event) -> None:
        """A blocking collective is done: its result for this member goes back."""
        v = ev._value  # noqa: SLF001
        self.run(None if v is None else v.values[self.i], None)

    def _mailed(self, _ev: simpy.Event) -> None:
        """Mail arrived while blocked in ``Recv``: take it, or wait again.  The blocked time
        is waiting (``ActorStats.wait``); a ``Recv(serving=True)`` also files it under
        ``records["serving"]``, one sample per receive, for the master's service time."""
        op = self.recv_op
        m = self.got
        if m is not None:
            self.got = None
        else:
            m = self.box.take(op.src, op.tag)
            if m is None:
                self._wait_mail()
                return
        eng = self.eng
        now = eng.env._now
        t0 = self.t0
        self.recv_op = None
        blocked = now - t0
        self.st.wait += blocked
        if op.serving:  # service time, not waiting for work (Recv.serving; sim/metrics.py)
            self.st.records["serving"].append(blocked)
            if eng.trace:  # so that the trace reader finds it too (trace_metrics)
                eng._ev(self.i, "record", now, now, "serving", value=blocked)
        if eng.trace and now > t0:
            eng._ev(self.i, "recv", t0, now, op.label or "recv", nbytes=m.nbytes, peer=m.src)
        self.run(m, None)

    def _wait_mail(self) -> None:
        # the next delivery to this actor schedules its timer for ``_mailed`` (at once, as
        # ``Event.succeed()`` would schedule an event of its own)
        self.eng._mail_wait[self.i].append(self)

    def _waited(self, _ev: simpy.Event) -> None:
        """The handles of a ``Wait`` are complete: account the blocked time, resume."""
        eng = self.eng
        now = eng.env._now
        t0 = self.t0
        entries, self.entries = self.entries, None
        blocked = now - t0
        last = t0  # the last peer's arrival at any of the collectives waited for
        for _, rv in entries:
            if rv is not None and rv.last > last:
                last = rv.last
        if blocked > 0:
            st = self.st
            # the part before the last peer arrived is waiting for stragglers
            waited = min(last - t0, blocked)
            st.wait += waited
            st.comm += blocked - waited
            if eng.trace:
                eng._ev(self.i, "wait", t0, now, "wait handles", meta={"waited": waited})
        if len(entries) == 1:
            self.run([_result(entries[0], self.i)], None)
        else:
            self.run([_result(e, self.i) for e in entries], None)

    def _ended(self, _ev: simpy.Event | None) -> None:
        env = self.eng.env
        st = self.st
        st.end = env.now
        st.iterations.append(env.now)
        if self.eng.trace:
            self.eng._ev(self.i, "record", env.now, env.now, "actor_end", value=0.0)
        if st.mark is None:  # servers (no iterations) or runs shorter than the warmup
            st.mark = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        # the event a finished SimPy process schedules (nobody waits for it)
        wake = self.wake
        wake.callbacks = []
        env.schedule(wake, _NORMAL, 0)  # 0, not 0.0: the clock keeps SimPy's number type

    # -- the loop ----------------------------------------------------------------------------
    def run(self, value: Any, op: Any) -> None:
        """Send ``value`` into the generator and interpret what it yields until the actor
        blocks (``op``: an operation already taken from it, to start first)."""
        eng = self.eng
        env = eng.env
        send = self.send
        st = self.st
        table = self.table
        trace = eng.trace
        i = self.i
        ahead = 0.0
        while True:
            if op is None:
                try:
                    op = send(value)
                except StopIteration:
                    if ahead > 0:
                        wake = self.wake
                        wake.callbacks = [self._ended]
                        env.schedule(wake, _NORMAL, ahead)
                    else:
                        self._ended(None)
                    return
                value = None
                kind = type(op)
                if kind is Compute and op.blocking:
                    hit = table.get(id(op))
                    if hit is not None and hit[0] is op:
                        dt = hit[1]
                        if hit[2]:
                            jbuf = self.jbuf
                            dt *= jbuf.pop() if jbuf else self.jdraw(self.spec.rank)
                    else:
                        dt = eng.costs.compute(op, self.spec, self.device, eng._iter[i])
                    if trace:
                        t = env._now + ahead
                        eng._ev(i, "compute", t, t + dt, op.label or op.phase)
                    ahead += dt
                    st.compute += dt
                    if op.fn is not None:
                        value = op.fn(op.data)
                    op = None
                    continue
                if kind is Record:
                    now = env._now + ahead
                    if op.key == "iteration":
                        st.iterations.append(now)
                        eng._iter[i] = int(op.value)
                        if trace:  # the trace reader's marks (trace_metrics), as realrun's
                            eng._ev(i, "record", now, now, "iteration", value=float(op.value))
                        if op.value == eng.warmup:
                            st.mark = (st.compute, st.comm, st.wait, st.comm_total,
                                       st.bytes_sent, now)
                            eng.mark_warmup_done()
                    else:
                        st.records[op.key].append(float(op.value))
                        if op.key == "update":
                            if st.armed:  # Engine.mark_warmup_done
                                st.armed = False
                                st.after_warmup = (
                                    st.compute, len(st.records["update"]), now,
                                    st.wait - fsum(st.records.get("serving", ())))
                            if st.after_warmup is not None:
                                st.last_update = (st.compute, len(st.records["update"]),
                                                  now, st.wait,
                                                  len(st.records.get("serving", ())))
                        if trace:
                            eng._ev(i, "record", now, now, op.key, value=float(op.value))
                    op = None
                    continue
                if ahead > 0:
                    self.pending = op
                    wake = self.wake
                    wake.callbacks = [self._flushed]
                    heappush(env._queue, (env._now + ahead, _NORMAL, next(env._eid), wake))
                    return
            else:
                kind = type(op)
            # ``op`` starts now
            if kind is Collective:
                members = op.group
                if members is not self.gkey or self.group is None:
                    self.group = eng._group(members)
                    self.gkey = members
                rv = eng._arrive(i, op, self.group)
                if op.blocking:
                    rv.done.callbacks.append(self._collected)
                    return
                n = eng._next_handle  # eng._handle(rv.done, rv), inline
                eng._next_handle = n + 1
                value = _new(Handle)
                _set_handle_id(value, n)
                eng._handles[n] = (rv.done, rv)
            elif kind is Send:
                ev = eng._start_send(i, op)
                if op.blocking:
                    if ev is not None:
                        if type(ev) is _Post:  # delivery resumes it (see _Post)
                            ev.sender = self
                        else:
                            ev.callbacks.append(self._resumed)
                        return
                else:
                    if ev is None:  # a local copy is delivered at once
                        ev = env.event()
                        ev.succeed()
                    n = eng._next_handle  # eng._handle(ev), inline
                    eng._next_handle = n + 1
                    value = _new(Handle)
                    _set_handle_id(value, n)
                    eng._handles[n] = (ev, None)
            elif kind is Recv:
                if op.blocking:
                    box = self.box
                    m = box.take(op.src, op.tag) if box._live else None  # noqa: SLF001
                    if m is not None:
                        value = m
                    elif not op.poll:
                        self.recv_op = op
                        self.t0 = env._now
                        self._wait_mail()
                        return
                else:
                    eng._nb_recv[i] += 1  # until the receive's process ends (see _arrived)
                    value = eng._spawn(eng._recv(i, op))
            elif kind is Wait:
                handles = eng._handles
                hs = op.handles
                if len(hs) == 1:  # the common case, without the list comprehensions
                    entry = handles.pop(hs[0].id)
                    e = entry[0]
                    if e.callbacks is None:
                        value = [_result(entry, i)]
                        op = None
                        continue
                    self.entries = [entry]
                    self.t0 = env._now
                    e.callbacks.append(self._waited)
                    return
                entries = [handles.pop(h.id) for h in hs]
                pending = [e for e, _ in entries if e.callbacks is not None]
                if pending:
                    self.entries = entries
                    self.t0 = env._now
                    if len(pending) == 1:
                        pending[0].callbacks.append(self._waited)
                    else:
                        _AllOf(env, pending, self._waited)
                    return
                value = [_result(e, i) for e in entries]
            elif kind is Compute:  # non-blocking: runs beside the actor
                value = eng._compute(i, self.spec, op)
            else:
                raise TypeError(f"actor {self.spec.rank} yielded {op!r}, not an operation")
            op = None

