"""Proxy-model math: a small NumPy model that training algorithms can train for real.

Why a proxy: the operations an algorithm yields describe the *cost* of the scenario's model
(an AlexNet's FLOPs and bytes), which no test machine can afford to train, while the
*behaviour* of an algorithm - does BSP keep every replica identical, does Async EASGD still
converge with stale centres - needs real arithmetic.  So the algorithms attach the math of a
small stand-in model to their operations (docs/writing_an_algorithm.md):

    grad = yield Compute("backward", fn=ctx.math.backward)
    total = yield AllReduce(ctx.grad_bytes, data=grad)
    yield Compute("update", fn=ctx.math.step_mean, data=total)

The sizes (``nbytes``) still come from the scenario, so time does not depend on whether math
runs; ``fn`` is called by the backend with ``data`` and its return value is the operation's
result.  ``ctx.math`` is ``None`` in pure timing runs (the simulator's default), so an
algorithm written this way costs nothing extra there.

The model: a two-layer perceptron (tanh hidden layer, softmax output, cross-entropy) on a
synthetic classification task - Gaussian clusters around random class centres, drawn from a
seeded generator, so every rank builds the same data set without any file.  The clusters are
well separated, so plain SGD drives the loss from ``ln(classes)`` towards zero in a few hundred
steps: a test can see training work.  Every worker starts from the same weights (what the
initial broadcast of real data-parallel training achieves) and reads its own shard of the
data (sample ``i`` belongs to worker ``i % workers``) in its own seeded order.  Everything is
float32, as the gradients a real backend puts on the wire.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np

__all__ = ["ProxyTask", "ProxyModel", "ProxyShard", "make_math", "dataset", "part_slices",
           "attach"]

DTYPE = np.float32

_Op = TypeVar("_Op")


def attach(op: _Op, fn: Callable[[Any], Any] | None, data: Any) -> _Op:
    """``op`` with the math ``fn(data)`` attached (``fn=None``: only ``data``, for a message).

    Returns ``op`` itself when ``data`` is ``None`` - a message from a timing-only peer brings
    nothing to apply - so the operation stays the one the timing-only path yields.  Equality
    of operations ignores ``fn`` and ``data``: either way the op equals the timing-only one.
    """
    if data is None:
        return op
    return replace(op, data=data) if fn is None else replace(op, fn=fn, data=data)


@dataclass(frozen=True)
class ProxyTask:
    """The synthetic task and the training hyper-parameters of the proxy model.

    ``spread`` scales the class centres (standard normal per feature, times ``spread``);
    the samples add unit Gaussian noise.  With 32 features and spread 0.5 two centres are
    about 4 noise standard deviations apart: learnable, not trivial at the first step.
    ``momentum`` is the heavy-ball coefficient of a parameter server's momentum step (Async
    MSGD, :meth:`ProxyShard.momentum_step`); EAMSGD's workers take their Nesterov momentum
    from the algorithm's own ``momentum`` parameter instead.
    """

    features: int = 32
    hidden: int = 64
    classes: int = 8
    samples: int = 4096
    batch: int = 32
    lr: float = 0.1
    spread: float = 0.5
    seed: int = 0
    momentum: float = 0.9

    @property
    def num_params(self) -> int:
        f, h, c = self.features, self.hidden, self.classes
        return f * h + h + h * c + c


def part_slices(size: int, parts: int) -> list[slice]:
    """The contiguous pieces :func:`numpy.array_split` cuts ``size`` elements into (the first
    ``size % parts`` pieces one longer): a gradient split by :meth:`ProxyModel.split` and the
    weights a parameter-server shard owns line up piece for piece."""
    parts = max(int(parts), 1)
    base, extra = divmod(int(size), parts)
    out, lo = [], 0
    for k in range(parts):
        hi = lo + base + (1 if k < extra else 0)
        out.append(slice(lo, hi))
        lo = hi
    return out


@lru_cache(maxsize=4)
def dataset(task: ProxyTask) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: ``samples`` feature vectors and their labels, a pure function of ``task``."""
    rng = np.random.default_rng([task.seed, 0xDA7A])
    centres = rng.standard_normal((task.classes, task.features)) * task.spread
    y = rng.integers(0, task.classes, task.samples)
    x = centres[y] + rng.standard_normal((task.samples, task.features))
    xf = x.astype(DTYPE)
    xf.setflags(write=False)  # cached and shared: nobody may change it
    y.setflags(write=False)
    return xf, y


def initial_weights(task: ProxyTask) -> np.ndarray:
    """Flat float32 weights, the same on every rank (Glorot-scaled, seeded by the task)."""
    rng = np.random.default_rng([task.seed, 0x1417])
    f, h, c = task.features, task.hidden, task.classes
    w1 = rng.standard_normal((f, h)) * np.sqrt(1.0 / f)
    w2 = rng.standard_normal((h, c)) * np.sqrt(1.0 / h)
    return np.concatenate([w1.ravel(), np.zeros(h), w2.ravel(), np.zeros(c)]).astype(DTYPE)


