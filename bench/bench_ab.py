"""A revision against the working tree, side by side: ``clustersim predict`` end to end.

Why: this VM's speed drifts 20-30% between runs seconds apart, so "before" measured today and
"after" measured tomorrow compare two machines.  This script checks the other revision out in a
temporary git worktree and runs the *same* command from each tree alternately, pair after
pair, in fresh processes (CLI start included); the median of the per-pair ratios is the figure.

Each run imports ``clustersim`` from its own tree (put first on ``sys.path``, ahead of an
editable install), with the package byte-compiled in both trees first, so neither pays for
compiling.  The predictions of both (``--json``) must be identical unless ``--allow-diff``: a
change that moves results is not a speed change (tables may differ: the report's layout).

Run: python bench/bench_ab.py [--base HEAD~1] [--pairs 8] [SCENARIO] [-- extra predict args]
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_RUN = """\
import sys
sys.path.insert(0, {tree!r})
import clustersim.cli as cli
sys.argv = ["clustersim", *{argv!r}]
# as the console script runs it (its exit included), in a tree that has one
sys.exit(cli.console_main() if hasattr(cli, "console_main") else cli.main())
"""


def run(tree: Path, argv: list[str], json_out: Path) -> tuple[float, bytes]:
    """Wall time and ``--json`` prediction of one ``clustersim`` run from ``tree``'s sources."""
    code = _RUN.format(tree=str(tree), argv=[*argv, "--json", str(json_out)])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=3600)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return wall, json_out.read_bytes()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="?", default="scenarios/knl_4253.yaml")
    ap.add_argument("--base", default="HEAD~1", help="git revision to compare with")
    ap.add_argument("--pairs", type=int, default=8, help="alternating pairs of runs")
    ap.add_argument("--allow-diff", action="store_true",
                    help="do not require both trees to print the same output")
    args, extra = ap.parse_known_args()
    extra = [a for a in extra if a != "--"]
    argv = ["predict", args.scenario, *extra]
    with tempfile.TemporaryDirectory(prefix="clustersim-ab-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base),
                        args.base], check=True)
        try:
            for tree in (base, ROOT):  # compile outside the timed runs
                compileall.compile_dir(str(tree / "clustersim"), quiet=1)
            rev = subprocess.run(["git", "-C", str(base), "log", "-1", "--format=%h %s"],
                                 capture_output=True, text=True).stdout.strip()
            print(f"base: {rev[:90]}\nnew:  working tree {ROOT}\n"
                  f"command: clustersim {' '.join(argv)}")
            ratios, walls_b, walls_n = [], [], []
            for k in range(max(1, args.pairs)):
                tb, out_b = run(base, argv, Path(tmp) / "base.json")
                tn, out_n = run(ROOT, argv, Path(tmp) / "new.json")
                if out_b != out_n and not args.allow_diff:
                    raise SystemExit("the two trees predict different results (--allow-diff "
                                     "to time them anyway)")
                walls_b.append(tb)
                walls_n.append(tn)
                ratios.append(tn / tb)
                print(f"  pair {k + 1}: base {tb:.2f} s, new {tn:.2f} s, ratio {tn / tb:.3f}",
                      flush=True)
            print(f"median wall: base {statistics.median(walls_b):.2f} s, new "
                  f"{statistics.median(walls_n):.2f} s; median ratio new/base "
                  f"{statistics.median(ratios):.3f}")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                           check=False)


if __name__ == "__main__":
    main()
