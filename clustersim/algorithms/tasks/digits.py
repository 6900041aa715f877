"""Handwritten digits: a real small learning task whose data ships with scikit-learn.

``sklearn.datasets.load_digits`` is the UCI optical-recognition test set (Alpaydin & Kaynak
1998): 1,797 8x8 grey-level images of the digits 0-9, installed with scikit-learn - nothing
to download, the same bytes on every machine.  Pixels (0-16) are scaled to [0, 1]; a seeded
permutation holds out ``test_fraction`` of the images for the curve's loss and accuracy; the
rest is the training set, dealt to the workers every epoch as PyTorch's
``DistributedSampler`` deals it (:meth:`Digits.sampler`).

The model: softmax regression (``hidden = 0``) or a one-hidden-layer tanh perceptron with a
softmax output (``hidden > 0``), cross-entropy loss, Glorot-scaled seeded initial weights,
everything float32.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

__all__ = ["Digits", "GaussianClusters", "digits_data"]

DTYPE = np.float32


@lru_cache(maxsize=4)
def digits_data(seed: int, test_fraction: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_train, y_train, x_test, y_test)``: a pure function of its arguments (read-only
    arrays, shared by every replica)."""
    from sklearn.datasets import load_digits  # heavy import: only when the task is used

    data = load_digits()
    x = (np.asarray(data.data, dtype=np.float64) / 16.0).astype(DTYPE)
    y = np.asarray(data.target, dtype=np.int64)
    order = np.random.default_rng([seed, 0xD161]).permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    test, train = order[:n_test], order[n_test:]
    out = (x[train], y[train], x[test], y[test])
    for a in out:
        a.setflags(write=False)
    return out


