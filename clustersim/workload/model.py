"""A model is an ordered tuple of layers: forward order, so reversed is backward order.

Why a flat tuple even for inception and residual networks: for data-parallel training the
only ordering that matters is when each layer's gradient becomes ready, and any topological
order of the graph (which the builder's definition order is) reversed is a valid backward
order.  Frameworks execute branches in such a serial order on one stream anyway.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clustersim.workload.layer import BYTES_PER_ELEMENT, Layer

__all__ = ["Model"]


@dataclass(frozen=True)
class Model:
    """A named layer list and its input shape (per sample, channels first)."""

    name: str
    layers: tuple[Layer, ...]
    input_shape: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.layers:
            raise ValueError(f"model {self.name!r} has no layers")
        seen: set[str] = set()
        for layer in self.layers:
            if layer.name in seen:
                raise ValueError(f"model {self.name!r}: duplicate layer name {layer.name!r}")
            seen.add(layer.name)

    @property
    def params(self) -> int:
        return sum(layer.params for layer in self.layers)

    @property
    def multiply_adds(self) -> int:
        """Forward multiply-adds per sample of the conv and fc layers (the figure papers quote)."""
        return sum(layer.macs for layer in self.layers)

    @property
    def fwd_flops(self) -> float:
        return sum(layer.fwd_flops for layer in self.layers)

    @property
    def bwd_flops(self) -> float:
        return sum(layer.bwd_flops or 0.0 for layer in self.layers)

    @property
    def train_flops(self) -> float:
        """Forward plus backward FLOPs per sample."""
        return self.fwd_flops + self.bwd_flops

    @property
    def grad_bytes(self) -> int:
        """fp32 bytes of one full gradient (what an allreduce moves)."""
        return sum(layer.grad_bytes for layer in self.layers)

    @property
    def activation_bytes(self) -> float:
        """Activation bytes per sample kept for backward (sum of layer outputs)."""
        return sum(layer.out_bytes for layer in self.layers)

    @property
    def input_bytes(self) -> float:
        """Bytes of one decoded fp32 input sample."""
        return float(BYTES_PER_ELEMENT * math.prod(self.input_shape)) if self.input_shape else 0.0

    @property
    def weighted_layers(self) -> tuple[Layer, ...]:
        return tuple(layer for layer in self.layers if layer.params > 0)

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    def summary(self) -> str:
        """A one-line description: parameters, gradient size and multiply-adds."""
        return (f"{self.name}: {len(self.layers)} layers, {self.params:,} params "
                f"({self.grad_bytes / 2**20:.1f} MiB fp32), "
                f"{self.multiply_adds / 1e9:.3g} G multiply-adds/sample")
