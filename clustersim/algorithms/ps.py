"""Parameter servers: synchronous PS, Async SGD, Async MSGD and Hogwild SGD.

Workers compute gradients; one or several *server shards* hold the weights.  The gradient is
split evenly across the shards (a real PS splits by tensor or key range - Li et al., OSDI
2014; an even split is the balanced case) and each shard is its own server actor with its
own device and network link, so pushes from many workers contend for the shard's ingress
link (incast) and its update kernel serialises them (saturation).  Those two limits are what
the simulator must show; they are not formulas here but consequences of the flow network and
of the server's ``Compute`` operations.

Variants (sources in docs/references.md and the ``source`` of each definition):

=============  ===================================================================================
sync_ps        every step each worker pushes its gradient to every shard; a shard waits for all
               workers (summing each push: ``accumulate``), applies one optimizer step
               (``update``) and sends the new weights back to everyone.  Staleness is 0.
async_sgd      DOWNPOUR (Dean et al., NIPS 2012; the baseline of You et al., SC17): a shard
               serves whichever push arrives first (FIFO), adds it to the weights under a lock
               (``accumulate``: x += delta) and answers that worker with the current weights.
               Every ``tau`` steps a worker pushes (between pushes it steps locally).
async_msgd     MDOWNPOUR (Zhang et al., NIPS 2015, the EASGD paper's momentum baseline): as
               async_sgd, but the shard applies a momentum step (``update``, costed with the
               workload's optimizer - momentum by default).
hogwild_sgd    lock-free server (Recht et al., NIPS 2011, as used by You et al.): the shard
               answers a push with the weights as they are *before* applying it, then applies
               it; a reply never waits for an update, so a worker's own update is always one
               version it has not seen (staleness >= 1).
=============  ===================================================================================

Why Hogwild's updates are not run as unbounded parallel ``Compute(blocking=False)``: the
simulator does not share a device among concurrent compute operations, and an update is
memory-bound at the whole device's bandwidth, so N "parallel" updates would be N times the
memory bandwidth.  What a lock-free server really removes is the *reply waiting for the write*;
its memory still applies one update's bytes at a time.

Staleness (``Record("staleness", v)`` on the server, one sample per push and shard): the
number of updates the shard applied between the version the worker's push was computed from
and the moment the push is applied.  Updates are counted per shard (``Record("update", 1)``).

Protocol (tags :data:`TAG_PUSH`, :data:`TAG_PULL`): a push is ``Send(shard, shard_bytes,
TAG_PUSH)``; the answer ``Send(worker, shard_bytes, TAG_PULL)``.  A shard knows how many
pushes it will get (workers x pushes per worker), so it ends cleanly without a "done" message.
Workers start from the same initial weights (the initial broadcast is not timed).

Real math (``ctx.math``, :mod:`clustersim.algorithms.proxy`): when a backend passes the proxy
model, the same operations carry it.  The worker's backward pass returns its gradient (summed
over the ``tau`` local steps, which also step its own replica), each push carries the shard's
piece of it, a shard applies it to the weights it owns (``ProxyShard.sgd``: ``w -= lr g``;
``momentum_step`` for Async MSGD; the sync PS averages the round's pushes first) and answers
with its weights, which the worker adopts - before the push is applied in Hogwild, after it
otherwise.  The operations (kinds, labels, sizes, tags, peers, order) are those of the
timing-only path; only ``fn``/``data`` are added.  Shards carry the math when
:func:`async_server`/:func:`sync_server` are told how many there are (``shards=``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from clustersim.algorithms.base import (
    ActorContext,
    ActorSpec,
    AlgorithmDef,
    JobInfo,
    Param,
    iteration_marks,
    shared_ops,
)
from clustersim.algorithms.ops import ActorGen, Compute, Handle, Record, Recv, Send, Wait

__all__ = [
    "TAG_PUSH", "TAG_PULL", "FORWARD", "BACKWARD", "LOCAL_STEP", "VersionClock", "shard_bytes", "pushes_per_worker", "push_to_shards",
    "push_ops", "async_server", "sync_server", "ps_worker", "SYNC_PS", "ASYNC_SGD", "ASYNC_MSGD",
    "HOGWILD_SGD", "DEFINITIONS",
]

TAG_PUSH = 11
TAG_PULL = 12

# operations are immutable: build the common ones once (thousands of actors reuse them)
FORWARD = Compute("forward")
BACKWARD = Compute("backward")
LOCAL_STEP = Compute("update", label="local step")
UPDATED = Record("update", 1)




def _pull(client: int, nbytes: float) -> Send:
    """A shard's answer to ``client``: built once per client and size in a process (every
    point of a sweep answers the same clients; 4,000 frozen dataclasses per point add up)."""
    return shared_ops(_PULLS, (client, nbytes),
                      lambda: Send(client, nbytes, TAG_PULL, blocking=False, label="pull"),
                      1 << 16)


_PULLS: dict[tuple[int, float], Send] = {}


def shard_bytes(total: float, shards: int) -> float:
    """Bytes of one shard when ``total`` bytes are split evenly over ``shards`` servers."""
    if shards < 1:
        raise ValueError("at least one shard")
    return total / shards


def pushes_per_worker(iterations: int, tau: int) -> int:
    """A worker pushes at the end of every ``tau``-th step: iterations // tau pushes."""
    return iterations // tau


