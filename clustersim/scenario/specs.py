"""The typed objects a scenario file becomes (what :mod:`clustersim.scenario.schema` returns).

Kept apart from the parser so that code which only *reads* scenarios (the simulator, reports,
the explorer) depends on these plain frozen dataclasses, not on the YAML and validation
machinery.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clustersim.catalog import Catalog
from clustersim.network.params import NetworkParams
from clustersim.scenario.emulation import EmulationSpec

__all__ = ["Scenario", "BenchmarkSpec", "WorkloadSpec", "AlgorithmSpec", "SweepSpec", "RunSpec"]


@dataclass(frozen=True)
class BenchmarkSpec:
    """A collective benchmark: one op, several algorithms, rank counts and message sizes."""

    op: str
    algorithms: tuple[str, ...]
    ranks: tuple[int, ...]
    sizes: tuple[float, ...]
    fp16: bool = False
    root: int = 0


@dataclass(frozen=True)
class WorkloadSpec:
    """What each worker computes.  ``model`` is a :class:`clustersim.workload.Model`;
    ``compute`` a :class:`~clustersim.workload.ComputeOverrides` (calibrated efficiencies);
    ``pipeline`` an optional :class:`~clustersim.workload.InputPipeline`."""

    model: Any
    batch_per_worker: int | None = None
    global_batch: int | None = None
    optimizer: str = "momentum"
    bucket_bytes: float | None = None
    #: a framework's gradient grouping (clustersim.workload.fusion.FusionSpec), or None
    fusion: Any = None
    jitter: float = 0.0
    compute: Any = None
    pipeline: Any = None
    #: a clustersim.convergence.ConvergenceProfile (time to accuracy), or None
    convergence: Any = None


@dataclass(frozen=True)
class AlgorithmSpec:
    """A training algorithm by registry name, with its parameters resolved and checked."""

    name: str
    params: Mapping[str, Any]
    label: str = ""

    @property
    def title(self) -> str:
        return self.label or self.name


@dataclass(frozen=True)
class SweepSpec:
    """A parsed ``sweep:`` section: the worker counts ``predict`` runs and the ``scaling``
    (``weak``: each worker keeps its batch; ``strong``: ``workload.global_batch`` is split among
    the workers); ``axes``, ``sample`` and ``constraints`` are ``clustersim sweep``'s design."""

    workers: tuple[int, ...]
    scaling: str = "weak"
    #: per-point overrides ``{workers: {dotted.field: value}}`` (``sweep.at``), as written
    at: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    #: design-space axes, sampling and constraints for ``clustersim sweep``, as written; read
    #: by clustersim.explore.axes (``predict`` runs ``workers`` only)
    axes: Mapping[str, Any] = field(default_factory=dict)
    sample: Mapping[str, Any] | None = None
    constraints: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunSpec:
    """A parsed ``run:`` section: ``iterations`` per run, the first ``warmup`` of them not
    measured; per point ``repeats`` seeds from ``seed`` on (with jitter only), summarised; the
    network model's ``fidelity`` (``flow``, ``analytic`` or ``auto``)."""

    iterations: int = 20
    warmup: int = 2
    seed: int = 0
    fidelity: str = "auto"
    repeats: int = 1
    #: convergence layer: auto | emulate | analytic | off (clustersim.scenario.emulation)
    convergence: str = "auto"
    #: settings of ``convergence: emulate`` (defaults when the section is absent)
    emulation: EmulationSpec = EmulationSpec()


@dataclass(frozen=True)
class Scenario:
    """A scenario file parsed and checked (:func:`~clustersim.scenario.schema.load_scenario`):
    a collective ``benchmark`` or a training ``workload`` with its algorithms, on ``platform``
    with ``network``'s parameters; ``variants`` and ``points`` are whole scenarios themselves."""

    name: str
    about: str
    file: str | None
    catalog: Catalog
    platform: Any  # clustersim.platform.model.Platform
    platform_raw: Mapping[str, Any]
    network: NetworkParams
    run: RunSpec
    benchmark: BenchmarkSpec | None = None
    workload: WorkloadSpec | None = None
    algorithm: AlgorithmSpec | None = None
    compare: tuple[AlgorithmSpec, ...] = ()
    sweep: SweepSpec | None = None
    assumptions: tuple[str, ...] = ()
    #: what-if variants: (label, scenario with some fields changed), run beside this one
    variants: tuple[tuple[str, Scenario], ...] = ()
    #: how the base case is called beside its variants
    label: str = "base"
    #: sweep points with fields of their own (``sweep.at``): (workers, scenario at that point)
    points: tuple[tuple[int, Scenario], ...] = ()
    #: ``uncertain:`` inputs (clustersim.uncertainty.spec.UncertainInput), as written
    uncertain: tuple[Any, ...] = ()
    #: devices per worker and where servers sit (clustersim.scenario.placement)
    placement: Any = None

    @property
    def algorithms(self) -> tuple[AlgorithmSpec, ...]:
        """The main algorithm first, then the ones to compare with."""
        return ((self.algorithm,) if self.algorithm else ()) + self.compare

    def at_workers(self, workers: int) -> Scenario:
        """The scenario as the sweep point with ``workers`` sees it: this one, or the one
        with that point's ``sweep.at`` overrides applied."""
        for w, scn in self.points:
            if w == workers:
                return scn
        return self
