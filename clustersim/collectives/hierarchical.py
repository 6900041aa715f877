"""Hierarchical allreduce: reduce inside each host, allreduce among hosts, broadcast inside.

Why: intra-host links (PCIe, NVLink, shared memory) are an order of magnitude faster and far
less contended than the network, so only one rank per host - the *leader*, its lowest rank -
should touch the network, and it should carry the host's sum, not each GPU's part (Horovod's
hierarchical allreduce, Kim et al. 2020's intra-node stage, Theano-MPI across nodes).

Steps: binomial reduce to the leader in every host at once, then the ``inter`` allreduce
(default ``ring``) among the leaders - any allreduce algorithm of this package, built on the
leaders as its ranks and relabelled - then a binomial broadcast from the leader in every
host at once.  Hosts may hold different numbers of ranks; the intra-host rounds run in
lock step, the largest host setting their number.  The inter schedule's segmentation is the
whole schedule's (the intra-host stages move the whole buffer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from clustersim.collectives.plan import Plan
from clustersim.collectives.schedule import Step, Transfer
from clustersim.collectives.trees import binomial_bcast_rounds, binomial_reduce_rounds

__all__ = ["host_groups", "hierarchical_allreduce"]


def host_groups(hosts: Sequence[int]) -> list[list[int]]:
    """Ranks grouped by host, hosts in order of their first rank, ranks ascending."""
    groups: dict[object, list[int]] = {}
    for r, h in enumerate(hosts):
        groups.setdefault(h, []).append(r)
    return list(groups.values())


def _merge(per_group: list[list[list[Transfer]]]) -> list[list[Transfer]]:
    depth = max((len(g) for g in per_group), default=0)
    return [[t for g in per_group if k < len(g) for t in g[k]] for k in range(depth)]


def hierarchical_allreduce(ranks: int, nbytes: float, fp16: bool, hosts: Sequence[int],
                           inner: Callable[[int], Plan]) -> Plan:
    """Build the whole plan; ``inner(L)`` builds the inter-host allreduce on L leaders."""
    groups = host_groups(hosts)
    leaders = [g[0] for g in groups]
    inter = inner(len(leaders))
    plan = Plan(ranks, nbytes, inter.segments, fp16)
    plan.add_rounds(_merge([binomial_reduce_rounds(plan, g) for g in groups]),
                    "intra-host reduce")
    for s in inter.steps:
        moved = tuple(t._replace(src=leaders[t.src], dst=leaders[t.dst]) for t in s.transfers)
        plan.steps.append(Step(moved, s.repeat, f"inter-host {s.label}", s.chunk_shift))
    plan.add_rounds(_merge([binomial_bcast_rounds(plan, g) for g in groups]),
                    "intra-host broadcast")
    plan.meta["hosts"] = len(groups)
    plan.meta.update({f"inter_{k}": v for k, v in inter.meta.items()})
    return plan
