"""The operation vocabulary: what a training actor *does*, as plain data.

An algorithm is written once, as one generator per actor (worker, server) that yields these
operations and receives their results through ``send()``:

    def worker(ctx):
        for it in range(ctx.iterations):
            yield Compute("forward")
            yield Compute("backward")
            yield AllReduce(ctx.grad_bytes)
            yield Compute("update")

The simulated backend turns each operation into SimPy events whose duration comes from the
platform and compute models; the real backend (``realrun``) performs it with MPI and arrays
and measures it.  Neither simpy nor mpi4py is imported here or by any algorithm ("sans-IO"),
which is also what makes algorithms unit-testable by driving the generator by hand
(:func:`drive`).

Conventions
-----------
* Ranks are *actor* ranks (0..world-1), not devices; the backend places actors on devices.
* ``blocking=False`` makes an operation return a :class:`Handle` at once; a later
  ``Wait(handles)`` returns their results in order.  That is how communication overlaps the
  backward pass (start an all-reduce per gradient bucket, wait before the update).
* ``data`` carries real arrays when the math is run (real backend always, simulator optionally);
  it is ``None`` when only time is modelled.  Sizes (``nbytes``) are always given, so time does
  not depend on whether data is present.
* A collective is matched across its ``group`` by call order (like MPI): every member must
  issue the same sequence of collectives on that group.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANY",
    "Op",
    "Compute",
    "Collective",
    "AllReduce",
    "Broadcast",
    "Reduce",
    "AllGather",
    "ReduceScatter",
    "Barrier",
    "Send",
    "Recv",
    "Message",
    "Wait",
    "Record",
    "Handle",
    "ActorGen",
    "drive",
]

ANY = -1
"""Wildcard for ``Recv(src=ANY)`` / ``Recv(tag=ANY)`` (MPI_ANY_SOURCE / MPI_ANY_TAG)."""

COMPUTE_PHASES = ("forward", "backward", "update", "elastic", "accumulate", "custom")


class Op:
    """Base class of every operation (for isinstance dispatch in the backends)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Compute(Op):
    """Local work on the actor's device.

    ``phase`` tells the backend which part of the workload to cost: ``forward``/``backward``
    (of ``layers``, a ``(start, stop)`` slice in forward order, default all), ``update`` (the
    optimizer step over ``nbytes`` of parameters, default all), ``elastic`` (an elastic-average
    update over ``nbytes``), ``accumulate`` (sum a received gradient into a buffer).  ``custom``
    needs ``seconds`` or ``flops``.  ``seconds`` overrides the model (tests, synthetic work).
    ``fn`` is the math to run on real arrays (the real backend, or the simulator with math on):
    it is called with ``data`` and its return value is the operation's result.
    ``blocking=False`` returns a :class:`Handle` at once (work that runs beside the actor, e.g.
    lock-free Hogwild updates on a many-core server).
    """

    phase: str = "custom"
    layers: tuple[int, int] | None = None
    nbytes: float | None = None
    flops: float | None = None
    seconds: float | None = None
    label: str = ""
    blocking: bool = True
    fn: Callable[..., Any] | None = field(default=None, compare=False)
    data: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.phase not in COMPUTE_PHASES:
            raise ValueError(f"unknown compute phase {self.phase!r}; allowed: {COMPUTE_PHASES}")
        if self.phase == "custom" and self.seconds is None and self.flops is None:
            raise ValueError("Compute('custom') needs seconds= or flops=")


@dataclass(frozen=True, slots=True)
class Collective(Op):
    """A collective over ``group`` (actor ranks; ``None`` = all workers).

    ``op`` is a collective name of :mod:`clustersim.collectives` (allreduce, broadcast, reduce,
    allgather, reduce_scatter, alltoall, barrier); ``algorithm`` picks its schedule (``None``:
    the scenario's default).  ``fp16`` halves the bytes and adds the cast cost.  ``staged``:
    the data passes through host memory (a device->host copy before and a host->device copy
    after, over the device's own link), as MPI without CUDA-awareness or Theano-MPI's ``ar``.
    """

    op: str
    nbytes: float = 0.0
    group: tuple[int, ...] | None = None
    algorithm: str | None = None
    root: int = 0
    fp16: bool = False
    staged: bool = False
    blocking: bool = True
    label: str = ""
    data: Any = field(default=None, compare=False)


def AllReduce(nbytes: float, **kw: Any) -> Collective:  # noqa: N802 - reads like an op name
    """Sum ``nbytes`` across the group, result on every member."""
    return Collective("allreduce", nbytes, **kw)


