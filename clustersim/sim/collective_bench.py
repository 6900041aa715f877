"""Collective benchmarks in simulation: the nccl-tests/OSU table, predicted.

For each algorithm, rank count and message size, build the schedule, cost it at the scenario's
fidelity and report ``time``, ``algbw = size / time`` and ``busbw = algbw * factor`` (nccl-tests'
bus bandwidth, comparable across rank counts).

:func:`benchmark_trace` lays the steps of the largest point out as a trace (same schema and
Chrome/Perfetto format as training traces), one process per algorithm and one track per rank,
so a person can see *why* one algorithm beats another: how many steps, which ranks are busy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

from clustersim.collectives import build_schedule
from clustersim.collectives.nccl_machine import machine_for
from clustersim.errors import InputError
from clustersim.network.fidelity import cost_collective
from clustersim.scenario.schema import Scenario
from clustersim.trace import TraceEvent, to_chrome

__all__ = ["BenchRow", "MAX_TRACE_EVENTS", "run_benchmark", "benchmark_chrome",
           "benchmark_points", "benchmark_trace"]

#: a trace beyond this many events is refused: Perfetto struggles past a few million, and a
#: 4,253-rank ring is 36 million transfers
MAX_TRACE_EVENTS = 2_000_000


@dataclass(frozen=True)
class BenchRow:
    """One predicted point, as nccl-tests reports it: ``size`` in bytes, ``time`` in seconds
    (``comm`` and ``reduce``: its communication and reduction parts), ``algbw``/``busbw`` in
    bytes/s, and the ``fidelity`` it was costed at (``auto`` resolved)."""

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
    #: what a library selector (mpich, openmpi, nccl, auto) chose, e.g. "mpich→rabenseifner";
    #: empty for a named algorithm
    selected: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def benchmark_points(scn: Scenario) -> Iterator[tuple[str, int, float]]:
    """The benchmark's ``(algorithm, ranks, size in bytes)`` points, in table order (one loop
    for :func:`run_benchmark` and the progress bar's count)."""
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
        sched = build_schedule(b.op, alg, ranks, size, hosts=hosts, root=b.root, fp16=b.fp16,
                               library=getattr(plat, "library", None),
                               machine=machine_for(alg, plat, placement))
        fid = scn.run.fidelity
        cost = cost_collective(sched, plat, placement, scn.network, fidelity=fid)
        used = getattr(cost, "fidelity", fid)
        t = float(cost.time)
        algbw = size / t if t > 0 else float("inf")
        rows.append(BenchRow(b.op, alg, ranks, size, t, algbw, algbw * sched.busbw_factor,
                             float(cost.comm), float(cost.reduce), str(used),
                             sched.algorithm if sched.algorithm != alg else ""))
        if progress:
            progress(1)
    return rows


def benchmark_trace(scn: Scenario) -> list[tuple[str, list[TraceEvent]]]:
    """(title, events) per algorithm at the benchmark's largest rank count and message size.

    Every occurrence of every schedule step is one event per rank that sends or receives in
    it, lasting the step's cost (communication + reduction, as the benchmark's ``time``); an
    fp16 variant's final cast is a ``convert`` event.  Costed as in :func:`run_benchmark`, so
    each algorithm's trace ends at that point's ``time``.  Raises :class:`InputError` when the
    trace would exceed :data:`MAX_TRACE_EVENTS` (say which smaller point to trace instead).
    """
    b = scn.benchmark
    if b is None:
        raise ValueError("scenario has no benchmark section")
    ranks, size = max(b.ranks), max(b.sizes)
    plat = scn.platform
    placement = list(range(ranks))
    hosts = [plat.host(d) for d in placement]
    out: list[tuple[str, list[TraceEvent]]] = []
    total = 0
    for alg in b.algorithms:
        sched = build_schedule(b.op, alg, ranks, size, hosts=hosts, root=b.root, fp16=b.fp16,
                               library=getattr(plat, "library", None),
                               machine=machine_for(alg, plat, placement))
        total += sum(step.repeat * len({r for t in step.transfers for r in (t.src, t.dst)})
                     for step in sched.steps)
        if total > MAX_TRACE_EVENTS:
            raise InputError(f"--trace: the {b.op} trace at {ranks} ranks would hold more than "
                             f"{MAX_TRACE_EVENTS:,} events; trace a smaller point, e.g. --set "
                             f"benchmark.ranks=[{min(b.ranks)}]", path=("benchmark", "ranks"))
        cost = cost_collective(sched, plat, placement, scn.network, fidelity=scn.run.fidelity)
        events: list[TraceEvent] = []
        t = 0.0
        for i, (step, dt) in enumerate(zip(sched.steps, cost.step_times)):
            sent: dict[int, float] = {}
            for tr in step.transfers:
                sent[tr.src] = sent.get(tr.src, 0.0) + float(tr.nbytes)
                sent.setdefault(tr.dst, 0.0)
            label = step.label or f"step {i}"
            for k in range(step.repeat):
                name = label if step.repeat == 1 else f"{label} {k + 1}/{step.repeat}"
                events += [TraceEvent(r, "rank", b.op, t, t + dt, name, nbytes, meta={
                    "algorithm": alg, "step": i}) for r, nbytes in sorted(sent.items())]
                t += dt
        if cost.convert > 0:
            events += [TraceEvent(r, "rank", "convert", t, t + cost.convert, "fp16 cast")
                       for r in range(ranks)]
        shown = sched.algorithm if sched.algorithm != alg else alg
        out.append((f"{b.op} · {shown} · {ranks} ranks · {size:g} B "
                    f"({getattr(cost, 'fidelity', scn.run.fidelity)})", events))
    return out


def benchmark_chrome(scn: Scenario) -> str:
    """:func:`benchmark_trace` as one Chrome/Perfetto JSON text, a process per algorithm."""
    merged: list[dict] = []
    for pid, (title, events) in enumerate(benchmark_trace(scn)):
        merged += [{**ev, "pid": pid} for ev in to_chrome(events, title)["traceEvents"]]
    return json.dumps({"traceEvents": merged, "displayTimeUnit": "ms"})
