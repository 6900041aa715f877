"""``clustersim whatif scenarios/knl_4253.yaml`` speed, before and after (issue 14): prints both.

"Before" is another checkout of clustersim (``--before PATH``, e.g. ``/work/main`` or a
``git worktree add /tmp/main main``), where the grid ran one sweep, with its own process pool,
per cell; "after" is this checkout, where all the cells' points share one pool.  Each run is
the whole command in a child process (CLI start, simulation, writing the page), the two
checkouts alternating so that a busy machine slows both alike; the figures are the median,
min and max wall time and the median CPU time (the child's and its pool's rusage: other
processes inflate wall time, not CPU time).

``--check`` also compares the two pages' simulated numbers: the grids must agree exactly
(the page's layout changed, the numbers must not).

Every run gets an empty point cache of its own (``CLUSTERSIM_CACHE_DIR``), so both
checkouts simulate every point.  ``--cached`` times this checkout alone instead: per run, the
page with an empty cache, then the same page again from that cache (every point read back),
and checks that the two pages are the same bytes.

``--extended`` times this checkout alone: the page as it is made by default (a master-based
method's points past its master's saturation extended, not simulated:
clustersim/sim/saturated.py) and with ``--exact`` (every point simulated), alternating, each
with an empty cache, and prints the largest relative difference of the throughput and
efficiency the two pages plot.

The figure issue 14 set (≤ 5 s, where the page took 16 s when the issue was filed) is best
read side by side with the code it was filed against, since this machine's speed drifts:
``git worktree add /tmp/pre14 116c1a0^`` then ``--before /tmp/pre14``.

Run: python bench/bench_whatif.py --before /work/main [--runs 3] [--scenario knl_4253]
     python bench/bench_whatif.py --cached [--runs 3]
     python bench/bench_whatif.py --extended [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def compiled(checkout: Path) -> Path:
    """``checkout`` with its modules byte-compiled, as an installed package has them: a
    checkout whose ``__pycache__`` is missing or stale (a new worktree, an edited module,
    ``PYTHONDONTWRITEBYTECODE`` set, as on this project's machine) would compile ~150 modules
    on every run, about 0.4 s that a user never pays."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "clustersim")],
                   check=True, stdout=subprocess.DEVNULL)
    return checkout


def run_once(checkout: Path, scenario: str, out: Path, cache: Path | None = None,
             extra: tuple[str, ...] = ()) -> tuple[float, float]:
    """(wall s, CPU s) of one ``clustersim whatif`` in a child process using ``checkout``,
    with the point cache in ``cache`` (None: a new, empty one) and ``extra`` options."""
    if cache is None:
        cache = Path(tempfile.mkdtemp(prefix="whatif-cache-"))
    env = dict(os.environ, PYTHONPATH=str(checkout), CLUSTERSIM_CACHE_DIR=str(cache))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "clustersim", "whatif", scenario, "-o", str(out), "-q",
                    *extra], cwd=checkout, env=env, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def page_numbers(html: str) -> list[float]:
    """Every number of every figure's traces (bands left out), sorted: what the page plots."""
    ys: list[float] = []
    for m in re.finditer(r"Plotly\.newPlot\(\"[^\"]+\", (\[.*?\]), \{", html):
        for trace in json.loads(m.group(1)):
            if trace.get("fill") == "toself":
                continue
            for axis in ("x", "y"):
                vals = trace.get(axis) or []
                if isinstance(vals, dict):  # a typed array: compare its encoding as written
                    ys.append(float(hash(json.dumps(vals, sort_keys=True))))
                    continue
                ys.extend(float(v) for v in vals if isinstance(v, (int, float)))
    return sorted(ys)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="the checkout to compare with")
    ap.add_argument("--cached", action="store_true",
                    help="time this checkout with an empty cache, then from that cache")
    ap.add_argument("--scenario", default="scenarios/knl_4253.yaml")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="compare the pages' numbers")
    ap.add_argument("--extended", action="store_true",
                    help="time this checkout's default page against its --exact page")
    args = ap.parse_args()
    if args.cached:
        return cached(args.scenario, args.runs)
    if args.extended:
        return extended(args.scenario, args.runs)
    if args.before is None:
        ap.error("give --before CHECKOUT or --cached")
    figures: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        outs = {"before": Path(tmp) / "before.html", "after": Path(tmp) / "after.html"}
        checkouts = (("before", compiled(args.before.resolve())), ("after", compiled(ROOT)))
        for _ in range(args.runs):
            for name, checkout in checkouts:
                figures[name].append(run_once(checkout, args.scenario, outs[name]))
        print(f"clustersim whatif {args.scenario}  ({os.cpu_count()} cores, {args.runs} runs)")
        for name in ("before", "after"):
            walls = [w for w, _ in figures[name]]
            cpus = [c for _, c in figures[name]]
            print(f"  {name:6s}: wall median {statistics.median(walls):6.2f} s "
                  f"(min {min(walls):.2f}, max {max(walls):.2f}), "
                  f"CPU median {statistics.median(cpus):6.2f} s")
        b = statistics.median(w for w, _ in figures["before"])
        a = statistics.median(w for w, _ in figures["after"])
        print(f"  speed-up (wall, medians): {b / a:.2f}x")
        if args.check:
            same = (page_numbers(outs["before"].read_text())
                    == page_numbers(outs["after"].read_text()))
            print(f"  plotted numbers identical: {same}")
            return 0 if same else 1
    return 0


