"""The parameter-server actors with the proxy model's math (``ctx.math``): the same
operations as :mod:`clustersim.algorithms.ps`'s timing-only bodies, with ``fn``/``data``
attached, so that convergence emulation trains a real model in simulated-time order.

Apart from :mod:`.ps` so each module holds one thing: ``ps`` says what the actors *do* (the
operations, their order and sizes), this module what those operations *compute*.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from clustersim.algorithms.base import (
    ActorContext,
)
from clustersim.algorithms.ops import ActorGen, Compute, Handle, Record, Recv, Send, Wait
from clustersim.algorithms.proxy import attach
from clustersim.algorithms.ps import (
    BACKWARD,
    FORWARD,
    LOCAL_STEP,
    UPDATED,
    VersionClock,
    push_ops,
)

__all__ = ["ps_worker_math", "async_server_math", "sync_server_math"]

# -- the proxy model's math (ctx.math): the same operations, with fn/data ---------------------
def ps_worker_math(ctx: ActorContext, servers: tuple[int, ...], nbytes: float, tau: int
                    ) -> ActorGen:
    """:func:`ps_worker` with the proxy model's math: push the gradient (summed over ``tau``
    local steps), adopt every shard's weights from its reply."""
    m = ctx.math
    parts = [m.shard(k, len(servers)) for k in range(len(servers))]
    sends, recvs = push_ops(servers, nbytes)
    forward, backward = replace(FORWARD, fn=m.forward), replace(BACKWARD, fn=m.backward)
    acc = None  # the gradients since the last push (DOWNPOUR's accumulated update)
    for it in range(ctx.iterations):
        yield Record("iteration", it)
        yield forward
        grad = yield backward
        if tau > 1:
            yield replace(LOCAL_STEP, fn=m.step, data=grad)
        acc = grad if acc is None else acc + grad
        if (it + 1) % tau == 0:
            pieces = m.split(acc, len(servers))
            acc = None
            if len(sends) == 1:
                yield replace(sends[0], data=pieces[0])
            else:
                handles = []
                for op, piece in zip(sends, pieces):
                    handles.append((yield replace(op, data=piece)))
                yield Wait(handles)
            for part, op in zip(parts, recvs):
                msg = yield op
                if msg.data is not None:
                    part.load(msg.data)


def async_server_math(ctx: ActorContext, total: int, apply: Compute, take: Recv,
                       answer: dict[int, Send], lock_free: bool, lag: int, shards: int
                       ) -> ActorGen:
    """:func:`async_server` with the proxy model's math: apply each push to the shard's
    weights (SGD, or momentum for an ``update`` step), answer with the weights - as they are
    before the push in Hogwild, after it otherwise."""
    part = ctx.math.shard(ctx.index, shards)
    update = part.sgd if apply.phase == "accumulate" else part.momentum_step
    clock = VersionClock(lag)
    replies: dict[int, Handle] = {}
    for _ in range(total):
        msg = yield take
        src = msg.src
        yield Record("staleness", clock.staleness(src))
        if not lock_free:
            yield attach(apply, update, msg.data)
            clock.applied()
            yield UPDATED
        prev = replies.pop(src, None)
        if prev is not None:
            yield Wait(prev)
        clock.replied(src)
        replies[src] = yield replace(answer[src], data=part.params())
        if lock_free:
            yield attach(apply, update, msg.data)
            clock.applied()
            yield UPDATED
    if replies:
        yield Wait(list(replies.values()))


def sync_server_math(ctx: ActorContext, clients: int, rounds: int, take: Recv, add: Compute,
                      fresh: Record, step: Compute, answers: list[Send], shards: int
                      ) -> ActorGen:
    """:func:`sync_server` with the proxy model's math: sum the round's pushes, one SGD step
    with their mean, everyone gets the new weights."""
    part = ctx.math.shard(ctx.index, shards)
    for _ in range(rounds):
        total = np.zeros_like(part.weights)

        def add_push(g: np.ndarray, total: np.ndarray = total) -> np.ndarray:
            total += np.asarray(g, dtype=total.dtype).reshape(-1)
            return total

        for _ in range(clients):
            msg = yield take
            yield attach(add, add_push, msg.data)
            yield fresh
        yield replace(step, fn=lambda t: part.sgd(t / clients), data=total)
        yield UPDATED
        handles = []
        for op in answers:
            handles.append((yield replace(op, data=part.params())))
        yield Wait(handles)
