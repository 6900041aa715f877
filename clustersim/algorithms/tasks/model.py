"""A replica of an emulation task's model: flat float32 weights and the update rules the
algorithms' math hooks call.

Why a class apart from :class:`~clustersim.algorithms.proxy.ProxyModel`: the algorithms
talk to ``ctx.math`` through one small vocabulary (``forward``, ``backward``, ``step``,
``step_mean``, ``average``, ``load``, ``params``, ``velocity``, ``nesterov_step``, ``shard``,
``split``), and the convergence emulation must run it on other tasks than the proxy's
Gaussian clusters (a teacher-student regression with a known optimum, real handwritten
digits).  The task supplies the data, the initial weights, the loss and its gradient and the
held-out evaluation (:class:`Task`); this class supplies everything that is the same for
every task, with the proxy model's arithmetic (so that one update rule means one rounding).
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

import numpy as np

from clustersim.algorithms.proxy import ProxyShard

__all__ = ["Task", "TaskModel", "DTYPE"]

DTYPE = np.float32


class Task(Protocol):
    """What an emulation task provides (see :mod:`clustersim.algorithms.tasks`)."""

    name: str
    metric: str  # what ``evaluate`` returns second (higher is better)
    lr: float
    momentum: float
    batch: int
    seed: int

    def initial_weights(self) -> np.ndarray: ...

    def sampler(self, shard: int, shards: int, stream: int) -> Any: ...

    def loss_grad(self, w: np.ndarray, batch: Any) -> tuple[float, np.ndarray]: ...

    def evaluate(self, w: np.ndarray) -> tuple[float, float]: ...


class TaskModel:
    """One actor's replica: weights, its data stream and the math on them.

    Methods take one argument so that they can be a ``Compute``'s ``fn`` (the backend calls
    ``fn(op.data)``).  ``grads`` counts the gradients this replica computed (worker steps);
    ``steps`` the updates applied to its weights (as on the proxy model).
    """

    def __init__(self, task: Task, *, shard: int = 0, shards: int = 1, stream: int = 0,
                 workers: int = 1) -> None:
        self.task = task
        self.workers = max(int(workers), 1)
        self.weights = task.initial_weights()
        self._next = task.sampler(shard, max(shards, 1), stream)
        self._grad: np.ndarray | None = None
        self._velocity: np.ndarray | None = None
        self.steps = 0
        self.grads = 0

    # -- gradients ------------------------------------------------------------------------
    def forward(self, _: Any = None) -> float:
        """Loss on the next mini-batch; its gradient is kept for :meth:`backward` (one pass:
        the forward's activations are what the backward needs)."""
        loss, self._grad = self.task.loss_grad(self.weights, self._next())
        self.grads += 1
        return loss

    def backward(self, _: Any = None) -> np.ndarray:
        """Gradient of the last forward's mean loss (a new flat float32 array)."""
        if self._grad is None:
            self.forward()
        g, self._grad = self._grad, None
        assert g is not None
        return g

    def gradient(self, _: Any = None) -> np.ndarray:
        self.forward()
        return self.backward()

    # -- updates (the proxy model's rules, the same roundings) ----------------------------
    def step(self, grad: np.ndarray) -> np.ndarray:
        self.weights -= DTYPE(self.task.lr) * np.asarray(grad, dtype=DTYPE).reshape(-1)
        self.steps += 1
        return self.weights

    def step_mean(self, summed: np.ndarray) -> np.ndarray:
        g = np.asarray(summed, dtype=DTYPE).reshape(-1)
        self.weights -= DTYPE(self.task.lr / self.workers) * g
        self.steps += 1
        return self.weights

    def average(self, summed: np.ndarray) -> np.ndarray:
        self.weights[...] = np.asarray(summed, dtype=DTYPE).reshape(-1) / DTYPE(self.workers)
        return self.weights

    def load(self, weights: np.ndarray) -> np.ndarray:
        self.weights[...] = np.asarray(weights, dtype=DTYPE).reshape(-1)
        return self.weights

    def params(self, _: Any = None) -> np.ndarray:
        return self.weights.copy()

    def velocity(self, grad: np.ndarray, mu: float = 0.9) -> np.ndarray:
        """``b <- mu b + grad`` (see :meth:`ProxyModel.velocity`)."""
        g = np.asarray(grad, dtype=DTYPE).reshape(-1)
        if self._velocity is None:
            self._velocity = np.zeros_like(self.weights)
        self._velocity *= DTYPE(mu)
        self._velocity += g
        return self._velocity

    def nesterov_step(self, grad: np.ndarray, mu: float = 0.9) -> np.ndarray:
        g = np.asarray(grad, dtype=DTYPE).reshape(-1)
        b = self._velocity if self._velocity is not None else np.zeros_like(self.weights)
        self.weights -= DTYPE(self.task.lr) * (g + DTYPE(mu) * b)
        self.steps += 1
        return self.weights

    def shard(self, index: int, parts: int) -> ProxyShard:
        """Piece ``index`` of ``parts`` of the weights, as a parameter-server shard holds it
        (the proxy's shard works on any model with ``weights``, ``task.lr``,
        ``task.momentum`` and ``steps``)."""
        return ProxyShard(self, index, parts)  # type: ignore[arg-type]

    def split(self, flat: np.ndarray, parts: int) -> list[np.ndarray]:
        return [np.ascontiguousarray(a) for a in np.array_split(flat, max(parts, 1))]

    # -- evaluation ---------------------------------------------------------------------
    def evaluate(self) -> tuple[float, float]:
        """(held-out loss, metric) of these weights."""
        return self.task.evaluate(self.weights)

    def loss(self, _: Any = None) -> float:
        return self.evaluate()[0]

    def accuracy(self) -> float:
        return self.evaluate()[1]

    def digest(self) -> str:
        return hashlib.sha256(np.ascontiguousarray(self.weights).tobytes()).hexdigest()
