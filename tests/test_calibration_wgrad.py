"""The fc weight-gradient GEMM class (``fc_wgrad``): classification, its own fitted rate,
the profile carrying it into the workload, and the registry naming it."""

from __future__ import annotations

import pytest
import yaml

from clustersim.calibration.applyprofile import apply_profile_data
from clustersim.calibration.computefit import fit_compute, gemm_bytes, row_class
from clustersim.calibration.measure import bench_plan
from clustersim.calibration.params import REGISTRY, lookup
from clustersim.calibration.pipeline import calibrate_rows, make_target
from clustersim.calibration.profile import (
    KERNEL_CLASSES,
    Profile,
    dump_profile,
    parse_profile,
)
from clustersim.catalog import DeviceSpec, LinkSpec
from clustersim.errors import InputError
from clustersim.platform.model import PlatformBuilder
from clustersim.scenario.schema import PROJECT_ROOT, load_scenario
from clustersim.workload.compute import EFFICIENCY_CLASSES, roofline

DEV = DeviceSpec("cpu", peak=80e9, mem_bw=20e9, memory=1e9, mem_efficiency=0.4, overhead=4e-6)
NOMINAL = DeviceSpec("cpu", peak=80e9, mem_bw=20e9, memory=1e9)
#: true efficiencies: the weight-gradient orientation faster than forward / input gradient
EFF = {"fc": 0.5, "fc_wgrad": 0.8, "conv": 0.35}


def _plan_rows(dev: DeviceSpec, eff: dict[str, float], keep=lambda cls: True) -> list[dict]:
    """GEMM rows of the real measurement plan (labelled as the plan labels them: ``fc`` or
    ``conv``), timed by the roofline at the efficiency of the class the shape really is."""
    plan = bench_plan()
    rows = []
    for (m, n, k) in plan.gemm_shapes:
        label = plan.gemm_classes[(m, n, k)]
        true = "fc_wgrad" if label == "fc" and k < min(m, n) else label
        if not keep(true):
            continue
        flops = 2.0 * m * n * k
        t, _ = roofline(flops, gemm_bytes(m, n, k), dev, eff[true], dev.mem_efficiency,
                        dev.overhead)
        rows.append({"bench": "gemm", "m": m, "n": n, "k": k, "flops": flops, "time": t,
                     "class": label})
    return rows


def _copy_rows(dev: DeviceSpec) -> list[dict]:
    return [{"bench": "memory", "kernel": "copy", "size": s, "bytes_moved": 2 * s,
             "time": roofline(0, 2 * s, dev, 1, dev.mem_efficiency, dev.overhead)[0]}
            for s in (1 << 22, 1 << 24, 1 << 26)]


def test_row_class_batch_inner_fc_is_wgrad():
    # the plan's three orientations of a 64 x (512 -> 512) fc layer: fwd, wgrad, igrad
    assert row_class({"m": 64, "n": 512, "k": 512, "class": "fc"}) == "fc"
    assert row_class({"m": 512, "n": 512, "k": 64, "class": "fc"}) == "fc_wgrad"
    assert row_class({"m": 64, "n": 512, "k": 512}) == "fc"  # igrad of a square layer
    assert row_class({"m": 1024, "n": 2048, "k": 256}) == "fc_wgrad"  # shape rule, no label
    # conv weight gradients are conv, whatever their shape; an explicit label is kept
    assert row_class({"m": 12544, "n": 576, "k": 64, "class": "conv"}) == "conv"
    assert row_class({"m": 64, "n": 512, "k": 512, "class": "fc_wgrad"}) == "fc_wgrad"
    plan = bench_plan()
    wgrad = [s for s in plan.gemm_shapes if row_class({"m": s[0], "n": s[1], "k": s[2],
                                                       "class": plan.gemm_classes[s]})
             == "fc_wgrad"]
    assert len(wgrad) == 5  # one weight gradient per fc layer of the plan


def test_fit_recovers_fc_and_fc_wgrad_rates():
    cf = fit_compute(_plan_rows(DEV, EFF), _copy_rows(DEV), [], NOMINAL)
    for cls, want in EFF.items():
        assert cf.efficiency[cls] == pytest.approx(want, rel=1e-5), cls
    assert cf.efficiency["other"] == cf.efficiency["fc"]
    assert "fc_wgrad" not in cf.inherited and "fc" not in cf.inherited
    assert cf.overhead == pytest.approx(4e-6, rel=1e-3)


