"""Training-simulation speed (issue 3): prints its figures; not a timed test.

1. A ResNet-50 BSP weak-scaling sweep 1 ... 1,024 GPUs (powers of two) at auto fidelity on a
   k=16 fat-tree (1,024 V100 hosts, 100 GbE), 10 iterations per point: wall time
   (target <= 5 s).
2. Events per second of the simulated backend vs a bare SimPy loop with the same number of
   timeouts spread over the same number of processes, measured side by side (target >= 0.3).

Run: python bench/bench_training.py [--iterations 10] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import simpy

from clustersim.scenario.schema import parse_scenario
from clustersim.sim.sweep import run_sweep, simulate_point

SCENARIO = {
    "name": "bench_resnet50_bsp",
    "platform": {"topology": "fat_tree", "k": 16, "device": "v100", "link": "eth100g"},
    "workload": {"model": "resnet50", "batch_per_worker": 64, "bucket": "25 MiB"},
    "algorithm": {"name": "bsp", "strategy": "ring", "overlap": True},
    "sweep": {"workers": [2**i for i in range(11)], "scaling": "weak"},
    "run": {"iterations": 10, "warmup": 2, "fidelity": "auto"},
}


def bare_simpy(processes: int, events: int) -> float:
    """Seconds for `events` timeouts over `processes` plain SimPy processes."""
    env = simpy.Environment()
    per = max(events // processes, 1)

    def proc(env):
        for _ in range(per):
            yield env.timeout(1.0)

    for _ in range(processes):
        env.process(proc(env))
    t = time.perf_counter()
    env.run()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure [2] this many times (the first run is the figure)")
    args = ap.parse_args()
    raw = dict(SCENARIO)
    raw["run"] = dict(raw["run"], iterations=args.iterations)
    t0 = time.perf_counter()
    scn = parse_scenario(raw)
    t1 = time.perf_counter()
    res = run_sweep(scn)
    t2 = time.perf_counter()
    pts = res.points["bsp"]
    print(f"[1] ResNet-50 BSP weak scaling 1..1024 GPUs, {args.iterations} iterations/point")
    print(f"    scenario+platform build: {t1 - t0:.3f} s; sweep: {t2 - t1:.3f} s "
          f"(target <= 5 s); efficiency at 1024: {pts[-1].efficiency:.3f}")

    # side by side: the 1024-worker point vs bare SimPy with as many events and processes;
    # CPU time (process_time) beside wall time: on a shared machine other processes inflate
    # the wall clock of both, not always equally
    m, run, ours, ours_cpu = _timed_point(scn)
    bare, bare_cpu = _timed_bare(run.sim_events)
    r_ours = run.sim_events / ours
    r_bare = run.sim_events / bare
    print(f"[2] events: {run.sim_events:,} over 1024 workers")
    print(f"    clustersim engine: {ours:.3f} s = {r_ours:,.0f} events/s (CPU {ours_cpu:.3f} s)")
    print(f"    bare SimPy loop:   {bare:.3f} s = {r_bare:,.0f} events/s (CPU {bare_cpu:.3f} s)")
    print(f"    ratio: {r_ours / r_bare:.2f} (target >= 0.3); by CPU time: "
          f"{bare_cpu / ours_cpu:.2f}")
    if args.repeat > 1:
        # the same pair again (the point's routes are cached now): the spread shows the noise
        walls, cpus = [], []
        for _ in range(args.repeat - 1):
            _, _, o, oc = _timed_point(scn)
            b, bc = _timed_bare(run.sim_events)
            walls.append(b / o)
            cpus.append(bc / oc)
        print(f"    {args.repeat - 1} more pairs: ratio median {statistics.median(walls):.2f} "
              f"[{min(walls):.2f}-{max(walls):.2f}], by CPU time median "
              f"{statistics.median(cpus):.2f} [{min(cpus):.2f}-{max(cpus):.2f}]")


def _timed_point(scn):
    """simulate_point at 1,024 workers: (metrics, run, wall s, CPU s).

    Both sides start from a collected heap, so neither pays for the other's garbage; the
    engine runs with the cyclic collector off and leaves its collection for later, so that
    one collection is timed here, as part of the engine's cost."""
    gc.collect()
    t, c = time.perf_counter(), time.process_time()
    m, run = simulate_point(scn, scn.algorithm, 1024, 0)
    gc.collect()
    return m, run, time.perf_counter() - t, time.process_time() - c


def _timed_bare(events: int) -> tuple[float, float]:
    gc.collect()
    t, c = time.perf_counter(), time.process_time()
    bare_simpy(1024, events)
    return time.perf_counter() - t, time.process_time() - c


if __name__ == "__main__":
    main()
