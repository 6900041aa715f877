"""What every EASGD variant shares: parameters with their sources, the local step, the math.

Elastic Averaging SGD (Zhang, Choromanska, LeCun, NIPS 2015, arXiv 1412.6651) couples ``p``
local models ``x_i`` to a centre variable ``x~`` by an elastic force instead of forcing them to
agree every step.  Every ``tau`` local SGD steps a worker and the centre move towards each
other by the same amount::

    d    = alpha * (x_i - x~)
    x_i <- x_i - d          (the worker is pulled towards the centre)
    x~  <- x~  + d          (the centre is pulled towards the worker)

The synchronous form moves the centre towards the mean of all workers at once,
``x~ <- (1 - beta) x~ + beta * mean_i x_i`` with ``beta = p * alpha`` (the same total pull as
``p`` elastic exchanges against one centre snapshot).  The authors' code uses ``alpha = 0.9/p``
(``beta = 0.9``); EAMSGD adds Nesterov momentum ``delta`` to the local steps.

Timing never depends on alpha, beta or delta - they change the numbers, not the bytes - so the
simulator needs only ``tau``; the math is here (:func:`elastic_exchange`, :func:`sync_centre`,
:func:`nesterov_step`) for backends that carry real arrays, and the tests check it against the
paper's equations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from clustersim.algorithms.base import Param
from clustersim.algorithms.ops import Compute
from clustersim.errors import InputError

__all__ = [
    "TAG_REQUEST", "TAG_GO", "TAG_PUSH", "TAG_CENTRE", "COMMON_PARAMS", "MOMENTUM_PARAM",
    "exchanges", "moving_rate", "local_step", "elastic_exchange", "sync_centre",
    "nesterov_step", "validate_rates",
]

ZHANG = "Zhang, Choromanska, LeCun, NIPS 2015 (arXiv 1412.6651)"
YOU = "You, Buluc, Demmel, SC17 (arXiv 1708.02983)"

#: Message tags of the master protocol.  A worker announces it is ready (``REQUEST``, a
#: header-only message), the master answers ``GO`` when it serves that worker, the worker sends
#: its weights (``PUSH``) and gets the centre back (``CENTRE``).  This is MPI's rendezvous
#: protocol for large messages (ready-to-send, clear-to-send, data) written out, so that the
#: master - not the network - decides the order in which workers are served: by rank in the
#: original EASGD, first come first served in Async EASGD.
TAG_REQUEST = 11
TAG_GO = 12
TAG_PUSH = 13
TAG_CENTRE = 14

COMMON_PARAMS: dict[str, Param] = {
    "tau": Param(10, "local SGD steps between two elastic exchanges (communication period)",
                 "Theano-MPI's EASGD rule exchanges every 10 iterations (Ma et al. 2016); "
                 "Zhang et al.'s MNIST example uses 100", kind=int, minimum=1),
    "beta": Param(0.9, "total moving rate of the centre, beta = p * alpha (used when alpha "
                  "is 0); changes the math, not the time", ZHANG, kind=float, minimum=0.0,
                  maximum=1.0),
    "alpha": Param(0.0, "moving rate of one elastic exchange; 0 means beta / p (Zhang et "
                   "al.: 0.9 / p; Theano-MPI: 0.5)", f"{ZHANG}; Theano-MPI", kind=float,
                   minimum=0.0, maximum=1.0),
}

MOMENTUM_PARAM = Param(0.9, "Nesterov momentum delta of the local steps (EAMSGD); costs one "
                       "extra pass over the parameters per step",
                       f"{ZHANG} (EAMSGD); momentum 0.9 as in Theano-MPI's models", kind=float,
                       minimum=0.0, maximum=0.999)


def validate_rates(params: dict[str, Any], path: tuple) -> None:
    """alpha and beta must not both vanish: there would be no elastic force at all."""
    if params["alpha"] == 0.0 and params["beta"] == 0.0:
        raise InputError("alpha and beta are both 0: no elastic force (give alpha > 0, or "
                         "beta > 0 to use alpha = beta / p)", path=(*path, "beta"))


def moving_rate(params: Mapping[str, Any], workers: int) -> float:
    """alpha: as given, or ``beta / p`` (Zhang et al.'s choice, ``0.9 / p``)."""
    alpha = float(params.get("alpha", 0.0))
    return alpha if alpha > 0 else float(params.get("beta", 0.9)) / max(workers, 1)


def exchanges(iterations: int, tau: int) -> int:
    """Elastic exchanges per worker: one after every ``tau``-th local step."""
    return iterations // tau


#: the local step's operations: immutable, so every actor shares them (the simulator memoises
#: an operation's cost by identity, so building them once also keeps the hot loop cheap)
FORWARD = Compute("forward")
BACKWARD = Compute("backward")
UPDATE = Compute("update")
MOMENTUM = Compute("accumulate", label="nesterov momentum")


def local_step(momentum: bool) -> tuple[Compute, ...]:
    """The operations of one local SGD step on the worker's own mini-batch (after its
    ``Record("iteration", it)``).

    With ``momentum`` (EAMSGD) the velocity ``v <- delta v - eta g(x + delta v)`` costs one
    more elementwise pass over the parameters before the update.  A tuple rather than a
    sub-generator: it is replayed every iteration of every worker, the simulator's hot loop.
    """
    return (FORWARD, BACKWARD, MOMENTUM, UPDATE) if momentum else (FORWARD, BACKWARD, UPDATE)


# -- the math, for backends that carry arrays (and for the tests) -------------------------------
def elastic_exchange(x: np.ndarray, centre: np.ndarray, alpha: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """One asynchronous elastic exchange: ``(x - d, centre + d)`` with ``d = alpha (x - centre)``.

    The pull is symmetric, so ``x + centre`` is conserved (Zhang et al., eq. 5-6).
    """
    d = alpha * (x - centre)
    return x - d, centre + d


def sync_centre(centre: np.ndarray, workers: list[np.ndarray] | np.ndarray, beta: float
                ) -> np.ndarray:
    """Synchronous centre update ``(1 - beta) centre + beta mean_i x_i`` (Zhang et al., eq. 4)."""
    mean = np.mean(np.asarray(workers), axis=0)
    return (1.0 - beta) * centre + beta * mean


def nesterov_step(x: np.ndarray, v: np.ndarray,
                  grad_at: Callable[[np.ndarray], np.ndarray], lr: float, delta: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """EAMSGD's local step: ``v <- delta v - lr grad(x + delta v)``, ``x <- x + v``."""
    v_new = delta * v - lr * grad_at(x + delta * v)
    return x + v_new, v_new

