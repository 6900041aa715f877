"""Built-in models, composed from the builder so their counts follow from the architecture.

Registered names (``list_models()``): lenet5, alexnet, googlenet, vgg16, resnet18, resnet34,
resnet50, resnet101, resnet152, inception_v3, mlp.  Each builder takes keyword options
(``classes``, ``image`` and model-specific ones); :func:`get_model` validates them and caches
the result, since models are immutable.

Sources for the architectures (shapes only, our own code): LeCun et al. 1998 (LeNet-5, modern
variant with a fully connected C3 and plain pooling: 61,706 parameters); Theano-MPI
``theanompi/models/alex_net.py`` (AlexNet, conv-ReLU-pool-LRN, grouped conv2/4/5, 227 input);
Szegedy et al. 2014 and the BVLC Caffe GoogLeNet (LRN, ceil-mode pooling, no auxiliary heads);
Simonyan & Zisserman 2014 (VGG16, configuration D); He et al. 2015 with torchvision's stride
placement (ResNets); Szegedy et al. 2016 with torchvision's layer widths (Inception v3,
auxiliary head excluded as it is dropped at the scale papers quote).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from clustersim.errors import InputError, unknown_name
from clustersim.workload import blocks
from clustersim.workload.builder import NetBuilder, ShapeError
from clustersim.workload.model import Model

__all__ = ["get_model", "list_models", "register_model", "model_options"]


def lenet5(classes: int = 10, image: int = 32) -> Model:
    """LeNet-5 on 1 x 32 x 32 digits: tanh, average pooling, three fully connected layers."""
    nb = NetBuilder("lenet5", (1, image, image))
    x = nb.conv(nb.input, 6, 5, name="c1")
    x = nb.act(x, "tanh", name="c1/tanh")
    x = nb.pool(x, 2, mode="avg", name="s2")
    x = nb.conv(x, 16, 5, name="c3")
    x = nb.act(x, "tanh", name="c3/tanh")
    x = nb.pool(x, 2, mode="avg", name="s4")
    x = nb.fc(x, 120, name="c5")
    x = nb.act(x, "tanh", name="c5/tanh")
    x = nb.fc(x, 84, name="f6")
    x = nb.act(x, "tanh", name="f6/tanh")
    x = nb.fc(x, classes, name="output")
    nb.softmax(x, name="prob")
    return nb.build()


def alexnet(classes: int = 1000, image: int = 227, grouped: bool = True) -> Model:
    """AlexNet as Theano-MPI trains it: conv2/4/5 in two groups (60,965,224 parameters)."""
    g = 2 if grouped else 1
    nb = NetBuilder("alexnet" if grouped else "alexnet_ungrouped", (3, image, image))
    x = blocks.conv_relu(nb, nb.input, 96, 11, 4, name="conv1")
    x = nb.pool(x, 3, 2, name="pool1")
    x = nb.norm(x, "lrn", size=5, name="lrn1")
    x = blocks.conv_relu(nb, x, 256, 5, 1, 2, groups=g, name="conv2")
    x = nb.pool(x, 3, 2, name="pool2")
    x = nb.norm(x, "lrn", size=5, name="lrn2")
    x = blocks.conv_relu(nb, x, 384, 3, 1, 1, name="conv3")
    x = blocks.conv_relu(nb, x, 384, 3, 1, 1, groups=g, name="conv4")
    x = blocks.conv_relu(nb, x, 256, 3, 1, 1, groups=g, name="conv5")
    x = nb.pool(x, 3, 2, name="pool5")
    for i in (6, 7):
        x = nb.fc(x, 4096, name=f"fc{i}")
        x = nb.act(x, name=f"fc{i}/relu")
        x = nb.dropout(x, 0.5, name=f"fc{i}/dropout")
    x = nb.fc(x, classes, name="fc8")
    nb.softmax(x, name="prob")
    return nb.build()


def googlenet(classes: int = 1000, image: int = 224) -> Model:
    """GoogLeNet (Inception v1) without the auxiliary classifiers."""
    nb = NetBuilder("googlenet", (3, image, image))
    x = blocks.conv_relu(nb, nb.input, 64, 7, 2, 3, name="conv1/7x7_s2")
    x = nb.pool(x, 3, 2, ceil=True, name="pool1/3x3_s2")
    x = nb.norm(x, "lrn", size=5, name="pool1/norm1")
    x = blocks.conv_relu(nb, x, 64, 1, name="conv2/3x3_reduce")
    x = blocks.conv_relu(nb, x, 192, 3, 1, 1, name="conv2/3x3")
    x = nb.norm(x, "lrn", size=5, name="conv2/norm2")
    x = nb.pool(x, 3, 2, ceil=True, name="pool2/3x3_s2")
    table: list[tuple[str, tuple[int, ...]] | str] = [
        ("3a", (64, 96, 128, 16, 32, 32)), ("3b", (128, 128, 192, 32, 96, 64)), "pool3",
        ("4a", (192, 96, 208, 16, 48, 64)), ("4b", (160, 112, 224, 24, 64, 64)),
        ("4c", (128, 128, 256, 24, 64, 64)), ("4d", (112, 144, 288, 32, 64, 64)),
        ("4e", (256, 160, 320, 32, 128, 128)), "pool4",
        ("5a", (256, 160, 320, 32, 128, 128)), ("5b", (384, 192, 384, 48, 128, 128)),
    ]
    for entry in table:
        if isinstance(entry, str):
            x = nb.pool(x, 3, 2, ceil=True, name=f"{entry}/3x3_s2")
        else:
            tag, widths = entry
            x = blocks.inception_v1(nb, x, *widths, name=f"inception_{tag}")
    x = nb.global_pool(x, name="pool5/7x7_s1")
    x = nb.dropout(x, 0.4, name="pool5/drop")
    x = nb.fc(x, classes, name="loss3/classifier")
    nb.softmax(x, name="prob")
    return nb.build()


def vgg16(classes: int = 1000, image: int = 224) -> Model:
    """VGG16 (configuration D): 13 3x3 convolutions and three fully connected layers."""
    nb = NetBuilder("vgg16", (3, image, image))
    x = nb.input
    for stage, (width, convs) in enumerate([(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)], 1):
        for i in range(1, convs + 1):
            x = blocks.conv_relu(nb, x, width, 3, 1, 1, name=f"conv{stage}_{i}")
        x = nb.pool(x, 2, 2, name=f"pool{stage}")
    for i in (6, 7):
        x = nb.fc(x, 4096, name=f"fc{i}")
        x = nb.act(x, name=f"fc{i}/relu")
        x = nb.dropout(x, 0.5, name=f"fc{i}/dropout")
    x = nb.fc(x, classes, name="fc8")
    nb.softmax(x, name="prob")
    return nb.build()


def _resnet(name: str, depths: Sequence[int], bottleneck: bool, classes: int, image: int) -> Model:
    nb = NetBuilder(name, (3, image, image))
    x = blocks.conv_bn_relu(nb, nb.input, 64, 7, 2, 3, name="conv1")
    x = nb.pool(x, 3, 2, 1, name="pool1")
    block = blocks.bottleneck if bottleneck else blocks.basic_block
    for stage, (width, depth) in enumerate(zip((64, 128, 256, 512), depths), 1):
        for i in range(depth):
            stride = 2 if (i == 0 and stage > 1) else 1
            x = block(nb, x, width, stride, name=f"layer{stage}.{i}")
    x = nb.global_pool(x, name="avgpool")
    x = nb.fc(x, classes, name="fc")
    nb.softmax(x, name="prob")
    return nb.build()


def resnet18(classes: int = 1000, image: int = 224) -> Model:
    """ResNet-18: basic blocks (two 3x3 convolutions), 2-2-2-2 per stage (11,689,512 parameters)."""
    return _resnet("resnet18", (2, 2, 2, 2), False, classes, image)


def resnet34(classes: int = 1000, image: int = 224) -> Model:
    """ResNet-34: basic blocks, 3-4-6-3 per stage (21,797,672 parameters)."""
    return _resnet("resnet34", (3, 4, 6, 3), False, classes, image)


def resnet50(classes: int = 1000, image: int = 224) -> Model:
    """ResNet-50 (25,557,032 parameters with batch-norm scale and shift)."""
    return _resnet("resnet50", (3, 4, 6, 3), True, classes, image)


def resnet101(classes: int = 1000, image: int = 224) -> Model:
    """ResNet-101: bottleneck blocks, 3-4-23-3 per stage (44,549,160 parameters)."""
    return _resnet("resnet101", (3, 4, 23, 3), True, classes, image)


def resnet152(classes: int = 1000, image: int = 224) -> Model:
    """ResNet-152: bottleneck blocks, 3-8-36-3 per stage (60,192,808 parameters)."""
    return _resnet("resnet152", (3, 8, 36, 3), True, classes, image)


def inception_v3(classes: int = 1000, image: int = 299) -> Model:
    """Inception v3 at 299 x 299 without the auxiliary classifier."""
    nb = NetBuilder("inception_v3", (3, image, image))
    cbr = blocks.conv_bn_relu
    x = cbr(nb, nb.input, 32, 3, 2, name="Conv2d_1a_3x3")
    x = cbr(nb, x, 32, 3, name="Conv2d_2a_3x3")
    x = cbr(nb, x, 64, 3, 1, 1, name="Conv2d_2b_3x3")
    x = nb.pool(x, 3, 2, name="maxpool1")
    x = cbr(nb, x, 80, 1, name="Conv2d_3b_1x1")
    x = cbr(nb, x, 192, 3, name="Conv2d_4a_3x3")
    x = nb.pool(x, 3, 2, name="maxpool2")
    x = blocks.inception_v3_a(nb, x, 32, name="Mixed_5b")
    x = blocks.inception_v3_a(nb, x, 64, name="Mixed_5c")
    x = blocks.inception_v3_a(nb, x, 64, name="Mixed_5d")
    x = blocks.inception_v3_b(nb, x, name="Mixed_6a")
    for tag, c7 in (("6b", 128), ("6c", 160), ("6d", 160), ("6e", 192)):
        x = blocks.inception_v3_c(nb, x, c7, name=f"Mixed_{tag}")
    x = blocks.inception_v3_d(nb, x, name="Mixed_7a")
    x = blocks.inception_v3_e(nb, x, name="Mixed_7b")
    x = blocks.inception_v3_e(nb, x, name="Mixed_7c")
    x = nb.global_pool(x, name="avgpool")
    x = nb.dropout(x, 0.5, name="dropout")
    x = nb.fc(x, classes, name="fc")
    nb.softmax(x, name="prob")
    return nb.build()


def mlp(features: int = 784, hidden: Sequence[int] = (1024, 1024), classes: int = 10,
        act: str = "relu") -> Model:
    """A multilayer perceptron: ``features`` inputs, ``hidden`` widths, ``classes`` outputs."""
    nb = NetBuilder("mlp", (features,))
    x = nb.input
    for i, width in enumerate(hidden, 1):
        x = nb.fc(x, int(width), name=f"fc{i}")
        x = nb.act(x, act, name=f"fc{i}/{act}")
    x = nb.fc(x, classes, name="output")
    nb.softmax(x, name="prob")
    return nb.build()


_REGISTRY: dict[str, Callable[..., Model]] = {
    "lenet5": lenet5, "alexnet": alexnet, "googlenet": googlenet, "vgg16": vgg16,
    "resnet18": resnet18, "resnet34": resnet34, "resnet50": resnet50, "resnet101": resnet101,
    "resnet152": resnet152, "inception_v3": inception_v3, "mlp": mlp,
}


def register_model(name: str, builder: Callable[..., Model]) -> None:
    """Add a model builder (keyword options only) under ``name``; replaces an existing one."""
    _REGISTRY[name] = builder
    _cached.cache_clear()


def list_models() -> list[str]:
    """The zoo's model names, sorted (those added by :func:`register_model` too)."""
    return sorted(_REGISTRY)


