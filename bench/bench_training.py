"""Training-simulation speed (issue 3): prints its figures; not a timed test.

1. A ResNet-50 BSP weak-scaling sweep 1 ... 1,024 GPUs (powers of two) at auto fidelity on a
   k=16 fat-tree (1,024 V100 hosts, 100 GbE), 10 iterations per point: wall time
   (target <= 5 s).
2. Events per second of the simulated backend vs a bare SimPy loop with the same number of
   timeouts spread over the same number of processes, measured side by side (target >= 0.3).

Run: python bench/bench_training.py [--iterations 10]
"""

from __future__ import annotations

import argparse
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

    # side by side: the 1024-worker point vs bare SimPy with as many events and processes
    t = time.perf_counter()
    m, run = simulate_point(scn, scn.algorithm, 1024, 0)
    ours = time.perf_counter() - t
    bare = bare_simpy(1024, run.sim_events)
    r_ours = run.sim_events / ours
    r_bare = run.sim_events / bare
    print(f"[2] events: {run.sim_events:,} over 1024 workers")
    print(f"    clustersim engine: {ours:.3f} s = {r_ours:,.0f} events/s")
    print(f"    bare SimPy loop:   {bare:.3f} s = {r_bare:,.0f} events/s")
    print(f"    ratio: {r_ours / r_bare:.2f} (target >= 0.3)")


if __name__ == "__main__":
    main()
