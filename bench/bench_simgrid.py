"""clustersim against SimGrid's SMPI (issue 13): the same collectives on the same platforms.

SimGrid 3.32 (``apt-get install libsimgrid-dev``) runs ``bench/simgrid/coll_bench.c`` under
its pure max-min model (``bench/simgrid/sg_smpi.py`` has the exact configuration and why);
clustersim costs the same cases on equivalent platforms (``bench/simgrid/sg_clustersim.py``:
the platform and algorithm-name mapping).  Printed: per platform x op/algorithm x size band
the median and max |error| of clustersim against SimGrid, then the worst cases.

    python bench/bench_simgrid.py                 # full run, several minutes on 2 cores
    python bench/bench_simgrid.py --quick         # ~1 minute
    python bench/bench_simgrid.py --record tests/data/simgrid/simgrid_times.csv \\
        --markdown /tmp/simgrid.md
    python bench/bench_simgrid.py --from-csv tests/data/simgrid/simgrid_times.csv
                                                  # no SimGrid needed: compare recorded times
    ... --selectors        # also SMPI's selectors against clustersim's mpich/openmpi-4.x
    ... --simgrid-routes   # diagnostic: the fat tree routed as SimGrid's FatTreeZone routes
    ... --ranks 6 12 --algs lr rdb --sizes 48 4096 --eager --record F.csv --append
                           # a slice (no p2p rows) appended to a recorded file

Why a wall-clock budget: SimGrid really executes the MPI program (its collectives allocate and
reduce real buffers), so large sizes at 64 ranks take seconds each; the script stops starting
SimGrid runs past ``--budget`` seconds and says which cases it left out.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's clustersim, not an installed one
sys.path.insert(0, str(ROOT / "bench" / "simgrid"))

from sg_clustersim import ALGORITHMS, Predictor, available, resolve_case  # noqa: E402
from sg_platforms import PLATFORMS, SgPlatform  # noqa: E402
from sg_report import (  # noqa: E402
    Compared,
    SgRow,
    markdown,
    placement_of,
    read_csv,
    write_csv,
)

#: SimGrid algorithms per op (names: SimGrid 3.32 smpi_coll.cpp); mpich/ompi are selectors.
ALGS: dict[str, tuple[str, ...]] = {
    "allreduce": ("rdb", "lr", "rab_rdb", "rab1", "redbcast", "ompi_ring_segmented",
                  "mpich", "ompi"),
    "reduce": ("ompi_basic_linear", "ompi_in_order_binary"),
    "bcast": ("binomial_tree", "scatter_LR_allgather", "scatter_rdb_allgather", "mpich", "ompi"),
    "allgather": ("NTSLR", "ring", "rdb", "mpich", "ompi"),
    "alltoall": ("ring", "pair", "mpich", "ompi"),
}
QUICK_ALGS = {"allreduce": ("rdb", "lr", "rab_rdb", "redbcast", "mpich"),
              "bcast": ("binomial_tree",), "allgather": ("NTSLR",), "alltoall": ("ring",)}
SIZES = tuple(4 * 4 ** k for k in range(13))  # 4 B .. 64 MiB
QUICK_SIZES = (4, 1024, 65536, 4 * 1024 * 1024)
#: SMPI's collectives allocate real temporary buffers: cap ranks x size (bytes)
MAX_TOTAL = 256 * 1024 * 1024


def sizes_for(op: str, ranks: int, sizes: tuple[int, ...], max_total: int) -> list[int]:
    """Sizes SimGrid can carry for this op and rank count within the memory cap."""
    blocked = op in ("allgather", "alltoall")
    return [s for s in sizes if s * ranks <= max_total
            and (not blocked or (s // 4) % ranks == 0 and s // 4 >= ranks)]


def run_simgrid(args: argparse.Namespace) -> tuple[list[SgRow], list[str]]:
    """SimGrid's times for every case, or as many as the budget allows."""
    import sg_smpi
    exe = sg_smpi.build(sg_smpi.workdir())
    print(f"SimGrid: {sg_smpi.simgrid_version()}", flush=True)
    rows: list[SgRow] = []
    left: list[str] = []
    start = time.monotonic()
    runs = [(p, "rendezvous") for p in args.platforms]
    runs += [(p, "eager") for p in args.eager if p in args.platforms]
    for pname, protocol in runs:
        plat = PLATFORMS[pname]
        jobs: list[tuple[str, str, int, str, tuple[int, ...]]] = []
        if not args.ranks:  # a slice of rank counts is added to recorded data: no p2p again
            jobs += [("p2p", "send", 2, kind, (4, 1024 * 1024)) for kind in ("linear", "far")]
        algs = QUICK_ALGS if args.quick else ALGS
        sizes = tuple(args.sizes) if args.sizes else QUICK_SIZES if args.quick else SIZES
        for op in args.ops:
            for alg in algs.get(op, ()):
                if args.algs and alg not in args.algs:
                    continue
                for ranks in args.ranks or (plat.quick_ranks if args.quick else plat.ranks):
                    jobs.append((op, alg, ranks, "linear", sizes))
        for op, alg, ranks, kind, sizes in jobs:
            name = f"{pname} ({protocol}) {op}/{alg} p={ranks} {kind}"
            if time.monotonic() - start > args.budget:
                left.append(name)
                continue
            todo = sizes_for(op, ranks, sizes, args.max_total)
            t0 = time.monotonic()
            try:
                times = sg_smpi.run_case(exe, plat, op, alg,
                                         placement_of(kind, ranks, plat.hosts), todo,
                                         protocol=protocol, reps=args.reps,
                                         timeout=args.timeout)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                print(f"  {name}: FAILED {str(exc)[:200]}", flush=True)
                left.append(f"{name} (failed)")
                continue
            print(f"  {name}: {len(times)} sizes in {time.monotonic() - t0:.1f} s", flush=True)
            if len(times) < len(todo):
                left.append(f"{name}: sizes {sorted(set(todo) - set(times))} (timeout)")
            rows += [SgRow(pname, protocol, op, alg, ranks, kind, s, t)
                     for s, t in sorted(times.items())]
    return rows, left


