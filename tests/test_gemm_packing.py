"""GEMM operand packing: the workload's term, its fit, and its trip through a profile.

Closed forms: a layer whose forward GEMM is ``(m, n, k)`` pays ``4 (mk + kn) / pack_rate``
on top of its roofline; its backward pass pays the weight gradient's ``4 (km + mn)`` and
the input gradient's ``4 (mn + nk)``.  The fit recovers a known packing rate from GEMM
rows the roofline generated, and reports none when the truth has none.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from clustersim.calibration.computefit import fit_compute, memory_plateau
from clustersim.calibration.profile import dump_profile, parse_profile
from clustersim.calibration.rows import rows_from_events
from clustersim.calibration.synthetic import simulated_microbench
from clustersim.catalog import DeviceSpec, device_from_dict
from clustersim.network.params import NetworkParams
from clustersim.platform.model import PlatformBuilder
from clustersim.workload.compute import (
    ComputeOverrides,
    gemm_pack_time,
    gemm_shape,
    layer_time,
)
from clustersim.workload.layer import Layer

DEV = DeviceSpec("cpu", peak=100e9, mem_bw=20e9, memory=1e9, efficiency=0.5,
                 mem_efficiency=0.5, overhead=2e-6)
PACK = 4e9


def fc(n_in: int, n_out: int, input_grad: bool = True) -> Layer:
    return Layer("fc", "fc", params=n_in * n_out + n_out, fwd_flops=2.0 * n_in * n_out,
                 macs=float(n_in * n_out), out_shape=(n_out,), input_grad=input_grad)


def test_fc_shape_is_batch_by_out_by_in():
    assert gemm_shape(fc(1024, 512), 64) == (64, 512, 1024)


def test_forward_pays_packing_of_both_operands():
    layer, b = fc(1024, 512), 64
    dev = replace(DEV, pack_rate=PACK)
    base = layer_time(layer, DEV, b, "forward").time
    got = layer_time(layer, dev, b, "forward").time
    assert got - base == pytest.approx(4 * (64 * 1024 + 1024 * 512) / PACK, rel=1e-12)


@pytest.mark.parametrize("input_grad", [True, False])
def test_backward_pays_weight_and_input_gradient_packing(input_grad):
    layer, b = fc(1024, 512, input_grad), 32
    m, n, k = 32, 512, 1024
    dev = replace(DEV, pack_rate=PACK)
    want = 4 * (k * m + m * n) / PACK + (4 * (m * n + n * k) / PACK if input_grad else 0.0)
    assert sum(gemm_pack_time(layer, dev, b, "backward")) == pytest.approx(want, rel=1e-12)
    for ov in (None, ComputeOverrides(efficiency={"fc": 0.5, "fc_wgrad": 0.7})):
        base = layer_time(layer, DEV, b, "backward", ov).time
        got = layer_time(layer, dev, b, "backward", ov).time
        assert got - base == pytest.approx(want, rel=1e-9)


def test_no_pack_rate_and_weight_free_layers_are_unchanged():
    relu = Layer("relu", "act", params=0, fwd_flops=1e3, mem_bytes=8e3, out_shape=(1000,))
    dev = replace(DEV, pack_rate=PACK)
    assert layer_time(relu, dev, 64).time == layer_time(relu, DEV, 64).time
    assert gemm_pack_time(fc(8, 8), DEV, 4, "forward") == (0.0, 0.0)


SHAPES = [(64, 512, 512, "fc"), (128, 1024, 1024, "fc"), (32, 2048, 1024, "fc"),
          (256, 1024, 2048, "fc"), (64, 2048, 2048, "fc"), (12544, 64, 576, "conv"),
          (3136, 128, 1152, "conv"), (784, 256, 2304, "conv")]


def bench_rows(dev: DeviceSpec, eff: dict[str, float], shapes=SHAPES) -> tuple[list, list]:
    """(GEMM rows, copy rows) the simulator's own machine (:mod:`.synthetic`, roofline plus
    packing when ``dev.pack_rate`` is set) times on one device of ``dev``."""
    b = PlatformBuilder("one")
    b.add_device("d0", dev, host=0)
    events = simulated_microbench(b.build(), NetworkParams(), [0], gemm_shapes=shapes,
                                  efficiency=eff, mem_sizes=[1 << 22, 1 << 24, 1 << 26],
                                  repeats=1)
    rows = rows_from_events(events)
    cls = {(m, n, k): c for m, n, k, c in shapes}
    gemm = [{**r, "class": cls[(r["m"], r["n"], r["k"])]} for r in rows if r["bench"] == "gemm"]
    return gemm, [r for r in rows if r["bench"] == "memory"]


def test_fit_recovers_the_packing_rate():
    truth = replace(DEV, pack_rate=PACK)
    eff = {"fc": 0.6, "conv": 0.45}
    cf = fit_compute(*bench_rows(truth, eff), [], DEV)
    assert cf.pack_rate == pytest.approx(PACK, rel=1e-4)
    assert cf.efficiency["fc"] == pytest.approx(0.6, rel=1e-4)
    assert cf.efficiency["conv"] == pytest.approx(0.45, rel=1e-4)
    assert cf.overhead == pytest.approx(2e-6, rel=1e-3)


def test_fit_reports_no_packing_when_there_is_none():
    cf = fit_compute(*bench_rows(DEV, {"fc": 0.6, "conv": 0.45}), [], DEV)
    assert cf.pack_rate is None
    assert any("packing" in n for n in cf.notes)


def test_one_gemm_shape_cannot_tell_packing_from_rate():
    gemm, copies = bench_rows(replace(DEV, pack_rate=PACK), {"fc": 0.6, "conv": 0.45})
    assert fit_compute(gemm[:1] * 4, copies, [], DEV).pack_rate is None


def test_memory_plateau_drops_copies_a_shared_cache_served():
    rows = [{"bench": "memory", "kernel": "copy", "size": s, "bytes_moved": 2 * s,
             "time": 2 * s / bw} for s, bw in ((4 << 20, 45e9), (16 << 20, 11e9),
                                                 (64 << 20, 10e9))]
    assert [r["size"] for r in memory_plateau(rows)] == [16 << 20, 64 << 20]


def test_all_ranks_copies_set_bandwidth_over_a_lone_rank():
    def rows(ctx, bw):
        return [{"bench": "memory", "kernel": "copy", "size": s, "bytes_moved": 2 * s,
                 "time": 2 * s / bw, "context": ctx} for s in (16 << 20, 64 << 20)]
    gem = bench_rows(DEV, {"fc": 0.6, "conv": 0.45})[0]
    cf = fit_compute(gem, rows(None, 10e9) + rows("peer_polling", 20e9), [], DEV)
    assert cf.sustained_mem == pytest.approx(10e9, rel=0.02)


def test_pack_rate_goes_through_catalog_and_profile():
    assert device_from_dict("x", {"pack_rate": "3.5 GB/s"}, DEV).pack_rate == 3.5e9
    text = dump_profile(parse_profile({"format": "clustersim-calibration/1",
                                       "devices": {"cpu": {"pack_rate": "3.5 GB/s"}}}))
    assert parse_profile(__import__("yaml").safe_load(text)).devices["cpu"]["pack_rate"] \
        == pytest.approx(3.5e9)
