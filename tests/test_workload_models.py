"""Model zoo and builder: counts against published figures and closed forms."""

from __future__ import annotations

import math

import pytest

from clustersim.errors import InputError
from clustersim.workload import Layer, Model, NetBuilder, ShapeError, get_model, list_models
from clustersim.workload.zoo import model_options

# Exact parameter counts: docs/references.md (AlexNet grouped, VGG16, ResNet-50/101), torchvision
# model summaries (ResNet-18/34/152; Inception v3 without its auxiliary head), LeNet-5 with a
# fully connected C3 (156 + 2,416 + 48,120 + 10,164 + 850).
EXACT_PARAMS = {
    "alexnet": 60_965_224,
    "vgg16": 138_357_544,
    "resnet18": 11_689_512,
    "resnet34": 21_797_672,
    "resnet50": 25_557_032,
    "resnet101": 44_549_160,
    "resnet152": 60_192_808,
    "inception_v3": 23_834_568,
    "lenet5": 61_706,
}

# Forward multiply-adds per sample, docs/references.md "Reference model sizes"; 5% tolerance.
REFERENCE_MACS = {
    "lenet5": 0.4e6,
    "alexnet": 0.72e9,
    "vgg16": 15.5e9,
    "resnet50": 4.1e9,
    "resnet101": 7.8e9,
    "inception_v3": 5.7e9,
}


@pytest.mark.parametrize("name", sorted(EXACT_PARAMS))
def test_parameter_counts_exact(name: str) -> None:
    model = get_model(name)
    assert model.params == EXACT_PARAMS[name]
    assert model.grad_bytes == 4 * EXACT_PARAMS[name]


def test_alexnet_gradient_is_243_9_mb() -> None:
    # docs/references.md: 60,965,224 parameters = 243.9 MB fp32
    assert get_model("alexnet").grad_bytes / 1e6 == pytest.approx(243.9, abs=0.05)


def test_googlenet_params_in_published_range() -> None:
    # docs/references.md: ~6.8-7.0 M (BVLC model without auxiliary classifiers: 6,998,552)
    assert 6.8e6 <= get_model("googlenet").params <= 7.0e6


@pytest.mark.parametrize("name", sorted(REFERENCE_MACS))
def test_multiply_adds_match_references(name: str) -> None:
    macs = get_model(name).multiply_adds
    assert macs == pytest.approx(REFERENCE_MACS[name], rel=0.05)


# Szegedy et al. 2014, Table 1, "ops" column (millions of multiply-adds).  The paper's text
# rounds the total to "1.5 billion"; the table itself sums to 1,586 M.
GOOGLENET_TABLE1 = {
    "conv1": 118, "conv2": 360, "inception_3a": 128, "inception_3b": 304,
    "inception_4a": 73, "inception_4b": 88, "inception_4c": 100, "inception_4d": 119,
    "inception_4e": 170, "inception_5b": 71, "loss3": 1,
}


def test_googlenet_multiply_adds_match_paper_table() -> None:
    model = get_model("googlenet")
    per_block: dict[str, int] = {}
    for layer in model.layers:
        key = layer.name.split("/")[0]
        per_block[key] = per_block.get(key, 0) + layer.macs
    for block, millions in GOOGLENET_TABLE1.items():
        assert per_block[block] / 1e6 == pytest.approx(millions, rel=0.01, abs=0.5), block
    # 5a: the table prints 54 M; its own branch widths on a 7x7x832 input give 51.1 M.
    assert per_block["inception_5a"] / 1e6 == pytest.approx(51.1, abs=0.05)
    assert model.multiply_adds / 1e9 == pytest.approx(1.586, rel=0.01)
    # ... and the quoted "~1.5 G" within 6 % (the rounding in the paper's text).
    assert model.multiply_adds == pytest.approx(1.5e9, rel=0.06)


def test_flops_are_twice_multiply_adds_for_conv_and_fc() -> None:
    for layer in get_model("resnet50").layers:
        if layer.kind in ("conv", "fc"):
            assert layer.fwd_flops == 2 * layer.macs
        else:
            assert layer.macs == 0


def test_shapes_propagate_through_architectures() -> None:
    assert get_model("alexnet").layer("pool5").out_shape == (256, 6, 6)
    assert get_model("googlenet").layer("inception_5b/output").out_shape == (1024, 7, 7)
    assert get_model("googlenet").layer("pool2/3x3_s2").out_shape == (192, 28, 28)
    assert get_model("resnet50").layer("layer4.2/relu").out_shape == (2048, 7, 7)
    assert get_model("inception_v3").layer("Mixed_5b/output").out_shape == (256, 35, 35)
    assert get_model("inception_v3").layer("Mixed_6e/output").out_shape == (768, 17, 17)
    assert get_model("inception_v3").layer("Mixed_7c/output").out_shape == (2048, 8, 8)
    for name in list_models():
        assert get_model(name).layers[-1].kind == "softmax"


def test_conv_closed_form_and_groups() -> None:
    nb = NetBuilder("t", (96, 27, 27))
    y = nb.conv(nb.input, 256, 5, 1, 2, groups=2, name="c")
    layer = nb.build().layer("c")
    assert y.shape == (256, 27, 27)
    assert layer.params == 256 * 48 * 25 + 256
    assert layer.macs == 27 * 27 * 256 * 48 * 25
    assert layer.out_bytes == 4 * 256 * 27 * 27
    assert layer.mem_bytes == 4 * (96 + 256) * 27 * 27


