"""Round trip: traces the simulator generates with known parameters -> calibration -> the
same parameters back (within 2 %).

The simulator plays the machine (:mod:`clustersim.calibration.synthetic`): ping-pong on the
flow network with a three-segment protocol table, 2- and 4-rank all-reduce executed flow by
flow with a step overhead and per-segment collective efficiencies, GEMMs (with operand packing), copies and
reductions on the roofline.  Its events go through the same parsing as real traces
(``realrun.mbresults.results_from_events`` and :func:`rows_from_events`), then the whole
pipeline fits them.  The true parameters are in the canonical form of the conversion
(:func:`clustersim.calibration.alphabeta.link_model`): the fastest segment reaches the full
link bandwidth, the smallest alpha is the hop latencies alone.
"""

from __future__ import annotations

import pytest

from clustersim.calibration.pipeline import calibrate_rows, make_target
from clustersim.calibration.profile import dump_profile, parse_profile
from clustersim.calibration.rows import rows_from_events
from clustersim.calibration.synthetic import simulated_microbench
from clustersim.catalog import DeviceSpec, LinkSpec
from clustersim.network.params import NetworkParams, Segment
from clustersim.platform.model import PlatformBuilder

BW, LAT = 5e9, 1e-6
DEV = DeviceSpec("testcpu", peak=100e9, mem_bw=20e9, memory=8e9, efficiency=0.5,
                 mem_efficiency=0.5, overhead=3e-6, reduce_rate=4e9, pack_rate=8e9)
SEGS = (Segment(0, 0.0, 0.5, 0.9), Segment(65536, 4e-6, 1.0, 0.5),
        Segment(4194304, 10e-6, 0.7, 0.4))
STEP = 20e-6
EFF = {"fc": 0.6, "conv": 0.45}
GEMMS = [(64, 512, 512, "fc"), (512, 512, 64, "fc"), (128, 1024, 1024, "fc"),
         (1024, 1024, 128, "fc"), (256, 2048, 1024, "fc"), (32, 256, 256, "fc"),
         (12544, 64, 576, "conv"), (576, 64, 12544, "conv"), (3136, 128, 1152, "conv"),
         (784, 256, 2304, "conv"), (1152, 128, 3136, "conv")]
PINGPONG = sorted({int(round(2 ** (k / 2))) for k in range(0, 51)})
COLLECTIVE = [1 << k for k in range(10, 27)]


def platform(dev: DeviceSpec = DEV, name: str = "roundtrip"):
    """Four devices of ``dev`` on one bus through ``testshm`` links (the synthetic machine)."""
    b = PlatformBuilder(name)
    b.add_node("bus", "bus")
    for i in range(4):
        b.add_device(f"d{i}", dev, host=0)
        b.add_link(f"d{i}", "bus", LinkSpec("testshm", BW, LAT))
    return b.build()


def traces(noise: float = 0.0, outliers: float = 0.0, seed: int = 0):
    plat = platform()
    params = NetworkParams(protocols={"testshm": SEGS}, step_overhead=STEP)
    return plat, simulated_microbench(
        plat, params, [0, 1, 2, 3], pingpong_sizes=PINGPONG, collective_sizes=COLLECTIVE,
        collectives=[("allreduce", "mpi", 2), ("allreduce", "ring", 4)],
        gemm_shapes=GEMMS, efficiency=EFF, mem_sizes=[1 << k for k in range(12, 27, 2)],
        reduce_sizes=[1 << k for k in range(14, 27, 2)], noise=noise, outliers=outliers,
        seed=seed, repeats=3)


def labelled(rows):
    cls = {(m, n, k): c for m, n, k, c in GEMMS}
    return [{**r, "class": cls[(r["m"], r["n"], r["k"])]} if r["bench"] == "gemm" else r
            for r in rows]


def close(got: float, want: float, rel: float = 0.02, zero: float = 1e-9) -> bool:
    return abs(got - want) <= (zero if want == 0 else rel * abs(want))


@pytest.fixture(scope="module")
def clean():
    plat, events = traces()
    rows = labelled(rows_from_events(events, "mean"))
    return plat, calibrate_rows(rows, make_target(plat, 4))


