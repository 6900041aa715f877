"""Collective operations as *schedules*: steps of concurrent point-to-point transfers.

Why schedules: the same description is (1) simulated flow by flow on the platform, (2) costed
analytically - each distinct step costed once, times its ``repeat`` - and (3) executed for real
with MPI point-to-point messages by ``realrun``.  One source, three uses, and the three can be
compared.

Semantics (the "bulk-synchronous step" model):

* Within a step every transfer starts at once; a step ends when its last transfer has arrived
  and every receiver has reduced what it had to reduce.  Steps run one after another.
* ``Transfer.reduce`` means the receiver adds the received buffer into its own (costed at the
  receiving device's reduction bandwidth); otherwise the data is only copied into place.
* ``Step.repeat`` says the same step pattern happens that many times in a row.  The data moved
  differs (other chunks), the timing does not - which is exactly what keeps a 4,253-rank ring
  at two step objects instead of millions of transfers.
* ``Schedule.convert_bytes`` is the number of bytes each rank casts between fp32 and fp16
  (before sending and after receiving) in the fp16 variants.

Real MPI implementations let a rank start its next step as soon as *its own* transfers are done;
for the regular algorithms here (every rank does the same work per step) this is the same
time, for irregular ones (trees with partial fill) the step model is slightly pessimistic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Transfer", "Step", "Schedule"]


@dataclass(frozen=True, slots=True)
class Transfer:
    """``nbytes`` from rank ``src`` to rank ``dst``; the receiver reduces it if ``reduce``."""

    src: int
    dst: int
    nbytes: float
    reduce: bool = False


@dataclass(frozen=True)
class Step:
    """Transfers that run concurrently; the pattern occurs ``repeat`` times in a row."""

    transfers: tuple[Transfer, ...]
    repeat: int = 1
    label: str = ""

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise ValueError(f"step repeat must be >= 1, got {self.repeat}")

    def reduce_bytes(self) -> dict[int, float]:
        """Bytes each rank reduces in one occurrence of this step."""
        out: dict[int, float] = {}
        for t in self.transfers:
            if t.reduce:
                out[t.dst] = out.get(t.dst, 0.0) + t.nbytes
        return out


@dataclass(frozen=True)
class Schedule:
    """A collective as an ordered tuple of steps.

    ``nbytes`` is the user-facing message size (per rank buffer, as in nccl-tests ``size``).
    ``busbw_factor`` converts algorithm bandwidth into nccl-tests' *bus bandwidth*
    (e.g. ``2(p-1)/p`` for allreduce) so that numbers are comparable across rank counts.
    """

    op: str
    algorithm: str
    ranks: int
    nbytes: float
    steps: tuple[Step, ...]
    convert_bytes: float = 0.0
    busbw_factor: float = 1.0
    meta: dict = field(default_factory=dict, compare=False)

    @property
    def num_steps(self) -> int:
        return sum(s.repeat for s in self.steps)

    def bytes_sent(self) -> dict[int, float]:
        """Total bytes each rank sends over the whole collective (a check on schedules)."""
        out: dict[int, float] = {}
        for s in self.steps:
            for t in s.transfers:
                out[t.src] = out.get(t.src, 0.0) + t.nbytes * s.repeat
        return out

    def bytes_received(self) -> dict[int, float]:
        out: dict[int, float] = {}
        for s in self.steps:
            for t in s.transfers:
                out[t.dst] = out.get(t.dst, 0.0) + t.nbytes * s.repeat
        return out

    def expanded(self):
        """Yield steps one occurrence at a time (for execution, not for costing)."""
        for s in self.steps:
            for _ in range(s.repeat):
                yield s
