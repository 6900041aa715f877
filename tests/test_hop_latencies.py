"""Hop latencies and transport overheads form one consistent set (issue 13).

A link class's ``latency`` is a hop's hardware delay; a transport's ``overhead`` is an
end-to-end measurement less the hops of the measured path.  So each measured path, rebuilt as
an explicit platform, must give back its anchor measurement (2 %: the published figures'
own spread), and the other published sizes of that path must stay within a factor of 1.5
(0.71-0.88x today for the mid sizes: an RDMA payload above the inline size pays one PCIe read,
predicted from pcie-bench, but not the read's growth with its size; docs/fabrics.md).  A path
with no anchor (a 2 MiB ib_write_lat, 0.99x) checks a bandwidth figure against a latency one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clustersim.catalog import builtin_catalog

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from bench_latency_published import PATHS, rows  # noqa: E402

ROWS = rows()


@pytest.mark.parametrize("label, n, published, simulated, anchor",
                         [r for r in ROWS if r[4]], ids=lambda v: str(v)[:24])
def test_each_measured_path_gives_back_its_anchor(label, n, published, simulated, anchor):
    assert simulated == pytest.approx(published, rel=0.02)


@pytest.mark.parametrize("label, n, published, simulated, anchor",
                         [r for r in ROWS if not r[4]], ids=lambda v: str(v)[:24])
def test_other_published_sizes_within_a_factor_of_1_5(label, n, published, simulated, anchor):
    assert 1 / 1.5 <= simulated / published <= 1.5


def test_every_path_has_one_anchor_or_says_why_not():
    for label, _path, sizes, anchor, source in PATHS:
        if anchor is None:
            assert "no anchor" in source, label
        else:
            assert [n for n, _ in sizes].count(anchor) == 1 and source, label


def test_hops_with_a_transport_are_hardware_figures():
    """A link class that names a transport keeps software out of its hop latency: at most
    half a microsecond (switch crossings are ~0.1 us; a 10 GbE store-and-forward hop 0.5 us).
    Classes without a transport (Aries) carry their whole per-hop cost themselves."""
    cat = builtin_catalog()
    for name in ("pcie3x16", "pcie4x16", "nvlink1", "nvlink2", "nvlink3", "qpi", "upi",
                 "eth10g", "eth25g", "eth100g", "opa100", "ib_edr", "ib_hdr"):
        lk = cat.link(name)
        assert lk.transport and 0 < lk.latency <= 0.5e-6, name
