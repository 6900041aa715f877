"""Reusable blocks built from :class:`~clustersim.workload.builder.NetBuilder` helpers.

Each block is plain composition - branches are separate calls, joined by ``concat`` or
``add`` - so the counts come from the same conv/pool/fc rules as every other layer.
Architectures follow the papers' tables and the public reference implementations named per
block (the layer shapes are facts of the architecture; the code here is our own).
"""

from __future__ import annotations

from collections.abc import Sequence

from clustersim.workload.builder import NetBuilder, Tensor

__all__ = [
    "conv_relu", "conv_bn_relu", "inception_v1", "bottleneck", "basic_block",
    "inception_v3_a", "inception_v3_b", "inception_v3_c", "inception_v3_d", "inception_v3_e",
]


def conv_relu(nb: NetBuilder, x: Tensor, out: int, kernel: int | Sequence[int],
              stride: int | Sequence[int] = 1, pad: int | Sequence[int] = 0, *, name: str,
              groups: int = 1) -> Tensor:
    """Convolution with bias, then ReLU (AlexNet, VGG, GoogLeNet v1)."""
    y = nb.conv(x, out, kernel, stride, pad, groups=groups, name=name)
    return nb.act(y, name=f"{name}/relu")


def conv_bn_relu(nb: NetBuilder, x: Tensor, out: int, kernel: int | Sequence[int],
                 stride: int | Sequence[int] = 1, pad: int | Sequence[int] = 0, *, name: str,
                 relu: bool = True) -> Tensor:
    """Bias-free convolution, batch norm, optional ReLU (ResNet, Inception v3)."""
    y = nb.conv(x, out, kernel, stride, pad, bias=False, name=name)
    y = nb.norm(y, "batch", name=f"{name}/bn")
    return nb.act(y, name=f"{name}/relu") if relu else y


def inception_v1(nb: NetBuilder, x: Tensor, c1: int, c3r: int, c3: int, c5r: int, c5: int,
                 pool_proj: int, *, name: str) -> Tensor:
    """GoogLeNet inception module (Szegedy et al. 2014, Table 1; BVLC Caffe model)."""
    b1 = conv_relu(nb, x, c1, 1, name=f"{name}/1x1")
    b2 = conv_relu(nb, x, c3r, 1, name=f"{name}/3x3_reduce")
    b2 = conv_relu(nb, b2, c3, 3, 1, 1, name=f"{name}/3x3")
    b3 = conv_relu(nb, x, c5r, 1, name=f"{name}/5x5_reduce")
    b3 = conv_relu(nb, b3, c5, 5, 1, 2, name=f"{name}/5x5")
    b4 = nb.pool(x, 3, 1, 1, name=f"{name}/pool")
    b4 = conv_relu(nb, b4, pool_proj, 1, name=f"{name}/pool_proj")
    return nb.concat([b1, b2, b3, b4], name=f"{name}/output")


def _residual_tail(nb: NetBuilder, x: Tensor, y: Tensor, out: int, stride: int, name: str) -> Tensor:
    if stride != 1 or x.shape[0] != out:
        x = conv_bn_relu(nb, x, out, 1, stride, name=f"{name}/downsample", relu=False)
    y = nb.add([y, x], name=f"{name}/add")
    return nb.act(y, name=f"{name}/relu")


def bottleneck(nb: NetBuilder, x: Tensor, width: int, stride: int = 1, *, name: str,
               expansion: int = 4) -> Tensor:
    """ResNet bottleneck, stride on the 3x3 convolution ("v1.5", as torchvision)."""
    y = conv_bn_relu(nb, x, width, 1, name=f"{name}/conv1")
    y = conv_bn_relu(nb, y, width, 3, stride, 1, name=f"{name}/conv2")
    y = conv_bn_relu(nb, y, width * expansion, 1, name=f"{name}/conv3", relu=False)
    return _residual_tail(nb, x, y, width * expansion, stride, name)


def basic_block(nb: NetBuilder, x: Tensor, width: int, stride: int = 1, *, name: str) -> Tensor:
    """ResNet-18/34 block: two 3x3 convolutions."""
    y = conv_bn_relu(nb, x, width, 3, stride, 1, name=f"{name}/conv1")
    y = conv_bn_relu(nb, y, width, 3, 1, 1, name=f"{name}/conv2", relu=False)
    return _residual_tail(nb, x, y, width, stride, name)


# Inception v3 modules (Szegedy et al. 2016, "Rethinking the Inception Architecture", with the
# branch widths of the public TensorFlow/torchvision models).

def inception_v3_a(nb: NetBuilder, x: Tensor, pool_features: int, *, name: str) -> Tensor:
    """35x35 module: 1x1, 5x5, double 3x3 and pooled branches."""
    b1 = conv_bn_relu(nb, x, 64, 1, name=f"{name}/b1x1")
    b5 = conv_bn_relu(nb, x, 48, 1, name=f"{name}/b5x5_1")
    b5 = conv_bn_relu(nb, b5, 64, 5, 1, 2, name=f"{name}/b5x5_2")
    b3 = conv_bn_relu(nb, x, 64, 1, name=f"{name}/b3x3dbl_1")
    b3 = conv_bn_relu(nb, b3, 96, 3, 1, 1, name=f"{name}/b3x3dbl_2")
    b3 = conv_bn_relu(nb, b3, 96, 3, 1, 1, name=f"{name}/b3x3dbl_3")
    bp = nb.pool(x, 3, 1, 1, mode="avg", name=f"{name}/pool")
    bp = conv_bn_relu(nb, bp, pool_features, 1, name=f"{name}/bpool")
    return nb.concat([b1, b5, b3, bp], name=f"{name}/output")


