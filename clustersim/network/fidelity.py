"""Choosing between the flow and the analytic model for one collective.

``fidelity: flow | analytic | auto`` in a scenario lands here.

* ``flow``: :func:`~clustersim.network.flowsim.simulate_schedule`, every transfer of every
  step occurrence a max-min flow, bandwidth handed over as flows finish.  Exact for the model,
  cost proportional to the number of transfers.
* ``analytic``: :func:`~clustersim.network.analytic.cost_schedule`, each distinct step costed
  once with its start-of-step max-min rates, times its repeat count.  Cost proportional to the
  number of *distinct* transfers; equal to the flow result when all flows of a step get the
  same rate, pessimistic otherwise (docs/fidelity.md has the measured differences).
* ``auto``: flow when the schedule expands to at most :data:`AUTO_FLOW_MAX_TRANSFERS`
  transfers, analytic above.  The threshold comes from ``bench/bench_network.py``: the engine
  sustains roughly 100,000 flow events (a start and a finish per transfer) per second on one
  core, so 20,000 transfers keep a flow-costed collective around half a second - fine for a
  benchmark table or a sweep point, while e.g. a 256-rank ring allreduce (130,560 transfers,
  ~2 s) and anything larger go analytic.
"""

from __future__ import annotations

from collections.abc import Sequence

from clustersim.collectives.schedule import Schedule
from clustersim.errors import unknown_name
from clustersim.network.analytic import CollectiveCost, cost_schedule
from clustersim.network.flowsim import simulate_schedule
from clustersim.network.params import NetworkParams
from clustersim.platform.model import Platform

__all__ = ["FIDELITIES", "AUTO_FLOW_MAX_TRANSFERS", "expanded_transfers", "choose_fidelity",
           "cost_collective"]

FIDELITIES = ("flow", "analytic", "auto")

#: ``auto`` simulates flows up to this many expanded transfers (see module docstring)
AUTO_FLOW_MAX_TRANSFERS = 20_000


def expanded_transfers(schedule: Schedule) -> int:
    """Transfers the flow model would simulate: each step's transfers times its repeats."""
    return sum(len(s.transfers) * s.repeat for s in schedule.steps)


def choose_fidelity(schedule: Schedule, fidelity: str = "auto") -> str:
    """Resolve ``fidelity`` to ``"flow"`` or ``"analytic"`` for this schedule."""
    if fidelity not in FIDELITIES:
        raise unknown_name("fidelity", fidelity, FIDELITIES, path=("run", "fidelity"))
    if fidelity != "auto":
        return fidelity
    return "flow" if expanded_transfers(schedule) <= AUTO_FLOW_MAX_TRANSFERS else "analytic"


def cost_collective(
    schedule: Schedule,
    platform: Platform,
    placement: Sequence[int] | None = None,
    params: NetworkParams = NetworkParams(),
    fidelity: str = "auto",
) -> CollectiveCost:
    """Cost ``schedule`` at the requested fidelity; ``cost.fidelity`` says which was used."""
    used = choose_fidelity(schedule, fidelity)
    if used == "flow":
        return simulate_schedule(schedule, platform, placement, params)
    return cost_schedule(schedule, platform, placement, params)