class VersionClock:
    """A shard's version counter and the staleness of each push.

    ``lag``: how many replies behind the weights a client computes with.  A PS worker pushes,
    waits for the answer and computes on it (lag 0: push q is based on reply q-1).  The hybrid
    algorithm's nodes load the answer to push q only at push q+1 (lag 1: push q is based on
    reply q-2).  Before any reply a client works on the initial weights (version 0).
    """

    __slots__ = ("version", "lag", "_replies")

    def __init__(self, lag: int = 0) -> None:
        self.version = 0
        self.lag = lag
        self._replies: dict[int, deque[int]] = {}

    def staleness(self, client: int) -> int:
        """Staleness of the push now arriving from ``client`` (call before applying it)."""
        hist = self._replies.get(client)
        read = hist[0] if hist is not None and len(hist) == self.lag + 1 else 0
        return self.version - read

    def applied(self) -> None:
        self.version += 1

    def replied(self, client: int) -> None:
        """The client is being sent the weights at the current version."""
        hist = self._replies.get(client)
        if hist is None:
            hist = self._replies[client] = deque(maxlen=self.lag + 1)
        hist.append(self.version)


def async_server(clients: Sequence[int], pushes: int, nbytes: float, step: str,
                 lock_free: bool = False, lag: int = 0, *, shards: int | None = None
                 ) -> Callable[[ActorContext], ActorGen]:
    """Body of an asynchronous shard serving ``clients`` (FIFO), ``pushes`` pushes each.

    ``step``: the compute phase of applying one push (``accumulate`` x += delta, or ``update``:
    an optimizer step).  ``lock_free``: answer before applying (Hogwild).  ``shards``: how many
    shards split the weights; given, the shard (``ctx.index``) carries the proxy model's math
    when the backend passes one (:func:`_async_server_math`).
    """
    clients = tuple(clients)
    apply = Compute(step, nbytes=nbytes, label="server " + step)
    take = Recv(tag=TAG_PUSH, label="push")
    answer = {c: _pull(c, nbytes) for c in clients}

    def body(ctx: ActorContext) -> ActorGen:
        if shards is not None and ctx.math is not None:
            from clustersim.algorithms import ps_math  # imports this module's ops

            yield from ps_math.async_server_math(ctx, len(clients) * pushes, apply, take, answer,
                                          lock_free, lag, shards)
            return
        clock = VersionClock(lag)
        replies: dict[int, Handle] = {}
        samples: dict[int, Record] = {}  # staleness records by value, reused
        for _ in range(len(clients) * pushes):
            msg = yield take
            src = msg.src
            v = clock.staleness(src)
            sample = samples.get(v)
            if sample is None:
                sample = samples[v] = Record("staleness", v)
            yield sample
            if not lock_free:
                yield apply
                clock.applied()
                yield UPDATED
            prev = replies.pop(src, None)
            if prev is not None:
                # the client pushed again, so it has received the previous answer: no wait
                yield Wait(prev)
            clock.replied(src)
            replies[src] = yield answer[src]
            if lock_free:
                yield apply
                clock.applied()
                yield UPDATED
        if replies:
            yield Wait(list(replies.values()))

    return body