class ProxyModel:
    """One actor's copy of the proxy model: weights, its data shard and the math on them.

    Methods take one (ignored or used) argument so they can be a ``Compute``'s ``fn`` directly
    (the backend calls ``fn(op.data)``).  ``workers`` is the number of replicas a summed
    gradient or summed weights came from.
    """

    def __init__(self, task: ProxyTask, *, shard: int = 0, shards: int = 1, stream: int = 0,
                 workers: int = 1) -> None:
        if not 0 <= shard < max(shards, 1):
            raise ValueError(f"shard {shard} of {shards}")
        self.task = task
        self.workers = max(int(workers), 1)
        x, y = dataset(task)
        self._x, self._y = x[shard::max(shards, 1)], y[shard::max(shards, 1)]
        self.weights = initial_weights(task)
        f, h, c = task.features, task.hidden, task.classes
        cut = np.cumsum([f * h, h, h * c, c])
        w = self.weights
        self._w1 = w[: cut[0]].reshape(f, h)
        self._b1 = w[cut[0]: cut[1]]
        self._w2 = w[cut[1]: cut[2]].reshape(h, c)
        self._b2 = w[cut[2]: cut[3]]
        self._rng = np.random.default_rng([task.seed, 0x5EED, stream])
        self._order = np.empty(0, dtype=np.int64)
        self._pos = 0
        self._cache: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._velocity: np.ndarray | None = None
        self.steps = 0

    # -- data ----------------------------------------------------------------------------------
    def _next_batch(self) -> np.ndarray:
        n = len(self._y)
        if self._pos + self.task.batch > len(self._order):
            self._order = self._rng.permutation(n)  # a new epoch over the shard
            self._pos = 0
        idx = self._order[self._pos: self._pos + self.task.batch]
        self._pos += self.task.batch
        return idx

    # -- the model -----------------------------------------------------------------------------
    def _probs(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hid = np.tanh(x @ self._w1 + self._b1)
        z = hid @ self._w2 + self._b2
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return hid, e / e.sum(axis=1, keepdims=True)

    @staticmethod
    def _xent(p: np.ndarray, y: np.ndarray) -> float:
        return float(-np.mean(np.log(p[np.arange(len(y)), y] + 1e-12)))

    def forward(self, _: Any = None) -> float:
        """Forward pass on the next mini-batch of the shard; returns its loss."""
        idx = self._next_batch()
        x, y = self._x[idx], self._y[idx]
        hid, p = self._probs(x)
        self._cache = (x, y, hid, p)
        return self._xent(p, y)

    def backward(self, _: Any = None) -> np.ndarray:
        """Gradient of the last forward's mean loss (a new flat float32 array)."""
        if self._cache is None:
            self.forward()
        assert self._cache is not None
        x, y, hid, p = self._cache
        self._cache = None
        d = p.copy()
        d[np.arange(len(y)), y] -= 1.0
        d /= len(y)
        g_w2 = hid.T @ d
        g_b2 = d.sum(axis=0)
        dh = (d @ self._w2.T) * (1.0 - hid * hid)
        g_w1 = x.T @ dh
        g_b1 = dh.sum(axis=0)
        return np.concatenate([g_w1.ravel(), g_b1, g_w2.ravel(), g_b2]).astype(DTYPE)

    def gradient(self, _: Any = None) -> np.ndarray:
        """Forward and backward on the next mini-batch."""
        self.forward()
        return self.backward()

    # -- updates -------------------------------------------------------------------------------
    def step(self, grad: np.ndarray) -> np.ndarray:
        """Plain SGD with this model's own gradient: ``w -= lr * grad``."""
        self.weights -= DTYPE(self.task.lr) * np.asarray(grad, dtype=DTYPE).reshape(-1)
        self.steps += 1
        return self.weights

    def step_mean(self, summed: np.ndarray) -> np.ndarray:
        """SGD with the mean of ``workers`` summed gradients (BSP after an all-reduce)."""
        g = np.asarray(summed, dtype=DTYPE).reshape(-1)
        self.weights -= DTYPE(self.task.lr / self.workers) * g
        self.steps += 1
        return self.weights

    def average(self, summed: np.ndarray) -> np.ndarray:
        """Replace the weights by the mean of ``workers`` summed weight vectors (model
        averaging)."""
        self.weights[...] = np.asarray(summed, dtype=DTYPE).reshape(-1) / DTYPE(self.workers)
        return self.weights

    def load(self, weights: np.ndarray) -> np.ndarray:
        """Take weights sent by someone else (a parameter server's reply)."""
        self.weights[...] = np.asarray(weights, dtype=DTYPE).reshape(-1)
        return self.weights

    def params(self, _: Any = None) -> np.ndarray:
        """A copy of the weights (what goes on the wire)."""
        return self.weights.copy()

    def velocity(self, grad: np.ndarray, mu: float = 0.9) -> np.ndarray:
        """Momentum buffer update ``b <- mu b + grad`` (EAMSGD's extra pass; returns ``b``).

        With :meth:`nesterov_step` after it this is Nesterov momentum in the form deep-learning
        frameworks use (Sutskever et al., ICML 2013; PyTorch's ``nesterov=True``): the weights
        kept are the look-ahead point ``y = x + mu v`` of Zhang et al.'s ``v <- mu v -
        lr g(x + mu v)``, ``x <- x + v`` (with ``v = -lr b``), so the gradient of the current
        weights *is* the look-ahead gradient and no second forward pass is needed.
        """
        g = np.asarray(grad, dtype=DTYPE).reshape(-1)
        if self._velocity is None:
            self._velocity = np.zeros_like(self.weights)
        self._velocity *= DTYPE(mu)
        self._velocity += g
        return self._velocity

    def nesterov_step(self, grad: np.ndarray, mu: float = 0.9) -> np.ndarray:
        """The weight step after :meth:`velocity`: ``w -= lr (grad + mu b)``."""
        g = np.asarray(grad, dtype=DTYPE).reshape(-1)
        b = self._velocity if self._velocity is not None else np.zeros_like(self.weights)
        self.weights -= DTYPE(self.task.lr) * (g + DTYPE(mu) * b)
        self.steps += 1
        return self.weights

    def shard(self, index: int, parts: int) -> ProxyShard:
        """Piece ``index`` of ``parts`` of these weights, as a parameter-server shard holds it
        (a view: updating the shard updates this model)."""
        return ProxyShard(self, index, parts)

    def split(self, flat: np.ndarray, parts: int) -> list[np.ndarray]:
        """``flat`` cut into ``parts`` contiguous pieces (one per gradient bucket)."""
        return [np.ascontiguousarray(a) for a in np.array_split(flat, max(parts, 1))]

    # -- evaluation ------------------------------------------------------------------------------
    def loss(self, _: Any = None) -> float:
        """Mean loss over the whole data set (every rank sees the same number for the same
        weights)."""
        x, y = dataset(self.task)
        return self._xent(self._probs(x)[1], y)

    def accuracy(self) -> float:
        x, y = dataset(self.task)
        return float(np.mean(np.argmax(self._probs(x)[1], axis=1) == y))

    def digest(self) -> str:
        """SHA-256 of the weights' bytes: equal digests = bit-identical replicas."""
        return hashlib.sha256(np.ascontiguousarray(self.weights).tobytes()).hexdigest()


class ProxyShard:
    """Piece ``index`` of ``parts`` of a :class:`ProxyModel`'s flat weights - what one
    parameter-server shard owns and updates (Li et al., OSDI 2014 split the weights by key
    range; the pieces are those of :func:`part_slices`, so piece ``k`` of a split gradient
    belongs to shard ``k``).  With ``parts == 1`` the shard is the whole model.

    ``weights`` is a view into the model's weights, so a server's model always holds what its
    shard applied, and a worker loads a shard's reply into its own model through its shard.
    Methods take one argument so that they can be a ``Compute``'s ``fn``.
    """

    def __init__(self, model: ProxyModel, index: int, parts: int) -> None:
        if not 0 <= index < max(parts, 1):
            raise ValueError(f"shard {index} of {parts}")
        self.model = model
        self.index = index
        self.parts = max(int(parts), 1)
        self.slice = part_slices(model.weights.size, self.parts)[index]
        self.weights = model.weights[self.slice]
        self._velocity: np.ndarray | None = None

    def sgd(self, grad: np.ndarray) -> np.ndarray:
        """``w -= lr * grad`` on this shard (a DOWNPOUR server applying a pushed gradient)."""
        self.weights -= DTYPE(self.model.task.lr) * np.asarray(grad, dtype=DTYPE).reshape(-1)
        self.model.steps += 1
        return self.weights

    def momentum_step(self, grad: np.ndarray) -> np.ndarray:
        """Heavy-ball momentum on the server (MDOWNPOUR): ``v <- mu v + grad``,
        ``w -= lr v`` with ``mu`` the task's ``momentum``."""
        g = np.asarray(grad, dtype=DTYPE).reshape(-1)
        if self._velocity is None:
            self._velocity = np.zeros_like(self.weights)
        self._velocity *= DTYPE(self.model.task.momentum)
        self._velocity += g
        self.weights -= DTYPE(self.model.task.lr) * self._velocity
        self.model.steps += 1
        return self.weights

    def params(self, _: Any = None) -> np.ndarray:
        """A copy of this shard's weights (a server's reply)."""
        return self.weights.copy()

    def load(self, weights: np.ndarray) -> np.ndarray:
        """Take this shard's weights from a server's reply."""
        self.weights[...] = np.asarray(weights, dtype=DTYPE).reshape(-1)
        return self.weights


def make_math(job: Any, rank: int, role: str, index: int, task: ProxyTask | None = None
              ) -> ProxyModel:
    """The hook for one actor of ``job`` (a :class:`~clustersim.algorithms.base.JobInfo`).

    Workers read shard ``index`` of ``job.workers``; servers hold a model (the centre, the
    parameter server's weights) without a shard of their own.  The task is seeded by the
    job's seed unless given.
    """
    task = task or ProxyTask(seed=int(job.seed))
    if role == "worker":
        return ProxyModel(task, shard=index, shards=job.workers, stream=rank,
                          workers=job.workers)
    return ProxyModel(task, stream=rank, workers=job.workers)
