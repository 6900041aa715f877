"""Compute model: per-layer roofline times, the backward timeline and gradient buckets.

Why a roofline per layer: a training step is a sequence of kernels, each limited either by
arithmetic (``flops / (peak * efficiency)``) or by memory traffic (``bytes / (mem_bw *
mem_efficiency)``), plus a fixed launch/dispatch overhead.  Convolutions are compute-bound,
ReLU/batch-norm/pooling are memory-bound, and small fully connected layers flip between the
two with the batch size (their weights are read once per batch) - a single FLOP rate per model
cannot show that, a roofline per layer can.  The efficiencies per kernel class (conv, fc,
other), ``mem_efficiency`` and ``overhead`` are the calibration parameters; defaults come from
the :class:`~clustersim.catalog.DeviceSpec`.

Why the backward pass is kept as a timeline: in data-parallel training a layer's gradient can
be sent as soon as its backward step is done, while earlier layers are still computing.  The
profile lists the backward steps in execution order with the offset at which each gradient is
ready, and :meth:`ComputeProfile.buckets` groups them the way PyTorch DDP and Horovod fuse
tensors, so the simulator can overlap communication with computation.

Bytes per batch of ``b`` samples (weights read once per pass, fp32):

* forward:  ``b * mem_bytes + 4 * params``
* backward: ``b * bwd_mem_bytes + 4 * params`` (write dW) ``+ 4 * params`` (read W for dX,
  only when the input gradient is needed)
* update:   ``params * bytes_per_param(optimizer)`` - SGD reads w and g and writes w (12 B);
  momentum/Nesterov also read and write v (20 B); Adam reads w, g, m, v and writes w, m, v
  (28 B); one kernel per layer with parameters, as unfused framework optimizers launch.

Why an optional ``fc_wgrad`` efficiency: a BLAS's rate depends on which GEMM dimension the
batch is.  A fully connected layer's forward and input-gradient GEMMs have the batch as rows
(``m``); its weight-gradient GEMM has it as the inner dimension (``k``), and OpenBLAS runs
that orientation markedly faster on small batches (measured in docs/calibration.md: 64x2048x2048
at 45 GFLOP/s, its weight gradient 2048x2048x64 at 67).  One ``fc`` rate fitted over both
lands between them.  When the overrides carry ``fc_wgrad`` (a calibration that measured that
orientation on its own), an fc layer's backward pass is costed as two kernels, see
:func:`layer_time`; without it every prediction is unchanged.

Why an optional packing term (``DeviceSpec.pack_rate``): GotoBLAS-style libraries (OpenBLAS,
BLIS, MKL) copy both input operands of a GEMM into cache-sized panels before the inner kernel
runs, a pass over ``A`` (``m x k``) and ``B`` (``k x n``) that costs time proportional to
their size, not to the FLOPs.  A GEMM whose operands are large next to its work - the batch
as the row count ``m`` of a fully connected layer (``k x n`` weights, ``2 m k n`` FLOPs) or a
convolution with few output channels - runs visibly below the rate of a square one: measured
here, 32x1024x2048 at 22-35 GFLOP/s against 64-93 for 256x1024x2048 (docs/calibration.md).
With ``pack_rate`` set, each GEMM of a layer with multiply-adds is charged
``4 (|A| + |B|) / pack_rate`` on top of its roofline time (:func:`gemm_pack_time`), with the
shapes ``realrun.compute`` runs (:func:`gemm_shape`: im2col for convolutions, the weight and
input gradients as the transposed products).  One parameter, fitted beside the FLOP rates,
replaces a rate per batch size; without it every prediction is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clustersim.catalog import DeviceSpec
from clustersim.errors import InputError, unknown_name
from clustersim.workload.compute_overrides import (
    EFFICIENCY_CLASSES,
    FC_WGRAD,
    ComputeOverrides,
    as_overrides,
)
from clustersim.workload.input_pipeline import InputPipeline
from clustersim.workload.layer import BYTES_PER_ELEMENT, Layer
from clustersim.workload.model import Model

__all__ = [
    "OPTIMIZERS", "EFFICIENCY_CLASSES", "FC_WGRAD", "ComputeOverrides", "InputPipeline", "KernelTime", "BackwardStep", "Bucket",
    "ComputeProfile", "roofline", "layer_time", "update_time", "gemm_shape", "gemm_pack_time",
]

#: Optimizer -> (bytes moved per parameter, FLOPs per parameter) of the update kernel.
OPTIMIZERS: dict[str, tuple[int, int]] = {
    "sgd": (12, 2),        # w -= lr * g
    "momentum": (20, 4),   # v = mu * v + g ; w -= lr * v
    "nesterov": (20, 6),   # plus the look-ahead term
    "adam": (28, 12),      # m, v moments, bias correction, sqrt and divide
}




@dataclass(frozen=True)
class KernelTime:
    """One kernel's roofline result; ``bound`` is ``compute``, ``memory`` or ``none`` (no work)."""

    name: str
    kind: str
    time: float
    flops: float
    nbytes: float
    bound: str


