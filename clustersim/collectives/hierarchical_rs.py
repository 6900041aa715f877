"""Horovod's hierarchical allreduce: reduce-scatter in the node, allreduce across, allgather.

Horovod (``HOROVOD_HIERARCHICAL_ALLREDUCE=1``, ``horovod/common/ops/nccl_operations.cc``,
``NCCLHierarchicalAllreduce``, Horovod 0.16-0.28) cuts the buffer into one shard per local
rank: an NCCL reduce-scatter inside every node leaves local rank ``i`` with its node's sum of
shard ``i``; local rank ``i`` of every node then allreduces shard ``i`` with MPI across the
nodes (all local ranks at once, each on its own ``1/ppn`` of the buffer); an NCCL allgather
inside the node spreads the result.  Against :mod:`.hierarchical` (reduce to one leader) every
NIC of a node carries ``n/ppn`` instead of one NIC carrying ``n``.

Needs the same number of ranks on every host.  The intra-node stages are rings over the
host's ranks (ascending).  The inter-node allreduce is any allreduce algorithm of the registry
(``inter``, default ``ring``) built on the nodes and run once per local rank on its shard;
its steps are written out occurrence by occurrence (its chunks live inside one shard).
Segments: ``ppn * S_inter``, shard ``i`` being ``[i S_inter, (i+1) S_inter)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from clustersim.collectives.hierarchical import host_groups
from clustersim.collectives.plan import Plan
from clustersim.collectives.schedule import Transfer
from clustersim.errors import InputError

__all__ = ["shard_hierarchical_allreduce"]


def _intra_ring(plan: Plan, groups: list[list[int]], width: int, reduce: bool) -> None:
    """Ring reduce-scatter (member v ends with shard v) or allgather (starts with shard v)."""
    ppn = len(groups[0])
    first = -1 if reduce else 0
    for k in range(ppn - 1):
        trs = [plan.xfer(g[v], g[(v + 1) % ppn], ((v + first - k) % ppn) * width, width,
                         reduce=reduce) for g in groups for v in range(ppn)]
        plan.add(trs, label=f"intra-node ring {'reduce-scatter' if reduce else 'allgather'} "
                            f"{k + 1}/{ppn - 1}")


def _moved(plan: Plan, t: Transfer, ranks: Sequence[int], base: int, width: int
           ) -> list[Transfer]:
    """An inner transfer on shard ``base`` (split where its chunk wraps past the shard)."""
    a, b = t.chunk if t.chunk is not None else (0, width)
    pieces = [(a, min(b, width))] + ([(0, b - width)] if b > width else [])
    return [plan.xfer(ranks[t.src], ranks[t.dst], base + lo, hi - lo, reduce=t.reduce)
            for lo, hi in pieces]


def shard_hierarchical_allreduce(ranks: int, nbytes: float, fp16: bool, hosts: Sequence[int],
                                 inner: Callable[[int], Plan]) -> Plan:
    """Build the whole plan; ``inner(L)`` builds the inter-node allreduce on L nodes."""
    groups = host_groups(hosts)
    sizes = {len(g) for g in groups}
    if len(sizes) != 1:
        raise InputError(f"horovod_hierarchical needs the same number of ranks on every host, "
                         f"got {sorted(sizes)}", path=("hosts",))
    ppn = sizes.pop()
    inter = inner(len(groups))
    width = inter.segments
    plan = Plan(ranks, nbytes, ppn * width, fp16)
    _intra_ring(plan, groups, width, reduce=True)
    for s in inter.steps:
        for j in range(s.repeat):
            occ = s.occurrence(j, width)
            trs = [m for i in range(ppn) for t in occ
                   for m in _moved(plan, t, [g[i] for g in groups], i * width, width)]
            plan.add(trs, label=f"inter-node {s.label}")
    _intra_ring(plan, groups, width, reduce=False)
    plan.meta.update({"hosts": len(groups), "ppn": ppn})
    plan.meta.update({f"inter_{k}": v for k, v in inter.meta.items()})
    return plan