def test_round_trip_recovers_every_parameter_within_2_percent(clean):
    _, cal = clean
    prof = parse_profile(__import__("yaml").safe_load(dump_profile(cal.profile)))
    link = prof.links["testshm"]
    assert close(link["bandwidth"], BW) and close(link["latency"], LAT)
    segs = prof.protocols["testshm"]
    assert [s.start for s in segs] == [s.start for s in SEGS]
    for got, want in zip(segs, SEGS):
        assert close(got.overhead, want.overhead), (got, want)
        assert close(got.efficiency, want.efficiency), (got, want)
        assert close(got.collective_efficiency, want.collective_efficiency), (got, want)
    assert close(prof.network["step_overhead"], STEP)
    dev = prof.devices["testcpu"]
    assert close(dev["efficiency_by_class"]["fc"], EFF["fc"])
    assert close(dev["efficiency_by_class"]["conv"], EFF["conv"])
    assert close(dev["mem_efficiency"], DEV.mem_efficiency)
    assert close(dev["overhead"], DEV.overhead)
    assert close(dev["reduce_rate"], DEV.reduce_rate)
    assert close(dev["pack_rate"], DEV.pack_rate)
    assert close(dev["peak"], DEV.peak) and close(dev["mem_bw"], DEV.mem_bw)


def test_round_trip_breakpoints_were_detected(clean):
    _, cal = clean
    assert cal.pingpong.detected
    assert cal.pingpong.breakpoints == (65536.0, 4194304.0)


def test_round_trip_through_realrun_row_parser_agrees():
    """realrun's own parser (medians) gives the same rows on noise-free traces."""
    from realrun.mbresults import results_from_events

    plat, events = traces()
    ours = {(r["bench"], r.get("size"), r.get("m")): r["time"]
            for r in rows_from_events(events, "median")}
    theirs = {(r["bench"], r.get("size"), r.get("m")): r["time"]
              for r in results_from_events(events)}
    assert ours.keys() == theirs.keys()
    for k, t in ours.items():
        assert t == pytest.approx(theirs[k], rel=1e-12)


def test_noisy_traces_stay_close_and_intervals_cover():
    """3 % log-normal noise and 10 % of batches slowed by 50-200 %: the robust fit still
    lands within 10 % on the parameters the data pin down well."""
    plat, events = traces(noise=0.03, outliers=0.1, seed=4)
    cal = calibrate_rows(labelled(rows_from_events(events, "median")), make_target(plat, 4))
    prof = cal.profile
    assert close(prof.links["testshm"]["bandwidth"], BW, rel=0.1)
    segs = prof.protocols["testshm"]
    for got, want in zip(segs, SEGS):
        assert close(got.efficiency, want.efficiency, rel=0.1)
    dev = prof.devices["testcpu"]
    assert close(dev["efficiency_by_class"]["fc"], EFF["fc"], rel=0.1)
    assert close(dev["reduce_rate"], DEV.reduce_rate, rel=0.1)
    assert close(prof.network["step_overhead"], STEP, rel=0.25)


def test_noisy_breakpoint_recovery_rate():
    """The same disturbed traces over seeds 0-9 (one seed proves nothing about a rate): both
    true breakpoints exactly in 7 of 10 fits (3 of 10 before the segmentation's evidence
    guard; over seeds 0-19 13 of 20, docs/calibration.md), the 4 MiB switch in all, and no
    fit writes a segment outside the truth's range of efficiencies (before: 1.27e20 at seed
    8).  Asserted with a margin of one fit."""
    exact, segments = 0, []
    for seed in range(10):
        plat, events = traces(noise=0.03, outliers=0.1, seed=seed)
        cal = calibrate_rows(labelled(rows_from_events(events, "median")),
                             make_target(plat, 4))
        exact += cal.pingpong.breakpoints == (65536.0, 4194304.0)
        assert 4194304.0 in cal.pingpong.breakpoints, seed
        assert close(cal.profile.links["testshm"]["bandwidth"], BW, rel=0.05), seed
        segments += [s.efficiency for s in cal.profile.protocols["testshm"]]
    assert exact >= 6
    assert min(segments) > 0.4 and max(segments) <= 1.0 + 1e-9


def test_fit_is_deterministic():
    plat, events = traces(noise=0.03, seed=9)
    a = calibrate_rows(labelled(rows_from_events(events)), make_target(plat, 4))
    b = calibrate_rows(labelled(rows_from_events(events)), make_target(plat, 4))
    assert dump_profile(a.profile) == dump_profile(b.profile)
