"""Synchronous data parallelism (BSP) with Theano-MPI's exchange strategies.

Every worker computes forward and backward on its own mini-batch, the workers exchange, and
every worker applies the same update.  Two exchange modes (Theano-MPI supports both):

* ``gradients``: all-reduce the gradients every iteration (optionally per bucket, overlapped
  with the rest of the backward pass - PyTorch DDP's scheme), then update;
* ``weights``: every worker updates locally and every ``every`` iterations the weights are
  averaged with an all-reduce (model averaging; Theano-MPI's "avg" rule).

Theano-MPI strategies (Ma, Mao, Taylor 2016, arXiv 1605.08325; docs/references.md):

=========  =====================================================================
ar         MPI_Allreduce through host memory, barrier first (device->host copy,
           allreduce among hosts, host->device copy)
asa32/16   alltoall-sum-allgather per tensor, as CUDA-aware Open MPI 1.8 ran it:
           MPI_Alltoall by pairwise exchange, local sum, MPI_Allgather by ring
           (``asa_ompi``); fp16 variant casts before sending.  ``asa32_direct`` /
           ``asa16_direct``: the earlier model, both phases as one all-at-once exchange
copper     hand-fitted binary tree matching the node's PCIe/socket layout
nccl32/16  NCCL all-reduce inside a node (ring), fp16 variant casts first
=========  =====================================================================

Any allreduce algorithm of :mod:`clustersim.collectives` may be named instead.

Real math (``ctx.math``, :mod:`clustersim.algorithms.proxy`): when a backend passes the proxy
model, the same operations carry it - the backward pass returns the gradient, the all-reduce
sums it (per bucket: the gradient cut into as many pieces), the update applies the mean; in
weight averaging the local step uses the worker's own gradient and the average replaces the
weights.  The operation sequence (kinds, labels, sizes) is the same with and without math,
plus one ``Record("loss")`` per iteration and, when gradients are exchanged, the two squared
norms the gradient noise scale is estimated from (McCandlish et al. 2018, arXiv 1812.06162;
:mod:`clustersim.convergence.noise_scale`): ``Record("grad_sq_local")``, the worker's own
gradient's, and ``Record("grad_sq_mean")``, the all-reduced mean gradient's.  Records take no
time in the simulator, so the timing is unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np

from clustersim.algorithms.base import ActorContext, ActorSpec, AlgorithmDef, JobInfo, Param
from clustersim.algorithms.ops import ActorGen, AllReduce, Barrier, Compute, Record, Wait
from clustersim.errors import unknown_name

__all__ = ["STRATEGIES", "strategy_collective", "bsp_worker", "BSP"]

#: Theano-MPI strategy -> (allreduce algorithm, fp16, staged through host memory, barrier first)
STRATEGIES: dict[str, tuple[str, bool, bool, bool]] = {
    "ar": ("rabenseifner", False, True, True),
    "asa32": ("asa_ompi", False, False, False),
    "asa16": ("asa_ompi", True, False, False),
    "asa32_direct": ("asa", False, False, False),
    "asa16_direct": ("asa", True, False, False),
    "copper": ("copper", False, False, False),
    # Theano-MPI ran NCCL 1.x, which had rings only ("nccl" is now NCCL 2.x's own choice)
    "nccl32": ("ring", False, False, False),
    "nccl16": ("ring", True, False, False),
}


def strategy_collective(strategy: str) -> tuple[str, bool, bool, bool]:
    """(algorithm, fp16, staged, barrier) for a Theano-MPI strategy or an algorithm name."""
    if strategy in STRATEGIES:
        return STRATEGIES[strategy]
    return (strategy, False, False, False)


def bsp_worker(ctx: ActorContext, ops: _WorkerOps | None = None) -> ActorGen:
    """A BSP worker.  ``ops``: the timing-only operations, when the caller built them once
    for all workers of the job (:func:`_actors` does; they are equal either way)."""
    if ctx.math is not None:
        return _bsp_math_worker(ctx)
    return _bsp_worker(ctx, ops if ops is not None else _WorkerOps(ctx.job))


class _WorkerOps:
    """The operations of a timing-only BSP worker, the same for every worker of a job.

    Operations are immutable, so they are built once per job and yielded by every worker at
    every iteration: a 1,024-worker point would otherwise build ~10 operations per worker
    and one ``Record`` per worker and iteration, and the simulator costs an operation by
    identity, once.
    """

    def __init__(self, job: JobInfo) -> None:
        p = job.params
        alg, fp16, staged, barrier = strategy_collective(p["strategy"])
        fp16 = fp16 or p["fp16"]
        kw = {"algorithm": alg, "fp16": fp16, "staged": staged}
        self.gradients = p["exchange"] == "gradients"
        self.every = p["every"]
        self.overlap = p["overlap"] and len(job.buckets) > 1
        self.forward, self.update = Compute("forward"), Compute("update")
        self.backward = Compute("backward")
        self.bucket_ops = tuple((Compute("backward", layers=(lo, hi)),
                                 AllReduce(nbytes, blocking=not self.overlap, **kw))
                                for lo, hi, nbytes in job.buckets)
        self.average = (AllReduce(job.grad_bytes, **kw),
                        Compute("elastic", nbytes=job.grad_bytes, label="average"))
        self.bar = Barrier() if barrier else None
        self.iteration = tuple(Record("iteration", it) for it in range(job.iterations))


def _bsp_worker(ctx: ActorContext, ops: _WorkerOps) -> ActorGen:
    forward, update, backward = ops.forward, ops.update, ops.backward
    bucket_ops, average, bar, every = ops.bucket_ops, ops.average, ops.bar, ops.every
    for it, record in enumerate(ops.iteration):
        yield record
        yield forward
        if ops.gradients:
            if ops.overlap:
                handles = []
                for back, allreduce in bucket_ops:
                    yield back
                    handles.append((yield allreduce))
                yield Wait(handles)
            else:
                yield backward
                if bar is not None:
                    yield bar
                for _, allreduce in bucket_ops:
                    yield allreduce
            yield update
        else:
            yield backward
            yield update
            if (it + 1) % every == 0:
                if bar is not None:
                    yield bar
                yield from average


def _bsp_math_worker(ctx: ActorContext) -> ActorGen:
    """:func:`bsp_worker` with the proxy model's math attached to its operations.

    Operations are built per iteration here (their ``data`` changes); the timing-only path
    keeps reusing immutable ones.
    """
    job = ctx.job
    p = ctx.params
    m = ctx.math
    alg, fp16, staged, barrier = strategy_collective(p["strategy"])
    kw = {"algorithm": alg, "fp16": fp16 or p["fp16"], "staged": staged}
    overlap = p["overlap"] and len(job.buckets) > 1
    forward = Compute("forward", fn=m.forward)
    backward = Compute("backward", fn=m.backward)
    nb = len(job.buckets)
    for it in range(job.iterations):
        yield Record("iteration", it)
        loss = yield forward
        if p["exchange"] == "gradients":
            if overlap:
                handles, parts = [], None
                for k, (lo, hi, nbytes) in enumerate(job.buckets):
                    back = Compute("backward", layers=(lo, hi))
                    if parts is None:  # the proxy's gradient comes out of the first slice
                        grad = yield replace(back, fn=m.backward)
                        local = _sq_norm(grad)  # before the exchange touches anything
                        parts = m.split(grad, nb)
                    else:
                        yield back
                    handles.append((yield AllReduce(nbytes, blocking=False, data=parts[k],
                                                    **kw)))
                sums = yield Wait(handles)
            else:
                grad = yield backward
                local = _sq_norm(grad)
                parts = m.split(grad, nb)
                if barrier:
                    yield Barrier()
                sums = []
                for k, (_, _, nbytes) in enumerate(job.buckets):
                    sums.append((yield AllReduce(nbytes, data=parts[k], **kw)))
            total = np.concatenate(sums)
            yield Compute("update", fn=m.step_mean, data=total)
            yield Record("grad_sq_local", local)
            yield Record("grad_sq_mean", _sq_norm(total) / job.workers ** 2)
        else:
            grad = yield backward
            yield Compute("update", fn=m.step, data=grad)
            if (it + 1) % p["every"] == 0:
                if barrier:
                    yield Barrier()
                total = yield AllReduce(job.grad_bytes, data=m.params(), **kw)
                yield Compute("elastic", nbytes=job.grad_bytes, label="average", fn=m.average,
                              data=total)
        yield Record("loss", float(loss))


def _sq_norm(x: np.ndarray) -> float:
    """Squared L2 norm, accumulated in float64 (the gradients are float32)."""
    v = np.asarray(x, dtype=np.float64).reshape(-1)
    return float(v @ v)


def _validate(params: dict, path: tuple) -> None:
    from clustersim.collectives import list_algorithms

    allowed = sorted(set(STRATEGIES) | set(list_algorithms()["allreduce"]))
    if params["strategy"] not in allowed:
        # as written: unknown_name shows a non-string as YAML does (null, not 'None')
        raise unknown_name("strategy", params["strategy"], allowed, path=(*path, "strategy"))


def _actors(job: JobInfo) -> list[ActorSpec]:
    body = partial(bsp_worker, ops=_WorkerOps(job))  # built once, shared by the workers
    return [ActorSpec(w, "worker", w, body) for w in range(job.workers)]


BSP = AlgorithmDef(
    name="bsp",
    family="sync",
    summary="synchronous data parallelism: all-reduce gradients (or average weights) each step",
    params={
        "strategy": Param("ring", "Theano-MPI strategy (ar, asa32, asa16, asa32_direct, "
                          "asa16_direct, copper, nccl32, nccl16) or any allreduce algorithm "
                          "name", "Ma et al. 2016", kind=str),
        "exchange": Param("gradients", "what is exchanged: gradients every step, or weights "
                          "averaged every `every` steps", "Theano-MPI", kind=str,
                          choices=("gradients", "weights")),
        "every": Param(1, "weight averaging period (exchange: weights)", "Theano-MPI", kind=int,
                       minimum=1),
        "overlap": Param(False, "overlap per-bucket all-reduce with the backward pass (needs "
                         "workload.bucket or workload.fusion; refused without)",
                         "PyTorch DDP (Li et al., VLDB 2020)", kind=bool),
        "fp16": Param(False, "cast gradients to fp16 for the exchange (half the bytes; "
                      "the asa16 and nccl16 strategies imply it)",
                      "Ma et al. 2016 (Theano-MPI's asa16: fp16 exchange)", kind=bool),
    },
    actors=_actors,
    validate=_validate,
    source="Ma, Mao, Taylor: Theano-MPI (arXiv 1605.08325)",
)
