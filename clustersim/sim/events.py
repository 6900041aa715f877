"""The event loop of the simulated backend and the light events its hot paths schedule.

Why a module of its own: these are the pieces every other part of the engine schedules with
(:mod:`clustersim.sim.actor`, :mod:`clustersim.sim.p2p`, :mod:`clustersim.sim.collective_run`)
- SimPy's loop written out with a FIFO lane for events due "now", bare succeeded events
(``_at``), an actor's reusable timer (``_Wake``), a message in flight (``_Post``) and the
reduced ``AllOf`` a ``Wait`` needs - plus the direct slot fillers for ``Handle`` and
``Message``.  See :mod:`clustersim.sim.engine` for why none of it changes a run's events.
"""

from __future__ import annotations

from collections import deque
from dataclasses import fields
from functools import partial
from heapq import heappop, heappush
from typing import TYPE_CHECKING, Any

import simpy
from simpy.events import NORMAL as _NORMAL

from clustersim.algorithms.ops import Handle, Message, Send

if TYPE_CHECKING:
    from clustersim.sim.actor import _Actor

# Operations' results are frozen dataclasses whose generated __init__ sets every field through
# object.__setattr__ (~0.3 us a field).  The engine makes one Handle per non-blocking operation
# and one Message per message, so it fills their slots directly (the same objects: equal,
# hashable, frozen for everyone else).
_new = object.__new__
_set_handle_id = Handle.id.__set__  # type: ignore[attr-defined]
_MSG_FIELDS = ("src", "tag", "nbytes", "data", "sent_at")
_MSG_SET = tuple(getattr(Message, f).__set__ for f in _MSG_FIELDS)
# a field added to either class must be filled here too
assert tuple(f.name for f in fields(Message)) == _MSG_FIELDS
assert tuple(f.name for f in fields(Handle)) == ("id",)



