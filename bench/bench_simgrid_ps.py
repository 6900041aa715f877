"""clustersim's point-to-point models against SimGrid's SMPI on a closed-loop parameter server.

The same protocol in both simulators (``bench/simgrid/sg_ps.py`` has the mapping, and
``bench/simgrid/ps_bench.c`` the MPI program): N workers compute, push S bytes to one server,
wait for its S-byte reply; the server applies each push (U seconds) and answers.  SimGrid 3.32
runs it under its pure max-min model (``sg_smpi.CONFIG``, rendezvous sends); clustersim runs
Async SGD's worker and shard bodies with the same compute times, as max-min flows
(``run.fidelity: flow``) and as FIFO link queues (``analytic``).

SimGrid runs three server programs: ``prepost/isend`` (a receive posted per worker, replies
non-blocking: what clustersim's Async SGD shard does), ``anysource/isend`` and
``anysource/send`` (a blocking ``MPI_Recv(MPI_ANY_SOURCE)``: a push's transfer waits for the
server's receive, as MPI's rendezvous protocol makes it).

    python bench/bench_simgrid_ps.py                         # run SimGrid, print the table
    python bench/bench_simgrid_ps.py --record tests/data/simgrid/simgrid_ps.csv
    python bench/bench_simgrid_ps.py --from-csv tests/data/simgrid/simgrid_ps.csv
                                                             # no SimGrid needed
    ... --workers 4 16 --jitter 0.1 --no-clustersim          # a slice; SimGrid only
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's clustersim, not an installed one
sys.path.insert(0, str(ROOT / "bench" / "simgrid"))

import sg_ps  # noqa: E402

WORKERS = (4, 8, 16, 32, 60, 124)
#: (label, S bytes, C s, U s): communication-bound (the server's link saturates from ~15
#: workers: a push takes 8 ms at 10 Gb/s) and update-bound (U = 20 ms: 50 updates/s against
#: the link's 125 pushes/s)
LOADS = (("comm", 10_000_000, 0.1, 0.0), ("update", 10_000_000, 0.1, 0.02))
JITTERS = (0.0, 0.1)
PROGRAMS = (("prepost", "isend"), ("anysource", "isend"), ("anysource", "send"))
ITERATIONS = 20


def cases(args: argparse.Namespace) -> list[sg_ps.PsCase]:
    out = []
    for _label, nbytes, c, u in (x for x in LOADS if x[0] in args.loads):
        for jit in args.jitter:
            for n in args.workers:
                for mode, reply in PROGRAMS:
                    out.append(sg_ps.PsCase("star128", mode, reply, n, nbytes, c, u, jit,
                                            args.iterations))
    return out


def load_of(r: sg_ps.PsCase) -> str:
    return next(x[0] for x in LOADS if (x[1], x[2], x[3]) == (r.bytes, r.compute_s, r.update_s))


def err(a: float, b: float) -> str:
    return f"{(a - b) / b * 100:+.2f}"


def table(rows: list[sg_ps.PsRow]) -> None:
    """SimGrid's three programs against clustersim's flows and queues (ms per iteration)."""
    by = {(r.bytes, r.compute_s, r.update_s, r.jitter, r.workers, r.mode, r.reply): r
          for r in rows}
    keys = sorted({(r.bytes, r.compute_s, r.update_s, r.jitter, r.workers) for r in rows})
    hdr = (f"{'load':>6} {'jit':>4} {'N':>4} | {'SG prepost':>10} {'cs flow':>9} {'err%':>7} "
           f"{'cs queue':>9} {'err%':>7} | {'SG anysrc':>10} {'queue err%':>10} | "
           f"{'SG any/send':>11} | {'cs s':>5}")
    print(hdr)
    print("-" * len(hdr))
    for b, c, u, j, n in keys:
        def sg(mode: str, reply: str, b=b, c=c, u=u, j=j, n=n) -> sg_ps.PsRow | None:
            return by.get((b, c, u, j, n, mode, reply))
        pre, anyi, anys = sg("prepost", "isend"), sg("anysource", "isend"), sg("anysource",
                                                                               "send")
        base = pre or anyi or anys
        assert base is not None
        t0 = time.monotonic()
        flow = sg_ps.clustersim_summary(base.case(), "flow")[0]
        queue = sg_ps.clustersim_summary(base.case(), "analytic")[0]
        wall = time.monotonic() - t0
        cells = [f"{load_of(base):>6} {j:>4g} {n:>4} |"]
        cells.append(f"{pre.sg_iter_s * 1e3:>10.3f} {flow * 1e3:>9.3f} "
                     f"{err(flow, pre.sg_iter_s):>7} {queue * 1e3:>9.3f} "
                     f"{err(queue, pre.sg_iter_s):>7} |" if pre else f"{'-':>46} |")
        cells.append(f"{anyi.sg_iter_s * 1e3:>10.3f} {err(queue, anyi.sg_iter_s):>10} |"
                     if anyi else f"{'-':>21} |")
        cells.append(f"{anys.sg_iter_s * 1e3:>11.3f} |" if anys else f"{'-':>11} |")
        cells.append(f"{wall:>5.2f}")
        print(" ".join(cells), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=list(WORKERS))
    ap.add_argument("--jitter", type=float, nargs="+", default=list(JITTERS))
    ap.add_argument("--loads", nargs="+", default=[x[0] for x in LOADS],
                    choices=[x[0] for x in LOADS])
    ap.add_argument("--iterations", type=int, default=ITERATIONS)
    ap.add_argument("--record", type=Path, help="write SimGrid's rows to this CSV")
    ap.add_argument("--append", action="store_true", help="append to --record")
    ap.add_argument("--from-csv", type=Path, help="compare recorded rows (no SimGrid)")
    ap.add_argument("--no-clustersim", action="store_true", help="SimGrid's figures only")
    args = ap.parse_args(argv)
    if args.from_csv:
        rows = sg_ps.read_csv(args.from_csv)
    else:
        import sg_smpi
        exe = sg_ps.build(sg_smpi.workdir())
        print(f"SimGrid: {sg_smpi.simgrid_version()}", flush=True)
        rows = []
        start = time.monotonic()
        for case in cases(args):
            row = sg_ps.run_simgrid(exe, case)
            rows.append(row)
            print(f"  {case.mode}/{case.reply} N={case.workers} U={case.update_s:g} "
                  f"jitter={case.jitter:g}: {row.sg_iter_s * 1e3:.3f} ms/iteration, "
                  f"{row.sg_updates_per_s:.2f} updates/s ({row.sg_wall_s:.2f} s)", flush=True)
        print(f"SimGrid: {len(rows)} runs in {time.monotonic() - start:.1f} s", flush=True)
        if args.record:
            sg_ps.write_csv(args.record, rows, append=args.append)
            print(f"wrote {args.record}")
    if not args.no_clustersim:
        table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