def test_rectangular_kernels_and_pooling_rounding() -> None:
    nb = NetBuilder("t", (8, 17, 17))
    y = nb.conv(nb.input, 4, (1, 7), 1, (0, 3), bias=False)
    assert y.shape == (4, 17, 17)
    assert nb.build().layers[0].params == 4 * 8 * 7
    nb2 = NetBuilder("t", (3, 112, 112))
    assert nb2.pool(nb2.input, 3, 2).shape == (3, 55, 55)
    assert nb2.pool(nb2.input, 3, 2, ceil=True).shape == (3, 56, 56)
    # ceil mode never starts a window in the right padding: 5 with k=2,s=2,p=1 -> 3, not 4
    nb3 = NetBuilder("t", (1, 5, 5))
    assert nb3.pool(nb3.input, 2, 2, 1, ceil=True).shape == (1, 3, 3)


def test_backward_follows_autograd_rule() -> None:
    model = get_model("alexnet")
    conv1, relu1, conv2 = model.layer("conv1"), model.layer("conv1/relu"), model.layer("conv2")
    assert not conv1.input_grad and conv1.bwd_flops == conv1.fwd_flops  # weight grad only
    assert relu1.input_grad and relu1.bwd_flops == relu1.fwd_flops
    assert conv2.bwd_flops == 2 * conv2.fwd_flops
    ratio = model.bwd_flops / model.fwd_flops
    assert 1.8 < ratio < 2.0  # "about 2x", less the first layer's input gradient
    # a weight-free layer straight on the input propagates nothing
    nb = NetBuilder("t", (3, 8, 8))
    nb.pool(nb.input, 2)
    assert nb.build().layers[0].bwd_flops == 0


def test_layer_defaults_and_validation() -> None:
    weighted = Layer("a", "fc", params=10, fwd_flops=100.0, out_bytes=40.0)
    assert weighted.bwd_flops == 200.0 and weighted.mem_bytes == 80.0
    assert weighted.grad_bytes == 40 and weighted.kernel_class == "fc"
    plain = Layer("b", "act", fwd_flops=7.0, out_bytes=4.0)
    assert plain.bwd_flops == 7.0 and plain.kernel_class == "other"
    with pytest.raises(ValueError, match="unknown kind"):
        Layer("c", "convolution")
    with pytest.raises(ValueError, match="params"):
        Layer("c", "fc", params=-1)
    with pytest.raises(ValueError, match="duplicate"):
        Model("m", (plain, plain))


def test_mlp_closed_form_and_options() -> None:
    model = get_model("mlp", features=100, hidden=[50, 20], classes=3)
    assert model.params == (100 * 50 + 50) + (50 * 20 + 20) + (20 * 3 + 3)
    assert model.multiply_adds == 100 * 50 + 50 * 20 + 20 * 3
    assert model.input_shape == (100,)


def test_options_change_counts_consistently() -> None:
    ungrouped = get_model("alexnet", grouped=False)
    grouped = get_model("alexnet")
    # grouping halves the weights (not the biases) of conv2, conv4, conv5
    for name in ("conv2", "conv4", "conv5"):
        g, u = grouped.layer(name), ungrouped.layer(name)
        assert 2 * (g.params - g.out_shape[0]) == u.params - u.out_shape[0]
        assert 2 * g.macs == u.macs
    assert ungrouped.params == 62_378_344
    small = get_model("resnet50", image=112)
    assert small.params == EXACT_PARAMS["resnet50"]
    assert small.multiply_adds < 0.3 * get_model("resnet50").multiply_adds
    assert get_model("vgg16", classes=10).layer("fc8").params == 4096 * 10 + 10


def test_registry_and_errors() -> None:
    assert {"lenet5", "alexnet", "googlenet", "vgg16", "resnet50", "resnet101",
            "inception_v3", "mlp"} <= set(list_models())
    assert get_model("resnet50") is get_model("resnet50")  # cached, immutable
    with pytest.raises(InputError, match="did you mean 'resnet50'"):
        get_model("resnet-50")
    with pytest.raises(InputError, match="unknown option"):
        get_model("vgg16", depth=19)
    with pytest.raises(InputError, match="classes"):
        get_model("vgg16", classes=0)
    with pytest.raises(InputError, match="grouped"):
        get_model("alexnet", grouped="yes")
    with pytest.raises(InputError, match="image"):
        get_model("alexnet", image=32)  # too small for the 11x11/4 stem and three pools
    assert model_options("mlp")["classes"] == 10


def test_builder_rejects_bad_shapes() -> None:
    nb = NetBuilder("t", (3, 4, 4))
    with pytest.raises(ShapeError, match="larger"):
        nb.conv(nb.input, 8, 5)
    with pytest.raises(ShapeError, match="groups"):
        nb.conv(nb.input, 8, 1, groups=2)
    a = nb.conv(nb.input, 2, 1, name="a")
    b = nb.pool(nb.input, 2)
    with pytest.raises(ShapeError, match="concat"):
        nb.concat([a, b])
    with pytest.raises(ShapeError, match="add"):
        nb.add([a, b])
    with pytest.raises(ShapeError, match="duplicate"):
        nb.conv(nb.input, 2, 1, name="a")
    with pytest.raises(ShapeError):
        NetBuilder("t", (0, 3))


def test_models_are_deterministic_and_totals_consistent() -> None:
    from clustersim.workload.zoo import resnet101

    a, b = resnet101(), resnet101()
    assert a == b
    assert a.fwd_flops == math.fsum(layer.fwd_flops for layer in a.layers)
    assert a.train_flops == a.fwd_flops + a.bwd_flops
    assert a.input_bytes == 4 * 3 * 224 * 224
