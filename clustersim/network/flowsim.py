"""Run a collective :class:`Schedule` flow by flow on a :class:`FlowNetwork`.

This is the contention-aware execution of a schedule: every occurrence of every step starts its
transfers together, they share links with each other *and with whatever else runs on the same
network* (other collectives, parameter-server traffic), the step ends when the last one has
arrived, then the receivers reduce (while the transfers run, for a ``fused_reduce`` schedule:
NCCL's reduce-copy).  Semantics are those of :mod:`clustersim.collectives.schedule`
and the cost breakdown is the one of :func:`clustersim.network.analytic.cost_schedule`, so the
two fidelities can be compared field by field.

Cost per transfer is Python work, so a 4,253-rank ring (36 million transfers) is for the
analytic model; :func:`clustersim.network.fidelity.cost_collective` chooses.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence

import simpy

from clustersim.collectives.schedule import Schedule, Step
from clustersim.network.analytic import CollectiveCost, convert_time
from clustersim.network.flow import FlowNetwork
from clustersim.network.params import NetworkParams
from clustersim.platform.model import Platform

__all__ = ["schedule_process", "simulate_schedule"]


def _placement(schedule: Schedule, placement: Sequence[int] | None) -> list[int]:
    if placement is None:
        return list(range(schedule.ranks))
    placement = list(placement)
    if len(placement) < schedule.ranks:
        raise ValueError(f"placement has {len(placement)} devices for {schedule.ranks} ranks")
    return placement


def _step_plan(step: Step, platform: Platform, placement: list[int]
               ) -> tuple[list[tuple[int, ...]], list[float], float]:
    """Routes and sizes of a step's transfers and its reduction time (once per distinct step).
    """
    routes = [platform.route(placement[t.src], placement[t.dst]) for t in step.transfers]
    sizes = [float(t.nbytes) for t in step.transfers]
    red = 0.0
    for rank, nbytes in step.reduce_bytes().items():
        red = max(red, nbytes / platform.spec(placement[rank]).reduce_bw)
    return routes, sizes, red


def schedule_process(
    env: simpy.Environment,
    net: FlowNetwork,
    schedule: Schedule,
    platform: Platform,
    placement: Sequence[int] | None = None,
    params: NetworkParams | None = None,
) -> Generator[simpy.Event, object, CollectiveCost]:
    """A SimPy process body (``env.process(schedule_process(...))``) executing ``schedule``.

    Its value is a :class:`CollectiveCost`: ``comm`` is the time spent waiting for transfers,
    ``reduce`` the receivers' reduction time (the part not hidden behind the transfers, for a
    ``fused_reduce`` schedule), ``convert`` the fp16 cast (paid once, at the end,
    by the slowest rank, as in the analytic model), ``step_times[i]`` the *mean* duration of
    one occurrence of ``schedule.steps[i]`` (comm + reduce; occurrences can differ when other
    traffic shares the network).

    The link efficiency and per-message overhead are the network's own (``net.params``);
    ``params`` is accepted for symmetry with the analytic coster and must match them.
    """
    if params is not None and params != net.params:
        raise ValueError(f"params {params} differ from the network's {net.params}")
    placement = _placement(schedule, placement)
    start = env.now
    comm = red_total = 0.0
    step_times: list[float] = []
    # adaptive routing (UGAL): every occurrence routes its flows as they start
    adaptive = (getattr(net, "transfer_pairs", None) if getattr(platform, "adaptive", False)
                else None)
    fused = schedule.fused_reduce
    for step in schedule.steps:
        routes, sizes, red = _step_plan(step, platform, placement)
        pairs = ([(placement[t.src], placement[t.dst]) for t in step.transfers]
                 if adaptive is not None else None)
        t_step = env.now
        # the runtime's cost of a step (posting and completing its messages): paid per
        # occurrence of a step that moves data over the network, as in the analytic model
        step_ovh = net.params.step_overhead if any(routes) else 0.0
        for _ in range(step.repeat):
            t0 = env.now
            if step_ovh > 0.0:
                yield env.timeout(step_ovh)
            if pairs:
                yield adaptive(pairs, sizes, collective=True)
            elif routes:
                yield net.transfer_all(routes, sizes, collective=True)
            comm += env.now - t0
            # NCCL's reduce-copy (``fused_reduce``) overlaps the reduction with the step's
            # transfers: only what outlasts them is waited for, as in the analytic model
            exposed = max(0.0, red - (env.now - t0)) if fused else red
            if exposed > 0.0:
                yield env.timeout(exposed)
                red_total += exposed
        step_times.append((env.now - t_step) / step.repeat)
    conv = 0.0
    if schedule.convert_bytes:
        conv = max(convert_time(platform, placement[k], schedule.convert_bytes)
                   for k in range(schedule.ranks))
        yield env.timeout(conv)
    return CollectiveCost(env.now - start, comm, red_total, conv, step_times, fidelity="flow")


def simulate_schedule(
    schedule: Schedule,
    platform: Platform,
    placement: Sequence[int] | None = None,
    params: NetworkParams = NetworkParams(),
) -> CollectiveCost:
    """Run ``schedule`` alone on a fresh environment and network; its flow-level cost."""
    env = simpy.Environment()
    net = FlowNetwork.for_platform(env, platform, params)
    proc = env.process(schedule_process(env, net, schedule, platform, placement, params))
    env.run()
    return proc.value
