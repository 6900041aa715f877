"""What a builder gets (:class:`Request`) and how the registry describes one (:class:`Algo`).

Kept apart from :mod:`.registry` so that the library-specific algorithms
(:mod:`.library_algos`) can be declared in their own module with the same types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clustersim.collectives.plan import Plan

__all__ = ["Request", "Algo", "fill"]


@dataclass(frozen=True)
class Request:
    """A validated :func:`~.registry.build_schedule` call."""

    op: str
    algorithm: str
    ranks: int
    nbytes: float
    hosts: tuple[int, ...] | None
    root: int
    servers: tuple[int, ...]
    tree: list | None
    fp16: bool
    chunks: int | None
    inter: str

    def plan(self, segments: int, inplace: bool = True, wire_factor: float = 1.0) -> Plan:
        return Plan(self.ranks, self.nbytes, max(1, segments), self.fp16, inplace, wire_factor)


@dataclass(frozen=True)
class Algo:
    """One registry entry: ``build`` makes its plan from a :class:`Request`, ``about`` is the
    line :func:`~.registry.describe_algorithm` shows; ``fp16`` and ``uses_root`` tell
    :func:`~.registry.build_schedule` how to complete a request for it."""

    build: Callable[[Request], Plan]
    about: str
    fp16: bool = False          # the name itself implies fp16 (asa16)
    uses_root: bool = False
    needs_hosts: bool = False   # validated like ``hierarchical``: one host per rank


def fill(req: Request, segments: int, fn: Callable[[Plan], None],
         inplace: bool = True) -> Plan:
    """A plan of ``req`` cut into ``segments`` segments, its steps added by ``fn``: the whole
    builder of an algorithm that needs nothing but the plan."""
    plan = req.plan(segments, inplace)
    fn(plan)
    return plan
