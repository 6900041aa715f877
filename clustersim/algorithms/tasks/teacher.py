"""Teacher-student linear regression: a task whose optimum and loss are known in closed form.

A teacher ``w*`` (standard normal per feature, seeded) labels inputs ``x ~ N(0, I_d)`` with
``y = w*.x + e``, ``e ~ N(0, sigma^2)``; the student minimises ``0.5 (w.x - y)^2``.  The
expected (population) loss is ``0.5 ||w - w*||^2 + 0.5 sigma^2`` because ``E[x x^T] = I``:
its minimum is ``sigma^2 / 2`` at ``w = w*``, and the evaluation is that formula, exact -
no test set to sample.  The metric is the fraction of the teacher's signal learned,
``1 - ||w - w*||^2 / ||w*||^2`` (0 at the zero start, 1 at the optimum).

Why this task: the Hessian of the population loss is the identity, so gradient descent with
step ``a`` on it is the scalar recursion ``e <- e - a e`` per coordinate, and a gradient
``tau`` updates stale gives ``e_{t+1} = e_t - a e_{t-tau}``, whose stability bound is known
(Levin & May 1976, Theor. Popul. Biol. 9: stable iff ``0 < a < 2 cos(tau pi / (2 tau + 1))``)
- a closed form an asynchronous algorithm's emulation can be checked against.

Each worker streams fresh samples from its own seeded generator (online SGD on the
population: every mini-batch is new data).  ``batch = 0`` takes the population gradient
``w - w*`` itself (gradient descent on the expected loss, no sampling noise) - what the
stability checks use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["TeacherStudent"]

DTYPE = np.float32


@dataclass(frozen=True)
class TeacherStudent:
    """The ``teacher_student`` emulation task (see the module docstring): ``features``
    weights, label noise ``noise`` (sigma), mini-batches of ``batch`` fresh samples (0: the
    population gradient), SGD with ``lr`` and ``momentum``; ``evaluate`` is exact."""

    features: int = 32
    noise: float = 0.5
    batch: int = 32
    lr: float = 0.05
    momentum: float = 0.9
    seed: int = 0
    name: str = "teacher_student"
    metric: str = "signal_learned"

    @cached_property
    def teacher(self) -> np.ndarray:
        w = np.random.default_rng([self.seed, 0x7EAC]).standard_normal(self.features)
        out = w.astype(DTYPE)
        out.setflags(write=False)
        return out

    @property
    def num_params(self) -> int:
        return self.features

    def initial_weights(self) -> np.ndarray:
        return np.zeros(self.features, dtype=DTYPE)

    @property
    def min_loss(self) -> float:
        """The smallest expected loss: ``sigma^2 / 2`` (at the teacher)."""
        return 0.5 * self.noise ** 2

    def sampler(self, shard: int, shards: int, stream: int
                ) -> Callable[[], tuple[np.ndarray, np.ndarray] | None]:
        """Fresh samples from the worker's own stream (``shard`` plays no part: the data is
        infinite); ``None`` batches for the population gradient."""
        if self.batch == 0:
            return lambda: None
        rng = np.random.default_rng([self.seed, 0x5EED, stream])
        b, d, w, s = self.batch, self.features, self.teacher, DTYPE(self.noise)

        def draw() -> tuple[np.ndarray, np.ndarray]:
            x = rng.standard_normal((b, d), dtype=DTYPE)
            y = x @ w + s * rng.standard_normal(b, dtype=DTYPE)
            return x, y

        return draw

    def loss_grad(self, w: np.ndarray, batch: tuple[np.ndarray, np.ndarray] | None
                  ) -> tuple[float, np.ndarray]:
        if batch is None:  # the population gradient and loss
            e = w - self.teacher
            return 0.5 * float(e @ e) + self.min_loss, e.astype(DTYPE)
        x, y = batch
        r = x @ w - y
        return 0.5 * float(r @ r) / len(y), (x.T @ r) / DTYPE(len(y))

    def evaluate(self, w: np.ndarray) -> tuple[float, float]:
        e = np.asarray(w, dtype=np.float64) - self.teacher
        excess = float(e @ e)
        signal = float(self.teacher.astype(np.float64) @ self.teacher)
        return 0.5 * excess + self.min_loss, 1.0 - excess / signal
