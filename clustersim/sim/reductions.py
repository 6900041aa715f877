"""What a collective returns to each member when its operations carry data.

The simulator times a collective from its schedule; when the algorithms attach real arrays
(``Collective.data``: the proxy or emulation task's gradients and weights), every member must
also get the *result* a real library gives it, so that BSP, Sync EASGD and the other
collective users train in simulated time as they would on MPI.  The shapes follow the real
backend (:mod:`realrun.opcollectives`, MPI's semantics):

=============== ============================================================================
allreduce       the elementwise sum over the members that brought data, in group order
reduce          that sum at the root (``op.root``: an index into the group), ``None`` elsewhere
broadcast       the root's data, to every member
allgather       the members' data concatenated in group order (flat, as ``MPI_Allgather``'s
                receive buffer)
reduce_scatter  member ``k`` gets piece ``k`` of the sum (pieces as :func:`numpy.array_split`
                cuts it; MPI's ``Reduce_scatter_block`` needs equal pieces, these are equal
                whenever the size divides)
alltoall        member ``k`` gets piece ``k`` of every member's data, concatenated in group
                order
barrier         ``None``
=============== ============================================================================

Sums run in group order, one ``+=`` at a time, in the first array's dtype (float32 stays
float32): deterministic, and bit-identical to a sequential left-to-right sum.  A real
library's reduction tree may add in another order, which differs by float32 rounding only.
Nothing here runs for a timing-only collective (no member brought data).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["PerMember", "collective_results"]


class PerMember:
    """A finished collective's results, one per member (actor index -> result): the value
    its event succeeds with when the members get different results."""

    __slots__ = ("values",)

    def __init__(self, values: dict[int, Any]) -> None:
        self.values = values


def _sum(arrays: list[np.ndarray]) -> np.ndarray:
    acc = np.array(arrays[0], copy=True)
    for a in arrays[1:]:
        acc += np.asarray(a, dtype=acc.dtype).reshape(acc.shape)
    return acc


def _flat(a: Any) -> np.ndarray:
    return np.asarray(a).reshape(-1)


def collective_results(kind: str, root: int, members: tuple[int, ...],
                       data: dict[int, Any]) -> PerMember | None:
    """Each member's result of a ``kind`` collective over ``members`` (actor indices in group
    order) whose members brought ``data`` (actor index -> array; members without data are
    left out of sums and gathers).  ``None``: nobody gets anything (a barrier, or a
    broadcast whose root brought nothing)."""
    order = [i for i in members if i in data]
    if not order or kind == "barrier":
        return None
    p = len(members)
    if kind == "allreduce":
        total = _sum([data[i] for i in order])
        return PerMember({i: total.copy() for i in members})
    if kind == "reduce":
        r = members[root]
        return PerMember({i: (_sum([data[j] for j in order]) if i == r else None)
                          for i in members})
    if kind == "broadcast":
        src = data.get(members[root])
        if src is None:
            return None
        return PerMember({i: np.array(src, copy=True) for i in members})
    if kind == "allgather":
        whole = np.concatenate([_flat(data[i]) for i in order])
        return PerMember({i: whole.copy() for i in members})
    if kind == "reduce_scatter":
        total = _flat(_sum([data[i] for i in order]))
        pieces = np.array_split(total, p)
        return PerMember({i: pieces[k].copy() for k, i in enumerate(members)})
    if kind == "alltoall":
        parts = {i: np.array_split(_flat(data[i]), p) for i in order}
        return PerMember({i: np.concatenate([parts[j][k] for j in order])
                          for k, i in enumerate(members)})
    raise ValueError(f"no result rule for collective {kind!r}")
