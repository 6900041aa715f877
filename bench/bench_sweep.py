"""Sweep throughput: a 10,000-point BSP design (fabric x nodes x batch x algorithm) on the
local process pool and on a Dask LocalCluster, side by side, with each executor's per-point
overhead; then the same sweep resumed with every point cached (the whole command, timed).

    python bench/bench_sweep.py                 # 10,000 points, -j = cores
    python bench/bench_sweep.py --points 2000 -j 2

Per-point overhead = (executor wall time x workers - the points' own compute time) / points:
what the executor costs beyond simulating (pickling, scheduling, result transfer, idle
workers at the end).  The compute time is measured in this process, one point after another.
Printed figures only, no assertion: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SCENARIO = """\
name: bench_sweep
platform: {{file: supercloud_v100_eth25}}
workload: {{model: resnet50, batch_per_worker: 64, bucket: none}}
algorithm: {{name: bsp, strategy: ring, overlap: false}}
sweep:
  axes:
    platform.file: [supercloud_v100_eth25, supercloud_v100_opa100]
    workers: {workers}
    workload.batch_per_worker: {batches}
    algorithm.strategy: [nccl, ar, asa, copper]
    network.overhead: {overheads}
run: {{iterations: 3, warmup: 1, fidelity: analytic}}
"""


def design(points: int) -> str:
    workers = [2, 4, 8, 16, 32]
    batches = list(range(8, 8 + 8 * 25, 8))  # 25
    per = 2 * len(workers) * len(batches) * 4  # 1,000
    n_over = max(1, points // per)
    overheads = [f"{1 + i} us" for i in range(n_over)]
    return SCENARIO.format(workers=workers, batches=batches, overheads=overheads)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()

    from clustersim.explore import PointCache, load_study, run_study, study_points

    tmp = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
    f = tmp / "bench_sweep.yaml"
    f.write_text(design(args.points))
    _, study = load_study(str(f))
    pts = study_points(study)
    n = len(pts)
    print(f"{n:,} points (2 fabrics x 5 worker counts x 25 batches x 4 algorithms x "
          f"{n // 1000} overheads), {args.jobs} workers, {os.cpu_count()} cores")
    sample = pts[:: max(1, n // 200)]
    t0 = time.perf_counter()
    run_study(study, sample, executor="local", jobs=1)
    per_point = (time.perf_counter() - t0) / len(sample)
    print(f"compute per point (in this process, {len(sample)} points): "
          f"{per_point * 1e3:.2f} ms")
    results = {}
    for name, kw in (("local pool", {"executor": "local"}),
                     ("Dask LocalCluster", {"executor": "dask", "address": "local"})):
        t0 = time.perf_counter()
        out = run_study(study, pts, jobs=args.jobs, **kw)
        wall = time.perf_counter() - t0
        results[name] = out.results
        over = (wall * args.jobs - per_point * n) / n
        print(f"{name:>18}: {wall:7.1f} s  {n / wall:8.1f} points/s  "
              f"overhead {over * 1e3:6.2f} ms/point (cluster start-up included)")
    a, b = results.values()
    print("identical rows on both executors:", a == b)
    # resume: fill a cache, then time the whole command with every point cached
    out_dir = tmp / "out"
    cache = PointCache(out_dir / "points.sqlite")
    from clustersim.explore.cache import point_key

    cache.put_many((point_key(study, p), a[p.index]) for p in pts)
    cache.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "clustersim", "sweep", str(f), "--out",
                           str(out_dir), "-j", str(args.jobs)], env=env, capture_output=True,
                          text=True)
    wall = time.perf_counter() - t0
    print(f"resumed sweep, all {n:,} points cached: {wall:.2f} s (the whole command: start, "
          f"keys, lookups, Parquet/CSV/JSON)  [{proc.stdout.splitlines()[0] if proc.stdout else proc.stderr[-300:]}]")


if __name__ == "__main__":
    main()
