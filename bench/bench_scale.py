"""One BSP point at 27,648 and 100,000 GPUs (issue 14): wall time and peak RSS, before/after.

Target: the 100,000-GPU point (scenarios/bsp_100k.yaml: ResNet-50, overlapped 25 MiB buckets,
12,500 nodes x 8 A100 on a k=40 fat-tree) in <= 5 s and <= 2 GiB.  The 27,648-GPU point is a
k=48 fat-tree of single V100 hosts with the same workload.

Each point runs in a fresh process (imports, platform build and simulation all counted, as
``clustersim predict`` would) from this working tree and, with ``--base REV``, from that git
revision checked out in a temporary worktree (as bench/bench_ab.py does): both trees'
predictions must be identical.  A base revision older than the 100,000-GPU bounds refuses
such platforms, so the child lifts its platform bounds first (they are checks, not model).

Run: python bench/bench_scale.py [--base REV] [--sizes 27648,100000] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

POINTS = {
    27648: {"name": "bsp_27648",
            "platform": {"topology": "fat_tree", "k": 48, "device": "v100", "link": "eth100g"},
            "workload": {"model": "resnet50", "batch_per_worker": 64, "bucket": "25 MiB"},
            "algorithm": {"name": "bsp", "strategy": "nccl32", "overlap": True},
            "run": {"iterations": 6, "warmup": 1, "seed": 0, "fidelity": "auto"}},
    100000: str(ROOT / "scenarios" / "bsp_100k.yaml"),
}

_CHILD = """\
import json, resource, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {tree!r})
import clustersim.platform.model as M
M.MAX_DEVICES, M.MAX_NODES, M.MAX_LINKS = 1 << 20, 1 << 22, 1 << 23
from clustersim.scenario.schema import load_scenario, parse_scenario
from clustersim.sim.sweep import simulate_point
spec = {spec!r}
scn = load_scenario(spec) if isinstance(spec, str) else parse_scenario(spec)
t1 = time.perf_counter()
n = scn.platform.num_devices
m, run = simulate_point(scn, scn.algorithm, n, 0)
t2 = time.perf_counter()
out = m.to_dict()
print(json.dumps({{"build": t1 - t0, "point": t2 - t1, "wall": t2 - t0, "devices": n,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "metrics": out}}))
"""


def measure(tree: Path, size: int) -> dict:
    code = _CHILD.format(tree=str(tree), spec=POINTS[size])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=3600,
                          env={"PATH": "/usr/bin:/bin", "CLUSTERSIM_JOBS": "1"})
    if proc.returncode != 0:
        raise SystemExit(f"{tree} at {size}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def show(label: str, r: dict) -> None:
    print(f"  {label:<5} {r['devices']:>7,} GPUs: wall {r['wall']:6.2f} s (start+build "
          f"{r['build']:5.2f} s, point {r['point']:6.2f} s), peak RSS "
          f"{r['rss'] / 2**30:5.2f} GiB, {r['metrics']['sim_events']:,} events, "
          f"{r['metrics']['throughput']:,.0f} samples/s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="git revision to compare with (default: none)")
    ap.add_argument("--sizes", default="27648,100000")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tree and size (best kept)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="clustersim-scale-") as tmp:
        trees = [("new", ROOT)]
        if args.base:
            base = Path(tmp) / "base"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach",
                            str(base), args.base], check=True)
            trees.insert(0, ("base", base))
        try:
            for size in sizes:
                print(f"[{size:,} GPUs] target: <= 5 s and <= 2 GiB at 100,000")
                got = {}
                for label, tree in trees:
                    runs = [measure(tree, size) for _ in range(max(1, args.repeat))]
                    got[label] = min(runs, key=lambda r: r["wall"])
                    show(label, got[label])
                if len(got) == 2 and got["base"]["metrics"] != got["new"]["metrics"]:
                    print("  the two trees predict DIFFERENT metrics")
        finally:
            if args.base:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(Path(tmp) / "base")], check=False)


if __name__ == "__main__":
    main()
