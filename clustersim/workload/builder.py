"""Build layer lists by composing conv/pool/fc helpers, with shape propagation.

Why a builder instead of hand-written layer tables: parameter and FLOP counts follow from the
shapes, and shapes follow from the layers.  Writing ResNet-101 as 300 hand-computed rows would
be 300 chances to be wrong; composing ``bottleneck`` blocks and letting the builder propagate
``(channels, height, width)`` makes the counts a consequence of the architecture, which the
tests then check against the published totals.

The builder is functional: each helper takes :class:`Tensor` handles and returns a new one, so
branches (inception) and skips (residual) are ordinary Python.  Layers are recorded in call
order, which is a topological order of the graph.

FLOP constants for the weight-free kinds (per output element unless said; they are
memory-bound, so these hardly matter - the byte counts do):

======================  ===============================================================
max/avg pool k x k      k*k (one compare or add per window element)
batch/layer norm        8 (mean 1, variance 3, normalise 2, scale-and-shift 2)
LRN over n channels     n + 5 (sliding sum of squares, scale, power, divide)
ReLU / tanh, sigmoid    1 / 4 ; GELU 8
add of k inputs         k - 1
dropout                 2 (mask compare, multiply)
softmax                 5 (max, subtract, exp, sum, divide)
concat                  0 (a copy: bytes only)
======================  ===============================================================
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from clustersim.workload.layer import BYTES_PER_ELEMENT, Layer
from clustersim.workload.model import Model

__all__ = ["ShapeError", "Tensor", "NetBuilder"]

_ACT_FLOPS = {"relu": 1, "tanh": 4, "sigmoid": 4, "gelu": 8}
_NORM_TYPES = ("batch", "layer", "lrn")


class ShapeError(ValueError):
    """A layer does not fit the shape it is given (kernel larger than input, ...)."""


@dataclass(frozen=True)
class Tensor:
    """A per-sample activation: its shape (channels first) and whether it needs a gradient."""

    shape: tuple[int, ...]
    requires_grad: bool = False

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return BYTES_PER_ELEMENT * self.numel


def _pair(value: int | Sequence[int], what: str) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    pair = tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) for v in pair):
        raise ShapeError(f"{what} must be an integer or a pair of integers, not {value!r}")
    return pair[0], pair[1]


def _out_size(size: int, k: int, s: int, p: int, ceil: bool) -> int:
    """Output length of a sliding window (PyTorch/Caffe semantics, dilation 1)."""
    span = size + 2 * p - k
    if span < 0:
        raise ShapeError(f"window {k} is larger than the padded input {size + 2 * p}")
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1  # the last window may not start inside the right padding
    return out


class NetBuilder:
    """Records layers as helpers are called; :meth:`build` returns the :class:`Model`."""

    def __init__(self, name: str, input_shape: Sequence[int]) -> None:
        shape = tuple(int(d) for d in input_shape)
        if not shape or any(d <= 0 for d in shape):
            raise ShapeError(f"input shape must be positive integers, not {tuple(input_shape)}")
        self.name = name
        self.input = Tensor(shape, requires_grad=False)
        self._layers: list[Layer] = []
        self._names: set[str] = set()
        self._counts: dict[str, int] = {}

    # -- bookkeeping --------------------------------------------------------------------------

    def _name(self, name: str | None, kind: str) -> str:
        if name is None:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            name = f"{kind}{self._counts[kind]}"
            while name in self._names:
                self._counts[kind] += 1
                name = f"{kind}{self._counts[kind]}"
        if name in self._names:
            raise ShapeError(f"duplicate layer name {name!r}")
        self._names.add(name)
        return name

    def _emit(self, name: str | None, kind: str, inputs: Sequence[Tensor], out_shape: tuple[int, ...],
              *, params: int = 0, macs: int = 0, flops: float) -> Tensor:
        """Record one layer; backward costs follow the autograd rule of :mod:`.layer`."""
        needs_dx = any(t.requires_grad for t in inputs)
        in_bytes = float(sum(t.nbytes for t in inputs))
        out = Tensor(out_shape, requires_grad=needs_dx or params > 0)
        out_bytes = float(out.nbytes)
        if params > 0:
            # wgrad reads dy and x; dgrad (if needed) reads dy and writes dx.
            bwd_flops = flops * (2.0 if needs_dx else 1.0)
            bwd_mem = (out_bytes + in_bytes) * (2.0 if needs_dx else 1.0)
        elif needs_dx:
            # read dy and the saved tensor, write dx
            bwd_flops = flops
            bwd_mem = out_bytes + 2.0 * in_bytes
        else:
            bwd_flops = 0.0
            bwd_mem = 0.0
        self._layers.append(Layer(
            name=self._name(name, kind), kind=kind, params=params, macs=macs,
            fwd_flops=float(flops), bwd_flops=bwd_flops, out_bytes=out_bytes,
            mem_bytes=in_bytes + out_bytes, bwd_mem_bytes=bwd_mem, input_grad=needs_dx,
            out_shape=out_shape,
        ))
        return out

    @staticmethod
    def _spatial(x: Tensor, what: str) -> tuple[int, int, int]:
        if len(x.shape) != 3:
            raise ShapeError(f"{what} needs a (channels, height, width) input, got {x.shape}")
        c, h, w = x.shape
        return c, h, w

    # -- layers -------------------------------------------------------------------------------

    def conv(self, x: Tensor, out: int, kernel: int | Sequence[int], stride: int | Sequence[int] = 1,
             pad: int | Sequence[int] = 0, *, groups: int = 1, bias: bool = True,
             name: str | None = None) -> Tensor:
        """2-D convolution; ``groups`` splits channels as in AlexNet's two-GPU layers."""
        c, h, w = self._spatial(x, "conv")
        kh, kw = _pair(kernel, "kernel")
        sh, sw = _pair(stride, "stride")
        ph, pw = _pair(pad, "pad")
        if out <= 0 or groups <= 0 or min(kh, kw, sh, sw) <= 0 or min(ph, pw) < 0:
            raise ShapeError("conv needs positive out, kernel, stride, groups and pad >= 0")
        if c % groups or out % groups:
            raise ShapeError(f"groups={groups} must divide input channels {c} and outputs {out}")
        oh, ow = _out_size(h, kh, sh, ph, False), _out_size(w, kw, sw, pw, False)
        fan_in = (c // groups) * kh * kw
        macs = out * oh * ow * fan_in
        params = out * fan_in + (out if bias else 0)
        return self._emit(name, "conv", [x], (out, oh, ow), params=params, macs=macs,
                          flops=2 * macs)

    def fc(self, x: Tensor, out: int, *, bias: bool = True, name: str | None = None) -> Tensor:
        """Fully connected layer on the flattened input."""
        if out <= 0:
            raise ShapeError("fc needs a positive number of outputs")
        macs = x.numel * out
        return self._emit(name, "fc", [x], (out,), params=macs + (out if bias else 0),
                          macs=macs, flops=2 * macs)

    def pool(self, x: Tensor, kernel: int | Sequence[int], stride: int | Sequence[int] | None = None,
             pad: int | Sequence[int] = 0, *, mode: str = "max", ceil: bool = False,
             name: str | None = None) -> Tensor:
        """Max or average pooling; ``ceil`` rounds the output size up (Caffe, GoogLeNet)."""
        if mode not in ("max", "avg"):
            raise ShapeError(f"pool mode must be 'max' or 'avg', not {mode!r}")
        c, h, w = self._spatial(x, "pool")
        kh, kw = _pair(kernel, "kernel")
        sh, sw = _pair(kernel if stride is None else stride, "stride")
        ph, pw = _pair(pad, "pad")
        if min(kh, kw, sh, sw) <= 0 or min(ph, pw) < 0:
            raise ShapeError("pool needs positive kernel and stride and pad >= 0")
        oh, ow = _out_size(h, kh, sh, ph, ceil), _out_size(w, kw, sw, pw, ceil)
        return self._emit(name, "pool", [x], (c, oh, ow), flops=c * oh * ow * kh * kw)

    def global_pool(self, x: Tensor, *, mode: str = "avg", name: str | None = None) -> Tensor:
        """Pool each channel to one value (ResNet, Inception heads)."""
        c, h, w = self._spatial(x, "global pool")
        return self.pool(x, (h, w), 1, mode=mode, name=name)

    def norm(self, x: Tensor, kind: str = "batch", *, size: int = 5, affine: bool = True,
             name: str | None = None) -> Tensor:
        """Batch/layer norm (2 parameters per channel when affine) or LRN (none)."""
        if kind not in _NORM_TYPES:
            raise ShapeError(f"norm type must be one of {', '.join(_NORM_TYPES)}, not {kind!r}")
        if kind == "lrn":
            return self._emit(name, "norm", [x], x.shape, flops=x.numel * (size + 5))
        params = 2 * x.shape[0] if affine else 0
        return self._emit(name, "norm", [x], x.shape, params=params, flops=8 * x.numel)

    def act(self, x: Tensor, fn: str = "relu", *, name: str | None = None) -> Tensor:
        if fn not in _ACT_FLOPS:
            raise ShapeError(f"activation must be one of {', '.join(_ACT_FLOPS)}, not {fn!r}")
        return self._emit(name, "act", [x], x.shape, flops=_ACT_FLOPS[fn] * x.numel)

    def dropout(self, x: Tensor, p: float = 0.5, *, name: str | None = None) -> Tensor:
        if not 0 <= p < 1:
            raise ShapeError(f"dropout probability must be in [0, 1), not {p}")
        return self._emit(name, "dropout", [x], x.shape, flops=2 * x.numel)

    def softmax(self, x: Tensor, *, name: str | None = None) -> Tensor:
        return self._emit(name, "softmax", [x], x.shape, flops=5 * x.numel)

    def concat(self, xs: Sequence[Tensor], *, name: str | None = None) -> Tensor:
        """Join along channels; spatial sizes must agree (inception outputs)."""
        if not xs:
            raise ShapeError("concat needs at least one input")
        rest = {t.shape[1:] for t in xs}
        if len(rest) != 1:
            raise ShapeError(f"concat inputs differ beyond channels: {[t.shape for t in xs]}")
        shape = (sum(t.shape[0] for t in xs), *xs[0].shape[1:])
        return self._emit(name, "concat", list(xs), shape, flops=0)

    def add(self, xs: Sequence[Tensor], *, name: str | None = None) -> Tensor:
        """Elementwise sum (residual connections); shapes must be equal."""
        if len(xs) < 2 or len({t.shape for t in xs}) != 1:
            raise ShapeError(f"add needs two or more equal shapes, got {[t.shape for t in xs]}")
        return self._emit(name, "add", list(xs), xs[0].shape, flops=(len(xs) - 1) * xs[0].numel)

    def layer(self, x: Tensor, kind: str, *, params: int = 0, macs: int = 0,
              fwd_flops: float | None = None, out_shape: Sequence[int] | None = None,
              name: str | None = None) -> Tensor:
        """A layer given by its totals (for architectures the helpers do not cover)."""
        flops = 2 * macs if fwd_flops is None else fwd_flops
        shape = x.shape if out_shape is None else tuple(int(d) for d in out_shape)
        if params < 0 or macs < 0 or flops < 0 or not shape or any(d <= 0 for d in shape):
            raise ShapeError("layer totals must be non-negative and out_shape positive")
        return self._emit(name, kind, [x], shape, params=params, macs=macs, flops=flops)

    def build(self) -> Model:
        return Model(self.name, tuple(self._layers), self.input.shape)
