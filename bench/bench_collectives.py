"""Schedule construction speed and compactness (prints figures; not a test).

Target (collectives brief): a 4,253-rank ring allreduce is 2 step objects and builds in a few
milliseconds.  Every figure is the minimum over ``--repeat`` builds, since this machine is
shared and the minimum is the least noisy estimate of the cost itself.  Also printed: the
number of step objects, of distinct transfers stored, and of point-to-point messages the
schedule stands for (occurrences expanded), and the analytic costing time on a star.

    /work/venv/bin/python bench/bench_collectives.py [--ranks 4253] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

from clustersim.catalog import builtin_catalog
from clustersim.collectives import build_schedule
from clustersim.network.analytic import cost_schedule
from clustersim.platform.builders import star

CASES = [
    ("allreduce", "ring", {}),
    ("allreduce", "rabenseifner", {}),
    ("allreduce", "recursive_doubling", {}),
    ("allreduce", "binomial_tree", {}),
    ("allreduce", "double_binary_tree", {}),
    ("allreduce", "hierarchical", {"hosts": "68 per host"}),
    ("reduce_scatter", "ring", {}),
    ("allgather", "recursive_doubling", {}),
    ("broadcast", "scatter_allgather", {}),
    ("gather", "binomial", {}),
]


def best_of(repeat: int, fn, *args, **kwargs) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4253)
    ap.add_argument("--bytes", type=float, default=243.9e6, help="AlexNet fp32 gradients")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    p, n = args.ranks, args.bytes
    cat = builtin_catalog()
    plat = star(p, cat.device("knl7250"), cat.link("opa100"))
    print(f"{p} ranks, {n / 1e6:.1f} MB; minimum of {args.repeat} runs")
    print(f"{'op':<15}{'algorithm':<20}{'build ms':>10}{'steps':>8}{'stored':>10}"
          f"{'messages':>14}{'cost ms':>10}")
    for op, alg, kw in CASES:
        kw = dict(kw)
        if kw.get("hosts"):
            kw["hosts"] = [r // 68 for r in range(p)]
        t_build, s = best_of(args.repeat, build_schedule, op, alg, p, n, **kw)
        stored = sum(len(st.transfers) for st in s.steps)
        t_cost, _ = best_of(1, cost_schedule, s, plat)
        print(f"{op:<15}{alg:<20}{t_build * 1e3:>10.2f}{len(s.steps):>8}{stored:>10,}"
              f"{s.num_transfers():>14,}{t_cost * 1e3:>10.1f}")


if __name__ == "__main__":
    main()
