"""Asynchronous SGD with fixed staleness on the teacher-student quadratic: stable below and
unstable above the bound of the delayed iteration ``e_{t+1} = e_t - a e_{t-tau}``, stable iff
``0 < a < 2 cos(tau pi / (2 tau + 1))`` (Levin & May 1976, Theor. Popul. Biol. 9).

The staleness is made fixed by the simulation itself: ``tau + 1`` identical workers of
async_sgd without jitter push in round robin, so every push after the first round finds the
other ``tau`` pushes applied since its worker's pull (checked from the server's staleness
records).  The population gradient (``batch: 0``) makes each coordinate of ``w - w*`` follow
the recursion exactly (the Hessian is the identity), through the same server update path as
any other run.
"""

from __future__ import annotations

import math

import pytest
from _emulation import emulate


def bound(tau: int) -> float:
    return 2.0 * math.cos(tau * math.pi / (2 * tau + 1))


#: ~1,000 updates: at 5% from the bound the spectral radius is 1 -+ 0.010..0.025 for tau
#: 1..3, a factor above 1e4 either way (numpy.roots of z^(tau+1) - z^tau + a)
UPDATES = 1000


@pytest.mark.parametrize("tau", [1, 2, 3])
@pytest.mark.parametrize("factor", [0.95, 1.05])
def test_fixed_staleness_stability_bound(tau: int, factor: float) -> None:
    p = tau + 1
    lr = factor * bound(tau)
    em = emulate("async_sgd", {"tau": 1}, p, {
        "task": "teacher_student", "batch": 0, "noise": 0.0, "features": 8, "lr": lr,
        "target": 1.0, "max_iterations": UPDATES // p, "eval_updates": 50})
    server = em.run.actors[-1]
    stale = server.records["staleness"]
    assert len(stale) == UPDATES // p * p
    assert set(stale[p:]) == {tau}  # after the first round: exactly tau, every push
    r = em.result
    excess0 = r.loss[0]  # noise 0: the loss is the excess loss 0.5 |w - w*|^2
    if factor < 1:
        assert r.loss[-1] < 1e-3 * excess0, r.loss[-10:]
    else:
        assert r.loss[-1] > 1e3 * excess0, r.loss[-10:]
