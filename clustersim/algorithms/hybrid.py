"""Hybrid aggregation for heterogeneous GPU clusters (Kim et al., Cluster Computing 23(3), 2020).

Synchronous inside a node, asynchronous between nodes.  Only the design of the paper is public
to us (docs/references.md); the protocol below is our reading of it, and every step that the design
does not pin down is stated here.

* **Groups.**  Workers are grouped by machine (``group: node``, the paper's design) or by
  device kind (``group: device``: like GPUs together, wherever they are).  Inside a group the
  GPUs are alike, so a synchronous all-reduce there does not wait for a slower GPU type.
* **Inside a group, every step:** forward, backward, ``AllReduce`` of the gradient over the
  group (a :class:`~clustersim.algorithms.ops.Collective` with ``group=``), then the group
  leader (its first worker) hands the reduced gradient to the group's **local parameter-server
  process**, which runs on the leader's device (``ActorSpec.colocate``), so the hand-over goes
  through memory, not the network.
* **Asynchronous large mini-batch.**  The local PS sums (``accumulate``) the group's gradients
  of ``k`` steps - a mini-batch of k x group size x batch samples - and only then pushes the sum
  to the **global parameter server** (one or ``shards`` server actors; an optimizer ``update``
  per push, FIFO, as in :mod:`clustersim.algorithms.ps`).  The global server answers with its
  current weights; the local PS passes them to the leader.
* **No waiting for the other nodes.**  The group keeps computing on the weights it has while
  its push travels: at push point q it loads the answer to push q-1 (the leader receives it and
  ``Broadcast``s it over the group), so a group only stalls when one whole push period did not
  cover a round trip to the global server.  Staleness is therefore measured with lag 1 (push q
  was computed on the answer to push q-2).
* Workers do not step locally between pushes (gradient accumulation, not local SGD): the
  optimizer step is the global server's.

Why it helps on a mixed cluster (what the scenario ``hetero_hybrid.yaml`` shows): in
all-synchronous training every step waits for the slowest GPU type; in all-asynchronous PS
every worker pushes the full gradient across the network each step and the server's link
saturates.  The hybrid waits only for like GPUs and sends one push per group per k steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from clustersim.algorithms.base import ActorContext, ActorSpec, AlgorithmDef, JobInfo, Param
from clustersim.algorithms.ops import ActorGen, AllReduce, Broadcast, Compute, Record, Recv, Send
from clustersim.algorithms.ps import (
    BACKWARD,
    FORWARD,
    TAG_PULL,
    async_server,
    push_ops,
    push_to_shards,
    shard_bytes,
)
from clustersim.errors import unknown_name

__all__ = ["TAG_GRAD", "worker_groups", "hybrid_worker", "local_server", "HYBRID"]

TAG_GRAD = 31


def worker_groups(job: JobInfo, by: str) -> tuple[tuple[int, ...], ...]:
    """Workers grouped by machine (``node``) or device kind (``device``), in rank order; groups
    ordered by their first worker."""
    keys: Sequence[object]
    if by == "node":
        keys = job.hosts
    elif by == "device":
        keys = job.devices or ("device",) * job.workers
    else:
        raise ValueError(f"unknown grouping {by!r}")
    order: dict[object, list[int]] = {}
    for w in range(job.workers):
        order.setdefault(keys[w], []).append(w)
    return tuple(tuple(g) for g in order.values())


def hybrid_worker(group: tuple[int, ...], local: int, nbytes: float, k: int,
                  algorithm: str | None) -> Callable[[ActorContext], ActorGen]:
    """Body of a worker of ``group`` (the same tuple object for all its members)."""

    reduce = AllReduce(nbytes, group=group, algorithm=algorithm)
    hand_over = Send(local, nbytes, TAG_GRAD, label="to local PS")
    fetch = Recv(src=local, tag=TAG_PULL, label="global weights")
    load = Broadcast(nbytes, root=0, group=group)

    def body(ctx: ActorContext) -> ActorGen:
        leader = ctx.rank == group[0]
        many = len(group) > 1
        pushed = 0
        for it in range(ctx.iterations):
            yield Record("iteration", it)
            yield FORWARD
            yield BACKWARD
            if many:
                yield reduce
            if leader:
                yield hand_over
            if (it + 1) % k == 0:
                if pushed >= 1:
                    # load the global weights answering the previous push
                    if leader:
                        yield fetch
                    if many:
                        yield load
                pushed += 1

    return body


def local_server(leader: int, globals_: tuple[int, ...], nbytes: float, k: int
                 ) -> Callable[[ActorContext], ActorGen]:
    """Body of a group's local PS: accumulate k gradients, push, pass the answer on."""
    add = Compute("accumulate", nbytes=nbytes, label="accumulate group gradient")
    take = Recv(src=leader, tag=TAG_GRAD, label="group gradient")
    give = Send(leader, nbytes, TAG_PULL, label="to leader")
    sends, recvs = push_ops(globals_, shard_bytes(nbytes, len(globals_)))

    def body(ctx: ActorContext) -> ActorGen:
        pushes = ctx.iterations // k
        for it in range(ctx.iterations):
            yield take
            yield add
            if (it + 1) % k == 0:
                q = (it + 1) // k - 1
                yield from push_to_shards(sends, recvs)
                if q < pushes - 1:  # the answer to the last push would never be loaded
                    yield give

    return body


