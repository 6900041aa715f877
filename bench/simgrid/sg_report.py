"""Rows, errors and tables of the SimGrid comparison (shared by the bench script and the test).

A row is one (platform, op, algorithm, ranks, placement, size) case with SimGrid's time; the
comparison adds clustersim's time and the relative error ``(clustersim - simgrid) / simgrid``.
Errors are summarised per platform x op/algorithm x size band (< 64 KiB: latency-bound,
>= 64 KiB: bandwidth-bound), the split the test's tolerances use.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

BAND_EDGE = 64 * 1024

#: Fat-tree groups whose messages cross leaves in shift or xor patterns: SimGrid's FAT_TREE
#: routes up by D-mod-K but picks the parallel cable *down* by the source, clustersim's
#: ``dmodk`` by the destination (docs/fidelity.md; tests/test_simgrid_oracle.py checks the
#: size of the gap); (platform, op, SimGrid algorithm).
ROUTING_GAPS = {
    ("fattree16", "allreduce", "rdb"), ("fattree16", "allreduce", "rab_rdb"),
    ("fattree16", "allreduce", "mpich"), ("fattree16", "allreduce", "ompi"),
    ("fattree16", "bcast", "scatter_rdb_allgather"),
    ("fattree16", "allgather", "rdb"), ("fattree16", "allgather", "mpich"),
    ("fattree16", "allgather", "ompi"),
    ("fattree16", "alltoall", "ring"), ("fattree16", "alltoall", "mpich"),
}
CSV_FIELDS = ("platform", "protocol", "op", "algorithm", "ranks", "placement", "size_B",
              "simgrid_s")


@dataclass(frozen=True)
class SgRow:
    """SimGrid's time for one case (what the recorded CSV holds)."""

    platform: str
    protocol: str  # rendezvous (every send completes before the next) | eager (SMPI default)
    op: str
    algorithm: str
    ranks: int
    placement: str  # linear (rank i on host i) | far (2 ranks on the first and last host)
    size: int
    simgrid: float


@dataclass(frozen=True)
class Compared:
    row: SgRow
    clustersim_alg: str
    exact: bool
    clustersim: float | None  # None: skipped
    note: str = ""

    @property
    def error(self) -> float | None:
        if self.clustersim is None:
            return None
        return (self.clustersim - self.row.simgrid) / self.row.simgrid


def band(size: float) -> str:
    return "< 64 KiB" if size < BAND_EDGE else ">= 64 KiB"


def write_csv(path: Path, rows: Iterable[SgRow], append: bool = False) -> None:
    """Rows as CSV; ``append``: after the rows already in ``path`` (header written once), so
    that a slice of cases can be added to recorded data without re-running the rest."""
    old = append and path.exists() and path.stat().st_size > 0
    with open(path, "a" if old else "w", newline="") as f:
        w = csv.writer(f)
        if not old:
            w.writerow(CSV_FIELDS)
        for r in rows:
            w.writerow([r.platform, r.protocol, r.op, r.algorithm, r.ranks, r.placement,
                        r.size, repr(r.simgrid)])


def read_csv(path: Path) -> list[SgRow]:
    with open(path, newline="") as f:
        return [SgRow(d["platform"], d["protocol"], d["op"], d["algorithm"], int(d["ranks"]),
                      d["placement"], int(d["size_B"]), float(d["simgrid_s"]))
                for d in csv.DictReader(f)]


def placement_of(kind: str, ranks: int, hosts: int) -> list[int]:
    """Hosts of the ranks: ``linear`` is rank i on host i; ``far`` the first and last host."""
    if kind == "far":
        return [0, hosts - 1]
    return list(range(ranks))


@dataclass(frozen=True)
class Summary:
    platform: str  # with " (eager)" for SMPI's default protocol
    case: str  # op/algorithm (-> clustersim algorithm)
    band: str
    n: int
    median: float
    worst: float
    exact: bool