def model_options(name: str) -> dict[str, Any]:
    """The options a zoo model accepts, with their defaults."""
    if name not in _REGISTRY:
        raise unknown_name("model", name, _REGISTRY)
    sig = inspect.signature(_REGISTRY[name])
    return {p.name: p.default for p in sig.parameters.values()}


#: the largest integer model option (a width, an image side, a class count).  Why: sizes
#: had no bound - ``hidden: [9e18, 9e18]`` gave 8.1e37 parameters and an answer in 1e33 ms,
#: exit 0 (QA 10 M12); a million is far beyond any layer the zoo's models have.
MAX_OPTION = 1_000_000

#: the most parameters a zoo model may have (the largest trained models have ~1e12)
MAX_PARAMS = 10**13


def _positive_int(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)
            and 0 < value <= MAX_OPTION)


def _shown(value: Any) -> str:
    """An option as the message echoes it: a 309-digit integer is cut to ``1e+308`` (L4)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**12:
        return f"{float(value):.3g}"
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def _option_ok(default: Any, value: Any) -> bool:
    """Options take the type of their default (bool, positive int, list of ints, str)."""
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return _positive_int(value)
    if isinstance(default, tuple):
        return isinstance(value, (list, tuple)) and all(_positive_int(v) for v in value)
    return isinstance(value, type(default))


def _describe(default: Any) -> str:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return f"a positive integer up to {MAX_OPTION:,} (default {default})"
    if isinstance(default, tuple):
        return f"a list of positive integers up to {MAX_OPTION:,} (default {list(default)})"
    return f"a {type(default).__name__} (default {default!r})"


def _freeze(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@lru_cache(maxsize=64)
def _cached(name: str, options: tuple[tuple[str, Any], ...]) -> Model:
    return _REGISTRY[name](**dict(options))


def get_model(name: str, path: Sequence[str | int] = (), **options: Any) -> Model:
    """The zoo model ``name`` built with ``options``; bad names/options raise InputError.

    ``path`` locates the model in the user's input for error messages.
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        raise unknown_name("model", str(name), _REGISTRY, path=tuple(path))
    allowed = model_options(name)
    for key, value in options.items():
        if key not in allowed:
            raise unknown_name(f"option for model {name!r}", key, allowed, path=(*path, key))
        if not _option_ok(allowed[key], value):
            raise InputError(f"option {key!r} of model {name!r} must be "
                             f"{_describe(allowed[key])}, not {_shown(value)}",
                             path=(*path, key))
    frozen = tuple(sorted((k, _freeze(v)) for k, v in options.items()))
    try:
        model = _cached(name, frozen)
    except (ShapeError, ValueError) as exc:
        raise InputError(f"model {name!r} with {dict(options)}: {exc}", path=tuple(path)) from None
    if model.params > MAX_PARAMS:
        raise InputError(f"model {name!r} with these options has {float(model.params):.3g} "
                         f"parameters; at most {float(MAX_PARAMS):.0e} are supported",
                         path=tuple(path))
    return model
