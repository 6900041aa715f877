"""Convergence emulation speed (issue 11): prints figures; not a timed test.

Emulates one asynchronous algorithm with many workers on the digits task to its target
(``knl_easgd_compare``'s platform: one worker per KNL core, GoogLeNet timing, no jitter) and
prints the wall and CPU time, the emulated worker gradient steps per second, the engine's
events, and where the curve ended (target 0.9 accuracy; budget: <= 60 s for 256 workers).

BLAS threads are pinned to one before numpy loads: the task's matrices are tiny (a 32 x 64
batch), and on a busy two-core machine OpenBLAS's thread hand-offs cost more than the
products (seen: the 360-image evaluation 1.5 ms with one thread, 6-7 ms with two).

Run: python bench/bench_emulation.py [--algorithm async_easgd] [--workers 256] [--tau 1]
                                     [--alpha 0.5] [--lr 0.1] [--target 0.9] [--hidden 32] [--profile]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algorithm", default="async_easgd")
    ap.add_argument("--workers", type=int, default=256)
    ap.add_argument("--tau", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--alpha", type=float, default=0.5,
                    help="EASGD moving rate (0: beta / p); default Theano-MPI's 0.5")
    ap.add_argument("--target", type=float, default=0.9)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--eval-updates", type=int, default=100)
    ap.add_argument("--max-iterations", type=int, default=400)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()

    from clustersim.algorithms.base import get_algorithm
    from clustersim.algorithms.tasks.digits import digits_data
    from clustersim.scenario.schema import AlgorithmSpec, load_scenario
    from clustersim.sim.emulate import emulate_point

    emulation = {"task": "digits", "target": args.target, "lr": args.lr,
                 "hidden": args.hidden, "eval_updates": args.eval_updates,
                 "max_iterations": args.max_iterations}
    scn = load_scenario(ROOT / "scenarios" / "knl_easgd_compare.yaml", [
        "workload.jitter=0", f"sweep.workers=[{args.workers}]", "run.convergence=emulate",
        f"run.emulation={json.dumps(emulation)}", "compare=[]"])
    params = {k: p.default for k, p in get_algorithm(args.algorithm).params.items()}
    if "tau" in params:
        params["tau"] = args.tau
    if "alpha" in params:
        params["alpha"] = args.alpha
    alg = AlgorithmSpec(args.algorithm, params)
    digits_data(0, 0.2)  # scikit-learn's import and the data: not the emulation's time
    w0, c0 = time.perf_counter(), time.process_time()
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        res, run = prof.runcall(emulate_point, scn, alg, args.workers, 0)
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    else:
        res, run = emulate_point(scn, alg, args.workers, 0)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    steps = res.steps[-1]
    print(f"{args.algorithm} {params}, {args.workers} workers, lr {args.lr}, digits "
          f"(hidden {args.hidden}), target accuracy {args.target}")
    print(f"  stopped: {res.stopped}; final accuracy {res.metric[-1]:.4f}, loss "
          f"{res.loss[-1]:.4f}; {len(res.time)} samples")
    print(f"  to target: {res.time_to_target:.4g} simulated s, {res.steps_to_target:.0f} "
          f"worker steps, {res.updates_to_target:.0f} reference updates")
    print(f"  wall {wall:.2f} s, CPU {cpu:.2f} s; {steps} worker steps = {steps / wall:.0f} "
          f"steps/s wall ({steps / cpu:.0f} per CPU s); {run.sim_events} events "
          f"({run.sim_events / wall:.0f}/s)")
    print(f"  load average: {os.getloadavg()[0]:.1f} (2 cores, shared)")


if __name__ == "__main__":
    main()
