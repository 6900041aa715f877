"""Scenario files: YAML in, validated typed objects out.

A scenario says *what to predict*: on which platform (a file in ``topologies/`` or inline, with
overrides), for which workload and algorithm (or which collective benchmark), over which sweep,
with which run settings.  Everything is validated here, at the edge, so that the simulator
never sees a bad value; every error names file, line and field path.

See docs/scenarios.md for the full format.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from clustersim.catalog import Catalog, builtin_catalog
from clustersim.errors import InputError, format_path
from clustersim.network.params import NetworkParams
from clustersim.scenario.emulation import CONVERGENCE_MODES, EmulationSpec, parse_emulation
from clustersim.scenario.fields import (
    Section,
    as_bool,
    as_choice,
    as_float,
    as_int,
    as_list,
    as_size,
    as_str,
    as_time,
)
from clustersim.scenario.yamlio import LineDict, line_of, load_yaml

__all__ = ["Scenario", "BenchmarkSpec", "WorkloadSpec", "AlgorithmSpec", "SweepSpec", "RunSpec",
           "load_scenario", "parse_scenario", "FIDELITIES", "PROJECT_ROOT"]

FIDELITIES = ("flow", "analytic", "auto")
PROJECT_ROOT = Path(__file__).resolve().parents[2]

_TOP = ("name", "about", "platform", "catalog", "network", "benchmark", "workload", "algorithm",
        "compare", "sweep", "run", "assumptions", "variants", "label")


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
    workers: tuple[int, ...]
    scaling: str = "weak"
    #: per-point overrides ``{workers: {dotted.field: value}}`` (``sweep.at``), as written
    at: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class RunSpec:
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


# --------------------------------------------------------------------------------------------
def _search_roots(base: Path | None) -> list[Path]:
    roots = []
    if base is not None:
        roots += [base, base.parent]
    from clustersim.shipped import shipped_roots

    roots += [Path.cwd(), *shipped_roots()]
    out: list[Path] = []
    for r in roots:
        if r not in out:
            out.append(r)
    return out


def resolve_platform_file(name: str, base: Path | None, path: tuple) -> Path:
    """Find a platform file: as a path (relative to the scenario, its folder's parent, the
    working directory or the project), or as a bare name in ``topologies/``."""
    cands: list[Path] = []
    p = Path(name)
    names = [p]
    if p.suffix == "":
        names += [Path("topologies") / f"{name}.yaml", p.with_suffix(".yaml")]
    if p.is_absolute():
        cands = [p]
    else:
        for root in _search_roots(base):
            cands += [root / n for n in names]
    for c in cands:
        if c.is_file():
            return c
    from clustersim.shipped import shipped_names

    available = shipped_names("topologies")
    from clustersim.errors import did_you_mean

    hint = did_you_mean(p.stem, available)
    raise InputError(
        f"platform file {name!r} not found{hint} (shipped: {', '.join(available) or 'none'})",
        path=path,
    )


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = dict(copy.deepcopy(dict(base)))
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def _parse_platform(raw: Any, base: Path | None, catalog: Catalog,
                    scenario_file: str | None) -> tuple[Any, dict[str, Any]]:
    from clustersim.platform.describe import build_platform

    path = ("platform",)
    if raw is None:
        raise InputError("is required (a file in topologies/ or an inline description)",
                         path=path)
    overrides: Mapping[str, Any] = {}
    pfile: Path | None = None
    if isinstance(raw, str):
        pfile = resolve_platform_file(raw, base, path)
    elif isinstance(raw, Mapping):
        if "file" in raw:
            pfile = resolve_platform_file(as_str(raw["file"], (*path, "file")), base,
                                          (*path, "file"))
            overrides = {k: v for k, v in raw.items() if k != "file"}
        else:
            overrides = raw
    else:
        raise InputError("must be a platform file name or a mapping", path=path)
    merged: dict[str, Any]
    file_raw: Any = None
    if pfile is not None:
        file_raw = load_yaml(pfile, what="platform file")
        if not isinstance(file_raw, Mapping):
            raise InputError("platform file must hold a mapping", file=str(pfile))
        file_raw = dict(file_raw)
        # a platform file may carry its own catalog extensions
        catalog = catalog.extended(file_raw.pop("catalog", None))
        merged = _deep_merge(file_raw, overrides)
    else:
        merged = dict(overrides)
    try:
        platform = build_platform(merged, catalog, path)
    except InputError as exc:
        sub = exc.path[1:] if exc.path[:1] == ("platform",) else exc.path
        if pfile is not None and (not sub or sub[0] not in overrides):
            line = line_of(file_raw, sub)
            raise InputError(exc.message, file=str(pfile), path=exc.path, line=line) from None
        raise
    return platform, merged


def _parse_network(raw: Any) -> NetworkParams:
    s = Section(raw, ("network",), ("overhead", "efficiency"))
    return NetworkParams(
        overhead=s.get("overhead", as_time, 0.0),
        efficiency=s.get("efficiency", as_float, 1.0, minimum=1e-6, maximum=1.0),
    )


def _sizes(raw: Any, path: tuple) -> tuple[float, ...]:
    if isinstance(raw, Mapping):
        s = Section(raw, path, ("from", "to", "factor"))
        lo = s.get("from", as_size)
        hi = s.get("to", as_size)
        factor = s.get("factor", as_float, 2.0, minimum=1.0001)
        if hi < lo:
            raise InputError(f"'to' ({hi:g} B) is smaller than 'from' ({lo:g} B)", path=path)
        out = []
        v = lo
        while v <= hi * (1 + 1e-9):
            out.append(float(round(v)))
            v *= factor
        return tuple(out)
    return tuple(as_list(raw, path, as_size))


def _parse_benchmark(raw: Any) -> BenchmarkSpec:
    from clustersim.collectives import list_algorithms

    path = ("benchmark",)
    s = Section(raw, path, ("op", "algorithms", "ranks", "sizes", "fp16", "root"))
    ops = list_algorithms()
    op = s.get("op", as_choice, choices=list(ops), kind="collective")
    algs_raw = s.get("algorithms", default="all")
    if algs_raw == "all":
        # every algorithm that needs no extra input (a user tree must be given by name)
        algs = [a for a in ops[op] if a != "user_tree"]
    else:
        algs = as_list(algs_raw, (*path, "algorithms"),
                       lambda v, p: as_choice(v, p, ops[op], f"{op} algorithm"))
    ranks = tuple(as_list(s.get("ranks"), (*path, "ranks"), lambda v, p: as_int(v, p, minimum=1)))
    sizes = _sizes(s.get("sizes"), (*path, "sizes"))
    return BenchmarkSpec(op, tuple(algs), ranks, sizes, s.get("fp16", as_bool, False),
                         s.get("root", as_int, 0, minimum=0))


def _parse_workload(raw: Any) -> WorkloadSpec:
    from clustersim.convergence.profile import load_profile
    from clustersim.workload import OPTIMIZERS, ComputeOverrides, InputPipeline, resolve_model

    path = ("workload",)
    s = Section(raw, path, ("model", "batch_per_worker", "global_batch", "optimizer", "bucket",
                            "input", "jitter", "compute", "convergence"))
    model = resolve_model(s.get("model"), (*path, "model"))
    bpw = s.get("batch_per_worker", as_int, None, minimum=1)
    gb = s.get("global_batch", as_int, None, minimum=1)
    if bpw is None and gb is None:
        raise InputError("needs batch_per_worker (weak scaling) or global_batch (strong scaling)",
                         path=path)
    bucket = s.get("bucket", default=None)
    # none/false: one exchange of the whole gradient; 0: one per layer (per tensor, as
    # Theano-MPI); a size: DDP-style buckets of at least that many bytes
    no_bucket = bucket is None or bucket is False or bucket == "none"
    bucket_bytes = None if no_bucket else as_size(bucket, (*path, "bucket"), allow_zero=True)
    pipeline = (InputPipeline.from_dict(s.raw["input"], (*path, "input"))
                if s.has("input") else None)
    return WorkloadSpec(
        model=model,
        batch_per_worker=bpw,
        global_batch=gb,
        optimizer=s.get("optimizer", as_choice, "momentum", choices=list(OPTIMIZERS),
                        kind="optimizer"),
        bucket_bytes=bucket_bytes,
        jitter=s.get("jitter", as_float, 0.0, minimum=0.0, maximum=1.0),
        compute=ComputeOverrides.from_dict(s.get("compute", default=None), (*path, "compute")),
        pipeline=pipeline,
        convergence=load_profile(model.name, s.raw.get("convergence"), (*path, "convergence")),
    )


def _parse_algorithm(raw: Any, path: tuple) -> AlgorithmSpec:
    from clustersim.algorithms.base import get_algorithm

    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, Mapping):
        raise InputError("must be an algorithm name or a mapping with 'name'", path=path)
    if "name" not in raw:
        raise InputError("is required", path=(*path, "name"))
    name = as_str(raw["name"], (*path, "name"))
    defn = get_algorithm(name, path=(*path, "name"))
    label = raw.get("label", "")
    params = {k: v for k, v in raw.items() if k not in ("name", "label")}
    return AlgorithmSpec(name, defn.resolve_params(params, path), str(label))


#: top-level sections a ``sweep.at`` point may not change: the cases and the axis stay one
_AT_FORBIDDEN = ("sweep", "variants", "algorithm", "compare", "name", "label")


def _parse_sweep(raw: Any) -> SweepSpec:
    path = ("sweep",)
    s = Section(raw, path, ("workers", "scaling", "at"))
    workers = tuple(as_list(s.get("workers"), (*path, "workers"),
                            lambda v, p: as_int(v, p, minimum=1)))
    if list(workers) != sorted(set(workers)):
        raise InputError("must be increasing without repeats", path=(*path, "workers"))
    at: dict[int, Mapping[str, Any]] = {}
    raw_at = s.get("at", default=None)
    if raw_at is not None:
        if not isinstance(raw_at, Mapping):
            raise InputError("must map a worker count to {dotted.field: value, ...}",
                             path=(*path, "at"))
        for key, sets in raw_at.items():
            w = as_int(key, (*path, "at", key), minimum=1)
            if w not in workers:
                raise InputError(f"{w} is not a point of sweep.workers {list(workers)}",
                                 path=(*path, "at", key))
            if not isinstance(sets, Mapping) or not sets:
                raise InputError("must be a mapping of dotted.field: value",
                                 path=(*path, "at", key))
            for dotted in sets:
                top = str(dotted).split(".", 1)[0]
                if top in _AT_FORBIDDEN:
                    raise InputError(f"a sweep point cannot change {top!r}; allowed: any "
                                     f"other field (workload.*, platform.*, network.*, run.*)",
                                     path=(*path, "at", key, dotted))
            at[w] = dict(sets)
    return SweepSpec(workers, s.get("scaling", as_choice, "weak", choices=("weak", "strong"),
                                    kind="scaling"), at)


def _parse_run(raw: Any) -> RunSpec:
    s = Section(raw, ("run",), ("iterations", "warmup", "seed", "fidelity", "repeats",
                                "convergence", "emulation"))
    run = RunSpec(
        iterations=s.get("iterations", as_int, 20, minimum=1),
        warmup=s.get("warmup", as_int, 2, minimum=0),
        seed=s.get("seed", as_int, 0, minimum=0),
        fidelity=s.get("fidelity", as_choice, "auto", choices=FIDELITIES, kind="fidelity"),
        repeats=s.get("repeats", as_int, 1, minimum=1),
        convergence=s.get("convergence", as_choice, "auto", choices=CONVERGENCE_MODES,
                          kind="convergence mode"),
        emulation=parse_emulation(s.get("emulation", None, None)),
    )
    if run.warmup >= run.iterations:
        raise InputError(f"warmup ({run.warmup}) must be smaller than iterations "
                         f"({run.iterations})", path=("run", "warmup"))
    return run


def parse_scenario(raw: Any, file: str | None = None) -> Scenario:
    """Validate a parsed scenario mapping.  Errors get the file and line filled in.

    ``variants: [{label: ..., set: {dotted.key: value, ...}}, ...]`` parse the same scenario
    with those fields changed (e.g. another platform file, GPUDirect on) and attach them, so a
    what-if comparison across platforms is one file and one table.
    """
    try:
        base = _with_points(_parse(raw, file), raw, file)
        if isinstance(raw, Mapping) and raw.get("variants") is not None:
            base = replace(base, variants=_parse_variants(raw, file))
        return base
    except InputError as exc:
        if exc.file is None:
            raise exc.located(file=file, line=line_of(raw, exc.path)) from None
        raise


def _parse_variants(raw: Mapping[str, Any], file: str | None) -> tuple[tuple[str, Scenario], ...]:
    items = as_list(raw["variants"], ("variants",), lambda v, p: (v, p), allow_scalar=False)
    out = []
    plain = {k: v for k, v in raw.items() if k != "variants"}
    for v, path in items:
        sv = Section(v, path, ("label", "set"))
        label = sv.get("label", as_str)
        sets = sv.get("set")
        if not isinstance(sets, Mapping) or not sets:
            raise InputError("must be a mapping of dotted.field: value", path=(*path, "set"))
        vraw = apply_overrides(plain, [f"{k}={json.dumps(val)}" for k, val in sets.items()])
        try:
            out.append((label, _with_points(_parse(vraw, file), vraw, file)))
        except InputError as exc:
            raise InputError(f"in variant {label!r}: {exc.message}", path=(*path, "set"),
                             line=exc.line) from None
    return tuple(out)


def _with_points(scn: Scenario, raw: Any, file: str | None) -> Scenario:
    """Attach the scenarios of the sweep points that have ``sweep.at`` overrides.

    Why per point: a measured setup can differ at one scale in a way the model does not
    produce by itself (Theano-MPI's VGG16-16 row: compute per GPU 23% slower at 8 GPUs than
    at 1-4); writing that point's measured efficiency beside the sweep keeps it visible
    instead of folding it into every point.
    """
    if scn.sweep is None or not scn.sweep.at:
        return scn
    plain = {k: v for k, v in raw.items() if k != "variants"}
    points = []
    for w, sets in scn.sweep.at.items():
        praw = apply_overrides(plain, [f"{k}={json.dumps(val)}" for k, val in sets.items()])
        try:
            points.append((w, _parse(praw, file)))
        except InputError as exc:
            where = f"{format_path(exc.path)}: " if exc.path else ""
            raise InputError(f"at {w} workers: {where}{exc.message}", path=("sweep", "at", w),
                             line=exc.line) from None
    return replace(scn, points=tuple(sorted(points, key=lambda p: p[0])))


def _parse(raw: Any, file: str | None) -> Scenario:
    if not isinstance(raw, Mapping):
        raise InputError("a scenario must be a YAML mapping (name:, platform:, ...)")
    s = Section(raw, (), _TOP, what="scenario section")
    base = Path(file).resolve().parent if file else None
    catalog = builtin_catalog().extended(s.get("catalog", default=None))
    platform, praw = _parse_platform(s.get("platform", default=None), base, catalog, file)
    bench = _parse_benchmark(s.raw["benchmark"]) if s.has("benchmark") else None
    workload = _parse_workload(s.raw["workload"]) if s.has("workload") else None
    algorithm = _parse_algorithm(s.raw["algorithm"], ("algorithm",)) if s.has("algorithm") \
        else None
    compare: tuple[AlgorithmSpec, ...] = ()
    if s.has("compare"):
        compare = tuple(as_list(s.raw["compare"], ("compare",), _parse_algorithm,
                                nonempty=False))
    if bench is None and workload is None:
        raise InputError("a scenario needs a 'benchmark' (collective) or a 'workload' "
                         "(training) section")
    if workload is not None and algorithm is None:
        raise InputError("is required when a workload is given", path=("algorithm",))
    sweep = _parse_sweep(s.raw["sweep"]) if s.has("sweep") else None
    run = _parse_run(s.get("run", default=None))
    if (run.convergence == "analytic" and workload is not None
            and workload.convergence is None):
        from clustersim.convergence.profile import REQUIRED_HINT

        raise InputError(f"'analytic' needs a convergence profile and model "
                         f"{workload.model.name!r} has none shipped (or it is off): give "
                         f"workload.convergence with {REQUIRED_HINT}",
                         path=("run", "convergence"))
    ndev = platform.num_devices
    if bench is not None:
        for i, r in enumerate(bench.ranks):
            if r > ndev:
                raise InputError(f"{r} ranks but the platform has only {ndev} devices",
                                 path=("benchmark", "ranks", i))
    if sweep is not None:
        for i, w in enumerate(sweep.workers):
            if w > ndev:
                raise InputError(f"{w} workers but the platform has only {ndev} devices",
                                 path=("sweep", "workers", i))
    assumptions = tuple(as_list(s.get("assumptions", default=[]), ("assumptions",), as_str,
                                nonempty=False))
    name = s.get("name", as_str, Path(file).stem if file else "scenario")
    label = s.get("label", as_str, "base")
    return Scenario(
        name=name,
        about=s.get("about", as_str, ""),
        file=file,
        catalog=catalog,
        platform=platform,
        platform_raw=praw,
        network=_parse_network(s.get("network", default=None)),
        run=run,
        benchmark=bench,
        workload=workload,
        algorithm=algorithm,
        compare=compare,
        sweep=sweep,
        assumptions=assumptions,
        label=label,
    )


def apply_overrides(raw: Any, sets: Sequence[str]) -> Any:
    """Apply ``--set a.b.c=value`` overrides (value parsed as YAML) to a raw scenario."""
    import yaml

    raw = copy.deepcopy(raw)
    for item in sets:
        if "=" not in item:
            raise InputError(f"--set needs KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        parts = [p for p in key.strip().split(".") if p]
        if not parts:
            raise InputError(f"--set needs a key, got {item!r}")
        node = raw
        for p in parts[:-1]:
            if not isinstance(node.get(p), dict):
                node[p] = LineDict()
                node[p].key_lines = {}
            node = node[p]
        node[parts[-1]] = yaml.safe_load(value)
    return raw


def load_scenario(path: str | Path, sets: Sequence[str] = ()) -> Scenario:
    """Load and validate a scenario file (``sets``: ``--set key=value`` overrides)."""
    raw = load_yaml(path, what="scenario file")
    if sets:
        if not isinstance(raw, dict):
            raise InputError("a scenario must be a YAML mapping", file=str(path))
        raw = apply_overrides(raw, sets)
    return parse_scenario(raw, str(path))
