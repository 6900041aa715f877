"""What an algorithm module provides, and what it is told about the job.

An algorithm is a function ``actors(job) -> list[ActorSpec]``: which actors exist (workers,
servers), where they would like to run, and the generator each runs.  It learns about the job
through :class:`JobInfo` only - sizes, counts, parameters - never through a simulator or MPI
object, so the same module drives the simulated and the real backend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from clustersim.algorithms.ops import ActorGen, Record
from clustersim.errors import InputError, unknown_name, yaml_text

T = TypeVar("T")

__all__ = ["JobInfo", "ActorContext", "ActorSpec", "AlgorithmDef", "Param", "REGISTRY",
           "iteration_marks", "shared_ops",
           "register", "get_algorithm", "list_algorithms"]


@dataclass(frozen=True)
class JobInfo:
    """The job as an algorithm sees it.

    ``buckets``: gradient buckets in backward order as ``(layer_start, layer_stop, nbytes)``
    (forward-order layer slice) - one bucket of everything when bucketing is off.
    ``hosts[w]``: machine id of worker ``w`` (for hierarchical exchanges).
    ``devices[w]``: device kind of worker ``w`` (heterogeneous clusters).
    """

    workers: int
    iterations: int
    grad_bytes: float
    num_layers: int
    buckets: tuple[tuple[int, int, float], ...]
    hosts: tuple[int, ...]
    devices: tuple[str, ...] = ()
    servers: int = 0
    batch: int = 1
    seed: int = 0
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class ActorContext:
    """Per-actor view handed to the generator: its rank, role, the job and a private RNG.

    The RNG is seeded from (job seed, actor rank) so that async algorithms vary with the seed
    and nothing else.  ``math`` is the optional proxy-model hook
    (:mod:`clustersim.algorithms.proxy`): ``None`` when only time is modelled (the simulator's
    default); the real backend passes one with ``--math`` so that the operations carry real
    gradients and weights (``Compute(fn=...)``, ``AllReduce(data=...)``).
    """

    rank: int
    role: str
    job: JobInfo
    index: int = 0  # index within its role (worker w, server s)
    math: Any = None

    @property
    def rng(self) -> np.random.Generator:
        """Created on first use: most algorithms never draw, and a generator per actor costs
        ~20 us - a second per sweep of 4,000-actor points."""
        rng = self.__dict__.get("_rng")
        if rng is None:
            rng = self.__dict__["_rng"] = np.random.default_rng([self.job.seed, self.rank])
        return rng

    @property
    def iterations(self) -> int:
        return self.job.iterations

    @property
    def grad_bytes(self) -> float:
        return self.job.grad_bytes

    @property
    def params(self) -> Mapping[str, Any]:
        return self.job.params


@dataclass(frozen=True)
class ActorSpec:
    """One actor: ``role`` is "worker" or "server"; ``index`` its number within the role.

    Workers are placed on the job's devices in order; servers on the devices named by the
    scenario (or the first devices, sharing them with workers, when none are named).
    ``colocate`` (servers only): the rank of a worker whose device this actor shares - a
    node-local process such as the hybrid algorithm's local parameter server, which must run
    on its node whatever devices are free.
    """

    rank: int
    role: str
    index: int
    body: Callable[[ActorContext], ActorGen]
    colocate: int | None = None

    def start(self, job: JobInfo, math: Any = None) -> ActorGen:
        return self.body(ActorContext(self.rank, self.role, job, self.index, math))


@dataclass(frozen=True)
class Param:
    """A documented algorithm parameter: default, meaning and where the value comes from."""

    default: Any
    help: str
    source: str = ""
    kind: type = float
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] = ()


#: the time-to-accuracy models an algorithm may name (``AlgorithmDef.convergence``)
CONVERGENCE_KINDS = ("sync", "async", "elastic", "gossip", "hybrid")


@dataclass(frozen=True)
class AlgorithmDef:
    """A registered algorithm: name, family (sync / async / ...), parameters, actor factory."""

    name: str
    family: str
    summary: str
    params: Mapping[str, Param]
    actors: Callable[[JobInfo], list[ActorSpec]]
    servers: Callable[[Mapping[str, Any]], int] = lambda params: 0
    validate: Callable[[dict[str, Any], tuple], None] | None = None
    source: str = ""
    #: how its statistics behave for time to accuracy (clustersim.convergence's run kinds:
    #: sync, async, elastic, gossip, hybrid; clustersim/sim/tta.py says what a step is);
    #: empty: the family's own (sync, async, hybrid) - an "async" algorithm that left it out
    #: had been given the synchronous model without a word (audit 23)
    convergence: str = ""

    def __post_init__(self) -> None:
        if not self.convergence:
            object.__setattr__(self, "convergence", self.family if self.family in
                               ("sync", "async", "hybrid") else "sync")
        if self.convergence not in CONVERGENCE_KINDS:
            raise ValueError(f"algorithm {self.name}: convergence must be one of "
                             f"{', '.join(CONVERGENCE_KINDS)}, not {self.convergence!r}")

    def resolve_params(self, raw: Mapping[str, Any] | None, path: tuple = ("algorithm",)
                       ) -> dict[str, Any]:
        """Defaults filled in, types and ranges checked; errors name the field."""
        out = {k: p.default for k, p in self.params.items()}
        for key, value in (raw or {}).items():
            if key not in self.params:
                raise unknown_name(f"parameter of {self.name}", key, self.params,
                                   path=(*path, key))
            p = self.params[key]
            where = (*path, key)
            if p.choices:
                if value not in p.choices:
                    raise InputError(f"{key} must be one of {', '.join(map(str, p.choices))}, "
                                     f"not {yaml_text(value)}",
                                     path=where)
            elif p.kind is bool:
                if not isinstance(value, bool):
                    raise InputError(f"{key} must be true or false, not {value!r}", path=where)
            elif p.kind in (int, float):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise InputError(f"{key} must be a number, not {value!r}", path=where)
                if p.kind is int and value != int(value):
                    raise InputError(f"{key} must be a whole number, not {value!r}", path=where)
                value = p.kind(value)
                # a parameter with no stated maximum still gets one: a count of 10**18 (shards,
                # workers) is a typo that would hang the simulation, not a plan
                if p.maximum is None and abs(value) > 1_000_000:
                    raise InputError(f"{key} must be <= 1,000,000, not {value!r}", path=where)
                if p.minimum is not None and value < p.minimum:
                    raise InputError(f"{key} must be >= {p.minimum}, not {value!r}", path=where)
                if p.maximum is not None and value > p.maximum:
                    raise InputError(f"{key} must be <= {p.maximum}, not {value!r}", path=where)
            out[key] = value
        if self.validate is not None:
            self.validate(out, path)
        return out


REGISTRY: dict[str, AlgorithmDef] = {}


def register(defn: AlgorithmDef) -> AlgorithmDef:
    """Add an algorithm to the registry under its name (a second one of the same name is a
    programming error: scenarios name algorithms, so a silent replacement would change what
    a scenario means); returns it, so that it can be used as a module-level statement."""
    if defn.name in REGISTRY:
        raise ValueError(f"algorithm {defn.name!r} registered twice")
    REGISTRY[defn.name] = defn
    return defn


def _load_all() -> None:
    # Importing the modules registers them; kept here so the registry is complete on first use.
    from clustersim.algorithms import catalog  # noqa: F401


def get_algorithm(name: str, **loc: Any) -> AlgorithmDef:
    """The registered algorithm ``name``, or an input error naming the allowed names
    (``loc``: where in the scenario the name was read, for the message)."""
    _load_all()
    try:
        return REGISTRY[name]
    except KeyError:
        raise unknown_name("algorithm", name, REGISTRY, **loc) from None


def list_algorithms() -> dict[str, AlgorithmDef]:
    """Every registered training algorithm by name, sorted (a copy: the caller may change it)."""
    _load_all()
    return dict(sorted(REGISTRY.items()))


def shared_ops(cache: dict[Any, T], key: Any, build: Callable[[], T], limit: int = 64) -> T:
    """``build()``'s operations, made once per ``key`` and shared by every actor that asks.

    Why: operations are immutable, and an algorithm with thousands of workers that each build
    their own spends more time making frozen dataclasses than its first iteration takes to
    simulate; shared objects also hit the engine's caches, which look costs and routes up by
    operation identity.  ``cache`` is the caller's module-level dict, emptied when it holds
    ``limit`` keys (a sweep uses a handful)."""
    ops = cache.get(key)
    if ops is None:
        if len(cache) >= limit:
            cache.clear()
        ops = cache[key] = build()
    return ops


def iteration_marks(iterations: int) -> tuple[Record, ...]:
    """``Record("iteration", it)`` for every iteration, built once per run length and shared
    by every worker (thousands of workers would otherwise build one per iteration each)."""
    return shared_ops(_MARKS, iterations,
                      lambda: tuple(Record("iteration", it) for it in range(iterations)), 16)


_MARKS: dict[int, tuple[Record, ...]] = {}