def Broadcast(nbytes: float, root: int = 0, **kw: Any) -> Collective:  # noqa: N802
    """Copy ``root``'s ``nbytes`` to every member of the group."""
    return Collective("broadcast", nbytes, root=root, **kw)


def Reduce(nbytes: float, root: int = 0, **kw: Any) -> Collective:  # noqa: N802
    """Sum ``nbytes`` across the group, result on ``root`` only."""
    return Collective("reduce", nbytes, root=root, **kw)


def AllGather(nbytes: float, **kw: Any) -> Collective:  # noqa: N802
    """Every member ends with all members' blocks; ``nbytes`` is the whole gathered buffer
    (``nbytes / p`` from each, as nccl-tests counts it)."""
    return Collective("allgather", nbytes, **kw)


def ReduceScatter(nbytes: float, **kw: Any) -> Collective:  # noqa: N802
    """Sum the members' ``nbytes`` buffers, each member keeping one ``nbytes / p`` block of the
    result (``nbytes``: the whole buffer, as nccl-tests counts it)."""
    return Collective("reduce_scatter", nbytes, **kw)


def Barrier(**kw: Any) -> Collective:  # noqa: N802
    """Wait until every member of the group has arrived (a collective of 0 bytes)."""
    return Collective("barrier", 0.0, **kw)


@dataclass(frozen=True, slots=True)
class Send(Op):
    """Point-to-point message of ``nbytes`` to actor ``dst``.

    Blocking sends complete when the message has arrived (rendezvous semantics: that is what a
    large MPI message does, and parameter-server pushes are large).
    """

    dst: int
    nbytes: float
    tag: int = 0
    blocking: bool = True
    label: str = ""
    data: Any = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Recv(Op):
    """Receive the next message matching ``src``/``tag`` (``ANY`` = wildcard).

    Returns a :class:`Message`.  Messages from one sender arrive in the order sent.
    ``poll=True`` takes a matching message only if one has already arrived and returns
    ``None`` at once otherwise (MPI_Iprobe, then MPI_Recv): how gossip workers merge whatever
    their peers pushed at an iteration boundary without waiting for anyone.

    ``serving=True`` marks a blocking receive that is part of an exchange the receiver is
    already serving and cannot overlap with anything else: a master that told one worker
    "go" and sits through the transfer of its weights.  Time blocked in any other receive
    of a server is waiting for work (a request or a push that has not come, or one that a
    busier master would have taken in during its previous update); the simulator counts
    the marked time apart (``ActorStats.records["serving"]``) so that the master's service
    time counts it as busy (:func:`clustersim.sim.metrics.master_service_time`).  It
    changes nothing else: when the message arrives, and what the receive returns.
    """

    src: int = ANY
    tag: int = ANY
    blocking: bool = True
    label: str = ""
    poll: bool = False
    serving: bool = False


@dataclass(frozen=True, slots=True)
class Message:
    """What ``Recv`` returns."""

    src: int
    tag: int
    nbytes: float
    data: Any = None
    sent_at: float = 0.0


@dataclass(frozen=True, slots=True)
class Handle:
    """Returned by non-blocking operations; pass to :class:`Wait`."""

    id: int


@dataclass(frozen=True, slots=True)
class Wait(Op):
    """Block until all ``handles`` complete; returns their results as a list."""

    handles: tuple[Handle, ...]

    def __init__(self, handles: Handle | Sequence[Handle]) -> None:
        hs = (handles,) if isinstance(handles, Handle) else tuple(handles)
        object.__setattr__(self, "handles", hs)


@dataclass(frozen=True, slots=True)
class Record(Op):
    """Record a named metric sample (e.g. staleness) in the trace; takes no time."""

    key: str
    value: float


ActorGen = Generator[Op, Any, Any]


def drive(gen: ActorGen, respond: Callable[[Op], Any], limit: int = 1_000_000) -> list[Op]:
    """Run an actor generator by hand: each yielded op is answered by ``respond(op)``.

    For unit tests of algorithms: no simulator, no MPI - just check who sends what to whom.
    Returns the list of operations in the order they were yielded.
    """
    ops: list[Op] = []
    try:
        op = next(gen)
        while True:
            ops.append(op)
            if len(ops) > limit:
                raise RuntimeError(f"actor yielded more than {limit} operations")
            op = gen.send(respond(op))
    except StopIteration:
        pass
    return ops