def summarise(results: Sequence[Compared]) -> list[Summary]:
    groups: dict[tuple[str, str, str, bool], list[float]] = {}
    names: dict[tuple[str, str, str, bool], set[str]] = {}
    for c in results:
        if c.error is None:
            continue
        r = c.row
        plat = r.platform if r.protocol == "rendezvous" else f"{r.platform} ({r.protocol})"
        key = (plat, f"{r.op}/{r.algorithm}", band(r.size), c.exact)
        groups.setdefault(key, []).append(abs(c.error))
        names.setdefault(key, set()).add(c.clustersim_alg)
    return [Summary(p, f"{case} -> {' / '.join(sorted(names[(p, case, b, exact)]))}", b,
                    len(v), statistics.median(v), max(v), exact)
            for (p, case, b, exact), v in groups.items()]


def platform_summary(results: Sequence[Compared]) -> str:
    """Per platform x match kind x size band (rendezvous sends; the fat tree's routing-gap
    groups apart): the table at the head of docs/fidelity.md's SimGrid section."""
    groups: dict[tuple[str, str, str], list[float]] = {}
    for c in results:
        r = c.row
        if c.error is None or r.protocol != "rendezvous" or r.op == "p2p":
            continue
        kind = "exact" if c.exact else "approx"
        if c.exact and (r.platform, r.op, r.algorithm) in ROUTING_GAPS:
            kind = "exact, fat-tree routing gap"
        groups.setdefault((r.platform, kind, band(r.size)), []).append(abs(c.error))
    lines = ["| platform | cases | size band | n | median abs error | max abs error |",
             "|---|---|---|---|---|---|"]
    order = {"crossbar16": 0, "fattree16": 1, "dragonfly64": 2}
    for (plat, kind, b), v in sorted(groups.items(), key=lambda kv: (
            order.get(kv[0][0], 9), kv[0][0], kv[0][1], kv[0][2] != "< 64 KiB")):
        lines.append(f"| {plat} | {kind} | {b} | {len(v)} | {_pct(statistics.median(v))} | "
                     f"{_pct(max(v))} |")
    return "\n".join(lines) + "\n"


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def markdown(results: Sequence[Compared], worst: int = 10) -> str:
    """The comparison as markdown: per platform, per algorithm, worst cases, skipped."""
    lines = [*platform_summary(results).splitlines(), "",
             "| platform | op/SimGrid algorithm -> clustersim | match | size band | cases | "
             "median abs error | max abs error |", "|---|---|---|---|---|---|---|"]
    for s in summarise(results):
        lines.append(f"| {s.platform} | {s.case} | {'exact' if s.exact else 'approx'} | "
                     f"{s.band} | {s.n} | {_pct(s.median)} | {_pct(s.worst)} |")
    done = sorted((c for c in results if c.error is not None and c.exact),
                  key=lambda c: -abs(c.error or 0.0))
    if done:
        lines += ["", f"Worst {min(worst, len(done))} cases of the exact matches (error = "
                  "(clustersim - SimGrid) / SimGrid):", "",
                  "| platform | op/algorithm | ranks | size (B) | SimGrid (s) | clustersim (s) "
                  "| error |", "|---|---|---|---|---|---|---|"]
        for c in done[:worst]:
            r = c.row
            plat = r.platform if r.protocol == "rendezvous" else f"{r.platform} ({r.protocol})"
            lines.append(f"| {plat} | {r.op}/{r.algorithm} -> {c.clustersim_alg} | "
                         f"{r.ranks} | {r.size} | {r.simgrid:.6g} | {c.clustersim:.6g} | "
                         f"{100 * (c.error or 0.0):+.2f} % |")
    skipped = sorted({f"{c.row.op}/{c.row.algorithm}: {c.note}" for c in results
                      if c.error is None})
    if skipped:
        lines += ["", "Not compared:", ""] + [f"- {s}" for s in skipped]
    return "\n".join(lines) + "\n"
