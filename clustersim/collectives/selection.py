"""Library selection: ``mpich``, ``openmpi``, ``nccl`` and ``auto`` as algorithm names.

Versioned names: ``mpich-4`` (= ``mpich``), ``mpich-3.3``, ``mpich-3.2`` (:mod:`.select_mpich`);
``openmpi-4.1`` (= ``openmpi``), ``openmpi-4.0``.

Real jobs run what their library *chooses* for the op, the message size, the number of ranks
and their placement, not a named textbook algorithm.  A selector reproduces one library's own
decision logic (:mod:`.select_mpich`, :mod:`.select_openmpi`, :mod:`.select_nccl`) and builds
the schedule of the chosen algorithm; the schedule's ``algorithm`` then reads
``library→choice`` (e.g. ``mpich→rabenseifner``) so that tables show what was run.

Where a library's choice has no faithful schedule here, the nearest one is used and the label
says so with ``≈`` (e.g. ``openmpi-4.0→split_bintree≈binomial``).

Message sizes are what the library sees: the buffer in its wire type (fp32, or fp16 with
``fp16``), counts in elements of 4 (fp32) or 2 (fp16) bytes.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clustersim.collectives.schedule import Schedule
from clustersim.errors import InputError
from clustersim.platform.libraries import LIBRARIES, check_library  # noqa: F401

__all__ = ["LIBRARIES", "MPICH_VERSIONS", "SELECTORS", "SELECTOR_ABOUT", "SELECTOR_ALLREDUCE",
           "Context", "Choice", "is_selector", "selector_ops", "select", "select_schedule",
           "check_library"]

#: MPICH by version (``mpich`` = ``mpich-4``), as :data:`LIBRARIES` names them
MPICH_VERSIONS = tuple(n for n in LIBRARIES if n.startswith("mpich-"))
#: every selector name: the libraries (a platform's ``library:`` values) and ``auto``
SELECTORS = (*LIBRARIES, "auto")
DEFAULT_LIBRARY = "mpich"

_MPI_OPS = ("allreduce", "broadcast", "reduce", "reduce_scatter", "allgather", "alltoall",
            "gather", "scatter", "p2p")
_NCCL_OPS = ("allreduce", "broadcast", "reduce_scatter", "allgather", "alltoall", "gather",
             "scatter", "p2p")

#: what each selector is, whatever the op (its rules per op: docs/collectives.md); the
#: allreduce rule, which listings add on allreduce's rows only, is :data:`SELECTOR_ALLREDUCE`
SELECTOR_ABOUT = {
    "mpich": "MPICH's default selection as installed today (= mpich-4)",
    "mpich-4": "MPICH 3.4-5.0 ch4 csel defaults (mpir/ and ch4/generic.json); node-aware "
               "compositions",
    "mpich-3.3": "MPICH 3.3 MPIR_*_intra_auto with default CVARs",
    "mpich-3.2": "MPICH 3.2 MPIR_*_intra rules with the CVAR thresholds; SMP on node-aware "
                 "communicators (clustersim's mpich until QA 14, without the SMP path)",
    "openmpi": "Open MPI 4.1's coll_tuned fixed decision (= openmpi-4.1; Open MPI 5.0 runs "
               "its HAN component instead on multi-node communicators, not modelled)",
    "openmpi-4.1": "Open MPI 4.1/5.0 coll_tuned fixed decision: the tables over communicator "
                   "size and bytes of coll_tuned_decision_fixed.c (v4.1.8), every op",
    "openmpi-4.0": "Open MPI 1.8-4.0 coll_tuned fixed decision (coll_tuned_decision_fixed.c)",
    "nccl": "NCCL 2.7.5 cost model (tuning.cc): ring/tree x LL/LL128/Simple, fastest "
            "predicted on the platform's node (NVLink or PCI, network speed, LL128 on "
            "Volta/Ampere NVLink only)",
    "auto": "the platform's declared library (platform field library:), else mpich",
}
#: the allreduce rule of the MPICH selectors (their other ops' rules differ: a broadcast row
#: that read "allreduce RD to 8 B" contradicted its own rule, audit 23)
SELECTOR_ALLREDUCE = {
    "mpich-4": "recursive doubling to 8 B or count < pof2, else Rabenseifner",
    "mpich-3.3": "flat recursive doubling at every size, SMP (hierarchical) on node-aware "
                 "communicators",
    "mpich-3.2": "recursive doubling to 2048 B or count < pof2, else Rabenseifner; SMP "
                 "(hierarchical) on node-aware communicators",
}


@dataclass(frozen=True)
class Context:
    """What a library looks at to decide."""

    op: str
    ranks: int
    nbytes: float           # bytes of the buffer as the library sees it (fp16: half)
    elem: int               # bytes per element: 4 (fp32) or 2 (fp16)
    nodes: int              # distinct hosts (1 when unknown)
    placed: bool = False    # a host list was given (nodes == 1 is then one host, not unknown)
    #: what NCCL's topology search finds on the platform (:mod:`.nccl_machine`); None: its
    #: reference node (read by the ``nccl`` selector only)
    machine: Any = None

    @property
    def count(self) -> int:
        return int(self.nbytes // self.elem)

    @property
    def pof2(self) -> int:
        return 1 << (self.ranks.bit_length() - 1)


@dataclass(frozen=True)
class Choice:
    """``algorithm``: the registry schedule to build; ``label``: what the library calls it;
    ``options``: extra :func:`build_schedule` arguments (``chunks``, ``inter``)."""

    algorithm: str
    label: str
    options: dict = field(default_factory=dict)


def is_selector(name: str) -> bool:
    """Whether ``name`` picks an algorithm by a library's own decision (``mpich``, ``nccl``,
    ``auto``, ...) rather than naming one."""
    return name in SELECTORS


def selector_ops(op: str) -> list[str]:
    """Selectors that know ``op`` (``auto`` follows the MPI libraries)."""
    out = [s for s in SELECTORS if s != "auto"
           and op in (_NCCL_OPS if s == "nccl" else _MPI_OPS)]
    return [*out, "auto"] if op in _MPI_OPS else out


def _deciders() -> dict[str, Callable[[Context], Choice]]:
    from clustersim.collectives import select_mpich, select_nccl, select_openmpi

    return {"mpich": select_mpich.decide, "mpich-4": select_mpich.decide_4,
            "mpich-3.3": select_mpich.decide_33, "mpich-3.2": select_mpich.decide_32,
            "openmpi": select_openmpi.decide_41,
            "openmpi-4.1": select_openmpi.decide_41, "openmpi-4.0": select_openmpi.decide_40,
            "nccl": select_nccl.decide}


def select(op: str, name: str, ranks: int, nbytes: float, hosts: Sequence[int] | None = None,
           fp16: bool = False, library: str | None = None,
           machine: Any = None) -> tuple[str, Choice]:
    """(library, choice) of selector ``name`` for this call (``machine``: the NCCL machine
    of the ranks' devices, :func:`clustersim.collectives.nccl_machine.machine_of`)."""
    lib = name
    if name == "auto":
        lib = check_library(library, ("platform", "library")) if library else DEFAULT_LIBRARY
    ops = _NCCL_OPS if lib == "nccl" else _MPI_OPS
    if op not in ops:
        raise InputError(f"{lib} has no {op} (its ops: {', '.join(ops)})", path=("algorithm",))
    nodes = len(set(hosts)) if hosts is not None else 1
    ctx = Context(op, int(ranks), float(nbytes) * (0.5 if fp16 else 1.0), 2 if fp16 else 4,
                  max(1, nodes), hosts is not None, machine if lib == "nccl" else None)
    return lib, _deciders()[lib](ctx)


def select_schedule(op: str, name: str, ranks: int, nbytes: float, *,
                    hosts: Sequence[int] | None, root: int | Sequence[int], fp16: bool,
                    library: str | None, machine: Any = None) -> Schedule:
    """Decide, build the chosen schedule, and name it ``library→label``."""
    from clustersim.collectives.registry import build_schedule

    if isinstance(ranks, bool) or not isinstance(ranks, numbers.Integral) or ranks < 1:
        raise InputError(f"ranks must be an integer >= 1, got {ranks!r}", path=("ranks",))
    lib, choice = select(op, name, ranks, nbytes, hosts, fp16, library, machine)
    sched = build_schedule(op, choice.algorithm, ranks, nbytes, hosts=hosts, root=root,
                           fp16=fp16, **choice.options)
    meta = {**sched.meta, "library": lib, "selected": choice.algorithm, "label": choice.label}
    return dataclasses.replace(sched, algorithm=f"{lib}→{choice.label}", meta=meta)