def inception_v3_b(nb: NetBuilder, x: Tensor, *, name: str) -> Tensor:
    """Grid reduction 35 -> 17."""
    b3 = conv_bn_relu(nb, x, 384, 3, 2, name=f"{name}/b3x3")
    bd = conv_bn_relu(nb, x, 64, 1, name=f"{name}/b3x3dbl_1")
    bd = conv_bn_relu(nb, bd, 96, 3, 1, 1, name=f"{name}/b3x3dbl_2")
    bd = conv_bn_relu(nb, bd, 96, 3, 2, name=f"{name}/b3x3dbl_3")
    bp = nb.pool(x, 3, 2, name=f"{name}/pool")
    return nb.concat([b3, bd, bp], name=f"{name}/output")


def inception_v3_c(nb: NetBuilder, x: Tensor, c7: int, *, name: str) -> Tensor:
    """17x17 module with factorised 7x7 convolutions (1x7 then 7x1)."""
    b1 = conv_bn_relu(nb, x, 192, 1, name=f"{name}/b1x1")
    b7 = conv_bn_relu(nb, x, c7, 1, name=f"{name}/b7x7_1")
    b7 = conv_bn_relu(nb, b7, c7, (1, 7), 1, (0, 3), name=f"{name}/b7x7_2")
    b7 = conv_bn_relu(nb, b7, 192, (7, 1), 1, (3, 0), name=f"{name}/b7x7_3")
    bd = conv_bn_relu(nb, x, c7, 1, name=f"{name}/b7x7dbl_1")
    bd = conv_bn_relu(nb, bd, c7, (7, 1), 1, (3, 0), name=f"{name}/b7x7dbl_2")
    bd = conv_bn_relu(nb, bd, c7, (1, 7), 1, (0, 3), name=f"{name}/b7x7dbl_3")
    bd = conv_bn_relu(nb, bd, c7, (7, 1), 1, (3, 0), name=f"{name}/b7x7dbl_4")
    bd = conv_bn_relu(nb, bd, 192, (1, 7), 1, (0, 3), name=f"{name}/b7x7dbl_5")
    bp = nb.pool(x, 3, 1, 1, mode="avg", name=f"{name}/pool")
    bp = conv_bn_relu(nb, bp, 192, 1, name=f"{name}/bpool")
    return nb.concat([b1, b7, bd, bp], name=f"{name}/output")


def inception_v3_d(nb: NetBuilder, x: Tensor, *, name: str) -> Tensor:
    """Grid reduction 17 -> 8."""
    b3 = conv_bn_relu(nb, x, 192, 1, name=f"{name}/b3x3_1")
    b3 = conv_bn_relu(nb, b3, 320, 3, 2, name=f"{name}/b3x3_2")
    b7 = conv_bn_relu(nb, x, 192, 1, name=f"{name}/b7x7x3_1")
    b7 = conv_bn_relu(nb, b7, 192, (1, 7), 1, (0, 3), name=f"{name}/b7x7x3_2")
    b7 = conv_bn_relu(nb, b7, 192, (7, 1), 1, (3, 0), name=f"{name}/b7x7x3_3")
    b7 = conv_bn_relu(nb, b7, 192, 3, 2, name=f"{name}/b7x7x3_4")
    bp = nb.pool(x, 3, 2, name=f"{name}/pool")
    return nb.concat([b3, b7, bp], name=f"{name}/output")


def inception_v3_e(nb: NetBuilder, x: Tensor, *, name: str) -> Tensor:
    """8x8 module with split 1x3 / 3x1 branches."""
    b1 = conv_bn_relu(nb, x, 320, 1, name=f"{name}/b1x1")
    b3 = conv_bn_relu(nb, x, 384, 1, name=f"{name}/b3x3_1")
    b3a = conv_bn_relu(nb, b3, 384, (1, 3), 1, (0, 1), name=f"{name}/b3x3_2a")
    b3b = conv_bn_relu(nb, b3, 384, (3, 1), 1, (1, 0), name=f"{name}/b3x3_2b")
    bd = conv_bn_relu(nb, x, 448, 1, name=f"{name}/b3x3dbl_1")
    bd = conv_bn_relu(nb, bd, 384, 3, 1, 1, name=f"{name}/b3x3dbl_2")
    bda = conv_bn_relu(nb, bd, 384, (1, 3), 1, (0, 1), name=f"{name}/b3x3dbl_3a")
    bdb = conv_bn_relu(nb, bd, 384, (3, 1), 1, (1, 0), name=f"{name}/b3x3dbl_3b")
    bp = nb.pool(x, 3, 1, 1, mode="avg", name=f"{name}/pool")
    bp = conv_bn_relu(nb, bp, 192, 1, name=f"{name}/bpool")
    return nb.concat([b1, b3a, b3b, bda, bdb, bp], name=f"{name}/output")
