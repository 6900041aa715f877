"""Collective benchmarks in simulation: the nccl-tests/OSU table, predicted.

For each algorithm, rank count and message size, build the schedule, cost it at the scenario's
fidelity and report ``time``, ``algbw = size / time`` and ``busbw = algbw * factor`` (nccl-tests'
bus bandwidth, comparable across rank counts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

from clustersim.collectives import build_schedule
from clustersim.network.fidelity import cost_collective
from clustersim.scenario.schema import Scenario

__all__ = ["BenchRow", "run_benchmark", "benchmark_points"]


@dataclass(frozen=True)
class BenchRow:
    op: str
    algorithm: str
    ranks: int
    size: float
    time: float
    algbw: float
    busbw: float
    comm: float
    reduce: float
    fidelity: str

    def to_dict(self) -> dict:
        return asdict(self)


def benchmark_points(scn: Scenario) -> Iterator[tuple[str, int, float]]:
    b = scn.benchmark
    assert b is not None
    for alg in b.algorithms:
        for ranks in b.ranks:
            for size in b.sizes:
                yield alg, ranks, size


def run_benchmark(scn: Scenario, progress: Callable[[int], None] | None = None
                  ) -> list[BenchRow]:
    """All points of the scenario's benchmark, in (algorithm, ranks, size) order."""
    b = scn.benchmark
    if b is None:
        raise ValueError("scenario has no benchmark section")
    plat = scn.platform
    rows: list[BenchRow] = []
    for alg, ranks, size in benchmark_points(scn):
        placement = list(range(ranks))
        hosts = [plat.host(d) for d in placement]
        sched = build_schedule(b.op, alg, ranks, size, hosts=hosts, root=b.root, fp16=b.fp16)
        fid = scn.run.fidelity
        cost = cost_collective(sched, plat, placement, scn.network, fidelity=fid)
        used = getattr(cost, "fidelity", fid)
        t = float(cost.time)
        algbw = size / t if t > 0 else float("inf")
        rows.append(BenchRow(b.op, alg, ranks, size, t, algbw, algbw * sched.busbw_factor,
                             float(cost.comm), float(cost.reduce), str(used)))
        if progress:
            progress(1)
    return rows
