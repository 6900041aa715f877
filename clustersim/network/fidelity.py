"""Choosing between the flow and the analytic model for one collective.

``fidelity: flow | analytic | auto`` in a scenario lands here.

* ``flow``: :func:`~clustersim.network.flowsim.simulate_schedule`, every transfer of every
  step occurrence a max-min flow, bandwidth handed over as flows finish.  Cost grows with the
  number of transfers, and with the size of the groups of flows that contend with each other.
* ``analytic``: :func:`~clustersim.network.analytic.cost_schedule`, each distinct step costed
  once with its start-of-step max-min rates, times its repeat count.  Cost grows with the
  number of *distinct* transfers only.

When is the analytic answer exact?  Split a step's transfers into groups that share links
(transitively).  If within every group all transfers carry the same bytes and have the same
latency (overhead + path latency), the flow model gives the analytic time exactly: the slowest
flows sit at the lowest max-min level on a link that only such flows saturate; no departure can
lower the minimum rate (rates below a departing flow's rate never change, and the others stay
at or above it), so that link stays shared equally by equal flows that therefore all end
together at ``latency + bytes / lowest rate`` - the analytic step time.  Uniform rings,
recursive doubling and halving, pairwise exchanges on crossbars and non-blocking fat-trees
are of this kind, oversubscribed or not.  The models differ when flows of one group have
different latencies (the nearer ones start draining earlier) or sizes (trees with partial
fill, pipelines): there the analytic time is an upper bound in practice (docs/fidelity.md has
measurements).

``auto`` therefore picks, in this order:

1. ``analytic`` when the schedule expands to more than :data:`AUTO_FLOW_MAX_TRANSFERS`
   transfers (the flow engine would take seconds; e.g. a 256-rank ring allreduce has 130,560);
2. ``flow`` under an adaptive routing policy (UGAL chooses routes as flows start; the analytic
   model sees only the minimal routes);
3. ``analytic`` when it is exact (above) - same answer, much cheaper;
4. ``analytic`` when a step that is not exact has more than :data:`AUTO_FLOW_MAX_GROUP`
   transfers contending in one group (every arrival and departure then refills that whole
   group: an alltoall over a multi-hop ring of 64 hosts is 4,032 contending flows and
   ~10 s of flow simulation for a ~1-3 % correction);
5. ``flow`` otherwise.

The thresholds come from ``bench/bench_network.py``: at ~20,000 transfers or groups of ~1,000
contending flows the flow model costs about a second on one core.
"""

from __future__ import annotations

from collections.abc import Sequence

from clustersim.collectives.schedule import Schedule, Step
from clustersim.errors import unknown_name
from clustersim.network.analytic import CollectiveCost, cost_schedule
from clustersim.network.flowsim import _placement, simulate_schedule
from clustersim.network.params import NetworkParams, bottleneck_class
from clustersim.platform.model import Platform

__all__ = ["FIDELITIES", "AUTO_FLOW_MAX_TRANSFERS", "AUTO_FLOW_MAX_GROUP",
           "expanded_transfers", "step_groups", "analytic_is_exact", "choose_fidelity",
           "cost_collective"]

FIDELITIES = ("flow", "analytic", "auto")

#: ``auto`` never simulates flows for schedules that expand to more transfers than this
AUTO_FLOW_MAX_TRANSFERS = 20_000
#: ``auto`` never simulates a non-exact step with a larger group of contending transfers
AUTO_FLOW_MAX_GROUP = 1_024

_REL = 1e-9


def expanded_transfers(schedule: Schedule) -> int:
    """Transfers the flow model would simulate: each step's transfers times its repeats."""
    return sum(len(s.transfers) * s.repeat for s in schedule.steps)


def step_groups(step: Step, platform: Platform, placement: Sequence[int]
                ) -> list[list[int]]:
    """Indices of the step's network transfers grouped by shared links (transitively).

    Local copies (both ranks on one device) belong to no group.  Union-find over link ids.
    """
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    first: list[int | None] = []
    for t in step.transfers:
        route = platform.route(placement[t.src], placement[t.dst])
        if not route:
            first.append(None)
            continue
        for lk in route:
            parent.setdefault(lk, lk)
        a = find(route[0])
        for lk in route[1:]:
            b = find(lk)
            if a != b:
                parent[b] = a
        first.append(route[0])
    groups: dict[int, list[int]] = {}
    for i, lk in enumerate(first):
        if lk is not None:
            groups.setdefault(find(lk), []).append(i)
    return list(groups.values())


def _same(values: list[float]) -> bool:
    lo, hi = min(values), max(values)
    return hi - lo <= _REL * max(abs(hi), 1e-300)


def _step_exactness(step: Step, platform: Platform, placement: Sequence[int],
                    params: NetworkParams) -> tuple[bool, int]:
    """(is the analytic time exact for this step, size of its largest non-uniform group)."""
    worst = 0
    keys = params.platform_keys(platform)
    for group in step_groups(step, platform, placement):
        if len(group) < 2:
            continue
        sizes = [step.transfers[i].nbytes for i in group]
        lats = []
        charged = []
        for i in group:
            t = step.transfers[i]
            route = platform.route(placement[t.src], placement[t.dst])
            ovh, charge = params.message_cost(
                t.nbytes, bottleneck_class(route, platform.capacity, keys, params.weights)
                if keys is not None else None, True)
            lats.append(ovh + platform.path_latency(route))
            charged.append(t.nbytes * charge)
        if not (_same(sizes) and _same(lats) and _same(charged)):
            worst = max(worst, len(group))
    return worst == 0, worst


def analytic_is_exact(schedule: Schedule, platform: Platform,
                      placement: Sequence[int] | None = None,
                      params: NetworkParams = NetworkParams()) -> bool:
    """True if :func:`cost_schedule` equals the flow model for this schedule (module docs)."""
    placement = _placement(schedule, placement)
    return all(_step_exactness(s, platform, placement, params)[0] for s in schedule.steps)


def choose_fidelity(schedule: Schedule, fidelity: str = "auto",
                    platform: Platform | None = None,
                    placement: Sequence[int] | None = None,
                    params: NetworkParams = NetworkParams()) -> str:
    """Resolve ``fidelity`` to ``"flow"`` or ``"analytic"`` for this schedule.

    ``auto`` needs the ``platform`` to judge exactness; without it only the size rule applies.
    """
    if fidelity not in FIDELITIES:
        raise unknown_name("fidelity", fidelity, FIDELITIES, path=("run", "fidelity"))
    if fidelity != "auto":
        return fidelity
    if expanded_transfers(schedule) > AUTO_FLOW_MAX_TRANSFERS:
        return "analytic"
    if platform is None or getattr(platform, "adaptive", False):
        return "flow"  # adaptive routes exist only at flow level (analytic: minimal routes)
    placement = _placement(schedule, placement)
    worst = 0
    for s in schedule.steps:
        worst = max(worst, _step_exactness(s, platform, placement, params)[1])
    if worst == 0 or worst > AUTO_FLOW_MAX_GROUP:
        return "analytic"
    return "flow"


def cost_collective(
    schedule: Schedule,
    platform: Platform,
    placement: Sequence[int] | None = None,
    params: NetworkParams = NetworkParams(),
    fidelity: str = "auto",
) -> CollectiveCost:
    """Cost ``schedule`` at the requested fidelity; ``cost.fidelity`` says which was used."""
    used = choose_fidelity(schedule, fidelity, platform, placement, params)
    if used == "flow":
        return simulate_schedule(schedule, platform, placement, params)
    return cost_schedule(schedule, platform, placement, params)
