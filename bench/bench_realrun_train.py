"""Real training runs of the shipped real_*.yaml scenarios: measured vs predicted, and the
interpreter's own cost.

For each scenario (2 MPI ranks), ``--repeats`` runs; prints per run the measured iteration
time, the uncalibrated prediction, compute/comm/wait, the share of the iteration not inside
any traced operation (the interpreter and harness between operations) and the median gap
between consecutive operations of worker 0.  Run:

    /work/venv/bin/python bench/bench_realrun_train.py [--repeats 3] [--collectives library]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from clustersim.sim.sweep import simulate_point
from realrun.train import prepare, run_scenario

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("real_bsp_mlp", "real_async_ps", "real_async_easgd")


def op_gaps(events, actor: int = 0) -> list[float]:
    """Seconds between the end of one operation of ``actor`` and the start of the next."""
    evs = sorted((e for e in events if e.actor == actor and e.kind != "record"
                  and not e.meta.get("nb")), key=lambda e: e.start)
    return [b.start - a.end for a, b in zip(evs, evs[1:]) if b.start >= a.end]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--collectives", default="library", choices=("library", "schedules"))
    args = ap.parse_args()
    print(f"{'scenario':18} {'run':>3} {'measured ms':>11} {'predicted ms':>12} {'err':>7} "
          f"{'compute':>8} {'comm':>7} {'wait':>7} {'untraced':>8} {'op gap us':>9}")
    for name in SCENARIOS:
        path = ROOT / "scenarios" / f"{name}.yaml"
        setup = prepare(path, np=2)
        pred, _ = simulate_point(setup.scenario, setup.algorithm, setup.workers,
                                 setup.scenario.run.seed)
        for r in range(args.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                res = run_scenario(path, np=2, out_dir=tmp, timeout=300,
                                   collectives=args.collectives)
            m = res.metrics
            untraced = 1.0 - (m.compute + m.comm + m.wait) / m.iteration_time
            gap = statistics.median(op_gaps(res.events)) * 1e6
            print(f"{name:18} {r:>3} {m.iteration_time * 1e3:>11.2f} "
                  f"{pred.iteration_time * 1e3:>12.2f} "
                  f"{m.iteration_time / pred.iteration_time - 1:>+7.1%} "
                  f"{m.compute * 1e3:>8.2f} {m.comm * 1e3:>7.2f} {m.wait * 1e3:>7.2f} "
                  f"{untraced:>8.1%} {gap:>9.0f}")


if __name__ == "__main__":
    main()
