"""Compute model: roofline closed forms, backward timeline, update, input pipeline, buckets."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.catalog import DeviceSpec, builtin_catalog
from clustersim.errors import InputError
from clustersim.workload import (
    ComputeOverrides,
    ComputeProfile,
    InputPipeline,
    NetBuilder,
    get_model,
    layer_time,
    update_time,
)

# A round-number device so the closed forms are easy to read.
DEV = DeviceSpec(name="dev", peak=1e12, mem_bw=1e11, memory=1e10, efficiency=0.5,
                 mem_efficiency=0.8, overhead=1e-5)


def _conv_relu_fc():
    nb = NetBuilder("t", (64, 32, 32))
    x = nb.conv(nb.input, 64, 3, 1, 1, name="conv")
    x = nb.act(x, name="relu")
    nb.fc(x, 10, name="fc")
    return nb.build()


def test_compute_bound_layer_closed_form() -> None:
    conv = _conv_relu_fc().layer("conv")
    batch = 32
    kt = layer_time(conv, DEV, batch)
    flops = batch * 2 * conv.macs
    nbytes = batch * conv.mem_bytes + 4 * conv.params
    assert flops / 0.5e12 > nbytes / 0.8e11  # really compute-bound
    assert kt.bound == "compute"
    assert kt.time == pytest.approx(flops / (1e12 * 0.5) + 1e-5, rel=1e-12)
    assert kt.flops == flops and kt.nbytes == nbytes


def test_memory_bound_layer_closed_form() -> None:
    relu = _conv_relu_fc().layer("relu")
    batch = 32
    kt = layer_time(relu, DEV, batch)
    n = 64 * 32 * 32
    assert relu.mem_bytes == 8 * n  # read x, write y, fp32
    assert kt.bound == "memory"
    assert kt.time == pytest.approx(batch * 8 * n / (1e11 * 0.8) + 1e-5, rel=1e-12)
    # backward: read dy and the saved input, write dx
    bk = layer_time(relu, DEV, batch, "backward")
    assert bk.time == pytest.approx(batch * 12 * n / (1e11 * 0.8) + 1e-5, rel=1e-12)


def test_fc_flips_from_memory_to_compute_bound_with_batch() -> None:
    fc = get_model("alexnet").layer("fc6")
    small, large = layer_time(fc, DEV, 1), layer_time(fc, DEV, 4096)
    assert small.bound == "memory"  # 151 MB of weights for one sample
    assert small.time == pytest.approx((fc.mem_bytes + 4 * fc.params) / 0.8e11 + 1e-5)
    assert large.bound == "compute"
    assert large.time == pytest.approx(4096 * 2 * fc.macs / 0.5e12 + 1e-5)


def test_backward_weight_traffic_depends_on_input_gradient() -> None:
    model = get_model("alexnet")
    conv1, conv2 = model.layer("conv1"), model.layer("conv2")
    big = DeviceSpec(name="slowmem", peak=1e18, mem_bw=1e9, memory=1e9, overhead=0.0,
                     mem_efficiency=1.0)
    assert layer_time(conv1, big, 1, "backward").time == pytest.approx(
        (conv1.bwd_mem_bytes + 4 * conv1.params) / 1e9)
    assert layer_time(conv2, big, 1, "backward").time == pytest.approx(
        (conv2.bwd_mem_bytes + 8 * conv2.params) / 1e9)


def test_overrides_per_kernel_class() -> None:
    model = _conv_relu_fc()
    conv, relu = model.layer("conv"), model.layer("relu")
    ov = {"efficiency": {"conv": 0.25}, "overhead": "0 us"}
    kt = layer_time(conv, DEV, 32, overrides=ov)
    assert kt.time == pytest.approx(32 * 2 * conv.macs / 0.25e12, rel=1e-12)
    # the relu is memory-bound: the conv efficiency does not touch it, mem_efficiency does
    base = layer_time(relu, DEV, 32, overrides=ov).time
    faster = layer_time(relu, DEV, 32, overrides={"mem_efficiency": 1.0, "overhead": 0}).time
    assert faster == pytest.approx(base * 0.8)
    same = ComputeOverrides(efficiency={"conv": 0.25}, overhead=0.0)
    assert layer_time(conv, DEV, 32, overrides=same) == kt
    # a single number sets every class
    assert ComputeOverrides.from_dict({"efficiency": 0.3}).efficiency == {
        "conv": 0.3, "fc": 0.3, "other": 0.3}


@pytest.mark.parametrize("raw, where", [
    ({"efficiency": {"gemm": 0.5}}, "compute.efficiency.gemm"),
    ({"efficiency": {"conv": 1.5}}, "compute.efficiency.conv"),
    ({"mem_efficiency": 0}, "compute.mem_efficiency"),
    ({"overhead": "5 parsecs"}, "compute.overhead"),
    ({"eficiency": 0.5}, "compute.eficiency"),
])
def test_override_errors_name_the_field(raw, where) -> None:
    with pytest.raises(InputError) as info:
        ComputeOverrides.from_dict(raw, ("compute",))
    assert str(info.value).startswith(where)


def test_profile_backward_timeline() -> None:
    model = get_model("resnet50")
    prof = ComputeProfile.build(model, DEV, 16)
    assert [s.name for s in prof.backward] == [layer.name for layer in reversed(model.layers)]
    clock = 0.0
    for step in prof.backward:
        assert step.start == pytest.approx(clock)
        assert step.end == pytest.approx(step.start + step.time)
        clock = step.end
    assert prof.backward_time == pytest.approx(
        sum(layer_time(layer, DEV, 16, "backward").time for layer in model.layers))
    assert prof.forward_time == pytest.approx(
        sum(layer_time(layer, DEV, 16).time for layer in model.layers))
    assert prof.grad_bytes == model.grad_bytes
    assert prof.compute_time == pytest.approx(
        prof.forward_time + prof.backward_time + prof.update_time)
    # the gradient of the classifier is ready first, the stem's last
    weighted = [s for s in prof.backward if s.grad_bytes]
    assert weighted[0].name == "fc" and weighted[-1].name.startswith("conv1")
    # a bigger batch costs more, less than proportionally (fixed overheads and weight reads)
    big = ComputeProfile.build(model, DEV, 64)
    assert prof.compute_time < big.compute_time < 4 * prof.compute_time


def test_update_time_closed_form() -> None:
    model = get_model("mlp", features=256, hidden=[128], classes=10)
    rate = 1e11 * 0.8
    expect_sgd = sum(12 * layer.params / rate + 1e-5 for layer in model.weighted_layers)
    expect_mom = sum(20 * layer.params / rate + 1e-5 for layer in model.weighted_layers)
    assert update_time(model, DEV, "sgd") == pytest.approx(expect_sgd)
    assert update_time(model, DEV, "momentum") == pytest.approx(expect_mom)
    with pytest.raises(InputError, match="did you mean 'adam'"):
        update_time(model, DEV, "adma")


def test_input_pipeline_bounds() -> None:
    model = get_model("resnet50")
    k80 = builtin_catalog().device("k80")
    fast = InputPipeline(bandwidth=10e9, bytes_per_sample=110e3)
    prof = ComputeProfile.build(model, k80, 64, pipeline=fast)
    assert prof.bound == "compute" and prof.step_time == prof.compute_time
    slow = InputPipeline.from_dict({"bandwidth": "2 MB/s", "bytes_per_sample": "100 kB"})
    prof = ComputeProfile.build(model, k80, 64, pipeline=slow)
    assert slow.rate == pytest.approx(20.0) and slow.limit == "io"
    assert prof.input_time > prof.compute_time  # 3.2 s of reading vs ~1.4 s of compute
    assert prof.bound == "io"
    assert prof.step_time == pytest.approx(64 / 20.0)
    assert prof.samples_per_second == pytest.approx(20.0)
    decode = InputPipeline(bandwidth=10e9, bytes_per_sample=110e3, decode_rate=10.0)
    prof = ComputeProfile.build(model, k80, 64, pipeline=decode)
    assert decode.limit == "decode"
    assert prof.bound == "decode" and prof.step_time == pytest.approx(64 / 10.0)


def test_input_pipeline_errors() -> None:
    with pytest.raises(InputError, match="bandwidth"):
        InputPipeline.from_dict({"bandwidth": "fast", "bytes_per_sample": 1}, ("io",))
    with pytest.raises(InputError, match="bytes_per_sample"):
        InputPipeline.from_dict({"bandwidth": "1 GB/s"}, ("io",))
    with pytest.raises(InputError, match="did you mean 'decode_rate'"):
        InputPipeline.from_dict({"bandwidth": 1, "bytes_per_sample": 1, "decode": 3})
    with pytest.raises(InputError, match="decode_rate"):
        InputPipeline.from_dict({"bandwidth": 1, "bytes_per_sample": 1, "decode_rate": -3})


def test_profile_rejects_bad_batch() -> None:
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InputError, match="batch"):
            ComputeProfile.build(get_model("lenet5"), DEV, bad)


# -- buckets ------------------------------------------------------------------------------------

def _mlp_profile() -> ComputeProfile:
    # gradient bytes in backward order: output 4*(64*10+10)=2600, fc3 4*(64*64+64)=16640,
    # fc2 16640, fc1 4*(32*64+64)=8448
    model = get_model("mlp", features=32, hidden=[64, 64, 64], classes=10)
    return ComputeProfile.build(model, DEV, 8)


def test_bucket_boundaries_closed_form() -> None:
    prof = _mlp_profile()
    ends = {s.name: s.end for s in prof.backward}
    buckets = prof.buckets(10_000)
    assert [b.layers for b in buckets] == [("output", "fc3"), ("fc2",), ("fc1",)]
    assert [b.nbytes for b in buckets] == [2600 + 16640, 16640, 8448]
    assert [b.ready for b in buckets] == [ends["fc3"], ends["fc2"], ends["fc1"]]
    # 0 -> one bucket per layer with parameters; inf -> one bucket, ready at the end
    assert [b.layers for b in prof.buckets(0)] == [("output",), ("fc3",), ("fc2",), ("fc1",)]
    (whole,) = prof.buckets(math.inf)
    assert whole.nbytes == prof.grad_bytes and whole.ready == ends["fc1"]
    # DDP-style small first bucket
    first = prof.buckets(40_000, first_bucket_bytes=1)
    assert [b.layers for b in first] == [("output",), ("fc3", "fc2", "fc1")]
    with pytest.raises(InputError, match="bucket_bytes"):
        prof.buckets(-1)


@settings(max_examples=60, deadline=None)
@given(limit=st.floats(min_value=0, max_value=3e8), first=st.none() | st.floats(0, 3e8))
def test_bucket_invariants(limit: float, first: float | None) -> None:
    prof = _resnet_profile()
    buckets = prof.buckets(limit, first)
    order = [s.name for s in prof.backward if s.grad_bytes]
    assert [name for b in buckets for name in b.layers] == order  # a partition, in order
    assert sum(b.nbytes for b in buckets) == prof.grad_bytes
    sizes = {s.name: s.grad_bytes for s in prof.backward}
    ready = {s.name: s.end for s in prof.backward}
    for i, b in enumerate(buckets):
        threshold = first if (i == 0 and first is not None) else limit
        assert b.ready == ready[b.layers[-1]]
        if i < len(buckets) - 1:
            assert b.nbytes >= threshold  # closed only once full ...
            if len(b.layers) > 1:
                assert b.nbytes - sizes[b.layers[-1]] < threshold  # ... and not later
    assert all(a.ready <= b.ready for a, b in zip(buckets, buckets[1:]))


_CACHE: dict[str, ComputeProfile] = {}


def _resnet_profile() -> ComputeProfile:
    if "r" not in _CACHE:
        _CACHE["r"] = ComputeProfile.build(get_model("resnet50"), DEV, 32)
    return _CACHE["r"]


# -- fc weight-gradient efficiency (fc_wgrad) -------------------------------------------------
def _square_fc(width: int = 1024, input_grad: bool = True):
    from clustersim.workload.layer import Layer

    return Layer("fc", "fc", params=width * width, macs=width * width,
                 fwd_flops=2.0 * width * width, out_bytes=4.0 * width, input_grad=input_grad)


def test_fc_backward_splits_into_wgrad_and_igrad_kernels_closed_form() -> None:
    fc = _square_fc()
    batch = 4096
    ov = {"efficiency": {"fc": 0.4, "fc_wgrad": 0.8}}
    kt = layer_time(fc, DEV, batch, "backward", ov)
    w_flops = batch * fc.fwd_flops
    i_flops = batch * fc.bwd_flops - w_flops
    assert i_flops == w_flops  # default backward = 2x forward with an input gradient
    # both kernels compute-bound: half the activations + the weights each, well below compute
    half_bytes = 0.5 * batch * fc.bwd_mem_bytes + 4 * fc.params
    assert half_bytes / (1e11 * 0.8) < w_flops / (1e12 * 0.8)
    want = w_flops / (1e12 * 0.8) + i_flops / (1e12 * 0.4) + 2 * 1e-5
    assert kt.time == pytest.approx(want, rel=1e-12)
    assert kt.bound == "compute"
    single = layer_time(fc, DEV, batch, "backward", {"efficiency": {"fc": 0.4}})
    assert (kt.flops, kt.nbytes) == (single.flops, single.nbytes)  # same totals, two kernels


def test_fc_backward_split_memory_bound_halves_the_activations() -> None:
    fc = _square_fc()
    slow = DeviceSpec(name="slowmem", peak=1e18, mem_bw=1e9, memory=1e9, overhead=2e-6,
                      mem_efficiency=1.0)
    batch = 8
    kt = layer_time(fc, slow, batch, "backward", {"efficiency": {"fc_wgrad": 0.9}})
    act = batch * fc.bwd_mem_bytes
    # each kernel: half the activation bytes and the weights once (dW written / W read)
    each = 0.5 * act + 4 * fc.params
    assert kt.bound == "memory"
    assert kt.time == pytest.approx(2 * each / 1e9 + 2 * 2e-6, rel=1e-12)


def test_fc_backward_without_input_grad_is_one_wgrad_kernel() -> None:
    fc = _square_fc(input_grad=False)
    batch = 4096
    kt = layer_time(fc, DEV, batch, "backward", {"efficiency": {"fc": 0.4, "fc_wgrad": 0.8}})
    assert fc.bwd_flops == fc.fwd_flops
    assert kt.time == pytest.approx(batch * fc.fwd_flops / (1e12 * 0.8) + 1e-5, rel=1e-12)
    assert kt.nbytes == batch * fc.bwd_mem_bytes + 4 * fc.params


def test_without_fc_wgrad_the_backward_pass_is_one_kernel_as_before() -> None:
    """Bit-identical to the single roofline when ``fc_wgrad`` is absent (also with a scalar
    efficiency, which does not set it); forward passes and other classes never split."""
    fc = _square_fc()
    batch = 256
    flops = batch * fc.bwd_flops
    nbytes = batch * fc.bwd_mem_bytes + 8 * fc.params
    t_single = max(flops / (1e12 * 0.4), nbytes / (1e11 * 0.8)) + 1e-5
    for ov in ({"efficiency": {"fc": 0.4}}, {"efficiency": 0.4}):
        assert layer_time(fc, DEV, batch, "backward", ov).time == t_single
    assert "fc_wgrad" not in ComputeOverrides.from_dict({"efficiency": 0.4}).efficiency
    with_w = {"efficiency": {"fc": 0.4, "conv": 0.3, "fc_wgrad": 0.9}}
    without = {"efficiency": {"fc": 0.4, "conv": 0.3}}
    model = get_model("alexnet")
    a = ComputeProfile.build(model, DEV, 32, overrides=with_w)
    b = ComputeProfile.build(model, DEV, 32, overrides=without)
    assert a.forward == b.forward and a.update_time == b.update_time
    split = {s.name for s in a.backward if s.kind == "fc"}
    assert split == {"fc6", "fc7", "fc8"}
    for sa, sb in zip(a.backward, b.backward):
        if sa.name in split:
            assert sa.time != sb.time
        else:
            assert sa.time == sb.time


def test_same_efficiency_and_no_overhead_split_equals_one_kernel() -> None:
    """Invariant: with fc_wgrad == fc, no overhead and compute-bound kernels, splitting the
    FLOPs over two kernels costs what one kernel does."""
    fc = _square_fc()
    one = layer_time(fc, DEV, 4096, "backward", {"efficiency": {"fc": 0.6}, "overhead": 0})
    two = layer_time(fc, DEV, 4096, "backward",
                     {"efficiency": {"fc": 0.6, "fc_wgrad": 0.6}, "overhead": 0})
    assert two.time == pytest.approx(one.time, rel=1e-12)


def test_bad_efficiency_key_names_the_allowed_keys() -> None:
    with pytest.raises(InputError) as info:
        ComputeOverrides.from_dict({"efficiency": {"fc_wgrd": 0.5}}, ("compute",))
    msg = str(info.value)
    assert msg.startswith("compute.efficiency.fc_wgrd")
    assert "did you mean 'fc_wgrad'" in msg
    assert "allowed: conv, fc, fc_wgrad, other" in msg
    with pytest.raises(InputError, match="compute.efficiency.fc_wgrad"):
        ComputeOverrides.from_dict({"efficiency": {"fc_wgrad": 1.5}}, ("compute",))