def roofline(flops: float, nbytes: float, device: DeviceSpec, efficiency: float,
             mem_efficiency: float, overhead: float) -> tuple[float, str]:
    """``max(flops / (peak * eff), bytes / (mem_bw * mem_eff)) + overhead`` and the active bound.

    A kernel with neither FLOPs nor bytes is not launched: zero time, bound ``none``.
    """
    if flops <= 0 and nbytes <= 0:
        return 0.0, "none"
    t_compute = flops / (device.peak * efficiency)
    t_memory = nbytes / (device.mem_bw * mem_efficiency)
    if t_compute >= t_memory:
        return t_compute + overhead, "compute"
    return t_memory + overhead, "memory"


def gemm_shape(layer: Layer, batch: int) -> tuple[int, int, int] | None:
    """``(m, n, k)`` of a layer's forward GEMM, or ``None`` for a layer without multiply-adds.

    ``n`` is the output channels (features), ``m = batch * prod(spatial)`` the output
    positions, ``k = macs / (n * prod(spatial))`` the reduction length: the im2col shape of
    a convolution, the natural shape of a fully connected layer (``2 m n k = 2 batch macs``).
    With only totals known, a square-ish GEMM of the right size.  ``realrun.compute`` runs
    exactly these shapes, so the packing term describes the kernels a real run executes.
    """
    macs = float(layer.macs or (layer.fwd_flops / 2.0 if layer.params else 0.0))
    if macs <= 0:
        return None
    shape = tuple(int(s) for s in layer.out_shape) if layer.out_shape else ()
    if shape:
        n = max(shape[0], 1)
        spatial = math.prod(shape[1:]) if len(shape) > 1 else 1
    else:
        n = max(1, int(round(math.sqrt(macs))))
        spatial = 1
    k = max(1, int(round(macs / (n * spatial))))
    return max(int(batch), 1) * spatial, n, k


def _pack_bytes(m: int, n: int, k: int) -> float:
    """Bytes of a ``(m x k) @ (k x n)`` GEMM's two input operands (fp32)."""
    return float(BYTES_PER_ELEMENT * (m * k + k * n))


def gemm_pack_time(layer: Layer, device: DeviceSpec, batch: int,
                   phase: str) -> tuple[float, float]:
    """Packing time of a layer's GEMMs in one pass: ``(weight gradient, input gradient or
    forward)`` seconds; zeros without ``device.pack_rate`` or multiply-adds.

    Forward ``(m, n, k)`` packs ``mk + kn`` elements; the weight gradient ``(k, n, m)``
    packs ``km + mn``; the input gradient ``(m, k, n)`` (when ``input_grad``) ``mn + nk``.
    """
    rate = getattr(device, "pack_rate", None)
    shape = gemm_shape(layer, batch) if rate else None
    if not rate or shape is None:
        return 0.0, 0.0
    m, n, k = shape
    if phase == "forward":
        return 0.0, _pack_bytes(m, n, k) / rate
    wgrad = _pack_bytes(k, n, m) / rate if layer.params else 0.0
    dgrad = _pack_bytes(m, k, n) / rate if layer.input_grad else 0.0
    return wgrad, dgrad


