"""KNL 4,253-core scenario speed (issue 4): prints its figures; not a timed test.

1. ``clustersim predict scenarios/knl_4253.yaml`` end to end, CLI start included, in a child
   process, ``--runs`` times: median, min and max wall time and median CPU (target <= 3 s).
   ``--easgd-only`` drops the three parameter-server baselines (``--set compare=...``); the
   figure for the full scenario is the target.
2. Async EASGD with 4,253 workers x 100 iterations (the knl_4253 setup, ``--tau`` local steps
   per exchange, default 10 = the algorithm's default): wall and CPU time (target <= 10 s),
   simulated events and events per second, next to a bare SimPy loop of as many timeouts.

3. With ``--points``: CPU time and simulated events of every point of the scenario, one
   process (``simulate_point``), the best of ``--repeat`` runs - the per-point table of
   issue 4, steadier than the end-to-end figure on a busy machine.  The first run of each
   point also pays for the per-process memos (message plans, jitter streams); later runs
   reuse them, as the second and later points of a pool process do.

The machine is shared: CPU time (``process_time`` / the child's rusage) is printed beside the
wall time because other processes inflate the latter.

Run: python bench/bench_knl.py [--runs 5] [--easgd-only] [--tau 10] [--iterations 100]
                               [--skip-cli] [--points [--repeat 3]]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_training import bare_simpy  # noqa: E402  (one bare-SimPy baseline for all benches)

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "knl_4253.yaml"
EASGD_ONLY = ("compare=[{name: easgd_round_robin, tau: 1, label: original EASGD}, "
              "{name: async_easgd, tau: 1, label: Async EASGD}, "
              "{name: async_measgd, tau: 1, label: Async MEASGD}, "
              "{name: hogwild_easgd, tau: 1, label: Hogwild EASGD}]")


def cli_command() -> list[str]:
    script = Path(sys.executable).with_name("clustersim")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from clustersim.cli import main; "
            "sys.exit(main())"]


def bench_cli(easgd_only: bool, timeout: float, runs: int) -> None:
    """``runs`` end-to-end runs one after the other: this VM's speed drifts by 10-30% between
    seconds, so one run is one sample; the median is the figure, min and max its spread."""
    cmd = [*cli_command(), "predict", str(SCENARIO), "--json", "/dev/null"]
    if easgd_only:
        cmd += ["--set", EASGD_ONLY]
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        if proc.returncode != 0:
            print(f"exit {proc.returncode}:\n{proc.stderr[-2000:]}")
            return
    what = "EASGD family only" if easgd_only else "all eight methods"
    print(f"[1] clustersim predict scenarios/knl_4253.yaml ({what}), CLI start included, "
          f"{runs} run(s)")
    print(f"    wall median {statistics.median(walls):.2f} s (min {min(walls):.2f}, max "
          f"{max(walls):.2f}; target <= 3 s), CPU median {statistics.median(cpus):.2f} s")


def bench_async(tau: int, iterations: int) -> None:
    from clustersim.scenario.schema import load_scenario
    from clustersim.sim.sweep import simulate_point

    scn = load_scenario(SCENARIO, sets=[
        f"run.iterations={iterations}", "run.warmup=2",
        f"compare=[{{name: async_easgd, tau: {tau}, label: Async EASGD}}]"])
    alg = scn.algorithms[1]
    t = time.perf_counter()
    c = time.process_time()
    m, run = simulate_point(scn, alg, 4253, scn.run.seed)
    wall = time.perf_counter() - t
    cpu = time.process_time() - c
    bare = bare_simpy(4254, run.sim_events)
    print(f"[2] Async EASGD, 4,253 workers x {iterations} iterations, tau = {tau}")
    print(f"    wall {wall:.2f} s, CPU {cpu:.2f} s (target <= 10 s); "
          f"{run.sim_events:,} simulated events = {run.sim_events / cpu:,.0f} events/s (CPU), "
          f"{run.flows:,} flows")
    print(f"    bare SimPy, as many timeouts over 4,254 processes: {bare:.2f} s = "
          f"{run.sim_events / bare:,.0f} events/s")
    print(f"    prediction: {m.throughput:,.0f} samples/s, worker utilisation "
          f"{m.worker_utilization:.1%}, master utilisation {m.server_utilization:.1%}")


def bench_points(repeat: int) -> None:
    from clustersim.scenario.schema import load_scenario
    from clustersim.sim.sweep import simulate_point, worker_counts

    scn = load_scenario(SCENARIO)
    best: dict[tuple[str, int], float] = {}
    events: dict[tuple[str, int], int] = {}
    for _ in range(repeat):
        for alg in scn.algorithms:
            for w in worker_counts(scn):
                c = time.process_time()
                _, run = simulate_point(scn, alg, w, scn.run.seed)
                cpu = time.process_time() - c
                key = (alg.title, w)
                best[key] = min(best.get(key, cpu), cpu)
                events[key] = run.sim_events
    print(f"[3] every point of scenarios/knl_4253.yaml in one process: CPU s / simulated "
          f"events, best of {repeat}")
    for alg in scn.algorithms:
        row = "  ".join(f"{w}:{best[(alg.title, w)]:.2f}/{events[(alg.title, w)]}"
                        for w in worker_counts(scn))
        print(f"    {alg.title:<15} {row}")
    print(f"    total {sum(best.values()):.2f} s CPU")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--easgd-only", action="store_true",
                    help="run the CLI without the parameter-server baselines")
    ap.add_argument("--skip-cli", action="store_true", help="only the Async EASGD figure")
    ap.add_argument("--timeout", type=float, default=3600.0, help="CLI timeout (s)")
    ap.add_argument("--runs", type=int, default=5, help="end-to-end CLI runs (median printed)")
    ap.add_argument("--tau", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--points", action="store_true",
                    help="also print the CPU time of every point of the scenario")
    ap.add_argument("--repeat", type=int, default=3, help="runs per point for --points")
    args = ap.parse_args()
    if not args.skip_cli:
        bench_cli(args.easgd_only, args.timeout, max(1, args.runs))
    bench_async(args.tau, args.iterations)
    if args.points:
        bench_points(max(1, args.repeat))


if __name__ == "__main__":
    main()
