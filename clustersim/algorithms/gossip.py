"""GOSGD: gossip SGD without a server (Blot, Picard, Cord, Thome 2016, arXiv 1611.09726),
as Theano-MPI runs it (``theanompi/gosgd_worker.py`` and ``GOSGD_Exchanger``).

Every worker trains on its own replica.  Each iteration it first merges every push that has
already arrived (it never waits for one), then computes one step, then with probability ``p``
pushes its weights to one other worker chosen uniformly at random.

Merge rule (Blot et al. 2016, Theano-MPI's ``GOSGD_Exchanger``): worker i carries a weight
alpha_i, 1/M at the start (M workers).  To push, i halves alpha_i and sends (x_i, alpha_i);
the receiver j sets ``x_j <- (alpha_j x_j + alpha_i x_i) / (alpha_j + alpha_i)`` and
``alpha_j <- alpha_j + alpha_i``.  The sum of the alphas stays 1 and the alpha-weighted mean of
all replicas (pushes in flight included) is unchanged by an exchange - the consensus the
replicas drift towards (:func:`push_weight`, :func:`merge` hold the math).

Modelling choices:

* A push is one message of the weights plus the 4-byte alpha (Theano-MPI sends a request, the
  weights, then alpha; the two small messages are folded into the big one).
* The sender blocks until its message has arrived (the engine's rendezvous ``Send``).  In
  Theano-MPI the weights move by a two-party NCCL broadcast that also waits for the receiver to
  reach its next iteration boundary; here the receiver merges at its next boundary but the
  sender does not wait for it (as with a buffered or one-sided put).
* The merge is an element-wise weighted average over the weights: ``Compute("accumulate")``
  (read two buffers, write one).
* Who pushes to whom is drawn once per job from a generator seeded by the job seed (one
  Bernoulli(p) draw and one peer per worker and iteration), so that every worker knows how
  many pushes it will receive and can drain them before it stops: runs end cleanly, and the
  peers change with the seed and nothing else.
* Staleness of a merge: the number of iterations between the two merged replicas (receiver's
  current iteration minus the sender's iteration at its push, in absolute value).  There is no
  server, so there are no parameter versions; this is the gap the merge bridges.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from clustersim.algorithms.base import ActorContext, ActorSpec, AlgorithmDef, JobInfo, Param
from clustersim.algorithms.ops import ActorGen, Compute, Record, Recv, Send
from clustersim.algorithms.proxy import attach

__all__ = ["TAG_GOSSIP", "ALPHA_BYTES", "GossipPlan", "gossip_plan", "push_weight", "merge",
           "gosgd_worker", "GOSGD"]

TAG_GOSSIP = 21
#: the sender's alpha travels with its weights (one float32)
ALPHA_BYTES = 4.0
FORWARD = Compute("forward")
BACKWARD = Compute("backward")
STEP = Compute("update")
POLL = Recv(tag=TAG_GOSSIP, poll=True, label="gossip")
DRAIN = Recv(tag=TAG_GOSSIP, label="gossip")
#: stream id mixed into the job seed so the gossip draws differ from other uses of the seed
_STREAM = 0x60_55_1D


@dataclass(frozen=True)
class GossipPlan:
    """Who pushes when and to whom: ``pushes[i]`` = ((iteration, peer), ...) of worker i;
    ``inbox[j]`` = ((sender, sender's iteration), ...) of the pushes j receives, by sender."""

    pushes: tuple[tuple[tuple[int, int], ...], ...]
    inbox: tuple[tuple[tuple[int, int], ...], ...]

    def received(self, worker: int) -> int:
        return len(self.inbox[worker])


def gossip_plan(workers: int, iterations: int, p: float, seed: int) -> GossipPlan:
    """Draw every worker's pushes: Bernoulli(p) per iteration, a uniform peer among the others."""
    rng = np.random.default_rng([seed, _STREAM])
    if workers < 2:
        empty = tuple(() for _ in range(workers))
        return GossipPlan(empty, empty)
    draw = rng.random((workers, iterations)) < p
    peer = rng.integers(0, workers - 1, size=(workers, iterations))
    peer += peer >= np.arange(workers)[:, None]  # skip oneself: uniform over the other M-1
    pushes: list[tuple[tuple[int, int], ...]] = []
    inbox: list[list[tuple[int, int]]] = [[] for _ in range(workers)]
    for i in range(workers):
        its = np.flatnonzero(draw[i])
        mine = tuple((int(t), int(peer[i, t])) for t in its)
        pushes.append(mine)
        for t, j in mine:
            inbox[j].append((i, t))
    return GossipPlan(tuple(pushes), tuple(tuple(x) for x in inbox))


def push_weight(alpha: float) -> float:
    """The sender halves its weight and sends the half it keeps (Blot et al. 2016)."""
    return alpha / 2.0


def merge(x_self: np.ndarray, alpha_self: float, x_in: np.ndarray, alpha_in: float
          ) -> tuple[np.ndarray, float]:
    """Receiver's merge: alpha-weighted average of the two replicas; the weights add up."""
    total = alpha_self + alpha_in
    return (alpha_self * x_self + alpha_in * x_in) / total, total


def gosgd_worker(plan: GossipPlan, nbytes: float) -> Callable[[ActorContext], ActorGen]:
    """Body of GOSGD worker ``ctx.index`` following ``plan``."""

    blend = Compute("accumulate", nbytes=nbytes, label="gossip merge")

    def body(ctx: ActorContext) -> ActorGen:
        if ctx.math is not None:
            yield from _gosgd_math_worker(ctx, plan, nbytes, blend)
            return
        me = ctx.index
        # sender -> iterations of its pushes to me, in order (messages from one sender keep
        # their order, so the k-th message from s is s's k-th scheduled push to me)
        origin: dict[int, deque[int]] = {}
        for s, t in plan.inbox[me]:
            origin.setdefault(s, deque()).append(t)
        mine = deque(plan.pushes[me])
        expected = plan.received(me)
        got = 0
        for it in range(ctx.iterations):
            yield Record("iteration", it)
            while got < expected:  # nothing left to come: no need to look
                msg = yield POLL
                if msg is None:
                    break
                got += 1
                yield blend
                yield Record("staleness", abs(it - origin[msg.src].popleft()))
            yield FORWARD
            yield BACKWARD
            yield STEP
            if mine and mine[0][0] == it:
                _, peer = mine.popleft()
                yield Send(peer, nbytes + ALPHA_BYTES, TAG_GOSSIP, label="gossip push")
        # drain the pushes still on their way, so that every message is matched
        for _ in range(expected - got):
            msg = yield DRAIN
            yield blend
            yield Record("staleness", abs(ctx.iterations - origin[msg.src].popleft()))

    return body


def _gosgd_math_worker(ctx: ActorContext, plan: GossipPlan, nbytes: float, blend: Compute
                       ) -> ActorGen:
    """:func:`gosgd_worker` with the math hook (``ctx.math``): the same operations, the local
    step trains the replica, a push carries ``(weights, alpha)`` after halving alpha, a merge
    applies :func:`merge` (``ctx.math.alpha`` holds the replica's weight, for observers)."""
    m = ctx.math
    me = ctx.index
    m.alpha = 1.0 / ctx.job.workers
    origin: dict[int, deque[int]] = {}
    for s, t in plan.inbox[me]:
        origin.setdefault(s, deque()).append(t)
    mine = deque(plan.pushes[me])
    expected = plan.received(me)
    forward, backward = replace(FORWARD, fn=m.forward), replace(BACKWARD, fn=m.backward)

    def take(data: tuple[np.ndarray, float]) -> np.ndarray:
        x, m.alpha = merge(m.weights, m.alpha, np.asarray(data[0], dtype=m.weights.dtype),
                           data[1])
        return m.load(x)

    got = 0
    for it in range(ctx.iterations):
        yield Record("iteration", it)
        while got < expected:
            msg = yield POLL
            if msg is None:
                break
            got += 1
            yield attach(blend, take, msg.data)
            yield Record("staleness", abs(it - origin[msg.src].popleft()))
        yield forward
        grad = yield backward
        yield replace(STEP, fn=m.step, data=grad)
        if mine and mine[0][0] == it:
            _, peer = mine.popleft()
            m.alpha = push_weight(m.alpha)
            yield Send(peer, nbytes + ALPHA_BYTES, TAG_GOSSIP, label="gossip push",
                       data=(m.params(), m.alpha))
    for _ in range(expected - got):
        msg = yield DRAIN
        yield attach(blend, take, msg.data)
        yield Record("staleness", abs(ctx.iterations - origin[msg.src].popleft()))


def _actors(job: JobInfo) -> list[ActorSpec]:
    plan = gossip_plan(job.workers, job.iterations, float(job.params["p"]), job.seed)
    body = gosgd_worker(plan, job.grad_bytes)
    return [ActorSpec(w, "worker", w, body) for w in range(job.workers)]


GOSGD = AlgorithmDef(
    name="gosgd",
    family="async",
    convergence="gossip",
    summary="gossip SGD: each step a worker pushes its weights to a random peer with "
            "probability p; replicas merge by weighted average",
    params={
        "p": Param(0.01, "probability that a worker pushes its weights after a step",
                   "Theano-MPI GOSGD default (Ma et al. 2016); Blot et al. 2016 "
                   "(arXiv 1611.09726)", kind=float, minimum=0.0, maximum=1.0),
    },
    actors=_actors,
    source="Blot, Picard, Cord, Thome: Gossip training for deep learning (arXiv 1611.09726); "
           "Theano-MPI GOSGD_Exchanger",
)