def sync_server(clients: Sequence[int], rounds: int, nbytes: float, *,
                shards: int | None = None) -> Callable[[ActorContext], ActorGen]:
    """Body of a synchronous shard: per round, sum one push from every client, step, answer all.

    ``shards`` as in :func:`async_server` (the math: :func:`_sync_server_math`)."""
    clients = tuple(clients)
    add = Compute("accumulate", nbytes=nbytes, label="sum push")
    step = Compute("update", nbytes=nbytes, label="server update")
    take = Recv(tag=TAG_PUSH, label="push")
    fresh = Record("staleness", 0)
    answers = [Send(c, nbytes, TAG_PULL, blocking=False, label="pull") for c in clients]

    def body(ctx: ActorContext) -> ActorGen:
        if shards is not None and ctx.math is not None:
            from clustersim.algorithms import ps_math  # imports this module's ops

            yield from ps_math.sync_server_math(ctx, len(clients), rounds, take, add, fresh, step,
                                         answers, shards)
            return
        for _ in range(rounds):
            for _ in clients:
                yield take
                yield add
                yield fresh
            yield step
            yield UPDATED
            handles = []
            for op in answers:
                handles.append((yield op))
            yield Wait(handles)

    return body


def push_ops(servers: Sequence[int], nbytes: float) -> tuple[tuple[Send, ...], tuple[Recv, ...]]:
    """The pushes (non-blocking when there are several shards) and pulls of one exchange,
    built once per actor and yielded again each time."""
    many = len(servers) > 1
    sends = tuple(Send(s, nbytes, TAG_PUSH, blocking=not many, label="push") for s in servers)
    recvs = tuple(Recv(src=s, tag=TAG_PULL, label="pull") for s in servers)
    return sends, recvs


def push_to_shards(sends: tuple[Send, ...], recvs: tuple[Recv, ...]) -> ActorGen:
    """Push to every shard (concurrently) and receive every shard's answer (see
    :func:`push_ops`)."""
    if len(sends) == 1:
        yield sends[0]
        yield recvs[0]
        return
    handles = []
    for op in sends:
        handles.append((yield op))
    yield Wait(handles)
    for op in recvs:
        yield op


def ps_worker(servers: Sequence[int], nbytes: float, tau: int
              ) -> Callable[[ActorContext], ActorGen]:
    """Body of a PS worker: forward, backward, and every ``tau`` steps push and pull.

    With ``tau == 1`` the worker pushes its gradient and takes the server's weights (no local
    step).  With ``tau > 1`` it steps locally every iteration and pushes the accumulated change
    every ``tau`` steps (DOWNPOUR's n_push = n_fetch = tau).
    """
    servers = tuple(servers)

    # built once and shared by every worker of the job (operations are immutable)
    sends, recvs = push_ops(servers, nbytes)
    single = len(sends) == 1

    def body(ctx: ActorContext) -> ActorGen:
        if ctx.math is not None:
            from clustersim.algorithms import ps_math  # imports this module's ops

            yield from ps_math.ps_worker_math(ctx, servers, nbytes, tau)
            return
        marks = iteration_marks(ctx.iterations)
        for it in range(ctx.iterations):
            yield marks[it]
            yield FORWARD
            yield BACKWARD
            if tau > 1:
                yield LOCAL_STEP
            if (it + 1) % tau == 0:
                if single:  # push_to_shards, inline: the common case, once per push
                    yield sends[0]
                    yield recvs[0]
                else:
                    yield from push_to_shards(sends, recvs)

    return body


def _server_ranks(job: JobInfo, shards: int) -> tuple[int, ...]:
    return tuple(range(job.workers, job.workers + shards))


