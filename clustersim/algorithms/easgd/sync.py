"""Sync EASGD: the elastic exchange of all workers at once, as one collective (deterministic).

You, Buluc and Demmel (SC17) replace the master's one-worker-at-a-time exchanges by a
collective: every ``tau`` local steps all workers sum their weights in a tree, the centre
moves by ``x~ <- (1 - beta) x~ + beta mean_i x_i`` (Zhang et al.'s synchronous form,
``beta = p alpha``) and every worker is pulled towards the old centre by ``alpha``.  The centre
is kept on every worker (each applies the same update to the same sum), so no master is
needed, and the result does not depend on timing: same inputs, same numbers - the algorithm is
deterministic, unlike its asynchronous cousins.

Two ways to run the collective (``collective``):

``allreduce``         one all-reduce of the weights (any allreduce algorithm; ``allreduce``
                      names it), then every worker updates its copy of the centre and itself;
``reduce_broadcast``  a reduce to worker 0, which updates the centre, then a broadcast of the
                      centre (``reduce``/``broadcast`` name the algorithms) - the master-style
                      form, with the centre in one place.

Either way a worker moves ``n`` bytes (its weights) per exchange, as in the asynchronous
variants; what changes is that the exchanges of all workers share a tree instead of queueing
at one master.

Real math (``ctx.math``, :mod:`clustersim.algorithms.proxy`): the local steps train each
replica; the collective carries the weights (``data``); the centre moves by
:func:`~clustersim.algorithms.easgd.common.sync_centre` with ``beta = p * alpha`` and every
worker is pulled towards the *old* centre by ``alpha``.  In ``reduce_broadcast`` the root keeps
the centre and broadcasts the old one, so both forms compute the same numbers (up to the
order of the fp32 sum).  Same operations as the timing-only path, plus ``fn``/``data``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from clustersim.algorithms.base import (
    ActorContext,
    ActorSpec,
    AlgorithmDef,
    JobInfo,
    Param,
    iteration_marks,
    shared_ops,
)
from clustersim.algorithms.easgd.common import (
    COMMON_PARAMS,
    YOU,
    ZHANG,
    elastic_exchange,
    local_step,
    moving_rate,
    sync_centre,
    validate_rates,
)
from clustersim.algorithms.ops import (
    ActorGen,
    AllReduce,
    Broadcast,
    Compute,
    Op,
    Record,
    Reduce,
)
from clustersim.algorithms.proxy import attach
from clustersim.errors import unknown_name

__all__ = ["sync_worker", "SYNC"]


def sync_worker(ctx: ActorContext) -> ActorGen:
    """A worker: ``tau`` local steps, then its part of the collective exchange (operations
    shared by the workers; in ``reduce_broadcast`` the root's also move the centre).  With
    ``ctx.math``: :func:`_sync_worker_math`."""
    if ctx.math is not None:
        yield from _sync_worker_math(ctx)
        return
    job = ctx.job
    p = ctx.params
    tau = p["tau"]
    exchange = _exchange_ops(job.grad_bytes, p["collective"], p["allreduce"], p["reduce"],
                             p["broadcast"], ctx.rank == 0)
    step = local_step(False)
    marks = iteration_marks(job.iterations)
    for it in range(job.iterations):
        yield marks[it]
        for op in step:  # noqa: UP028 - yield from a tuple breaks on a non-None send()
            yield op
        if (it + 1) % tau == 0:
            for op in exchange:  # noqa: UP028 - as above
                yield op


def _exchange_ops(nbytes: float, collective: str, allreduce: str, reduce: str, broadcast: str,
                  root: bool) -> tuple[Op, ...]:
    """A worker's operations of one synchronous exchange, shared by every worker of the job
    (and by the sweep's other points of the same size; see ``shared_ops``)."""

    def build() -> tuple[Op, ...]:
        if collective == "allreduce":
            # every worker moves its copy of the centre and itself: two buffers written
            return (AllReduce(nbytes, algorithm=allreduce, label="sum of weights"),
                    Compute("elastic", nbytes=nbytes, label="centre and elastic pull"))
        # the root moves the centre, every worker pulls itself: one buffer written each
        ops: tuple[Op, ...] = (Reduce(nbytes, root=0, algorithm=reduce, label="sum of weights"),)
        if root:
            ops += (Compute("accumulate", nbytes=nbytes, label="centre update"),)
        return ops + (Broadcast(nbytes, root=0, algorithm=broadcast, label="centre"),
                      Compute("accumulate", nbytes=nbytes, label="elastic pull"))

    key = (nbytes, collective, allreduce, reduce, broadcast, root)
    return shared_ops(_EXCHANGES, key, build)


#: (bytes, collective, algorithms, root?) -> a worker's exchange operations
_EXCHANGES: dict[tuple, tuple[Op, ...]] = {}


def _sync_worker_math(ctx: ActorContext) -> ActorGen:
    """:func:`sync_worker` with the proxy model's math (see the module docstring)."""
    job = ctx.job
    p = ctx.params
    m = ctx.math
    tau, nbytes, workers = p["tau"], job.grad_bytes, job.workers
    alpha = moving_rate(p, workers)
    beta = workers * alpha
    centre = m.params()  # every worker's copy (allreduce) or the root's (reduce_broadcast)
    # where an observer finds the centre and how often it moved (the convergence emulation's
    # reference model: clustersim.sim.emulate)
    m.centre, m.centre_moves = centre, 0
    forward, backward, update = local_step(False)
    forward, backward = replace(forward, fn=m.forward), replace(backward, fn=m.backward)
    read: list[np.ndarray] = []  # the centre before the root moved it (reduce_broadcast)

    def pull(old: np.ndarray) -> np.ndarray:
        return m.load(elastic_exchange(m.weights, np.asarray(old, dtype=centre.dtype),
                                       alpha)[0])

    def move_and_pull(total: np.ndarray) -> np.ndarray:
        old = centre.copy()
        centre[...] = sync_centre(old, (np.asarray(total) / workers)[None, :], beta)
        m.centre_moves += 1
        return pull(old)

    def move(total: np.ndarray) -> np.ndarray:
        read.append(centre.copy())
        centre[...] = sync_centre(read[-1], (np.asarray(total) / workers)[None, :], beta)
        m.centre_moves += 1
        return centre

    for it in range(job.iterations):
        yield Record("iteration", it)
        yield forward
        grad = yield backward
        yield replace(update, fn=m.step, data=grad)
        if (it + 1) % tau != 0:
            continue
        if p["collective"] == "allreduce":
            total = yield AllReduce(nbytes, algorithm=p["allreduce"], label="sum of weights",
                                    data=m.params())
            yield attach(Compute("elastic", nbytes=nbytes, label="centre and elastic pull"),
                         move_and_pull, total)
        else:
            total = yield Reduce(nbytes, root=0, algorithm=p["reduce"], label="sum of weights",
                                 data=m.params())
            if ctx.rank == 0:
                yield attach(Compute("accumulate", nbytes=nbytes, label="centre update"), move,
                             total)
            # the root sends the centre it read; the others pass a buffer to receive into
            send = (read.pop() if read else centre.copy()) if ctx.rank == 0 else \
                np.zeros_like(centre)
            old = yield Broadcast(nbytes, root=0, algorithm=p["broadcast"], label="centre",
                                  data=send)
            yield attach(Compute("accumulate", nbytes=nbytes, label="elastic pull"), pull, old)


def _validate(params: dict, path: tuple) -> None:
    from clustersim.collectives import list_algorithms

    validate_rates(params, path)
    known = list_algorithms()
    for key, op in (("allreduce", "allreduce"), ("reduce", "reduce"),
                    ("broadcast", "broadcast")):
        if params[key] not in known[op]:
            raise unknown_name(f"{op} algorithm", str(params[key]), known[op],
                               path=(*path, key))


def _actors(job: JobInfo) -> list[ActorSpec]:
    return [ActorSpec(w, "worker", w, sync_worker) for w in range(job.workers)]


SYNC = AlgorithmDef(
    name="sync_easgd",
    family="sync",
    convergence="elastic",
    summary="Sync EASGD: every tau steps one collective sums all workers' weights and moves "
            "the centre (deterministic)",
    params={
        **COMMON_PARAMS,
        "collective": Param("allreduce", "allreduce (centre kept on every worker) or "
                            "reduce_broadcast (centre on worker 0)", YOU, kind=str,
                            choices=("allreduce", "reduce_broadcast")),
        "allreduce": Param("binomial_tree", "allreduce algorithm (collective: allreduce); "
                           "the default is the tree reduction-and-broadcast the paper "
                           "describes", YOU, kind=str),
        "reduce": Param("binomial", "reduce algorithm (collective: reduce_broadcast)", YOU,
                        kind=str),
        "broadcast": Param("binomial", "broadcast algorithm (collective: reduce_broadcast)",
                           YOU, kind=str),
    },
    actors=_actors,
    validate=_validate,
    source=f"{YOU}; synchronous EASGD update from {ZHANG}",
)
