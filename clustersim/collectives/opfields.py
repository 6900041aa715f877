"""What belongs to the *op* rather than the algorithm: nccl-tests' bus-bandwidth factor and the
fp16 conversion bytes of the busiest rank (see :mod:`.registry`)."""

from __future__ import annotations

__all__ = ["busbw_factor", "convert_bytes"]


def busbw_factor(op: str, p: int) -> float:
    """nccl-tests' busBw = algBw * factor (PERFORMANCE.md of NVIDIA/nccl-tests)."""
    if op == "allreduce":
        return 2 * (p - 1) / p
    if op in ("reduce_scatter", "allgather", "alltoall", "gather", "scatter"):
        return (p - 1) / p
    return 1.0


def convert_bytes(op: str, n: float, p: int, servers: int) -> float:
    """fp32 bytes the busiest rank casts: its input to fp16 plus its output back."""
    share = n / p
    table = {
        "allreduce": n + n,
        "reduce": n + n,                        # root: input down, result up
        "broadcast": n,                         # root casts down, others up
        "reduce_scatter": n + share,
        "allgather": share + n,
        "alltoall": n + n,
        "gather": share + n,                    # root: own block down, all blocks up
        "scatter": n + share,
        "p2p": n,
        "ps_push": max(n, n / servers),         # worker casts its buffer
        "ps_pull": max(n, n / servers),         # worker casts the result
    }
    return table[op]
