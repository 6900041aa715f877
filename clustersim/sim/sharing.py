"""Ranks that share one physical device: a time-sliced GPU.

Why: on a machine with fewer GPUs than ranks (a one-GPU test machine, or several ranks per
GPU to fill it) the ranks' kernels take turns.  Without NVIDIA's MPS the processes' contexts
are time-sliced, so while ``k`` ranks compute at once each gets about ``1/k`` of the GPU, less
the context switches.  Measured on an H200 (``tests/data/gpu_h200_pinned``): GEMMs of 8 to
550 GFLOP took 2.1-2.3x as long with two ranks computing at once as with one rank alone - the
pair got 0.87-0.95 of the GPU - and the platform's per-rank devices, each with the whole
GPU's rates, predicted BSP's compute at half what it was.

A platform says so with ``time_shared: true`` on the device kind: the devices of that kind in
one machine are one physical device.  The model is static: every actor placed there is
charged ``k / share_efficiency`` times its own compute, where ``k`` is the number of
*workers* placed on that physical device (the factor applies from ``k = 2``).  It is exact
when the co-located workers compute in lockstep - BSP workers start each step together,
after the all-reduce - and when one worker shares the GPU with a server or master that
computes while the worker waits for it (``k = 1``: nothing changes).  Asynchronous workers on
one GPU overlap only partly, and for them the factor is an upper bound.  A dynamic
processor-sharing model (each running kernel's rate changing as others start and end) would
cover that case, at the price of the engine's run-ahead of consecutive computes
(:class:`clustersim.sim.actor._Actor`), for a deployment - several asynchronous workers per
GPU - that training at scale avoids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["device_factors", "share_group"]


def share_group(platform: Any, device: int) -> tuple[int, str] | None:
    """The physical device ``device`` is part of - ``(machine, kind)`` - or ``None`` when
    its kind is not time-shared (it is a device of its own)."""
    spec = platform.spec(device)
    return (platform.host(device), spec.name) if spec.time_shared else None


def device_factors(platform: Any, placement: Sequence[int], roles: Sequence[str]
                   ) -> dict[int, float]:
    """Device index -> compute-time factor for devices of a time-shared kind that two or
    more workers share (devices not listed: factor 1).  ``roles[i]`` is actor ``i``'s role,
    ``placement[i]`` its device."""
    groups: dict[tuple[int, str], list[int]] = {}
    for i, dev in enumerate(placement):
        group = share_group(platform, dev)
        if group is not None:
            groups.setdefault(group, []).append(i)
    out: dict[int, float] = {}
    for members in groups.values():
        k = sum(1 for i in members if roles[i] == "worker")
        if k < 2:
            continue
        spec = platform.spec(placement[members[0]])
        for i in members:
            out[placement[i]] = k / spec.share_efficiency
    return out