def _fc_backward(layer: Layer, device: DeviceSpec, batch: int,
                 ov: ComputeOverrides) -> KernelTime:
    """An fc layer's backward pass as its two GEMMs, each with its own roofline and overhead.

    * weight gradient ``dW = x^T dy``: ``batch * fwd_flops`` FLOPs (one forward's worth, at
      most the whole backward) at the ``fc_wgrad`` efficiency; writes dW once (``4 * params``);
    * input gradient ``dx = dy W^T`` (only with ``input_grad``): the remaining backward FLOPs
      at the ``fc`` efficiency; reads W once (``4 * params``).

    The activation traffic ``batch * bwd_mem_bytes`` is split half and half when both run (by
    :class:`Layer`'s default the weight gradient reads dy and x, the input gradient reads dy
    and writes dx: equal sizes for a square layer) and goes wholly to the weight gradient
    otherwise.  The totals (FLOPs, bytes) equal the single-kernel accounting; the layer's
    ``bound`` is that of the longer kernel.
    """
    total_flops = batch * (layer.bwd_flops or 0.0)
    act_bytes = batch * (layer.bwd_mem_bytes or 0.0)
    weight_bytes = float(BYTES_PER_ELEMENT * layer.params)
    mem_eff, overhead = ov.mem_efficiency_for(device), ov.overhead_for(device)
    if layer.input_grad:
        w_flops = min(batch * layer.fwd_flops, total_flops)
        w_act = 0.5 * act_bytes
    else:
        w_flops, w_act = total_flops, act_bytes
    pack_w, pack_i = gemm_pack_time(layer, device, batch, "backward")
    t_w, b_w = roofline(w_flops, w_act + weight_bytes, device, ov.efficiency_for(device, FC_WGRAD),
                        mem_eff, overhead)
    t_w += pack_w
    t_i, b_i = 0.0, "none"
    if layer.input_grad:
        t_i, b_i = roofline(total_flops - w_flops, act_bytes - w_act + weight_bytes, device,
                            ov.efficiency_for(device, "fc"), mem_eff, overhead)
        t_i += pack_i
    nbytes = act_bytes + weight_bytes * (2.0 if layer.input_grad else 1.0)
    return KernelTime(layer.name, layer.kind, t_w + t_i, total_flops, nbytes,
                      b_w if t_w >= t_i else b_i)


def layer_time(layer: Layer, device: DeviceSpec, batch: int, phase: str = "forward",
               overrides: ComputeOverrides | Mapping[str, Any] | None = None) -> KernelTime:
    """Roofline time of one layer's forward or backward pass for ``batch`` samples.

    One kernel per pass, except the backward pass of an fc layer with weights when the
    overrides carry an ``fc_wgrad`` efficiency: then two (:func:`_fc_backward`).
    """
    ov = as_overrides(overrides)
    if (phase == "backward" and FC_WGRAD in ov.efficiency and layer.kernel_class == "fc"
            and layer.weighted):
        return _fc_backward(layer, device, batch, ov)
    weight_bytes = float(BYTES_PER_ELEMENT * layer.params)
    if phase == "forward":
        flops = batch * layer.fwd_flops
        nbytes = batch * (layer.mem_bytes or 0.0) + weight_bytes
    elif phase == "backward":
        flops = batch * (layer.bwd_flops or 0.0)
        nbytes = batch * (layer.bwd_mem_bytes or 0.0)
        if layer.params:
            nbytes += weight_bytes * (2.0 if layer.input_grad else 1.0)
    else:
        raise ValueError(f"phase must be 'forward' or 'backward', not {phase!r}")
    t, bound = roofline(flops, nbytes, device, ov.efficiency_for(device, layer.kernel_class),
                        ov.mem_efficiency_for(device), ov.overhead_for(device))
    if t > 0:
        t += sum(gemm_pack_time(layer, device, batch, phase))
    return KernelTime(layer.name, layer.kind, t, flops, nbytes, bound)


def update_time(model: Model, device: DeviceSpec, optimizer: str = "sgd",
                overrides: ComputeOverrides | Mapping[str, Any] | None = None) -> float:
    """Optimizer step: one memory-bound kernel per layer with parameters."""
    if optimizer not in OPTIMIZERS:
        raise unknown_name("optimizer", optimizer, OPTIMIZERS, path=("optimizer",))
    ov = as_overrides(overrides)
    bpp, fpp = OPTIMIZERS[optimizer]
    total = 0.0
    for layer in model.weighted_layers:
        t, _ = roofline(fpp * layer.params, bpp * layer.params, device,
                        ov.efficiency_for(device, "other"), ov.mem_efficiency_for(device),
                        ov.overhead_for(device))
        total += t
    return total


@dataclass(frozen=True)
class BackwardStep:
    """A layer's backward kernel; its gradient (``grad_bytes``) is ready at offset ``end``."""

    name: str
    kind: str
    time: float
    start: float
    end: float
    grad_bytes: int
    bound: str


