"""EASGD with a master that holds the centre: original (round-robin), Async, Async M, Hogwild.

Actors: workers ``0..p-1`` and one master, rank ``p``.  Every ``tau`` local steps a worker
takes part in one elastic exchange with the master:

    worker                                     master
    ------                                     ------
    Send REQUEST (header only)    ------->     picks the next worker to serve
                                  <-------     Send GO
    Send PUSH (its weights x_i, n B) ----->     centre update  x~ += alpha (x_i - x~)
                                  <-------     Send CENTRE (n bytes)
    elastic pull  x_i -= alpha (x_i - x~)

The four variants differ only in how the master picks, applies and answers (You, Buluc,
Demmel, SC17):

``easgd_round_robin``  The original EASGD (Zhang et al.'s implementation): the master serves
    worker 0, then 1, ..., p-1, then 0 again with blocking calls, waiting for the next rank
    even if another worker is ready first - so workers queue behind each other and one slow
    worker stalls all.  Per exchange the master is busy for GO + push + update + reply.
``async_easgd``        The master serves whichever worker's request came first (FIFO) and
    applies updates one at a time (a lock on the centre).  It is engineered for HPC as a
    parameter server is: before an update it checks for a waiting request (a polling
    receive) and lets that worker's weights flow into a second buffer during the update, and
    it answers with a non-blocking send - so the network and the update overlap.
``async_measgd``       Async EASGD whose workers take Nesterov-momentum local steps (EAMSGD).
``hogwild_easgd``      FIFO, but the centre is updated without a lock: the master sends the
    centre as it is and starts the update *beside* its receive loop (``Compute(blocking=
    False)`` and a non-blocking send), so updates overlap the next transfers and a worker may
    read a centre that is half updated - Hogwild's lock-free threads.  The master's memory
    still applies one update's bytes at a time (a new update waits for the previous one):
    the simulator does not share a device among concurrent computations, so N updates side by
    side would invent N times the memory bandwidth (the reasoning of ``hogwild_sgd`` in
    :mod:`clustersim.algorithms.ps`).

Why the REQUEST/GO handshake: it is MPI's rendezvous protocol for large messages written out.
The weights of the worker being served are the only large message on the master's link, so
the master decides the order and carries one exchange at a time, as a master does that posts
one receive after another (a round-robin ``MPI_Recv(src=w)`` or ``MPI_Recv(MPI_ANY_SOURCE)``).
Without it every worker's weights would stream into the master at once and share its link.

Costs: the centre update and the worker's pull are one-sided elementwise updates (read two
buffers, write one), costed as ``accumulate`` over the weights; the two-sided ``elastic``
phase (both copies written) is what Sync EASGD's workers do.

Metrics the master records: ``Record("update", 1)`` per applied update and
``Record("staleness", v)`` with ``v`` = centre updates by *other* workers between this
worker's last read of the centre and its write (``p - 1`` in every round-robin round after the
first).  Each worker does ``iterations // tau`` exchanges; the master serves exactly
``p * (iterations // tau)`` and stops, so a real backend ends too.

Real math (``ctx.math``, :mod:`clustersim.algorithms.proxy`): a worker's local steps train its
replica (SGD; Nesterov momentum in Async MEASGD, ``ProxyModel.velocity``/``nesterov_step``),
its push carries ``x_i``, the master moves the centre ``x~ += alpha (x_i - x~)`` in its update
and answers with the centre *as that exchange read it* (before the move), and the worker's
elastic pull applies ``x_i -= alpha (x_i - x~)`` - together Zhang et al.'s symmetric exchange
(:func:`~clustersim.algorithms.easgd.common.elastic_exchange`: ``x_i + x~`` is conserved).  In
Hogwild EASGD the centre goes out as it is while an earlier update may still be running beside
the loop (on the real backend: a torn read, as in Hogwild).  The operations are those of the
timing-only path; only ``fn``/``data`` are added.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from clustersim.algorithms.base import (
    ActorContext,
    ActorSpec,
    AlgorithmDef,
    JobInfo,
    iteration_marks,
    shared_ops,
)
from clustersim.algorithms.easgd.common import (
    COMMON_PARAMS,
    MOMENTUM_PARAM,
    TAG_CENTRE,
    TAG_GO,
    TAG_PUSH,
    TAG_REQUEST,
    YOU,
    ZHANG,
    elastic_exchange,
    exchanges,
    local_step,
    moving_rate,
    validate_rates,
)
from clustersim.algorithms.ops import ANY, ActorGen, Compute, Handle, Record, Recv, Send, Wait
from clustersim.algorithms.proxy import attach

__all__ = ["VARIANTS", "master_worker", "master_server", "ROUND_ROBIN", "ASYNC", "ASYNC_M",
           "HOGWILD"]

#: variant -> (serving order, answer without waiting, lock-free update, momentum local steps)
VARIANTS: dict[str, tuple[str, bool, bool, bool]] = {
    "easgd_round_robin": ("rank", False, False, False),
    "async_easgd": ("fifo", True, False, False),
    "async_measgd": ("fifo", True, False, True),
    "hogwild_easgd": ("fifo", True, True, False),
}


def _exchange_ops(job: JobInfo) -> tuple[Send, Recv, Send, Recv, Compute]:
    """A worker's side of one elastic exchange with the master (rank ``p``): ready, go, push,
    centre, pull - shared by the timing-only and the math paths.

    Built once per job and shared by every worker: operations are immutable, and 4,253
    workers each building five frozen dataclasses cost more than their first iteration to
    simulate (the engine also memoises costs and routes by operation identity)."""
    master = job.workers
    return shared_ops(_EXCHANGE_OPS, (job.workers, job.grad_bytes), lambda: (
        Send(master, 0.0, tag=TAG_REQUEST, label="ready"),
        Recv(src=master, tag=TAG_GO, label="wait for master"),
        Send(master, job.grad_bytes, tag=TAG_PUSH, label="push weights"),
        Recv(src=master, tag=TAG_CENTRE, label="centre"),
        Compute("accumulate", nbytes=job.grad_bytes, label="elastic pull")))



#: (master rank, weights bytes) -> a worker's exchange operations (see :func:`_exchange_ops`)
_EXCHANGE_OPS: dict[tuple[int, float], tuple[Send, Recv, Send, Recv, Compute]] = {}


class _PerWorker:
    """The master's operations that name one worker, built on first use and reused by every
    later exchange with it (an exchange would otherwise build three or four frozen
    dataclasses; the master is the bottleneck actor of every master-based point).  They
    depend on the worker and the weights' size only, so one set per size serves every
    master of a sweep (:meth:`of`)."""

    __slots__ = ("nbytes", "request", "go", "go_async", "push", "push_serving", "centre",
                 "centre_async", "staleness")

    def __init__(self, nbytes: float) -> None:
        self.nbytes = nbytes
        self.request: dict[int, Recv] = {}
        self.go: dict[int, Send] = {}
        self.go_async: dict[int, Send] = {}
        self.push: dict[int, Recv] = {}
        self.push_serving: dict[int, Recv] = {}
        self.centre: dict[int, Send] = {}
        self.centre_async: dict[int, Send] = {}
        self.staleness: dict[int, Record] = {}

    @classmethod
    def of(cls, nbytes: float) -> _PerWorker:
        """The shared set for weights of ``nbytes``."""
        return shared_ops(_PER_WORKER, nbytes, lambda: cls(nbytes), 16)

    def get_request(self, w: int) -> Recv:
        op = self.request.get(w)
        if op is None:
            op = self.request[w] = Recv(src=w, tag=TAG_REQUEST, label="request")
        return op

    def get_go(self, w: int, blocking: bool = True) -> Send:
        ops = self.go if blocking else self.go_async
        op = ops.get(w)
        if op is None:
            op = ops[w] = Send(w, 0.0, tag=TAG_GO, blocking=blocking, label="go")
        return op

    def get_push(self, w: int, serving: bool = False) -> Recv:
        """Worker ``w``'s weights; ``serving``: the master sits through their transfer at
        any load (``Recv.serving``), as a master without a prefetch does."""
        ops = self.push_serving if serving else self.push
        op = ops.get(w)
        if op is None:
            op = ops[w] = Recv(src=w, tag=TAG_PUSH, label="weights", serving=serving)
        return op

    def get_centre(self, w: int, blocking: bool) -> Send:
        ops = self.centre if blocking else self.centre_async
        op = ops.get(w)
        if op is None:
            op = ops[w] = Send(w, self.nbytes, tag=TAG_CENTRE, blocking=blocking,
                               label="centre")
        return op

    def get_staleness(self, v: int) -> Record:
        op = self.staleness.get(v)
        if op is None:
            op = self.staleness[v] = Record("staleness", v)
        return op


def master_worker(ctx: ActorContext, variant: str) -> ActorGen:
    """A worker: ``tau`` local steps, then one elastic exchange with the master."""
    if ctx.math is not None:
        yield from _master_worker_math(ctx, variant)
        return
    job = ctx.job
    tau = ctx.params["tau"]
    ready, go, push, centre, pull = _exchange_ops(job)
    step = local_step(VARIANTS[variant][3])
    marks = iteration_marks(job.iterations)
    for it in range(job.iterations):
        yield marks[it]
        for op in step:  # noqa: UP028 - yield from a tuple breaks on a non-None send()
            yield op
        if (it + 1) % tau == 0:
            yield ready
            yield go
            yield push
            yield centre
            yield pull


def master_server(ctx: ActorContext, variant: str) -> ActorGen:
    """The master: serve ``p * exchanges`` requests in rank order or first come first served.

    With ``ctx.math`` the push's weights move the centre (:func:`_centre_move`) and the
    answer carries the centre the exchange read.
    """
    job = ctx.job
    order, async_reply, lock_free, _ = VARIANTS[variant]
    prefetch = order == "fifo" and not lock_free
    p = job.workers
    nbytes = job.grad_bytes
    total = p * exchanges(job.iterations, ctx.params["tau"])
    last_read = [0] * p  # centre version (updates applied so far) each worker last received
    replies: dict[int, Handle] = {}
    updating: Handle | None = None
    next_worker: int | None = None  # a worker told "go" during the previous update
    next_go: Handle | None = None
    any_request = Recv(src=ANY, tag=TAG_REQUEST, label="next request")
    waiting = Recv(src=ANY, tag=TAG_REQUEST, poll=True, label="anyone ready?")
    update = Compute("accumulate", nbytes=nbytes, blocking=not lock_free,
                     label="centre update" + (" (no lock)" if lock_free else ""))
    applied = Record("update", 1)
    m = ctx.math
    move = None if m is None else _centre_move(m, moving_rate(ctx.params, p))
    ops = _PerWorker.of(nbytes)
    for k in range(total):
        prefetched = next_worker is not None  # told "go" during the previous update
        if order == "rank":
            w = k % p
            yield ops.get_request(w)
            yield ops.get_go(w)
        elif next_worker is None:
            w = (yield any_request).src
            yield ops.get_go(w)
        else:
            w, next_worker = next_worker, None
            yield Wait(next_go)
        prev = replies.pop(w, None)
        if prev is not None:
            yield Wait(prev)  # the worker asked again, so it has the last answer: no wait
        # without a prefetch (round-robin, Hogwild) the master waits out the transfer of the
        # weights at any load: service time (Recv.serving); with one, a busy master takes
        # them in during its previous update, so a wait here for a worker found at the
        # request is waiting for work - but a wait for a push it prefetched (told "go"
        # during the update) is the part of that transfer the update did not cover, and
        # the master serves nobody else meanwhile: service time too.  Without it a master
        # whose pushes take longer than its update (a torus host's 25 Gb/s link: 32.7 ms
        # against ~7 ms) read 7.6 ms per update and 23 % busy while saturated (audit D)
        pushed = yield ops.get_push(w, serving=not prefetch or prefetched)
        yield ops.get_staleness(k - last_read[w])  # k updates were applied before this one
        if prefetch and k + 1 < total:
            # double-buffered receive: a worker already waiting may push during the update
            # (into another buffer - the lock guards the centre, not the receive)
            msg = yield waiting
            if msg is not None:
                next_worker = msg.src
                next_go = yield ops.get_go(next_worker, blocking=False)
        if lock_free:
            # the centre goes out as it is (no lock) while the update runs beside the loop
            centre = ops.get_centre(w, blocking=False)
            replies[w] = yield (centre if m is None else replace(centre, data=m.params()))
            if updating is not None:
                yield Wait(updating)
            updating = yield update if m is None else attach(update, move, pushed.data)
        else:
            read = None if m is None else m.params()  # the centre this exchange reads
            yield update if m is None else attach(update, move, pushed.data)
            centre = ops.get_centre(w, blocking=not async_reply)
            if m is not None:
                centre = replace(centre, data=read)
            if async_reply:
                replies[w] = yield centre
            else:
                yield centre
        yield applied
        last_read[w] = k + 1
    pending = list(replies.values()) + ([updating] if updating is not None else [])
    if pending:
        yield Wait(pending)


# -- the proxy model's math (ctx.math) -------------------------------------------------------
def _centre_move(m: Any, alpha: float) -> Callable[[np.ndarray], np.ndarray]:
    """The master's update as a ``Compute`` fn: ``x~ += alpha (x_i - x~)`` for pushed ``x_i``
    (counted in ``m.steps``)."""

    def move(x: np.ndarray) -> np.ndarray:
        _, centre = elastic_exchange(np.asarray(x, dtype=m.weights.dtype), m.weights, alpha)
        m.load(centre)
        m.steps += 1
        return m.weights

    return move


def _master_worker_math(ctx: ActorContext, variant: str) -> ActorGen:
    """:func:`master_worker` with the proxy model's math: local SGD (or Nesterov) steps on the
    worker's replica, the push carries its weights, the pull moves them towards the centre the
    master answered with."""
    job = ctx.job
    tau = ctx.params["tau"]
    m = ctx.math
    alpha = moving_rate(ctx.params, job.workers)
    momentum = VARIANTS[variant][3]
    delta = float(ctx.params["momentum"]) if momentum else 0.0
    ready, go, push, centre, pull = _exchange_ops(job)
    forward, backward, *rest = local_step(momentum)
    forward, backward = replace(forward, fn=m.forward), replace(backward, fn=m.backward)
    if momentum:  # (momentum pass, update): b <- delta b + g, then w -= lr (g + delta b)
        fns = (partial(m.velocity, mu=delta), partial(m.nesterov_step, mu=delta))
    else:
        fns = (m.step,)

    def pull_fn(c: np.ndarray) -> np.ndarray:
        return m.load(elastic_exchange(m.weights, np.asarray(c, dtype=m.weights.dtype),
                                       alpha)[0])

    for it in range(job.iterations):
        yield Record("iteration", it)
        yield forward
        grad = yield backward
        for op, fn in zip(rest, fns):
            yield replace(op, fn=fn, data=grad)
        if (it + 1) % tau == 0:
            yield ready
            yield go
            yield replace(push, data=m.params())
            msg = yield centre
            yield attach(pull, pull_fn, msg.data)


def _definition(name: str, summary: str, source: str) -> AlgorithmDef:
    def worker(ctx: ActorContext) -> ActorGen:
        return master_worker(ctx, name)

    def server(ctx: ActorContext) -> ActorGen:
        return master_server(ctx, name)

    def actors(job: JobInfo) -> list[ActorSpec]:
        specs = [ActorSpec(w, "worker", w, worker) for w in range(job.workers)]
        specs.append(ActorSpec(job.workers, "server", 0, server))
        return specs

    params = dict(COMMON_PARAMS)
    if VARIANTS[name][3]:
        params["momentum"] = MOMENTUM_PARAM
    return AlgorithmDef(name=name, family="async", convergence="elastic", summary=summary,
                        params=params, actors=actors, servers=lambda _params: 1, validate=validate_rates,
                        source=source)


ROUND_ROBIN = _definition(
    "easgd_round_robin",
    "original EASGD: every tau steps an elastic exchange with one master that serves the "
    "workers in rank order (workers queue)", f"{ZHANG}; ordering as described by {YOU}")
ASYNC = _definition(
    "async_easgd",
    "Async EASGD: elastic exchange with a master that serves whichever worker is ready "
    "(FIFO), one update at a time", YOU)
ASYNC_M = _definition(
    "async_measgd",
    "Async MEASGD: Async EASGD with Nesterov-momentum local steps (EAMSGD)",
    f"{YOU}; EAMSGD from {ZHANG}")
HOGWILD = _definition(
    "hogwild_easgd",
    "Hogwild EASGD: FIFO master that updates the centre without a lock (updates overlap)",
    YOU)


#: weights bytes -> the masters' per-worker operations (see :class:`_PerWorker`)
_PER_WORKER: dict[float, _PerWorker] = {}