def _async_actors(step: str, lock_free: bool) -> Callable[[JobInfo], list[ActorSpec]]:
    def actors(job: JobInfo) -> list[ActorSpec]:
        p = job.params
        shards, tau = int(p["shards"]), int(p["tau"])
        servers = _server_ranks(job, shards)
        nbytes = shard_bytes(job.grad_bytes, shards)
        workers = tuple(range(job.workers))
        wbody = ps_worker(servers, nbytes, tau)
        sbody = async_server(workers, pushes_per_worker(job.iterations, tau), nbytes, step,
                             lock_free, shards=shards)
        return ([ActorSpec(w, "worker", w, wbody) for w in workers]
                + [ActorSpec(r, "server", s, sbody) for s, r in enumerate(servers)])

    return actors


def _sync_actors(job: JobInfo) -> list[ActorSpec]:
    shards = int(job.params["shards"])
    servers = _server_ranks(job, shards)
    nbytes = shard_bytes(job.grad_bytes, shards)
    workers = tuple(range(job.workers))
    wbody = ps_worker(servers, nbytes, 1)
    sbody = sync_server(workers, job.iterations, nbytes, shards=shards)
    return ([ActorSpec(w, "worker", w, wbody) for w in workers]
            + [ActorSpec(r, "server", s, sbody) for s, r in enumerate(servers)])


def _shards_param() -> Param:
    return Param(1, "server shards: the gradient is split evenly over this many server actors, "
                 "each on its own device and link", "Dean et al., NIPS 2012 (DistBelief "
                 "parameter-server shards); Li et al., OSDI 2014", kind=int, minimum=1,
                 maximum=1024)  # a server group far beyond any published one: more is a typo


def _tau_param() -> Param:
    return Param(1, "push/pull period in local steps (n_push = n_fetch); 1 = push every "
                 "gradient", "Dean et al., NIPS 2012 (DOWNPOUR n_push/n_fetch); Zhang et al., "
                 "NIPS 2015 (tau)", kind=int, minimum=1)


def _servers(params: dict) -> int:
    return int(params["shards"])


SYNC_PS = AlgorithmDef(
    name="sync_ps",
    family="sync",
    summary="synchronous parameter server: every shard sums all workers' gradients, steps, "
            "answers all",
    params={"shards": _shards_param()},
    actors=_sync_actors,
    servers=_servers,
    source="Li et al., OSDI 2014 (parameter server); Chen et al., arXiv 1604.00981 (sync SGD)",
)

ASYNC_SGD = AlgorithmDef(
    name="async_sgd",
    family="async",
    convergence="async",
    summary="asynchronous SGD (DOWNPOUR): shards apply pushes FIFO under a lock and answer "
            "with the current weights",
    params={"shards": _shards_param(), "tau": _tau_param()},
    actors=_async_actors("accumulate", lock_free=False),
    servers=_servers,
    source="Dean et al., NIPS 2012; baseline of You, Buluc, Demmel, SC17 (arXiv 1708.02983)",
)

ASYNC_MSGD = AlgorithmDef(
    name="async_msgd",
    family="async",
    convergence="async",
    summary="asynchronous momentum SGD (MDOWNPOUR): as async_sgd with a momentum step on the "
            "server",
    params={"shards": _shards_param(), "tau": _tau_param()},
    actors=_async_actors("update", lock_free=False),
    servers=_servers,
    source="Zhang, Choromanska, LeCun, NIPS 2015 (MDOWNPOUR); baseline of You et al., SC17",
)

HOGWILD_SGD = AlgorithmDef(
    name="hogwild_sgd",
    family="async",
    convergence="async",
    summary="lock-free parameter server: answers a push before applying it",
    params={"shards": _shards_param(), "tau": _tau_param()},
    actors=_async_actors("accumulate", lock_free=True),
    servers=_servers,
    source="Recht et al., NIPS 2011 (Hogwild!); baseline of You et al., SC17",
)

DEFINITIONS = (SYNC_PS, ASYNC_SGD, ASYNC_MSGD, HOGWILD_SGD)
