"""How a framework groups gradient tensors into collectives: ``workload.fusion``.

Why a separate notion from ``workload.bucket``: frameworks differ in *how* they group, and the
grouping sets the number of collectives (latency paid per message) and how early
communication starts (overlap with the backward pass).  Modes:

* ``whole`` - one all-reduce of the whole gradient after the backward pass;
* ``per_tensor`` - one collective per parameter tensor as it becomes ready (Theano-MPI, plain
  ``MPI_Allreduce`` per tensor).  A layer's parameters count as one tensor: the workload model
  does not split weights from biases;
* ``horovod`` - Horovod's tensor fusion: a background thread wakes every ``cycle_time``
  (``HOROVOD_CYCLE_TIME``, default 5 ms), takes the tensors that became ready since the last
  wake-up and packs them, in order, into fusion buffers of at most ``threshold`` bytes
  (``HOROVOD_FUSION_THRESHOLD``, default 64 MiB; a tensor larger than the threshold goes
  alone); each buffer is one all-reduce.  ``cycle_time: 0`` groups by threshold alone.  Not
  modelled: the wait from a buffer's last tensor to the next wake-up (at most one cycle);
* ``ddp`` - PyTorch DistributedDataParallel's reducer: gradients in reverse layer order fill
  buckets that close once they hold ``bucket_cap`` bytes (``bucket_cap_mb``, default 25 MiB);
  the first bucket closes at ``first_bucket`` (1 MiB in DDP) so communication starts early
  (Li et al., VLDB 2020).

Sources: docs/references.md ("Framework gradient exchange").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clustersim.errors import InputError, unknown_name
from clustersim.scenario.fields import Section, as_choice, as_size, as_time
from clustersim.workload.compute import BackwardStep, Bucket, ComputeProfile

__all__ = ["FUSION_MODES", "FusionSpec", "parse_fusion", "fusion_buckets", "horovod_buffers"]

MIB = 1024 * 1024
FUSION_MODES = ("whole", "per_tensor", "horovod", "ddp")
#: the fields each mode reads (others are refused, so a typo'd intent is an error)
_FIELDS = {"whole": (), "per_tensor": (), "horovod": ("threshold", "cycle_time"),
           "ddp": ("bucket_cap", "first_bucket")}


@dataclass(frozen=True)
class FusionSpec:
    """``mode`` and its parameters, with the frameworks' defaults (module docs)."""

    mode: str = "whole"
    threshold: float = 64 * MIB
    cycle_time: float = 5e-3
    bucket_cap: float = 25 * MIB
    first_bucket: float = 1 * MIB


def parse_fusion(raw: Any, path: tuple) -> FusionSpec:
    """``workload.fusion``: a mode name, or ``{mode: ..., <its fields>}``."""
    if isinstance(raw, str):
        raw = {"mode": raw}
    s = Section(raw, path, ("mode", "threshold", "cycle_time", "bucket_cap", "first_bucket"))
    mode = s.get("mode", as_choice, choices=FUSION_MODES, kind="fusion mode")
    for key in s.raw:
        if key != "mode" and key not in _FIELDS[mode]:
            allowed = ", ".join(_FIELDS[mode]) or "no other field"
            raise InputError(f"{key!r} does not apply to fusion mode {mode!r} (it takes "
                             f"{allowed})", path=(*path, key))
    d = FusionSpec()
    return FusionSpec(
        mode=mode,
        threshold=s.get("threshold", as_size, d.threshold, allow_zero=True),
        cycle_time=s.get("cycle_time", as_time, d.cycle_time),
        bucket_cap=s.get("bucket_cap", as_size, d.bucket_cap, allow_zero=True),
        first_bucket=s.get("first_bucket", as_size, d.first_bucket, allow_zero=True),
    )


def horovod_buffers(steps: Sequence[BackwardStep], threshold: float,
                    cycle_time: float) -> tuple[Bucket, ...]:
    """Horovod's fusion buffers over the backward steps (in backward order).

    A tensor ready at ``end`` is picked up at the wake-up ``ceil(end / cycle_time)``; tensors
    of one wake-up are packed in order while the buffer stays within ``threshold``.  A new
    buffer starts at a new wake-up or when the next tensor would overflow the threshold.
    """
    if not (threshold >= 0 and cycle_time >= 0):
        raise InputError("threshold and cycle_time must be >= 0", path=("fusion",))
    out: list[Bucket] = []
    names: list[str] = []
    nbytes, ready, tick = 0, 0.0, -1
    for step in steps:
        if step.grad_bytes <= 0:
            continue
        t = math.ceil(step.end / cycle_time) if cycle_time > 0 else 0
        if names and (nbytes + step.grad_bytes > threshold or t != tick):
            out.append(Bucket(len(out), ready, nbytes, tuple(names)))
            names, nbytes = [], 0
        names.append(step.name)
        nbytes += step.grad_bytes
        ready, tick = step.end, t
    if names:
        out.append(Bucket(len(out), ready, nbytes, tuple(names)))
    return tuple(out)


def fusion_buckets(prof: ComputeProfile, spec: FusionSpec) -> tuple[Bucket, ...] | None:
    """The buckets ``spec`` makes of ``prof``'s gradients (``None``: one for everything)."""
    if spec.mode == "whole":
        return None
    if spec.mode == "per_tensor":
        return prof.buckets(0)
    if spec.mode == "ddp":
        return prof.buckets(spec.bucket_cap, spec.first_bucket)
    if spec.mode == "horovod":
        return horovod_buffers(prof.backward, spec.threshold, spec.cycle_time)
    raise unknown_name("fusion mode", spec.mode, FUSION_MODES, path=("workload", "fusion"))