@lru_cache(maxsize=256)
def _deal(seed: int, n: int, epoch: int) -> np.ndarray:
    """Epoch ``epoch``'s permutation of ``n`` training images: computed once and shared by
    the workers (they run through their epochs at about the same pace)."""
    out = np.random.default_rng([seed, 0xE90C, epoch]).permutation(n)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class Digits:
    """The ``digits`` emulation task (see the module docstring): ``hidden`` tanh units (0:
    softmax regression), mini-batches of ``batch`` images, SGD with ``lr`` and ``momentum``;
    ``evaluate`` gives the held-out loss and accuracy.  Frozen: every replica shares one."""

    hidden: int = 32
    batch: int = 32
    lr: float = 0.1
    momentum: float = 0.9
    seed: int = 0
    test_fraction: float = 0.2
    name: str = "digits"
    metric: str = "accuracy"
    features: int = 64
    classes: int = 10

    def data(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(x_train, y_train, x_test, y_test)``."""
        return digits_data(self.seed, self.test_fraction)

    @property
    def num_params(self) -> int:
        f, h, c = self.features, self.hidden, self.classes
        return f * c + c if h == 0 else f * h + h + h * c + c

    def initial_weights(self) -> np.ndarray:
        rng = np.random.default_rng([self.seed, 0x1417])
        f, h, c = self.features, self.hidden, self.classes
        if h == 0:
            w = rng.standard_normal((f, c)) * np.sqrt(1.0 / f)
            return np.concatenate([w.ravel(), np.zeros(c)]).astype(DTYPE)
        w1 = rng.standard_normal((f, h)) * np.sqrt(1.0 / f)
        w2 = rng.standard_normal((h, c)) * np.sqrt(1.0 / h)
        return np.concatenate([w1.ravel(), np.zeros(h), w2.ravel(), np.zeros(c)]).astype(DTYPE)

    @cached_property
    def _cuts(self) -> tuple[tuple[slice, tuple[int, ...]], ...]:
        """(slice of the flat weights, shape) per layer tensor, computed once."""
        f, h, c = self.features, self.hidden, self.classes
        shapes = [(f, c), (c,)] if h == 0 else [(f, h), (h,), (h, c), (c,)]
        out, lo = [], 0
        for shape in shapes:
            n = int(np.prod(shape))
            out.append((slice(lo, lo + n), shape))
            lo += n
        return tuple(out)

    def _layers(self, w: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(w[cut].reshape(shape) for cut, shape in self._cuts)

    def sampler(self, shard: int, shards: int, stream: int) -> Callable[[], np.ndarray]:
        """Worker ``shard`` of ``shards``'s mini-batches, as PyTorch's ``DistributedSampler``
        deals them: every epoch one seeded permutation of the whole training set, of which
        worker ``w`` takes positions ``w, w + W, ...``; its batches run on through the
        epochs.  Why not fixed shards: with hundreds of workers a fixed shard of 1,437
        images holds a handful, which each worker would fit alone; re-dealt every epoch,
        every worker sees the whole set, as in real data-parallel training.  ``stream``
        plays no part (the deal is the job's)."""
        x, y, _, _ = self.data()
        n, b, seed = len(y), self.batch, self.seed
        state = {"epoch": -1, "mine": np.empty(0, dtype=np.int64), "pos": 0}

        def draw() -> tuple[np.ndarray, np.ndarray]:
            parts, need = [], b
            while need > 0:
                mine, pos = state["mine"], state["pos"]
                if pos >= len(mine):  # the next epoch's deal
                    state["epoch"] += 1
                    mine = state["mine"] = _deal(seed, n, state["epoch"])[shard::shards]
                    pos = 0
                take = mine[pos: pos + need]
                state["pos"] = pos + len(take)
                parts.append(take)
                need -= len(take)
            idx = parts[0] if len(parts) == 1 else np.concatenate(parts)
            return x[idx], y[idx]

        return draw

    def _probs(self, w: np.ndarray, x: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        layers = self._layers(w)
        if self.hidden == 0:
            hid, z = None, x @ layers[0] + layers[1]
        else:
            hid = np.tanh(x @ layers[0] + layers[1])
            z = hid @ layers[2] + layers[3]
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return hid, e / e.sum(axis=1, keepdims=True)

    def loss_grad(self, w: np.ndarray, batch: tuple[np.ndarray, np.ndarray]
                  ) -> tuple[float, np.ndarray]:
        x, y = batch
        hid, p = self._probs(w, x)
        rows = np.arange(len(y))
        loss = float(-np.mean(np.log(p[rows, y] + DTYPE(1e-12))))
        d = p
        d[rows, y] -= DTYPE(1.0)
        d /= DTYPE(len(y))
        if hid is None:
            return loss, np.concatenate([(x.T @ d).ravel(), d.sum(axis=0)]).astype(DTYPE)
        w2 = self._layers(w)[2]
        dh = (d @ w2.T) * (DTYPE(1.0) - hid * hid)
        return loss, np.concatenate([(x.T @ dh).ravel(), dh.sum(axis=0), (hid.T @ d).ravel(),
                                     d.sum(axis=0)]).astype(DTYPE)

    def evaluate(self, w: np.ndarray) -> tuple[float, float]:
        _, _, x, y = self.data()
        _, p = self._probs(w, x)
        loss = float(-np.mean(np.log(p[np.arange(len(y)), y].astype(np.float64) + 1e-12)))
        return loss, float(np.mean(np.argmax(p, axis=1) == y))


@dataclass(frozen=True)
class GaussianClusters(Digits):
    """The proxy model's synthetic task (:mod:`clustersim.algorithms.proxy`: Gaussian clusters
    around seeded class centres) with the same perceptron, for emulation.  The proxy has no
    held-out split, so the curve is measured on its whole data set, as the proxy's own
    ``loss()`` and ``accuracy()`` are."""

    hidden: int = 64
    name: str = "gaussian"
    features: int = 32
    classes: int = 8

    def data(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        from clustersim.algorithms.proxy import ProxyTask, dataset

        x, y = dataset(ProxyTask(features=self.features, hidden=self.hidden,
                                 classes=self.classes, seed=self.seed))
        return x, y, x, y