@dataclass(frozen=True)
class Bucket:
    """Consecutive gradients sent together; ready ``ready`` seconds after backward starts."""

    index: int
    ready: float
    nbytes: int
    layers: tuple[str, ...]


@dataclass(frozen=True)
class ComputeProfile:
    """Timings of one training step of ``model`` on ``device`` with ``batch`` samples.

    Build with :meth:`build`.  ``forward`` is in forward order; ``backward`` in execution
    (reverse) order with cumulative offsets.  All times in seconds.
    """

    model: str
    device: str
    batch: int
    optimizer: str
    forward: tuple[KernelTime, ...]
    backward: tuple[BackwardStep, ...]
    update_time: float
    input_time: float = 0.0
    input_limit: str | None = None

    @classmethod
    def build(cls, model: Model, device: DeviceSpec, batch: int, *,
              overrides: ComputeOverrides | Mapping[str, Any] | None = None,
              optimizer: str = "sgd", pipeline: InputPipeline | None = None) -> ComputeProfile:
        """Cost every layer of ``model`` for ``batch`` samples on ``device``."""
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise InputError(f"batch must be a positive integer, not {batch!r}", path=("batch",))
        ov = as_overrides(overrides)
        fwd = tuple(layer_time(layer, device, batch, "forward", ov) for layer in model.layers)
        steps: list[BackwardStep] = []
        clock = 0.0
        for layer in reversed(model.layers):
            kt = layer_time(layer, device, batch, "backward", ov)
            steps.append(BackwardStep(layer.name, layer.kind, kt.time, clock, clock + kt.time,
                                      layer.grad_bytes, kt.bound))
            clock += kt.time
        upd = update_time(model, device, optimizer, ov)
        in_time = batch / pipeline.rate if pipeline is not None else 0.0
        return cls(model.name, device.name, batch, optimizer, fwd, tuple(steps), upd, in_time,
                   pipeline.limit if pipeline is not None else None)

    @property
    def forward_time(self) -> float:
        return math.fsum(k.time for k in self.forward)

    @property
    def backward_time(self) -> float:
        return self.backward[-1].end if self.backward else 0.0

    @property
    def compute_time(self) -> float:
        """Forward + backward + optimizer update on the device."""
        return self.forward_time + self.backward_time + self.update_time

    @property
    def step_time(self) -> float:
        """Compute time, or the input pipeline's time per batch if that is longer."""
        return max(self.compute_time, self.input_time)

    @property
    def bound(self) -> str:
        """``compute`` or the input stage (``io``/``decode``) that starves it."""
        if self.input_limit is not None and self.input_time > self.compute_time:
            return self.input_limit
        return "compute"

    @property
    def samples_per_second(self) -> float:
        return self.batch / self.step_time

    @property
    def grad_bytes(self) -> int:
        return sum(s.grad_bytes for s in self.backward)

    def buckets(self, bucket_bytes: float, first_bucket_bytes: float | None = None
                ) -> tuple[Bucket, ...]:
        """Group gradients in backward order into buckets of at least ``bucket_bytes``.

        As PyTorch DDP's reducer: gradients are appended in the order they become ready and a
        bucket closes once it holds ``bucket_bytes`` or more (the last one may be smaller).
        ``first_bucket_bytes`` sets a different threshold for the first bucket (DDP uses 1 MiB
        so communication starts early).  ``0`` gives one bucket per layer with parameters,
        ``math.inf`` one bucket for the whole gradient.  Layers without parameters join no
        bucket; a bucket is ready when its last gradient is.
        """
        for value, what in ((bucket_bytes, "bucket_bytes"), (first_bucket_bytes, "first_bucket_bytes")):
            if value is not None and (isinstance(value, bool) or not value >= 0):
                raise InputError(f"{what} must be a non-negative size, not {value!r}",
                                 path=(what,))
        limit = bucket_bytes if first_bucket_bytes is None else first_bucket_bytes
        out: list[Bucket] = []
        names: list[str] = []
        nbytes = 0
        ready = 0.0
        for step in self.backward:
            if step.grad_bytes <= 0:
                continue
            names.append(step.name)
            nbytes += step.grad_bytes
            ready = step.end
            if nbytes >= limit:
                out.append(Bucket(len(out), ready, nbytes, tuple(names)))
                names, nbytes, limit = [], 0, bucket_bytes
        if names:
            out.append(Bucket(len(out), ready, nbytes, tuple(names)))
        return tuple(out)