def compare(rows: list[SgRow], simgrid_routes: bool = False) -> list[Compared]:
    """clustersim's prediction for each SimGrid row (skipped when it lacks the algorithm);
    ``simgrid_routes``: the fat tree routed as SimGrid routes it (a diagnostic)."""
    pred = Predictor(simgrid_routes)
    out: list[Compared] = []
    for r in rows:
        plat: SgPlatform = PLATFORMS[r.platform]
        m = ALGORITHMS.get((r.op, r.algorithm))
        if m is None:
            out.append(Compared(r, "?", False, None, "no mapping to clustersim"))
            continue
        cs, exact, note = resolve_case(r.op, r.algorithm, r.ranks, r.size)
        if not available(r.op, cs):
            out.append(Compared(r, cs, exact, None,
                                f"clustersim has no {r.op} algorithm {cs!r} yet"))
            continue
        t = pred.predict_case(plat, r.op, r.algorithm, r.size,
                              placement_of(r.placement, r.ranks, plat.hosts))
        out.append(Compared(r, cs, exact, t, note))
    return out


#: clustersim's own selectors compared with SMPI's (which Open MPI generation SMPI follows)
SELECTOR_PAIRS = {"mpich": ("mpich-3.2",), "ompi": ("openmpi-4.0", "openmpi-4.1")}