def test_without_wgrad_rows_no_fc_wgrad_is_emitted():
    cf = fit_compute(_plan_rows(DEV, EFF, keep=lambda c: c != "fc_wgrad"), _copy_rows(DEV), [],
                     NOMINAL)
    assert set(cf.efficiency) == {"conv", "fc", "other"}
    assert cf.efficiency["fc"] == pytest.approx(0.5, rel=1e-5)


def test_only_wgrad_rows_give_fc_their_rate():
    cf = fit_compute(_plan_rows(DEV, EFF, keep=lambda c: c == "fc_wgrad"), _copy_rows(DEV), [],
                     NOMINAL)
    assert cf.efficiency["fc_wgrad"] == pytest.approx(0.8, rel=1e-5)
    assert cf.efficiency["fc"] == cf.efficiency["conv"] == cf.efficiency["fc_wgrad"]
    assert cf.inherited["fc"] == "fc_wgrad" and cf.inherited["conv"] == "fc"


def _platform():
    b = PlatformBuilder("wgrad")
    b.add_node("bus", "bus")
    for i in range(2):
        b.add_device(f"d{i}", DEV, host=0)
        b.add_link(f"d{i}", "bus", LinkSpec("testshm", 5e9, 1e-6))
    return b.build()


def test_pipeline_writes_fc_wgrad_into_the_profile_and_fit_lines():
    rows = _plan_rows(DEV, EFF) + _copy_rows(DEV)
    cal = calibrate_rows(rows, make_target(_platform(), 2))
    prof = parse_profile(yaml.safe_load(dump_profile(cal.profile)))
    table = prof.devices["cpu"]["efficiency_by_class"]
    assert table["fc_wgrad"] == pytest.approx(0.8, rel=1e-4)
    assert table["fc"] == pytest.approx(0.5, rel=1e-4)
    assert prof.devices["cpu"]["efficiency"] == table["fc"]  # device default stays fc
    lines = {line.parameter: line for line in cal.lines}
    wl = lines["compute.efficiency.fc_wgrad"]
    assert wl.value == pytest.approx(0.8, rel=1e-6) and wl.low <= wl.value <= wl.high
    assert wl.bench == "gemm" and wl.points == len(rows)


def test_pipeline_labels_unlabelled_plan_shapes_like_the_plan():
    """Recorded traces carry no class: the plan's labels must still apply (the shape rule
    alone would call 576x64x12544 and 784x256x2304 fc and mix conv's rate into fc's)."""
    rows = [{k: v for k, v in r.items() if k != "class"} for r in _plan_rows(DEV, EFF)]
    cal = calibrate_rows(rows + _copy_rows(DEV), make_target(_platform(), 2))
    table = cal.profile.devices["cpu"]["efficiency_by_class"]
    for cls, want in EFF.items():
        assert table[cls] == pytest.approx(want, rel=1e-4), cls
    assert any(f"{len(rows)} unlabelled GEMM row(s)" in n for n in cal.notes)


def test_profile_passes_fc_wgrad_to_the_workload_and_names_it():
    scn = load_scenario(PROJECT_ROOT / "scenarios" / "real_bsp_mlp.yaml")
    table = {"conv": 0.5, "fc": 0.55, "other": 0.55, "fc_wgrad": 0.8}
    prof = Profile(devices={"localhost_core": {"peak": 60e9, "efficiency": 0.55,
                                               "efficiency_by_class": table}})
    new, changes, _ = apply_profile_data(scn, prof)
    assert dict(new.workload.compute.efficiency) == table
    moved = {c.name: c for c in changes}
    assert moved["compute.efficiency.fc_wgrad"].after == 0.8
    assert lookup("compute.efficiency.fc_wgrad") is REGISTRY["compute.efficiency.fc_wgrad"]
    assert lookup("compute.efficiency.conv") is REGISTRY["compute.efficiency.{cls}"]


def test_profile_accepts_the_workload_efficiency_classes_only():
    assert set(KERNEL_CLASSES) == set(EFFICIENCY_CLASSES)
    raw = {"format": "clustersim-calibration/1",
           "devices": {"x": {"efficiency_by_class": {"fc_wgard": 0.5}}}}
    with pytest.raises(InputError, match="fc_wgrad"):
        parse_profile(raw)
