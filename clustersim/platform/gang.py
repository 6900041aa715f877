"""Devices acting as one: a device with the compute of several (``placement:``).

Why: the platforms describe hardware (a KNL node as 68 core devices); where a job puts one
process over several of them - a model replica on a group of cores, a master owning a whole
node - the simulator still wants one device per actor.  The grouped device carries the
group's compute peak, memory bandwidth and memory, and its link into the machine's internal
switch the group's bandwidth; every other link stays as it is, so a master on a whole node
still reaches the fabric through the node's NIC.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import numpy as np

__all__ = ["scaled_device", "whole_machine"]


def scaled_device(spec: Any, g: int) -> Any:
    """A device ``g`` times ``spec``: every rate and the memory (``None`` stays ``None``)."""
    def times(v: float | None) -> float | None:
        return None if v is None else v * g

    return replace(spec, name=f"{spec.name} x{g}", peak=spec.peak * g,
                   mem_bw=spec.mem_bw * g, memory=spec.memory * g,
                   peak_fp16=times(spec.peak_fp16), peak_tf32=times(spec.peak_tf32),
                   peak_bf16=times(spec.peak_bf16), reduce_rate=times(spec.reduce_rate),
                   pack_rate=times(spec.pack_rate))


def whole_machine(platform: Any, devices: tuple[int, ...]) -> Any:
    """``platform`` with each of ``devices`` given the whole compute of its machine (every
    device of that host) and its own links that many times their bandwidth; the other
    devices of those machines stay idle (nothing is placed on them).

    Kept in the platform's ``memo`` per device tuple: every algorithm and seed of a sweep
    point asks for the same one, and its point-to-point plans are reused with it."""
    key = ("whole machine", devices)
    hit = platform.memo.get(key)
    if hit is not None:
        return hit
    specs = list(platform.rank_specs)
    capacity = np.array(platform.capacity, dtype=float)
    tails, heads, links = (platform._edge_cols[k] for k in range(3))  # noqa: SLF001
    hosts = platform.rank_hosts
    for d in devices:
        m = sum(1 for h in hosts if h == hosts[d])
        specs[d] = scaled_device(platform.rank_specs[d], m)
        node = platform._dev_index[d]  # noqa: SLF001
        own = np.unique(links[(tails == node) | (heads == node)])
        capacity[own] = np.asarray(platform.capacity)[own] * m
    out = copy.copy(platform)
    out.rank_specs = tuple(specs)
    capacity.setflags(write=False)
    out.capacity = capacity
    out.memo = {}
    out._route_cache = dict(platform._route_cache)  # noqa: SLF001 - the same routes
    platform.memo[key] = out
    return out