def selector_table(rows: list[SgRow]) -> str:
    """SMPI's selectors against clustersim's selectors (not the algorithm SMPI runs): median
    |error| per platform x op x band, one column per clustersim selector."""
    import statistics

    from sg_report import band
    pred = Predictor()
    acc: dict[tuple[str, str, str, str], list[float]] = {}
    for r in rows:
        if r.protocol != "rendezvous" or r.algorithm not in SELECTOR_PAIRS:
            continue
        plat = PLATFORMS[r.platform]
        for cs in SELECTOR_PAIRS[r.algorithm]:
            t = pred.predict(plat, r.op, cs, r.size,
                             placement_of(r.placement, r.ranks, plat.hosts))
            acc.setdefault((r.platform, f"{r.op}/{r.algorithm}", band(r.size), cs),
                           []).append(abs(t - r.simgrid) / r.simgrid)
    lines = ["| platform | SMPI selector | size band | clustersim selector | cases | "
             "median abs error | max abs error |", "|---|---|---|---|---|---|---|"]
    for (plat, case, b, cs), v in acc.items():
        lines.append(f"| {plat} | {case} | {b} | {cs} | {len(v)} | "
                     f"{100 * statistics.median(v):.2f} % | {100 * max(v):.2f} % |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a ~1 minute subset")
    ap.add_argument("--platforms", nargs="+", default=list(PLATFORMS), choices=list(PLATFORMS))
    ap.add_argument("--ops", nargs="+", default=["allreduce", "reduce", "bcast", "allgather",
                                                  "alltoall"],
                    choices=list(ALGS))
    ap.add_argument("--eager", nargs="*", default=["crossbar16"], choices=list(PLATFORMS),
                    help="platforms also run with SMPI's default eager protocol (sends below "
                         "64 KiB detached); all run with rendezvous sends")
    ap.add_argument("--ranks", nargs="+", type=int,
                    help="these rank counts instead of each platform's own (no p2p rows)")
    ap.add_argument("--algs", nargs="+", help="only these SimGrid algorithms of the ops")
    ap.add_argument("--sizes", nargs="+", type=int, help="sizes in bytes (ascending) instead "
                    "of 4 B .. 64 MiB by factors of 4")
    ap.add_argument("--record", type=Path, help="write SimGrid's raw times (CSV)")
    ap.add_argument("--append", action="store_true",
                    help="--record appends to the file (same columns) instead of replacing it")
    ap.add_argument("--from-csv", type=Path, help="use recorded SimGrid times, run no SimGrid")
    ap.add_argument("--markdown", type=Path, help="write the comparison as markdown")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds of SimGrid runs before the rest is left out "
                         "(default 480, --quick 50)")
    ap.add_argument("--timeout", type=float, default=20,
                    help="seconds per smpirun (sizes not done by then are left out)")
    ap.add_argument("--reps", type=int, default=2, help="repetitions per size (must agree)")
    ap.add_argument("--max-total", type=int, default=MAX_TOTAL,
                    help="largest ranks x size in bytes given to SimGrid")
    ap.add_argument("--selectors", action="store_true",
                    help="also compare SMPI's mpich/ompi selectors with clustersim's mpich-3.2, "
                         "openmpi-4.0 and openmpi-4.1 selectors")
    ap.add_argument("--simgrid-routes", action="store_true",
                    help="diagnostic: route the fat tree as SimGrid's FatTreeZone does (D-mod-K "
                         "up, down cable by source) instead of clustersim's dmodk")
    ap.add_argument("--worst", type=int, default=12, help="worst cases listed")
    args = ap.parse_args(argv)
    if args.budget is None:
        args.budget = 50.0 if args.quick else 480.0
    left: list[str] = []
    if args.from_csv:
        rows = [r for r in read_csv(args.from_csv)
                if r.platform in args.platforms and (r.op in args.ops or r.op == "p2p")]
    else:
        rows, left = run_simgrid(args)
    if args.record:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        write_csv(args.record, rows, append=args.append)
        print(f"wrote {len(rows)} SimGrid rows to {args.record}")
    t0 = time.monotonic()
    results = compare(rows, args.simgrid_routes)
    print(f"clustersim: {sum(c.clustersim is not None for c in results)} cases in "
          f"{time.monotonic() - t0:.1f} s\n")
    text = markdown(results, args.worst)
    if args.selectors:
        text += ("\nSelector against selector (clustersim's mpich / openmpi-4.x decision, not "
                 "the algorithm SMPI runs):\n\n" + selector_table(rows))
    if left:
        text += "\nLeft out (budget or failure):\n\n" + "".join(f"- {x}\n" for x in left)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
