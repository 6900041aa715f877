"""The shipped catalog holds the datasheet figures of docs/references.md, with sources."""

import pytest

from clustersim.catalog import builtin_catalog
from clustersim.errors import InputError

GB = 1e9
T = 1e12


@pytest.mark.parametrize("name, peak, bw", [
    ("k80", 2.8 * T, 240 * GB), ("k40", 4.29 * T, 288 * GB), ("p100", 10.6 * T, 732 * GB),
    ("v100", 15.7 * T, 900 * GB), ("v100_pcie", 14 * T, 900 * GB), ("a100", 19.5 * T, 1560 * GB),
    ("knl7250", 6.1 * T, 450 * GB),
])
def test_device_figures(name, peak, bw):
    d = builtin_catalog().device(name)
    assert d.peak == pytest.approx(peak)
    assert d.mem_bw == pytest.approx(bw)
    assert d.source


@pytest.mark.parametrize("name, bw", [
    ("pcie3x16", 15.75 * GB), ("nvlink1", 20 * GB), ("nvlink2", 25 * GB), ("qpi", 19.2 * GB),
    ("eth10g", 1.25 * GB), ("eth25g", 3.125 * GB), ("eth100g", 12.5 * GB),
    ("opa100", 12.5 * GB), ("ib_edr", 12.5 * GB), ("aries", 10 * GB),
])
def test_link_figures(name, bw):
    lk = builtin_catalog().link(name)
    assert lk.bandwidth == pytest.approx(bw)
    assert lk.source


def test_unknown_device_suggests():
    with pytest.raises(InputError, match="did you mean 'k80'"):
        builtin_catalog().device("k8O")


def test_extend_and_override():
    cat = builtin_catalog().extended({
        "devices": {"k80": {"efficiency": 0.62}, "my_gpu": {"like": "v100", "peak": "20 TFLOP/s"}},
        "links": {"slow": {"bandwidth": "1 Gb/s", "latency": "50 us"}},
    })
    assert cat.device("k80").efficiency == 0.62
    assert cat.device("k80").peak == builtin_catalog().device("k80").peak
    assert cat.device("my_gpu").peak == 20e12
    assert cat.device("my_gpu").mem_bw == builtin_catalog().device("v100").mem_bw
    assert cat.link("slow").bandwidth == pytest.approx(1.25e8)
    assert builtin_catalog().devices.get("my_gpu") is None  # the built-in is untouched


@pytest.mark.parametrize("raw, where", [
    ({"devices": {"x": {"peak": "1 TFLOP/s"}}}, "needs fields"),
    ({"devices": {"k80": {"pek": 1}}}, "did you mean 'peak'"),
    ({"links": {"l": {"bandwidth": "0 Gb/s", "latency": 0}}}, "positive"),
    ({"devices": {"k80": {"efficiency": 1.5}}}, "efficiency"),
    ({"gpus": {}}, "unknown catalog section"),
])
def test_bad_entries(raw, where):
    with pytest.raises(InputError, match=where):
        builtin_catalog().extended(raw)
