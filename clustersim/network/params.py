"""Network model parameters that are not properties of a single link.

They are calibration parameters: defaults are documented here, a calibration profile may
override them, and both the flow and the analytic model read them from the same object.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NetworkParams"]


@dataclass(frozen=True)
class NetworkParams:
    """``overhead``: per-message software cost (s) paid before the first byte leaves
    (MPI/NCCL call, matching, protocol handshake), added to the path latency.  Default 0 so that
    closed forms are exactly ``alpha = sum of hop latencies``; calibration sets it.
    ``efficiency``: fraction of link bandwidth a flow can use (protocol headers, flow control);
    1.0 = datasheet.  Paleo's fitted "comm percent of peak" (0.72-1.0) is this number.
    """

    overhead: float = 0.0
    efficiency: float = 1.0

    def __post_init__(self) -> None:
        if self.overhead < 0:
            raise ValueError("overhead must be >= 0")
        if not 0 < self.efficiency <= 1:
            raise ValueError("efficiency must be in (0, 1]")
