"""Models from YAML: zoo, layer list and totals forms, and their error messages."""

from __future__ import annotations

import pytest
import yaml

from clustersim.errors import InputError
from clustersim.workload import Model, get_model, model_from_dict, resolve_model

LENET_YAML = """
name: my_lenet
input: [1, 32, 32]
layers:
  - {kind: conv, out: 6, kernel: 5}
  - {kind: act, fn: tanh}
  - {kind: pool, kernel: 2, mode: avg}
  - {kind: conv, out: 16, kernel: 5}
  - {kind: act, fn: tanh}
  - {kind: pool, kernel: 2, mode: avg}
  - {kind: fc, out: 120}
  - {kind: act, fn: tanh}
  - {kind: fc, out: 84}
  - {kind: act, fn: tanh}
  - {kind: fc, out: 10}
  - {kind: softmax}
"""


def test_layer_list_matches_the_zoo_model() -> None:
    model = model_from_dict(yaml.safe_load(LENET_YAML))
    zoo = get_model("lenet5")
    assert model.name == "my_lenet"
    assert model.params == zoo.params == 61_706
    assert model.multiply_adds == zoo.multiply_adds
    assert model.fwd_flops == zoo.fwd_flops and model.bwd_flops == zoo.bwd_flops
    assert [layer.kind for layer in model.layers] == [layer.kind for layer in zoo.layers]


def test_layer_list_with_explicit_and_global_layers() -> None:
    raw = yaml.safe_load("""
    input: [3, 32, 32]
    layers:
      - {kind: conv, out: 8, kernel: [3, 3], pad: 1, bias: false, name: stem}
      - {kind: norm}
      - {kind: pool, global: true}
      - {kind: other, name: attention, params: 1000, multiply_adds: 5000, out_shape: [16]}
      - {kind: dropout, p: 0.1}
      - {kind: fc, out: 4}
    """)
    model = model_from_dict(raw)
    assert model.layer("stem").params == 8 * 3 * 9
    assert model.layer("norm1").params == 16
    assert model.layer("pool1").out_shape == (8, 1, 1)
    att = model.layer("attention")
    assert att.params == 1000 and att.fwd_flops == 10_000 and att.out_shape == (16,)
    assert model.layers[-1].params == 16 * 4 + 4


def test_totals_form_splits_exactly() -> None:
    # "8.2e9" is a string to YAML 1.1 (no dot-sign exponent): accepted as a number.
    raw = yaml.safe_load("""
    name: resnet50_totals
    params: 25.6e6
    fwd_flops: 8.2e9
    mem_bytes: 120 MB
    split: 7
    """)
    assert isinstance(raw["fwd_flops"], str)
    model = model_from_dict(raw)
    assert len(model.layers) == 7
    assert model.params == 25_600_000
    assert model.fwd_flops == pytest.approx(8.2e9)
    assert model.bwd_flops == pytest.approx(2 * 8.2e9)
    assert model.multiply_adds == pytest.approx(4.1e9, abs=7)
    assert sum(layer.mem_bytes for layer in model.layers) == pytest.approx(120e6)
    assert max(layer.params for layer in model.layers) - min(
        layer.params for layer in model.layers) <= 1
    default = model_from_dict({"params": 1000, "multiply_adds": 500, "bwd_flops": 3000,
                               "kind": "fc"})
    assert len(default.layers) == 16 and default.fwd_flops == pytest.approx(1000)
    assert default.bwd_flops == pytest.approx(3000)
    assert {layer.kind for layer in default.layers} == {"fc"}


def test_zoo_form_and_resolve() -> None:
    small = model_from_dict({"zoo": "mlp", "options": {"hidden": [16], "classes": 2}})
    assert small.params == 784 * 16 + 16 + 16 * 2 + 2
    assert resolve_model("vgg16") is get_model("vgg16")
    assert isinstance(resolve_model({"zoo": "lenet5"}), Model)
    assert resolve_model(small) is small


@pytest.mark.parametrize("raw, where, words", [
    ({"layers": [{"kind": "conv", "out": 4, "kernel": 3}]}, "m.input", "input shape"),
    ({"input": [3, 8, 8], "layers": [{"kind": "convolution", "out": 4}]},
     "m.layers[0].kind", "did you mean 'conv'"),
    ({"input": [3, 8, 8], "layers": [{"kind": "conv", "kernel": 3}]},
     "m.layers[0].out", "needs 'out'"),
    ({"input": [3, 8, 8], "layers": [{"kind": "act"}, {"kind": "conv", "out": 4, "kernel": 9}]},
     "m.layers[1]", "larger than the padded input"),
    ({"input": [3, 8, 8], "layers": [{"kind": "conv", "out": 4, "kernel": 3, "strid": 2}]},
     "m.layers[0].strid", "did you mean 'stride'"),
    ({"input": [3, 8, 8], "layers": [{"kind": "fc", "out": -4}]}, "m.layers[0].out", "positive"),
    ({"input": [3, 8, 8], "layers": [{"kind": "concat"}]}, "m.layers[0]", "totals"),
    ({"input": [3, 8, 8], "layers": [{"kind": "pool"}]}, "m.layers[0].kernel", "global"),
    ({"input": [3, "x", 8], "layers": [{"kind": "act"}]}, "m.input[1]", "number"),
    ({"input": [3, 8, 8], "layers": [{"kind": "pool", "kernel": 2, "mode": "mean"}]},
     "m.layers[0].mode", "allowed: avg, max"),
    ({"input": [3, 8, 8], "layers": []}, "m.layers", "non-empty"),
    ({"params": 10}, "m.fwd_flops", "fwd_flops"),
    ({"params": -10, "fwd_flops": 5}, "m.params", "positive"),
    ({"params": 10, "fwd_flops": "lots"}, "m.fwd_flops", "number"),
    ({"params": 10, "fwd_flops": 5, "split": 0}, "m.split", "positive"),
    ({"params": 10, "fwd_flops": 5, "kind": "pool"}, "m.kind", "allowed: conv, fc, other"),
    ({"params": 10, "fwd_flops": 5, "mem_bytes": "3 parsecs"}, "m.mem_bytes", "size"),
    ({"params": 10, "fwd_flops": 5, "layer": 3}, "m.layer", "unknown model totals field 'layer'"),
    ({"zoo": "resnet5O"}, "m.zoo", "did you mean 'resnet50'"),
    ({"zoo": "mlp", "options": {"depth": 3}}, "m.options.depth", "unknown option"),
    ({"zoo": "mlp", "options": {"hidden": [0]}}, "m.options.hidden", "list of positive integers"),
    ({"name": "nothing"}, "m", "'zoo', 'layers' or totals"),
    (["conv"], "m", "mapping"),
])
def test_errors_name_the_field(raw, where: str, words: str) -> None:
    with pytest.raises(InputError) as info:
        model_from_dict(raw, ("m",))
    message = str(info.value)
    assert message.startswith(where + ":"), message
    assert words in message, message


def test_error_carries_the_file_when_located() -> None:
    with pytest.raises(InputError) as info:
        resolve_model("alexnett", ("workload", "model"))
    err = info.value.located(file="scenarios/x.yaml")
    assert str(err).startswith("scenarios/x.yaml, workload.model: unknown model 'alexnett'")
    assert "did you mean 'alexnet'" in str(err)