def _actors(job: JobInfo) -> list[ActorSpec]:
    p = job.params
    k, shards = int(p["k"]), int(p["shards"])
    groups = worker_groups(job, p["group"])
    w, g = job.workers, len(groups)
    globals_ = tuple(range(w + g, w + g + shards))
    alg = p["allreduce"]
    specs: list[ActorSpec | None] = [None] * w
    for gi, members in enumerate(groups):
        body = hybrid_worker(members, w + gi, job.grad_bytes, k, alg)
        for r in members:
            specs[r] = ActorSpec(r, "worker", r, body)
    out = [s for s in specs if s is not None]
    out += [ActorSpec(w + gi, "server", gi, local_server(members[0], globals_, job.grad_bytes, k),
                      colocate=members[0]) for gi, members in enumerate(groups)]
    gbody = async_server(tuple(range(w, w + g)), job.iterations // k,
                         shard_bytes(job.grad_bytes, shards), "update", lag=1)
    out += [ActorSpec(r, "server", g + s, gbody) for s, r in enumerate(globals_)]
    return out


def _validate(params: dict, path: tuple) -> None:
    from clustersim.collectives import list_algorithms

    allowed = sorted(list_algorithms()["allreduce"])
    if params["allreduce"] not in allowed:
        raise unknown_name("allreduce algorithm", str(params["allreduce"]), allowed,
                           path=(*path, "allreduce"))


HYBRID = AlgorithmDef(
    name="hybrid",
    family="hybrid",
    convergence="hybrid",
    summary="synchronous all-reduce inside a node (or group of like GPUs), asynchronous "
            "parameter server between them, k-step large mini-batches",
    params={
        "k": Param(1, "steps whose group gradients the local PS sums before one push to the "
                   "global server (asynchronous large mini-batch)",
                   "Kim et al., Cluster Computing 23(3) 2020", kind=int, minimum=1),
        "group": Param("node", "synchronous groups: workers of one machine (node) or of one "
                       "device kind (device)", "Kim et al. 2020 (intra-node all-reduce); "
                       "'device' is our extension for like GPUs across machines", kind=str,
                       choices=("node", "device")),
        "allreduce": Param("ring", "all-reduce algorithm inside a group",
                           "Kim et al. 2020 use MPI collectives; ring = NCCL's default",
                           kind=str),
        "shards": Param(1, "global parameter-server shards (the gradient split evenly)",
                        "Li et al., OSDI 2014", kind=int, minimum=1, maximum=1024),
    },
    actors=_actors,
    servers=lambda params: int(params["shards"]),
    validate=_validate,
    source="Kim, Choi, Lee, Kim, Jei, Roh: Efficient large-scale deep learning framework for "
           "heterogeneous multi-GPU cluster, Cluster Computing 23(3) 2020",
)
