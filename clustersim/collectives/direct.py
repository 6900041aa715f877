"""Direct patterns: every message goes straight to its final owner.

* ``asa`` - Theano-MPI's alltoall-sum-allgather: a reduce-scatter done as one direct
  all-to-all (every rank sends segment ``j`` to rank ``j``, which sums the p-1 pieces), then an
  allgather done as one direct exchange.  Two steps, so only ``2 alpha``, but each step puts
  ``p-1`` concurrent messages on every link: fine inside a node, an incast storm beyond.
* ``asa_ompi`` - Theano-MPI's asa as CUDA-aware Open MPI 1.8 ran it, per tensor: MPI_Alltoall
  by pairwise exchange (the tuned component's choice for large messages; each piece summed
  as it lands, which is the same reduction work as one sum after the alltoall), then
  MPI_Allgather by ring: ``2(p-1)`` rounds of ``n/p``, one message per link per round.
* ``pairwise`` alltoall and reduce-scatter - ``p-1`` rounds; in round ``k`` rank ``r`` sends to
  ``r+k`` and receives from ``r-k`` (MPICH's long-message MPI_Alltoall and
  MPI_Reduce_scatter): one message per link per round, any p.
* ``p2p`` - rank 0 to rank 1 (ping-pong's one-way half).
* ``ps_push`` / ``ps_pull`` - parameter-server traffic: every worker sends its buffer to the
  server(s) / every server sends its shard to each worker, all at once.  With several
  servers the buffer is sharded evenly (shard ``s`` lives on ``servers[s]``), as in MXNet or
  TensorFlow's PS; the server sums the pushes into its own buffer (zero it for a pure sum).

These patterns have ``p(p-1)`` messages (all but p2p/ps), so they are written out in full and
refused above :data:`MAX_DIRECT_RANKS` ranks.
"""

from __future__ import annotations

from collections.abc import Sequence

from clustersim.collectives.plan import Plan
from clustersim.errors import InputError

__all__ = ["MAX_DIRECT_RANKS", "check_direct_size", "asa_allreduce", "asa_ompi_allreduce",
           "pairwise_alltoall",
           "pairwise_reduce_scatter", "p2p", "ps_push", "ps_pull"]

#: p(p-1) explicit messages: 1,024 ranks is about a million transfers, the sane limit
MAX_DIRECT_RANKS = 1024


def check_direct_size(p: int, what: str) -> None:
    """Refuse a direct pattern (``what``, for the message) on more than
    :data:`MAX_DIRECT_RANKS` ranks, before its ``p(p-1)`` messages are written out."""
    if p > MAX_DIRECT_RANKS:
        raise InputError(
            f"{what} writes out all p(p-1) = {p * (p - 1):,} messages; at most "
            f"{MAX_DIRECT_RANKS} ranks are supported - use a ring or recursive algorithm "
            f"for {p} ranks", path=("ranks",))


def asa_allreduce(plan: Plan) -> None:
    """Alltoall (reduce into segment j at rank j), then direct allgather (segments = p)."""
    p = plan.ranks
    plan.add([plan.xfer(r, j, j, 1, reduce=True) for r in range(p) for j in range(p) if j != r],
             label="alltoall + sum")
    plan.add([plan.xfer(r, j, r, 1) for r in range(p) for j in range(p) if j != r],
             label="allgather (direct)")


def asa_ompi_allreduce(plan: Plan) -> None:
    """Pairwise alltoall + sum (rank j ends with block j summed), then ring allgather."""
    from clustersim.collectives.ring import ring_allgather

    pairwise_reduce_scatter(plan)
    ring_allgather(plan)


def pairwise_alltoall(plan: Plan) -> None:
    """Round k: rank r sends its block for ``r+k`` into block ``r`` of rank ``r+k``."""
    p = plan.ranks
    for k in range(1, p):
        plan.add([plan.xfer(r, (r + k) % p, (r + k) % p, 1, dst_start=r) for r in range(p)],
                 label=f"pairwise exchange {k}")


def pairwise_reduce_scatter(plan: Plan) -> None:
    """Round k: rank r adds its part of block ``r+k`` into rank ``r+k``."""
    p = plan.ranks
    for k in range(1, p):
        plan.add([plan.xfer(r, (r + k) % p, (r + k) % p, 1, reduce=True) for r in range(p)],
                 label=f"pairwise reduce {k}")


def p2p(plan: Plan) -> None:
    """One message of the whole buffer, rank 0 to rank 1."""
    plan.add([plan.xfer(0, 1)], label="point-to-point")


def ps_push(plan: Plan, servers: Sequence[int]) -> None:
    """Every worker sends shard ``s`` of its buffer to ``servers[s]``, which sums it."""
    workers = [r for r in range(plan.ranks) if r not in set(servers)]
    plan.add([plan.xfer(w, srv, s, 1, reduce=True) for w in workers
              for s, srv in enumerate(servers)], label="push to servers")


def ps_pull(plan: Plan, servers: Sequence[int]) -> None:
    """Every server sends its shard to every worker."""
    workers = [r for r in range(plan.ranks) if r not in set(servers)]
    plan.add([plan.xfer(srv, w, s, 1) for w in workers for s, srv in enumerate(servers)],
             label="pull from servers")