class _Environment(simpy.Environment):
    """SimPy's environment with its event loop written out for runs without ``until``.

    ``run()`` does what ``Environment.run()`` does - pop the earliest event, clear and call
    its callbacks, crash on an undefused failure - without a ``step()`` call and a
    ``try``/``except`` per event (a run processes hundreds of thousands of events; SimPy's
    loop costs about a third of what a bare SimPy process costs per event).  Runs with
    ``until`` use SimPy's own loop.

    *The lane.*  Half the events of a message-heavy run are scheduled for the current
    instant at ``NORMAL`` priority (an actor woken by mail, an event that succeeds now); in
    the heap each such entry sifts from the bottom to the top and back down (~2 log n tuple
    comparisons).  While ``run()`` drives, they go to a FIFO beside the heap instead: they
    all carry the current time and increasing ids, so the FIFO is sorted by the heap's own
    key ``(time, priority, id)``, and ``run()`` takes whichever of the two heads has the
    smaller key - the events come out in exactly the order the heap alone gives them, and
    are numbered (``RunResult.sim_events``) the same.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lane: deque[tuple] = deque()
        self._laned = False
        #: schedule an entry ``(now, NORMAL, id, event)`` (the engine's hot paths build it);
        #: not a bound method of the environment, which would make it a reference cycle
        #: (freed only by the cyclic collector, which is off during runs)
        self._heap_push = partial(heappush, self._queue)
        self.push_now = self._heap_push

    def schedule(self, event: simpy.Event, priority: int = _NORMAL, delay: Any = 0) -> None:
        item = (self._now + delay, priority, next(self._eid), event)
        if self._laned and priority == _NORMAL and delay == 0:
            self._lane.append(item)
        else:
            heappush(self._queue, item)

    def run(self, until: Any = None) -> Any:
        if until is not None:
            return super().run(until)
        queue = self._queue
        lane = self._lane
        take = lane.popleft
        pop = heappop
        self._laned = True
        self.push_now = lane.append
        try:
            while True:
                if lane:
                    if queue and queue[0] < lane[0]:
                        self._now, _, _, event = pop(queue)
                    else:
                        self._now, _, _, event = take()
                elif queue:
                    self._now, _, _, event = pop(queue)
                else:
                    break
                callbacks, event.callbacks = event.callbacks, None
                for callback in callbacks:
                    callback(event)
                if not event._ok and not hasattr(event, "_defused"):
                    exc = type(event._value)(*event._value.args)
                    exc.__cause__ = event._value
                    raise exc
        finally:
            self._laned = False
            self.push_now = self._heap_push
            while lane:  # left by a crash: back to the heap, where peek() and step() look
                heappush(queue, lane.popleft())
        return None

    def run_watched(self, watch: Any) -> None:
        """:meth:`run` with an observer: ``watch(t)`` is called before each event with the
        event's time (the clock still at the previous event's), and a true return stops the
        run there, the rest of the events unprocessed.

        For the convergence emulation, which samples the models between events and stops at
        its target: the observer schedules nothing, so the events, their order and
        ``sim_events`` are those of :meth:`run`; timing-only runs never come here (no call
        per event)."""
        queue = self._queue
        lane = self._lane
        take = lane.popleft
        pop = heappop
        self._laned = True
        self.push_now = lane.append
        try:
            while True:
                if lane:
                    head = queue[0] if queue and queue[0] < lane[0] else lane[0]
                elif queue:
                    head = queue[0]
                else:
                    break
                if watch(head[0]):
                    break
                if lane and head is lane[0]:
                    self._now, _, _, event = take()
                else:
                    self._now, _, _, event = pop(queue)
                callbacks, event.callbacks = event.callbacks, None
                for callback in callbacks:
                    callback(event)
                if not event._ok and not hasattr(event, "_defused"):
                    exc = type(event._value)(*event._value.args)
                    exc.__cause__ = event._value
                    raise exc
        finally:
            self._laned = False
            self.push_now = self._heap_push
            while lane:
                heappush(queue, lane.popleft())


def _at(env: simpy.Environment, delay: float, priority: int, callback) -> simpy.Event:
    """Schedule ``callback(event)`` after ``delay`` (an int 0 keeps the clock's type, as
    SimPy's own zero delays do) at ``priority``: a bare, already
    succeeded event - what :class:`simpy.Timeout` and SimPy's process start do, minus the
    process."""
    ev = simpy.Event(env)
    ev._ok = True  # noqa: SLF001
    ev._value = None  # noqa: SLF001
    ev.callbacks.append(callback)
    env.schedule(ev, priority, delay)
    return ev


class _Wake:
    """An actor's own timer, re-armed for every wait on its clock (compute run ahead, its
    end, mail): a succeeded event that is scheduled again once processed.  Nothing but the
    actor waits for it, so one object per actor replaces a :class:`simpy.Timeout` per wait.

    Not a :class:`simpy.Event`: the event loop reads ``callbacks``, ``_ok`` and ``_value``
    only, and a slotted object without SimPy's ``__init__`` is cheaper to arm."""

    __slots__ = ("callbacks",)
    _ok = True
    _value = None

    def __init__(self) -> None:
        self.callbacks: list | None = None  # armed by ``callbacks = [...]`` + a schedule


class _Post:
    """A point-to-point message in flight: a timeout (its delivery time) that carries the
    message's sender, operation and start, so that delivery is one bound method of the engine
    instead of a timeout plus a closure per message.

    Like :class:`_Wake`, a slotted stand-in for a succeeded :class:`simpy.Event`: what waits
    for a message (a ``Wait`` on its handle, :class:`_AllOf`) only appends to ``callbacks``
    and reads ``_value``.  A sender blocked in its ``Send`` is not a callback but ``sender``:
    delivery resumes it last, where its ``_resumed`` callback would have run (the next and
    only other callback of the event), without a bound method and a callback per message."""

    __slots__ = ("callbacks", "src", "op", "t0", "sender")
    _ok = True
    _value = None

    def __init__(self, callback, i: int, op: Send, t0: float) -> None:
        self.callbacks = [callback]
        self.src = i
        self.op = op
        self.t0 = t0
        self.sender: _Actor | None = None


class _AllOf:
    """SimPy's ``AllOf`` reduced to what ``Wait`` needs: when the last of ``events`` has been
    processed, one event succeeds (scheduled at the same point of the same callback chain as
    the condition's, so the run's event order is the same) and calls ``callback``."""

    __slots__ = ("left", "done")

    def __init__(self, env: simpy.Environment, events: list[simpy.Event], callback) -> None:
        self.left = len(events)
        self.done = simpy.Event(env)
        self.done.callbacks.append(callback)
        check = self._check
        for ev in events:
            ev.callbacks.append(check)

    def _check(self, _ev: simpy.Event) -> None:
        self.left -= 1
        if self.left == 0:
            self.done.succeed()

