"""Fit the analytic convergence model's constants on emulation (issue 11): prints figures.

Emulates the grid of :mod:`clustersim.sim.convfit` (async_sgd / hogwild_sgd at several
worker counts, async_msgd at two momenta, sync and async EASGD at several tau and beta, GoSGD
at several push probabilities) on the digits and teacher-student tasks, fits k_s, k_m, k_d,
k_e, k_g (robust least squares on log steps to target) and prints the fit with 95% intervals,
the residual per run, the held-out error, the emulations' wall time and emulated worker steps
per second.  ``--out`` writes the constants file (what ``clustersim calibrate --emulation``
writes); ``--profiles`` also re-measures the tasks' batch laws (task_profiles.yaml's figures).

Run: python bench/fit_convergence.py [--grid full] [--seeds 3] [--out constants.yaml] [--profiles]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # tiny matrices: threads cost more

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402


def _profiles(tasks: list[str]) -> None:
    import numpy as np

    from clustersim.convergence.fit import fit_batch_law
    from clustersim.convergence.noise_scale import estimate
    from clustersim.sim.convfit import TASK_DEFAULTS, measure_task_profile, task_noise_log

    for task in tasks:
        t0 = time.perf_counter()
        m = measure_task_profile(task)
        b, s = [], []
        for bb, runs in zip(m["batches"], m["steps"]):
            fin = [x for x in runs if math.isfinite(x)]
            print(f"  {task} batch {bb:4d}: steps {runs}")
            if 2 * len(fin) >= len(runs):
                b.append(bb)
                s.append(math.exp(float(np.mean(np.log(fin)))))
        ref = TASK_DEFAULTS[task]["batch"]
        for rule in ("tuned", "none"):
            f = fit_batch_law(b, s, rule, ref)
            print(f"  {task} rule {rule}: S_min {f.s_min:.4g} {f.s_min_interval}, B_noise "
                  f"{f.noise:.4g} {f.noise_interval}, ref_steps {f.ref_steps:.4g}, log rms "
                  f"{f.rms:.3f}")
        e = estimate(task_noise_log(task))
        print(f"  {task} B_simple from gradient norms: {e.b_simple:.4g} [{e.low:.4g}, "
              f"{e.high:.4g}]  ({time.perf_counter() - t0:.1f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", choices=["small", "full"], default="full")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--tasks", default="digits,teacher_student")
    ap.add_argument("--out", default=None)
    ap.add_argument("--profiles", action="store_true")
    args = ap.parse_args()
    tasks = args.tasks.split(",")

    from clustersim.commands.calibrate_emulation import print_fit, write_constants
    from clustersim.sim.convfit import calibrate

    if args.profiles:
        _profiles(tasks)
    steps = [0]
    w0, c0 = time.perf_counter(), time.process_time()
    cal = calibrate(tasks, args.grid, range(args.seeds))
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    print_fit(cal)
    for o in cal.fit.observations + tuple(cal.heldout):
        if math.isfinite(o.steps):
            unit = o.stats.batch * (o.stats.workers if o.stats.kind in ("elastic", "gossip")
                                    else 1)
            steps[0] += o.steps * unit / 32 * o.seeds  # samples / task batch = worker steps
    spread = [o.spread for o in cal.fit.observations if o.seeds > 1]
    if spread:
        print(f"seed noise: sd of log steps over {args.seeds} seeds, median "
              f"{sorted(spread)[len(spread) // 2]:.3f}, max {max(spread):.3f}")
    print(f"{cal.runs} emulations in {wall:.1f} s wall ({cpu:.1f} s CPU): about "
          f"{steps[0] / wall:.0f} emulated worker steps per wall second (to target), load "
          f"average {os.getloadavg()[0]:.1f}")
    if args.out:
        write_constants(cal, args.out, args.grid, args.seeds, tasks)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
