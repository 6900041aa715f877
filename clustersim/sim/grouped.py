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

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from clustersim.algorithms.base import ActorSpec, JobInfo
from clustersim.sim.collective_run import COLLECTIVE_FLOW_MAX_RANKS
from clustersim.sim.engine import ActorStats, Engine, RunResult, counter_rows

__all__ = ["GROUPED_ALGORITHMS", "GroupedStats", "worker_classes", "run_grouped"]

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
    if any(specs[d].time_shared for d in placement):
        # ranks sharing a GPU cost by how many share it (sim/sharing.py), not by kind alone
        return None
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
    cls = [0] * len(actors)
    for k, members in enumerate(classes):
        for i in members:
            cls[i] = k
    stats = GroupedStats(list(base.actors), cls, [a.rank for a in actors], list(placement))
    return RunResult(base.makespan, stats, [], base.flows, events)  # type: ignore[arg-type]


class GroupedStats(Sequence[ActorStats]):
    """The statistics of a grouped run's actors (all workers): actor ``i`` has its class
    representative's figures under its own rank and device.

    Why not a list: 100,000 copies of the representatives' statistics cost ~0.2 s to make
    and ~0.1 s to read back into columns, for figures that are a few rows repeated.  An
    actor's :class:`ActorStats` is made when it is first asked for (and kept, so that it
    stays one object); :meth:`worker_columns`, :meth:`servers` and :meth:`records_of` answer
    :class:`~clustersim.sim.engine.RunResult`'s readers - the same values, in actor order -
    without making any.
    """

    def __init__(self, reps: list[ActorStats], cls: list[int], ranks: list[int],
                 devices: list[int]) -> None:
        self._reps, self._cls, self._ranks, self._devices = reps, cls, ranks, devices
        self._made: dict[int, ActorStats] = {}

    def __len__(self) -> int:
        return len(self._cls)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self._cls)
        if not -n <= i < n:
            raise IndexError(i)
        i %= n
        got = self._made.get(i)
        if got is None:
            got = self._made[i] = _copy(self._reps[self._cls[i]], self._ranks[i],
                                        self._devices[i])
        return got

    def __iter__(self) -> Iterator[ActorStats]:
        return (self[i] for i in range(len(self._cls)))

    def worker_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """Every actor's counters at its mark and at the end, ``(compute, comm, wait,
        comm_total, bytes_sent, end)`` rows in actor order, as
        :func:`~clustersim.sim.metrics.point_metrics` reads them."""
        marks, now = counter_rows(self._reps)
        cls = np.asarray(self._cls, dtype=np.int64)
        return marks[cls], now[cls]

    def servers(self) -> list[ActorStats]:
        """None: a grouped run has workers only."""
        return []

    def records_of(self, key: str, measured: bool = False) -> list[float]:
        """Every actor's ``records[key]`` values, actor after actor (``measured``: those
        after the warm-up, as :meth:`~clustersim.sim.engine.RunResult.records`)."""
        per = [a.records.get(key, [])[(a.records_from or {}).get(key, 0) if measured else 0:]
               for a in self._reps]
        if not any(per):
            return []
        return [v for c in self._cls for v in per[c]]


def _copy(st: ActorStats, rank: int, device: int) -> ActorStats:
    out = ActorStats(rank, st.role, device, st.compute, st.comm, st.wait, st.comm_total,
                     st.bytes_sent, list(st.iterations), st.end, st.mark)
    for key, vals in st.records.items():
        out.records[key] = list(vals)
    out.records_from = None if st.records_from is None else dict(st.records_from)
    return out
