"""Analytic costing of a collective schedule, contention included.

Why it exists: simulating every flow of a 4,253-rank ring is millions of events; but a ring's
2(p-1) steps are one pattern.  Here each *distinct* step is costed once - routes resolved on the
platform, rates from max-min sharing of all its transfers at once (so an oversubscribed uplink or
an incast is counted) - and multiplied by its repeat count.

Step time = max over transfers of (overhead + path latency + bytes / fair rate)
          + max over ranks of (bytes reduced / device reduction bandwidth).

Where it differs from the flow model: rates are the ones at the *start* of a step; when the
fastest flows finish the flow model hands their bandwidth to the rest, so analytic time is an
upper bound that is exact when all flows of a step share one rate (uniform rings, crossbars,
non-oversubscribed fat-trees) and pessimistic when rates differ (oversubscribed uplinks,
dragonfly global links, mixed intra/inter-node steps).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from clustersim.collectives.schedule import Schedule, Step
from clustersim.network.maxmin import flat_incidence, progressive_fill
from clustersim.network.params import NetworkParams
from clustersim.platform.model import Platform

__all__ = ["CollectiveCost", "cost_schedule", "cost_step", "convert_time"]


@dataclass
class CollectiveCost:
    """Time of one collective and where it went (seconds)."""

    time: float
    comm: float
    reduce: float
    convert: float
    step_times: list[float] = field(default_factory=list)
    fidelity: str = "analytic"


def convert_time(platform: Platform, device: int, nbytes: float) -> float:
    """fp32<->fp16 cast of ``nbytes`` of fp32 data: read 4 bytes, write 2 per element."""
    spec = platform.spec(device)
    return nbytes * 1.5 / (spec.mem_bw * spec.mem_efficiency)


def cost_step(
    step: Step,
    platform: Platform,
    placement: Sequence[int],
    params: NetworkParams = NetworkParams(),
) -> tuple[float, float]:
    """(communication time, reduction time) of one occurrence of ``step``.

    A transfer between ranks on the same device (empty route) is a local copy and costs
    nothing, as in the flow model.
    """
    comm = 0.0
    if step.transfers:
        routes = [platform.route(placement[t.src], placement[t.dst]) for t in step.transfers]
        links, owner = flat_incidence(routes)
        if links.size:
            n = len(routes)
            used, local = np.unique(links, return_inverse=True)
            cap = platform.capacity[used] * params.efficiency
            rates = progressive_fill(local, owner, cap, n)
            lat = np.bincount(owner, weights=platform.latency[links], minlength=n)
            sizes = np.fromiter((t.nbytes for t in step.transfers), dtype=float, count=n)
            remote = np.isfinite(rates)
            dt = params.overhead + lat[remote] + sizes[remote] / rates[remote]
            comm = float(dt.max())
    red = 0.0
    for rank, nbytes in step.reduce_bytes().items():
        red = max(red, nbytes / platform.spec(placement[rank]).reduce_bw)
    return comm, red


def cost_schedule(
    schedule: Schedule,
    platform: Platform,
    placement: Sequence[int] | None = None,
    params: NetworkParams = NetworkParams(),
) -> CollectiveCost:
    """Cost a whole schedule; ``placement[rank]`` is the device index of each rank."""
    if placement is None:
        placement = range(schedule.ranks)
    placement = list(placement)
    if len(placement) < schedule.ranks:
        raise ValueError(f"placement has {len(placement)} devices for {schedule.ranks} ranks")
    comm = red = 0.0
    step_times = []
    for step in schedule.steps:
        c, r = cost_step(step, platform, placement, params)
        comm += c * step.repeat
        red += r * step.repeat
        step_times.append(c + r)
    conv = 0.0
    if schedule.convert_bytes:
        conv = max(convert_time(platform, placement[k], schedule.convert_bytes)
                   for k in range(schedule.ranks))
    return CollectiveCost(comm + red + conv, comm, red, conv, step_times)
