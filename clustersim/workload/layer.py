"""One layer of a training workload, described by what a cost model needs - not by its math.

A layer is a handful of per-sample counts: parameters, multiply-adds, FLOPs forward and
backward, activation bytes and bytes moved.  That is enough for a roofline compute model and
for gradient bucketing, and it is what a user can write down for a model we do not ship.

Counting conventions (used by :mod:`clustersim.workload.builder`, documented in
docs/workloads.md):

* ``conv``/``fc``: FLOPs = 2 x multiply-adds (bias additions are not counted, as in the
  multiply-add figures papers quote).
* everything else (pool, norm, act, add, dropout, softmax, concat) counts a small fixed number
  of FLOPs per element; those layers are memory-bound, so their byte counts matter, not the
  FLOP constants.
* backward FLOPs follow autograd: a layer with weights computes the weight gradient (one
  forward's worth) and, unless its input needs no gradient, the input gradient (another);
  a layer without weights only propagates the input gradient (~1x forward), and costs nothing
  when nothing upstream needs a gradient (e.g. a pool straight on the input image).
* bytes are fp32 (4 bytes per element), per sample.  Weight traffic is *not* in ``mem_bytes``:
  weights are read once per batch, so the compute model adds ``4 * params`` per pass itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Layer", "KINDS", "KERNEL_CLASSES", "BYTES_PER_ELEMENT", "kernel_class"]

#: Layer kinds the workload model knows.  ``other`` is for anything elementwise we do not name.
KINDS: frozenset[str] = frozenset(
    {"conv", "fc", "pool", "norm", "act", "concat", "add", "dropout", "softmax", "other"}
)

#: Kernel classes that carry their own efficiency (calibration fits one per class).
KERNEL_CLASSES: tuple[str, ...] = ("conv", "fc", "other")

#: Activations, weights and gradients are fp32.
BYTES_PER_ELEMENT = 4


def kernel_class(kind: str) -> str:
    """``conv`` and ``fc`` are dense GEMM-like kernels with their own efficiency; the rest is
    ``other`` (elementwise, memory-bound)."""
    return kind if kind in ("conv", "fc") else "other"


@dataclass(frozen=True)
class Layer:
    """Per-sample costs of one layer.

    ``bwd_flops``, ``mem_bytes`` and ``bwd_mem_bytes`` may be left ``None``; they are then
    derived with the rules in the module docstring (backward = 2x forward with weights, 1x
    without; forward moves an input the size of the output plus the output).
    ``input_grad`` says whether the gradient with respect to the layer's input is needed
    (False only for layers fed, directly or through weight-free layers, by the model input).
    """

    name: str
    kind: str
    params: int = 0
    macs: int = 0
    fwd_flops: float = 0.0
    bwd_flops: float | None = None
    out_bytes: float = 0.0
    mem_bytes: float | None = None
    bwd_mem_bytes: float | None = None
    input_grad: bool = True
    out_shape: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"layer {self.name!r}: unknown kind {self.kind!r} "
                             f"(allowed: {', '.join(sorted(KINDS))})")
        for attr in ("params", "macs", "fwd_flops", "out_bytes"):
            if getattr(self, attr) < 0:
                raise ValueError(f"layer {self.name!r}: {attr} must be >= 0")
        weighted = self.params > 0
        if self.bwd_flops is None:
            factor = (1.0 if weighted else 0.0) + (1.0 if self.input_grad else 0.0)
            object.__setattr__(self, "bwd_flops", factor * self.fwd_flops)
        if self.mem_bytes is None:
            object.__setattr__(self, "mem_bytes", 2.0 * self.out_bytes)
        if self.bwd_mem_bytes is None:
            # With weights: wgrad reads dy and x, dgrad reads dy and writes dx.
            # Without: read dy and the saved tensor, write dx.
            assert self.mem_bytes is not None
            if weighted:
                mult = 2.0 if self.input_grad else 1.0
            else:
                mult = 1.5 if self.input_grad else 0.0
            object.__setattr__(self, "bwd_mem_bytes", mult * self.mem_bytes)
        for attr in ("bwd_flops", "mem_bytes", "bwd_mem_bytes"):
            if getattr(self, attr) < 0:
                raise ValueError(f"layer {self.name!r}: {attr} must be >= 0")

    @property
    def grad_bytes(self) -> int:
        """fp32 gradient bytes this layer contributes to the exchange."""
        return BYTES_PER_ELEMENT * self.params

    @property
    def kernel_class(self) -> str:
        return kernel_class(self.kind)

    @property
    def weighted(self) -> bool:
        return self.params > 0
