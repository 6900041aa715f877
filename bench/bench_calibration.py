"""How fast and how exact calibration is on traces the simulator generates.

    python bench/bench_calibration.py [--noise 0.03] [--outliers 0.1] [--repeats 5]

Prints, for the round-trip setup of tests/test_calibration_roundtrip.py (51 ping-pong sizes,
17 all-reduce sizes on 2 and 4 ranks, 11 GEMMs, 8 copies, 7 reductions): the time to
simulate the traces, the time of the whole fit (segmentation, every robust fit, the
collective corrections against the simulator's own costing), and the largest relative
error over the recovered parameters - noise-free and with the given noise.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_calibration_roundtrip import (  # noqa: E402
    BW,
    DEV,
    EFF,
    LAT,
    SEGS,
    STEP,
    labelled,
    traces,
)

from clustersim.calibration.pipeline import calibrate_rows, make_target  # noqa: E402
from clustersim.calibration.rows import rows_from_events  # noqa: E402


def errors(prof) -> dict[str, float]:
    out = {}

    def rel(name: str, got: float, want: float) -> None:
        out[name] = abs(got - want) / abs(want) if want else abs(got)

    rel("link.bandwidth", prof.links["testshm"]["bandwidth"], BW)
    rel("link.latency", prof.links["testshm"]["latency"], LAT)
    for k, (got, want) in enumerate(zip(prof.protocols["testshm"], SEGS)):
        rel(f"seg{k}.efficiency", got.efficiency, want.efficiency)
        rel(f"seg{k}.collective_efficiency", got.collective_efficiency,
            want.collective_efficiency)
        if want.overhead:
            rel(f"seg{k}.overhead", got.overhead, want.overhead)
    rel("step_overhead", prof.network["step_overhead"], STEP)
    dev = prof.devices["testcpu"]
    for cls, eff in EFF.items():
        rel(f"efficiency.{cls}", dev["efficiency_by_class"][cls], eff)
    rel("mem_efficiency", dev["mem_efficiency"], DEV.mem_efficiency)
    rel("overhead", dev["overhead"], DEV.overhead)
    rel("reduce_rate", dev["reduce_rate"], DEV.reduce_rate)
    return out


def run(noise: float, outliers: float, seed: int) -> tuple[float, float, dict[str, float]]:
    t0 = time.perf_counter()
    plat, events = traces(noise=noise, outliers=outliers, seed=seed)
    t1 = time.perf_counter()
    rows = labelled(rows_from_events(events, "median" if noise else "mean"))
    cal = calibrate_rows(rows, make_target(plat, 4))
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, errors(cal.profile)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--noise", type=float, default=0.03)
    ap.add_argument("--outliers", type=float, default=0.1)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    for label, noise, outliers in (("noise-free", 0.0, 0.0),
                                   (f"noise {a.noise:.0%}, outliers {a.outliers:.0%}",
                                    a.noise, a.outliers)):
        sims, fits, worst = [], [], []
        per: dict[str, list[float]] = {}
        for seed in range(a.repeats):
            s, f, err = run(noise, outliers, seed)
            sims.append(s)
            fits.append(f)
            worst.append(max(err.values()))
            for k, v in err.items():
                per.setdefault(k, []).append(v)
        print(f"{label}: simulate traces {statistics.median(sims) * 1e3:.0f} ms, "
              f"fit {statistics.median(fits) * 1e3:.0f} ms (median of {a.repeats}); "
              f"largest parameter error: median {statistics.median(worst):.2e}, "
              f"max {max(worst):.2e}")
        if noise:
            for k, v in sorted(per.items(), key=lambda kv: -statistics.median(kv[1]))[:6]:
                print(f"    {k:<28} median error {statistics.median(v):.1%}")


if __name__ == "__main__":
    main()
