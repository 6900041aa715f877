"""Binomial trees and their relatives: reduce, broadcast, gather, scatter, van de Geijn bcast.

Virtual ranks: ``v = (rank - root) mod p``, so the root is virtual 0 and every tree works for
any root and any p (the tree simply has missing leaves when p is not a power of two, which
still takes ``ceil(log2 p)`` rounds).  Round with mask ``m``: in a reduce (or gather) virtual
``v`` with ``v mod 2m == m`` sends to ``v - m``; a broadcast (or scatter) runs the masks in
reverse, ``v mod 2m == 0`` sending to ``v + m``.  Rounds are returned as lists of transfers so
that callers can run several trees at once (one per host in the hierarchical allreduce).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from clustersim.collectives.plan import Plan, ceil_log2
from clustersim.collectives.ring import ring_phase
from clustersim.collectives.schedule import Transfer

__all__ = ["rotate", "binomial_reduce_rounds", "binomial_bcast_rounds", "binomial_gather",
           "binomial_scatter", "linear_gather", "linear_scatter", "scatter_allgather_bcast",
           "binomial_allreduce"]

Rounds = list[list[Transfer]]


def rotate(p: int, root: int) -> list[int]:
    """Members in virtual order: ``members[v] = (root + v) mod p``."""
    return [(root + v) % p for v in range(p)]


def _masks_up(p: int) -> list[int]:
    return [1 << k for k in range(ceil_log2(p))]


def binomial_reduce_rounds(plan: Plan, members: Sequence[int]) -> Rounds:
    """Whole-buffer binomial reduce towards ``members[0]``."""
    p = len(members)
    return [[plan.xfer(members[v], members[v - m], reduce=True) for v in range(m, p, 2 * m)]
            for m in _masks_up(p)]


def binomial_bcast_rounds(plan: Plan, members: Sequence[int]) -> Rounds:
    """Whole-buffer binomial broadcast from ``members[0]``."""
    p = len(members)
    return [[plan.xfer(members[v], members[v + m]) for v in range(0, p - m, 2 * m)]
            for m in reversed(_masks_up(p))]


def binomial_gather(plan: Plan, root: int, block_of: Callable[[int], int] | None = None,
                    label: str = "binomial gather") -> None:
    """Blocks flow up the binomial tree; a subtree's blocks are contiguous modulo p.

    Virtual ``v`` sends the blocks of virtual ranks ``[v, min(v+m, p))``; block of virtual
    ``u`` is ``block_of(u)`` (default: its actual rank, as MPI_Gather lays them out).
    """
    p = plan.ranks
    members = rotate(p, root)
    first = block_of or (lambda u: members[u])
    for m in _masks_up(p):
        plan.add([plan.xfer(members[v], members[v - m], first(v), min(m, p - v))
                  for v in range(m, p, 2 * m)], label=f"{label} (mask {m})")


def binomial_scatter(plan: Plan, root: int, block_of: Callable[[int], int] | None = None,
                     label: str = "binomial scatter") -> None:
    """Reverse of :func:`binomial_gather`: ``v`` sends ``[v+m, min(v+2m, p))`` to ``v+m``."""
    p = plan.ranks
    members = rotate(p, root)
    first = block_of or (lambda u: members[u])
    for m in reversed(_masks_up(p)):
        plan.add([plan.xfer(members[v], members[v + m], first(v + m), min(m, p - v - m))
                  for v in range(0, p - m, 2 * m)], label=f"{label} (mask {m})")


def linear_gather(plan: Plan, root: int) -> None:
    """Every rank sends its block straight to the root, all at once (an incast)."""
    plan.add([plan.xfer(r, root, r, 1) for r in range(plan.ranks) if r != root],
             label="linear gather")


def linear_scatter(plan: Plan, root: int) -> None:
    """The root sends every rank its block, all at once."""
    plan.add([plan.xfer(root, r, r, 1) for r in range(plan.ranks) if r != root],
             label="linear scatter")


def scatter_allgather_bcast(plan: Plan, root: int) -> None:
    """Van de Geijn's broadcast: binomial scatter of p pieces, then a ring allgather.

    ``log2 p`` alpha + ``(p-1)/p n/B`` for the scatter and ``(p-1)(alpha + n/(pB))`` for the
    ring: about ``2n/B`` instead of the binomial tree's ``log2(p) n/B`` for long messages
    (Barnett, van de Geijn et al. 1994; MPICH's long-message MPI_Bcast).  Segment ``v`` is
    owned by virtual rank ``v`` (segments = p).
    """
    members = rotate(plan.ranks, root)
    binomial_scatter(plan, root, block_of=lambda u: u, label="bcast scatter")
    ring_phase(plan, members, 0, False, "bcast ring allgather")


def binomial_allreduce(plan: Plan, root: int) -> None:
    """Binomial reduce to ``root`` then binomial broadcast: ``2 ceil(log2 p)`` steps of n."""
    members = rotate(plan.ranks, root)
    plan.add_rounds(binomial_reduce_rounds(plan, members), "binomial reduce")
    plan.add_rounds(binomial_bcast_rounds(plan, members), "binomial broadcast")
