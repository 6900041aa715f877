"""Asynchronous parameter-server simulation speed (issue 4): prints its figures; not a timed test.

Async SGD (one server shard, FIFO, locked) with 4,253 workers x 100 iterations on the
Cori-like KNL platform with one device per core (topologies/cori_knl_cores.yaml), the size of
the EASGD target (<= 10 s; "PS should be similar").  CPU time is printed beside wall time
because a shared machine's wall time says little.  Every push and every answer is a flow
on the network (incast at the server is simulated, not a formula).  Prints wall time,
simulated events, events per second, flows, and the server's figures.  Also GOSGD and the
hybrid on the same platform (groups = KNL nodes).

Run: python bench/bench_async_ps.py [--workers 4253] [--iterations 100] [--algorithms ...]
"""

from __future__ import annotations

import argparse
import time

from clustersim.scenario.schema import parse_scenario
from clustersim.sim.sweep import simulate_point


def scenario(workers: int, iterations: int, algorithm: dict) -> dict:
    return {
        "name": "bench_async_ps",
        "platform": "cori_knl_cores",
        # a small model keeps the compute model cheap; the simulator's cost is per operation
        "workload": {"model": "alexnet", "batch_per_worker": 1},
        "algorithm": algorithm,
        "sweep": {"workers": [workers]},
        "run": {"iterations": iterations, "warmup": 1, "fidelity": "auto"},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=4253)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--algorithms", nargs="*", default=["async_sgd", "gosgd", "hybrid"])
    args = ap.parse_args()
    for name in args.algorithms:
        scn = parse_scenario(scenario(args.workers, args.iterations, {"name": name}))
        t0, c0 = time.perf_counter(), time.process_time()
        m, run = simulate_point(scn, scn.algorithm, args.workers, 0)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        per_it = run.sim_events / (args.workers * args.iterations)
        print(f"{name}: {args.workers} workers x {args.iterations} iterations: {dt:.2f} s wall, "
              f"{cpu:.2f} s CPU (target <= 10 s); {run.sim_events:,} events "
              f"({per_it:.1f} per worker-iteration) = {run.sim_events / cpu:,.0f} events/CPU-s; "
              f"{run.flows:,} flows")
        srv = ("-" if m.server_utilization is None
               else f"{m.server_utilization:.2f}, {m.update_rate or 0:.1f} updates/s")
        stale = "-" if m.staleness_mean is None else f"{m.staleness_mean:.1f}"
        print(f"    simulated: {m.throughput:,.0f} samples/s, iteration {m.iteration_time:.3f} s,"
              f" server utilisation/update rate {srv}, staleness mean {stale}")


if __name__ == "__main__":
    main()
