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
from functools import partial
from typing import Any

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


class _Span:
    """What the transfers and reductions of one dependency-driven step did: when the first
    began and the last ended, and the longest reduction a rank waited for."""

    __slots__ = ("first", "last", "red")

    def __init__(self) -> None:
        self.first = float("inf")
        self.last = float("-inf")
        self.red = 0.0

    def time(self) -> float:
        return max(0.0, self.last - self.first)


def _transfer(env: simpy.Environment, deps: list[simpy.Event], go: Any, ovh: float,
              span: _Span) -> Generator[simpy.Event, object, float]:
    """One transfer of a dependency-driven step: it starts when both its ranks are done with
    their earlier steps; its value is its start time."""
    if deps:
        yield simpy.AllOf(env, deps)
    t0 = env.now
    span.first = min(span.first, t0)
    if go is not None:  # a remote transfer (a local copy costs nothing)
        if ovh > 0.0:
            yield env.timeout(ovh)
        yield go()
    span.last = max(span.last, env.now)
    return t0


def _rank_done(env: simpy.Environment, procs: list[simpy.Process], red: float, fused: bool,
               span: _Span) -> Generator[simpy.Event, object, None]:
    """A rank's part of a dependency-driven step: its transfers, then the reduction of what
    it received (for a ``fused_reduce`` schedule only the part its transfers did not hide)."""
    yield simpy.AllOf(env, procs)
    if red > 0.0:
        start = min(p.value for p in procs)
        exposed = max(0.0, red - (env.now - start)) if fused else red
        if exposed > 0.0:
            yield env.timeout(exposed)
            span.red = max(span.red, exposed)
    span.last = max(span.last, env.now)


def _launch_step(env: simpy.Environment, net: FlowNetwork, step: Step, routes: list,
                 sizes: list[float], ready: dict[int, simpy.Event], step_ovh: float,
                 platform: Platform, placement: list[int], fused: bool, adaptive: Any
                 ) -> _Span:
    """Start a step whose transfers each wait for their own two ranks only (not for the
    whole previous step); ``ready`` becomes each rank's end of this step."""
    span = _Span()
    mine: dict[int, list[simpy.Process]] = {}
    for t, route, size in zip(step.transfers, routes, sizes):
        deps = [ready[r] for r in {t.src, t.dst} if r in ready]
        go = None  # a local copy
        if route and adaptive is not None:
            go = partial(adaptive, [(placement[t.src], placement[t.dst])], [size],
                         collective=True)
        elif route:
            go = partial(net.transfer_all, [route], [size], collective=True)
        proc = env.process(_transfer(env, deps, go, step_ovh, span))
        mine.setdefault(t.src, []).append(proc)
        if t.dst != t.src:
            mine.setdefault(t.dst, []).append(proc)
    reds = step.reduce_bytes()
    for rank, procs in mine.items():
        red = reds.get(rank, 0.0) / platform.spec(placement[rank]).reduce_bw if rank in reds \
            else 0.0
        ready[rank] = env.process(_rank_done(env, procs, red, fused, span))
    return span


def schedule_process(
    env: simpy.Environment,
    net: FlowNetwork,
    schedule: Schedule,
    platform: Platform,
    placement: Sequence[int] | None = None,
    params: NetworkParams | None = None,
) -> Generator[simpy.Event, object, CollectiveCost]:
    """A SimPy process body (``env.process(schedule_process(...))``) executing ``schedule``.

    Its value is a :class:`CollectiveCost`: ``reduce`` is the receivers' reduction time (per
    step the longest a rank waited for one; for a ``fused_reduce`` schedule the part not
    hidden behind the transfers), ``convert`` the fp16 cast (paid once, at the end, by the
    slowest rank, as in the analytic model), ``comm`` the rest of the collective's time;
    ``step_times[i]`` is the *mean* duration of one occurrence of ``schedule.steps[i]``
    (occurrences can differ when other traffic shares the network).

    ``network.execution`` (:class:`NetworkParams`): ``rounds`` (default) runs every step as a
    round of all its transfers after the previous round; ``dependencies`` runs as MPI and
    NCCL do: a step that occurs once (a tree level, a recursive-doubling round) starts each
    transfer as soon as *its* two ranks are done with their earlier steps, so a subtree
    whose children sit on one switch does not wait for a child across the spine, and early
    transfers of the next step share links with late ones of this step.  A repeated step (a
    ring's p-1 rounds) runs as rounds either way: a uniform pattern, paced by its slowest
    transfer.  ``step_times`` of a once-only step under ``dependencies`` is the span from its
    first transfer's start to its last rank's end.

    The link efficiency and per-message overhead are the network's own (``net.params``);
    ``params`` is accepted for symmetry with the analytic coster and must match them.
    """
    if params is not None and params != net.params:
        raise ValueError(f"params {params} differ from the network's {net.params}")
    placement = _placement(schedule, placement)
    start = env.now
    comm = red_total = 0.0
    step_times: list[Any] = []
    # adaptive routing (UGAL): every occurrence routes its flows as they start
    adaptive = (getattr(net, "transfer_pairs", None) if getattr(platform, "adaptive", False)
                else None)
    fused = schedule.fused_reduce
    ready: dict[int, simpy.Event] = {}  # rank -> the end of its last dependency-driven step
    dependencies = net.params.execution == "dependencies"
    for step in schedule.steps:
        routes, sizes, red = _step_plan(step, platform, placement)
        # the runtime's cost of a step (posting and completing its messages): paid per
        # occurrence of a step that moves data over the network, as in the analytic model
        step_ovh = net.params.step_overhead if any(routes) else 0.0
        if dependencies and step.repeat == 1 and step.transfers:
            step_times.append(_launch_step(env, net, step, routes, sizes, ready, step_ovh,
                                           platform, placement, fused, adaptive))
            continue
        if ready:  # a round of every rank: after each rank's earlier steps
            yield simpy.AllOf(env, list(ready.values()))
            ready = {}
        pairs = ([(placement[t.src], placement[t.dst]) for t in step.transfers]
                 if adaptive is not None else None)
        t_step = env.now
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
    if ready:
        yield simpy.AllOf(env, list(ready.values()))
    spans = [s for s in step_times if isinstance(s, _Span)]
    if spans:  # dependency-driven steps: their reductions, and comm as the rest of the time
        red_total += sum(s.red for s in spans)
        step_times = [s.time() if isinstance(s, _Span) else s for s in step_times]
        comm = max(0.0, env.now - start - red_total)
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