def cached(scenario: str, runs: int) -> int:
    """Cold (empty cache) and warm (the same cache) pages of this checkout, side by side."""
    cold: list[tuple[float, float]] = []
    warm: list[tuple[float, float]] = []
    same = True
    compiled(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(runs):
            cache = Path(tmp) / f"cache{k}"
            a, b = Path(tmp) / f"cold{k}.html", Path(tmp) / f"warm{k}.html"
            cold.append(run_once(ROOT, scenario, a, cache))
            warm.append(run_once(ROOT, scenario, b, cache))
            same = same and a.read_bytes() == b.read_bytes()
    print(f"clustersim whatif {scenario}  ({os.cpu_count()} cores, {runs} runs)")
    for name, figs in (("empty cache", cold), ("from cache", warm)):
        walls = [w for w, _ in figs]
        print(f"  {name:11s}: wall median {statistics.median(walls):6.2f} s "
              f"(min {min(walls):.2f}, max {max(walls):.2f}), "
              f"CPU median {statistics.median(c for _, c in figs):6.2f} s")
    ratio = statistics.median(w for w, _ in cold) / statistics.median(w for w, _ in warm)
    print(f"  ratio (wall, medians): {ratio:.1f}x; pages identical: {same}")
    return 0 if same else 1


def _series(html: str, figure: int) -> dict[tuple[str, float], float]:
    """``{(series name, x): y}`` of one figure of a page (bands and unnamed traces left
    out; of several cells' traces of one series, the first, the page's 1x position)."""
    found = re.findall(r"Plotly\.newPlot\(\"[^\"]+\", (\[.*?\]), \{", html)
    out: dict[tuple[str, float], float] = {}
    for trace in json.loads(found[figure]):
        if trace.get("fill") == "toself" or not trace.get("name"):
            continue
        for x, y in zip(trace.get("x") or [], trace.get("y") or []):
            out.setdefault((trace["name"], float(x)), float(y))
    return out


def extended(scenario: str, runs: int) -> int:
    """The default page (points past saturation extended) against ``--exact``."""
    figs: dict[str, list[tuple[float, float]]] = {"extended": [], "exact": []}
    with tempfile.TemporaryDirectory() as tmp:
        outs = {"extended": Path(tmp) / "extended.html", "exact": Path(tmp) / "exact.html"}
        compiled(ROOT)
        for _ in range(runs):
            for name, extra in (("extended", ()), ("exact", ("--exact",))):
                figs[name].append(run_once(ROOT, scenario, outs[name], extra=extra))
        pages = {k: v.read_text() for k, v in outs.items()}
    print(f"clustersim whatif {scenario}  ({os.cpu_count()} cores, {runs} runs, empty caches)")
    for name in ("extended", "exact"):
        walls = [w for w, _ in figs[name]]
        print(f"  {name:8s}: wall median {statistics.median(walls):6.2f} s "
              f"(min {min(walls):.2f}, max {max(walls):.2f}), "
              f"CPU median {statistics.median(c for _, c in figs[name]):6.2f} s")
    ratio = (statistics.median(w for w, _ in figs["exact"])
             / statistics.median(w for w, _ in figs["extended"]))
    print(f"  speed-up (wall, medians): {ratio:.1f}x")
    for k, what in ((0, "throughput"), (1, "efficiency")):
        a, b = _series(pages["extended"], k), _series(pages["exact"], k)
        worst = max(abs(a[key] - b[key]) / abs(b[key]) for key in b if b[key])
        print(f"  {what} at the 1x position: largest difference {100 * worst:.4f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
