"""Grouped runs: one representative per class of identical workers, the others replicated.

Why: a BSP point with 100,000 GPUs is ~50 events per worker and iteration; yet in a BSP
all-reduce without jitter every worker of one device kind does *the same thing at the same
times*: the same operations (a timing-only BSP worker reads nothing of its rank), the same
compute times (the cost model depends on the device kind and on jitter only), and the same
collectives, which are shared by all members - each starts when the last member arrives and
resumes every member at its end.  So the engine runs one representative per device kind,
the world collectives still cost on *all* ranks and devices (the schedule, routes and
contention of the full group: :class:`~clustersim.sim.collective_run._Group` with
``arrivals`` = the representatives), and each representative's statistics are copied to
every worker of its class.

Exactness, and where it is not used (the exact engine runs instead):

* the algorithm's workers must not depend on their rank: only ``bsp`` (timing-only; its
  workers yield operations built once per job, :class:`~clustersim.algorithms.bsp._WorkerOps`);
* collectives costed analytically (``fidelity: analytic``, or ``auto`` above
  ``COLLECTIVE_FLOW_MAX_RANKS`` ranks): flow-by-flow collectives dominate such a run anyway;
* no compute jitter (each rank draws its own stream: stragglers matter, and the slowest of
  100,000 draws is not the representative's), no servers, one device per worker, no trace
  (a trace has one row per worker and event), no real math (the convergence emulation does
  not come through here).

``sim_events`` (the number of SimPy events a run schedules) is reported as the exact run's:
an actor's own events do not depend on how many identical peers it has (they all block and
resume at the same instants, and the shared collective processes are scheduled once either
way), so with ``E(R)`` the events of a grouped run of representatives ``R``,
``events = E(R) + sum over classes c of (N_c - 1) * (E(R + one more worker of c) - E(R))``
- one extra tiny run per class.  tests/test_scale_grouped.py checks every metric, and
``sim_events``, against the exact engine at 8 to 4,096 GPUs, homogeneous and mixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clustersim.algorithms.base import ActorSpec, JobInfo
from clustersim.sim.collective_run import COLLECTIVE_FLOW_MAX_RANKS
from clustersim.sim.engine import ActorStats, Engine, RunResult

__all__ = ["GROUPED_ALGORITHMS", "worker_classes", "run_grouped"]

#: algorithms whose timing-only workers yield the same operations whatever their rank
GROUPED_ALGORITHMS = frozenset({"bsp"})


def worker_classes(algorithm: str, scn: Any, actors: Sequence[ActorSpec],
                   placement: Sequence[int], trace: bool) -> list[list[int]] | None:
    """Actor indices grouped into classes of provably identical workers (by device kind,
    first-seen order), or ``None`` where a grouped run would not be exact (module doc)."""
    if trace or algorithm not in GROUPED_ALGORITHMS or scn.workload.jitter > 0:
        return None
    if any(a.role != "worker" for a in actors) or len(set(placement)) != len(placement):
        return None
    fidelity = scn.run.fidelity
    if fidelity == "flow" or (fidelity == "auto" and len(actors) <= COLLECTIVE_FLOW_MAX_RANKS):
        # collectives flow by flow: they dominate the run, and counting the events exactly
        # (below) would simulate them once more per class
        return None
    specs = scn.platform.rank_specs
    classes: dict[str, list[int]] = {}
    for i, d in enumerate(placement):
        classes.setdefault(specs[d].name, []).append(i)
    out = list(classes.values())
    # nothing to gain when no class has two workers
    return out if len(out) < len(placement) else None


def run_grouped(scn: Any, job: JobInfo, actors: Sequence[ActorSpec], placement: Sequence[int],
                costs: Any, classes: list[list[int]]) -> RunResult:
    """The run of every actor, simulated with one representative per class (module doc)."""
    world = (tuple(a.rank for a in actors), tuple(placement))
    reps = [c[0] for c in classes]
    caches: tuple[dict, dict] = ({}, {})  # schedules and collective costs, shared by the runs

    def run(idx: list[int]) -> RunResult:
        eng = Engine(scn.platform, job, [actors[i] for i in idx], [placement[i] for i in idx],
                     costs, params=scn.network, fidelity=scn.run.fidelity,
                     warmup=scn.run.warmup, world=world)
        eng._sched_cache, eng._cost_cache = caches
        return eng.run()

    base = run(reps)
    events = base.sim_events
    for members in classes:
        if len(members) > 1:
            plus = run(sorted([*reps, members[1]]))
            events += (len(members) - 1) * (plus.sim_events - base.sim_events)
    stats: list[ActorStats | None] = [None] * len(actors)
    for k, members in enumerate(classes):
        rep = base.actors[k]
        for i in members:
            stats[i] = _copy(rep, actors[i].rank, placement[i])
    return RunResult(base.makespan, stats, [], base.flows, events)  # type: ignore[arg-type]


def _copy(st: ActorStats, rank: int, device: int) -> ActorStats:
    out = ActorStats(rank, st.role, device, st.compute, st.comm, st.wait, st.comm_total,
                     st.bytes_sent, list(st.iterations), st.end, st.mark)
    for key, vals in st.records.items():
        out.records[key] = list(vals)
    return out
