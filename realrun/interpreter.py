"""The real backend's interpreter: one MPI rank runs one actor's operations for real.

Every rank pulls operations from the *same* algorithm generator the simulator runs
(``get_algorithm(name).actors(job)[rank]``; actor rank = MPI rank: workers ``0..w-1``, then
servers), executes each one and writes one :class:`~clustersim.trace.TraceEvent` per
operation instance with the kinds and labels the simulator's engine uses:

=================  ==============================================================  ==========
operation          executed as                                                     event kind
=================  ==============================================================  ==========
``Compute``        GEMM / copy kernels sized to the layers (:mod:`realrun.compute`),  compute
                   then ``fn(data)`` (the proxy model's math) when given;
                   ``blocking=False``: on a helper thread beside the actor
``Collective``     MPI library or our schedule (:mod:`realrun.opcollectives`) on the  allreduce,
                   group's communicator; ``blocking=False``: ``I...`` + request       ...
``Send``           ``Isend`` of a real ``nbytes`` buffer (:mod:`realrun.p2p`);        send
                   blocking = until it completes, filing incoming messages meanwhile
``Recv``           mailbox, else ``Probe(ANY_SOURCE)`` + ``Recv``; ``poll``: Iprobe   recv
``Wait``           completes the handles in order                                   wait
``Record``         a zero-length ``record`` event (``iteration`` too: the simulator  record
                   keeps those in its counters, a trace needs them for metrics)
=================  ==============================================================  ==========

What the simulator splits and a real run cannot observe directly - how much of a blocking
collective was spent waiting for the last member to arrive - is recovered afterwards from the
members' start times: every collective event carries its group id and sequence number in
``meta`` (``g``, ``seq``), every ``wait`` event the collectives it waited for (``colls``), so
:mod:`clustersim.trace_metrics` applies the simulator's definitions to measured events.

An operation that completes in the background (non-blocking send or collective) is traced
when it is first seen complete: outstanding requests are tested at every operation boundary
(a framework's progress thread does the same), and at the latest when ``Wait`` completes it.
When the generator ends, a ``record`` event ``actor_end`` marks the actor's end (the
simulator's ``ActorStats.end``); then the rank completes what is still outstanding and keeps
filing incoming messages until every rank has finished (``Ibarrier``), so an unreceived
message can never leave a sender hanging.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from clustersim.algorithms.base import ActorSpec, JobInfo
from clustersim.algorithms.ops import Collective, Compute, Handle, Record, Recv, Send, Wait
from realrun.compute import KernelPlan
from realrun.opcollectives import Collectives, Running
from realrun.p2p import Outgoing, PointToPoint
from realrun.runtime import inject_fault

__all__ = ["Interpreter", "FAULT_VAR", "parse_fault"]

#: ``MODE:RANK:ITERATION`` - inject a fault (exit, kill, hang, raise) into that rank when its
#: actor starts that iteration.  For testing failure handling on real training runs.
FAULT_VAR = "REALRUN_FAULT"
_FAULTS = ("exit", "kill", "hang", "raise")


def parse_fault(text: str | None) -> tuple[str, int, int] | None:
    """``"kill:1:3"`` -> ``("kill", 1, 3)``; ``None``/empty -> ``None``."""
    if not text:
        return None
    parts = text.split(":")
    if len(parts) != 3 or parts[0] not in _FAULTS or not all(p.isdigit() for p in parts[1:]):
        raise ValueError(f"{FAULT_VAR} must be MODE:RANK:ITERATION with MODE one of "
                         f"{', '.join(_FAULTS)}, not {text!r}")
    return parts[0], int(parts[1]), int(parts[2])


@dataclass
class _Pending:
    """What a handle stands for until ``Wait`` collects it."""

    kind: str  # send | coll | compute | recv
    obj: Any
    label: str
    iteration: int
    traced: bool = False


class Interpreter:
    """Runs one actor on this rank (see the module docstring).

    ``ctx`` is the rank's :class:`~realrun.runtime.RankContext`, ``plan`` its compute kernels,
    ``colls`` its collective runner, ``math`` the proxy-model hook (``None``: timing only).
    """

    def __init__(self, ctx: Any, spec: ActorSpec, job: JobInfo, plan: KernelPlan,
                 colls: Collectives, *, math: Any = None) -> None:
        self.ctx = ctx
        self.spec = spec
        self.job = job
        self.plan = plan
        self.colls = colls
        self.math = math
        self.p2p = PointToPoint(ctx.comm, ctx.now, ctx.backend)
        self.it = 0
        self.ops = 0
        self._pending: dict[int, _Pending] = {}
        self._next = 0
        self._uses_p2p = False
        self._pool: ThreadPoolExecutor | None = None
        self.fault = parse_fault(os.environ.get(FAULT_VAR))
        self.unreceived = 0

    # -- the loop ---------------------------------------------------------------------------------
    def run(self) -> None:
        """Run the actor's generator to its end, then settle what is outstanding."""
        gen = self.spec.start(self.job, self.math)
        send = gen.send
        value: Any = None
        while True:
            try:
                op = send(value)
            except StopIteration:
                break
            self.ops += 1
            if self._pending:
                self._progress()
            elif self._uses_p2p:
                self.p2p.drain()
            kind = type(op)
            if kind is Compute:
                value = self._compute(op)
            elif kind is Collective:
                value = self._collective(op)
            elif kind is Send:
                value = self._send(op)
            elif kind is Recv:
                value = self._recv(op)
            elif kind is Wait:
                value = self._wait(op)
            elif kind is Record:
                value = self._record(op)
            else:
                raise TypeError(f"actor {self.spec.rank} yielded {op!r}, not an operation")
        self.ctx.record("actor_end", float(self.it), iteration=self.it)
        self._settle()

    # -- operations -------------------------------------------------------------------------------
    def _compute(self, op: Compute) -> Any:
        label = op.label or op.phase
        if not op.blocking:
            if self._pool is None:  # one helper thread: background work runs one at a time
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="compute")
            fut = self._pool.submit(self._timed, op)
            return self._handle(_Pending("compute", fut, label, self.it))
        with self.ctx.op("compute", label, state="compute", iteration=self.it):
            self.plan.compute(op)
            return op.fn(op.data) if op.fn is not None else None

    def _timed(self, op: Compute) -> tuple[float, float, Any]:
        t0 = self.ctx.now()
        self.plan.compute(op)
        out = op.fn(op.data) if op.fn is not None else None
        return t0, self.ctx.now(), out

    def _collective(self, op: Collective) -> Any:
        ctx = self.ctx
        if op.blocking:
            label = op.label or op.op
            t0 = ctx.now()
            ctx.state.set("comm", label)
            run = self.colls.start(op, t0, True)
            out = self.colls.wait(run, ctx.now)
            ctx.emit(op.op, label, t0, run.done_at or ctx.now(), nbytes=op.nbytes,
                     iteration=self.it, meta=run.meta)
            ctx.state.set("run", count=True)
            return out
        run = self.colls.start(op, ctx.now(), False)
        return self._handle(_Pending("coll", run, op.label or op.op, self.it))

    def _send(self, op: Send) -> Any:
        self._uses_p2p = True
        label = op.label or "send"
        if not op.blocking:
            out = self.p2p.isend(op.dst, op.nbytes, op.tag, op.data)
            return self._handle(_Pending("send", out, label, self.it))
        with self.ctx.op("send", label, nbytes=op.nbytes, iteration=self.it, peer=op.dst):
            out = self.p2p.isend(op.dst, op.nbytes, op.tag, op.data)
            self.p2p.wait_sends([out])
        return None

    def _recv(self, op: Recv) -> Any:
        self._uses_p2p = True
        if not op.blocking:
            return self._handle(_Pending("recv", op, op.label or "recv", self.it))
        return self._receive(op, nonblocking=False)

    def _receive(self, op: Recv, nonblocking: bool) -> Any:
        ctx = self.ctx
        label = op.label or "recv"
        t0 = ctx.now()
        ctx.state.set("comm", label)
        msg = self.p2p.recv(op.src, op.tag, op.poll)
        if msg is not None:
            meta = {}
            if op.poll:
                meta["poll"] = True
            if nonblocking:
                meta["nb"] = True
            ctx.emit("recv", label, t0, ctx.now(), nbytes=msg.nbytes, iteration=self.it,
                     peer=msg.src, meta=meta)
        ctx.state.set("run", count=True)
        return msg

    def _wait(self, op: Wait) -> list[Any]:
        ctx = self.ctx
        t0 = ctx.now()
        ctx.state.set("comm", "wait handles")
        entries = [self._pending.pop(h.id) for h in op.handles]
        results = []
        colls = []
        for e in entries:
            results.append(self._complete(e))
            if e.kind == "coll":
                colls.append([e.obj.gid, e.obj.seq])
        ctx.emit("wait", "wait handles", t0, ctx.now(), iteration=self.it,
                 meta={"colls": colls} if colls else None)
        ctx.state.set("run", count=True)
        return results

    def _record(self, op: Record) -> None:
        if op.key == "iteration":
            self.it = int(op.value)
            if self.fault is not None and self.fault[1] == self.spec.rank \
                    and self.fault[2] == self.it:
                _inject(self.fault[0])
        self.ctx.record(op.key, op.value, iteration=self.it)

    # -- handles ----------------------------------------------------------------------------------
    def _handle(self, entry: _Pending) -> Handle:
        h = Handle(self._next)
        self._next += 1
        self._pending[h.id] = entry
        return h

    def _complete(self, e: _Pending) -> Any:
        """Finish one pending operation (blocking), trace it, return its result."""
        if e.kind == "send":
            self.p2p.wait_sends([e.obj])
            self._trace_done(e)
            return None
        if e.kind == "coll":
            out = self.colls.wait(e.obj, self.ctx.now)
            self._trace_done(e)
            return out
        if e.kind == "compute":
            fut: Future = e.obj
            t0, t1, out = fut.result()
            self.ctx.emit("compute", e.label, t0, t1, iteration=e.iteration,
                          meta={"nb": True})
            return out
        return self._receive(e.obj, nonblocking=True)

    def _progress(self) -> None:
        """Test outstanding requests (their completion time is when first seen done)."""
        if self._uses_p2p:
            self.p2p.drain()
        for e in self._pending.values():
            if e.traced:
                continue
            if e.kind == "send":
                done = self.p2p.test(e.obj)
            elif e.kind == "coll":
                done = self.colls.test(e.obj, self.ctx.now)
            else:
                continue
            if done:
                self._trace_done(e)

    def _trace_done(self, e: _Pending) -> None:
        if e.traced:
            return
        e.traced = True
        ctx = self.ctx
        if e.kind == "send":
            out: Outgoing = e.obj
            ctx.emit("send", e.label, out.start, out.done_at or ctx.now(), nbytes=out.nbytes,
                     iteration=e.iteration, peer=out.dst, meta={"nb": True})
        else:
            run: Running = e.obj
            ctx.emit(run.op.op, e.label, run.start, run.done_at or ctx.now(),
                     nbytes=run.op.nbytes, iteration=e.iteration, meta=run.meta)

    def _settle(self) -> None:
        """After the generator: complete leftovers, then keep filing incoming messages until
        every rank is done, so no sender waits forever for a receive that never comes."""
        for e in list(self._pending.values()):
            if e.kind in ("send", "coll", "compute"):
                self._complete(e)
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self.ctx.state.set("comm", "final drain")
        barrier = self.p2p.comm.Ibarrier()
        while not barrier.Test():
            if not self.p2p.drain():
                time.sleep(1e-4)  # others may still be timing: do not hog a core
        self.p2p.drain()
        self.unreceived = len(self.p2p.mailbox)
        self.ctx.state.set("run")

    def close(self) -> None:
        self.colls.free()
        self.p2p.free()


def _inject(fault: str) -> None:
    inject_fault(fault, "interpreter")
