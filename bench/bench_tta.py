"""What the analytic time to accuracy costs ``clustersim predict`` end to end.

Issue 11's target: the analytic convergence layer adds <= 5% to ``clustersim predict
scenarios/knl_4253.yaml``.  The same command runs with the layer on (the scenario as shipped:
``run.convergence: auto`` with GoogLeNet's profile) and off (``--set run.convergence=off``),
alternately, in fresh processes (CLI start included), pair after pair; the median of the
per-pair ratios is the figure (this VM's speed drifts between runs seconds apart, so only
ratios measured side by side mean anything).  Also printed: the layer's own cost per point,
timed in-process (``predict`` per call on a sync and an async point).

Run: python bench/bench_tta.py [--pairs 6] [SCENARIO]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole command; CPU is the child's and its pool's rusage,
    which a busy machine inflates far less than wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "clustersim.cli", *argv, "-q"], cwd=ROOT,
                          capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"exit {proc.returncode}: {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def per_call() -> tuple[float, float]:
    """Seconds per ``predict`` call for a sync point and an async point (1,600 staleness
    samples, as a parameter server at a few hundred workers records)."""
    import numpy as np

    from clustersim.convergence import RunStats, load_profile, predict

    prof = load_profile("googlenet")
    sync = RunStats("sync", 4253, 34024.0, 2.1, 13959.0)
    stale = np.random.default_rng(0).geometric(1 / 200, 1600).astype(float).tolist()
    asyn = RunStats("async", 4253, 8.0, 0.018, 440.0, staleness=stale)
    out = []
    for stats in (sync, asyn):
        n = 2000
        t = time.perf_counter()
        for _ in range(n):
            predict(prof, stats)
        out.append((time.perf_counter() - t) / n)
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="?", default="scenarios/knl_4253.yaml")
    ap.add_argument("--pairs", type=int, default=6)
    args = ap.parse_args()
    on = ["predict", args.scenario]
    off = [*on, "--set", "run.convergence=off"]
    run(on)  # warm the bytecode and page caches
    ratios, cpu_ratios, t_on, t_off = [], [], [], []
    for k in range(args.pairs):
        (a, ca), (b, cb) = (run(on), run(off)) if k % 2 == 0 else \
            tuple(reversed((run(off), run(on))))
        t_on.append(a)
        t_off.append(b)
        ratios.append(a / b)
        cpu_ratios.append(ca / cb)
        print(f"pair {k + 1}: with {a:.3f} s ({ca:.3f} s CPU), without {b:.3f} s "
              f"({cb:.3f} s CPU), ratio {a / b:.3f} wall, {ca / cb:.3f} CPU")
    print(f"{args.scenario}: median with the convergence layer {statistics.median(t_on):.3f} s, "
          f"without {statistics.median(t_off):.3f} s; median ratio "
          f"{statistics.median(ratios):.3f} wall, {statistics.median(cpu_ratios):.3f} CPU "
          "(target <= 1.05)")
    s, a = per_call()
    print(f"predict() per point: sync {s * 1e6:.1f} us, async with 1,600 staleness samples "
          f"{a * 1e6:.1f} us")


if __name__ == "__main__":
    main()
