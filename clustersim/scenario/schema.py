"""Scenario files: YAML in, validated typed objects out.

A scenario says *what to predict*: on which platform (a file in ``topologies/`` or inline, with
overrides), for which workload and algorithm (or which collective benchmark), over which sweep,
with which run settings.  Everything is validated here, at the edge, so that the simulator
never sees a bad value; every error names file, line and field path.

See docs/scenarios.md for the full format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from clustersim.catalog import builtin_catalog
from clustersim.errors import InputError
from clustersim.network.params import EXECUTIONS, EXPLICIT_FIELDS, NetworkParams
from clustersim.scenario.benchmark import parse_benchmark
from clustersim.scenario.consistency import (
    check_batch,
    check_counts,
    check_kind,
    check_labels,
    check_overlap,
    check_root,
    too_many,
)
from clustersim.scenario.emulation import (
    CONVERGENCE_MODES,
    check_convergence,
    parse_emulation,
)
from clustersim.scenario.fields import (
    MISSING,
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
from clustersim.scenario.overrides import apply_overrides, parse_variants, with_points
from clustersim.scenario.placement import check_servers, group_devices, parse_placement
from clustersim.scenario.platform_file import PROJECT_ROOT, parse_platform
from clustersim.scenario.specs import (
    AlgorithmSpec,
    BenchmarkSpec,
    RunSpec,
    Scenario,
    SweepSpec,
    WorkloadSpec,
)
from clustersim.scenario.yamlio import line_of, load_yaml, origin_of

__all__ = ["Scenario", "BenchmarkSpec", "WorkloadSpec", "AlgorithmSpec", "SweepSpec", "RunSpec",
           "load_scenario", "parse_scenario", "apply_overrides", "FIDELITIES", "PROJECT_ROOT"]

FIDELITIES = ("flow", "analytic", "auto")

_TOP = ("name", "about", "platform", "catalog", "network", "benchmark", "workload", "algorithm",
        "compare", "sweep", "run", "assumptions", "variants", "label", "uncertain", "placement")


def _parse_network(raw: Any, platform: Any = None) -> NetworkParams:
    """``network:``.  The platform's link transports (catalog) apply unless
    ``transports: false``; an explicit ``overhead``/``efficiency`` replaces their figure."""
    s = Section(raw, ("network",), ("overhead", "efficiency", "transports", "execution"))
    specs = getattr(platform, "transport_specs", {}) if s.get("transports", as_bool, True) \
        else {}
    return NetworkParams(
        overhead=s.get("overhead", as_time, 0.0),
        efficiency=s.get("efficiency", as_float, 1.0, minimum=1e-6, maximum=1.0),
        transports=tuple((t.name, t.overhead, t.efficiency, t.inline, t.dma_read)
                         for t in specs.values()),
        explicit=tuple(k for k in EXPLICIT_FIELDS if s.has(k)),
        execution=s.get("execution", as_choice, "rounds", choices=EXECUTIONS,
                        kind="collective execution"),
    )


def _parse_workload(raw: Any, base: Path | None = None) -> WorkloadSpec:
    from clustersim.convergence.profile import load_profile
    from clustersim.workload import OPTIMIZERS, ComputeOverrides, InputPipeline, resolve_model

    path = ("workload",)
    s = Section(raw, path, ("model", "batch_per_worker", "global_batch", "optimizer", "bucket",
                            "fusion", "input", "jitter", "compute", "convergence"))
    model = resolve_model(s.get("model"), (*path, "model"))
    # a million samples per worker (or 10**9 in all) is far past any GPU's memory: a typo
    bpw = s.get("batch_per_worker", as_int, None, minimum=1, maximum=1_000_000)
    gb = s.get("global_batch", as_int, None, minimum=1, maximum=1_000_000_000)
    if bpw is None and gb is None:
        raise InputError("needs batch_per_worker (weak scaling) or global_batch (strong scaling)",
                         path=path)
    bucket = s.get("bucket", default=None)
    # none/false: one exchange of the whole gradient; 0: one per layer (per tensor, as
    # Theano-MPI); a size: DDP-style buckets of at least that many bytes
    no_bucket = bucket is None or bucket is False or bucket == "none"
    bucket_bytes = None if no_bucket else as_size(bucket, (*path, "bucket"), allow_zero=True)
    fusion = None
    if s.has("fusion"):  # a framework's grouping; bucket is the older, framework-free knob
        from clustersim.workload.fusion import parse_fusion

        if not no_bucket:
            raise InputError("give bucket or fusion, not both", path=(*path, "fusion"))
        fusion = parse_fusion(s.raw["fusion"], (*path, "fusion"))
    pipeline = (InputPipeline.from_dict(s.raw["input"], (*path, "input"))
                if s.has("input") else None)
    return WorkloadSpec(
        model=model,
        batch_per_worker=bpw,
        global_batch=gb,
        optimizer=s.get("optimizer", as_choice, "momentum", choices=list(OPTIMIZERS),
                        kind="optimizer"),
        bucket_bytes=bucket_bytes,
        fusion=fusion,
        jitter=s.get("jitter", as_float, 0.0, minimum=0.0, maximum=1.0),
        compute=ComputeOverrides.from_dict(s.get("compute", default=None), (*path, "compute")),
        pipeline=pipeline,
        convergence=load_profile(model.name, s.raw.get("convergence"), (*path, "convergence"),
                                 base),
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
    label = as_str(raw["label"], (*path, "label")).strip() if "label" in raw else ""
    if "label" in raw and not label:  # "" fell back to the name unseen (QA 16c)
        raise InputError("must not be empty (leave it out to report the algorithm's name)",
                         path=(*path, "label"))
    params = {k: v for k, v in raw.items() if k not in ("name", "label")}
    return AlgorithmSpec(name, defn.resolve_params(params, path), str(label))


#: top-level sections a ``sweep.at`` point may not change: the cases and the axis stay one
_AT_FORBIDDEN = ("sweep", "variants", "algorithm", "compare", "name", "label")


def _parse_sweep(raw: Any) -> SweepSpec:
    path = ("sweep",)
    s = Section(raw, path, ("workers", "scaling", "at", "axes", "sample", "constraints"))
    axes = s.get("axes", default={})
    if not isinstance(axes, Mapping):
        raise InputError("must map a field (dotted.path or workers) to a list of values or a "
                         "range {from:, to:}", path=(*path, "axes"))
    if s.has("axes") and not axes and not s.has("workers"):  # it said "workers: is required"
        raise InputError("is empty: give at least one axis (a field, dotted.path or workers, "
                         "with a list of values or a range {from:, to:}), or sweep.workers",
                         path=(*path, "axes"))
    # with axes the worker count may be an axis, or default to the platform's devices
    workers = tuple(as_list(s.get("workers", default=[] if axes else MISSING),
                            (*path, "workers"), lambda v, p: as_int(v, p, minimum=1),
                            nonempty=False))
    if list(workers) != sorted(set(workers)):
        raise InputError("must be increasing without repeats", path=(*path, "workers"))
    if not workers and not axes:  # [] ran every device of the platform, without a word
        raise InputError("must list at least one worker count (or give sweep.axes, whose "
                         "points run at every device unless 'workers' is an axis)",
                         path=(*path, "workers"))
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
    sample = s.get("sample", default=None)
    constraints = tuple(as_list(s.get("constraints", default=[]), (*path, "constraints"), as_str,
                                nonempty=False))
    return SweepSpec(workers, s.get("scaling", as_choice, "weak", choices=("weak", "strong"),
                                    kind="scaling"), at, dict(axes), sample, constraints)


def _parse_run(raw: Any) -> RunSpec:
    s = Section(raw, ("run",), ("iterations", "warmup", "seed", "fidelity", "repeats",
                                "convergence", "emulation"))
    run = RunSpec(
        iterations=s.get("iterations", as_int, 20, minimum=1),
        warmup=s.get("warmup", as_int, 2, minimum=0),
        seed=s.get("seed", as_int, 0, minimum=0),
        fidelity=s.get("fidelity", as_choice, "auto", choices=FIDELITIES, kind="fidelity"),
        repeats=s.get("repeats", as_int, 1, minimum=1),
        # YAML 1.1 reads a bare `off` as false: that is what the user meant
        convergence=s.get("convergence", lambda v, p, **kw: as_choice(
            "off" if v is False else v, p, **kw), "auto", choices=CONVERGENCE_MODES,
            kind="convergence mode"),
        emulation=parse_emulation(s.get("emulation", None, None)),
    )
    if run.warmup >= run.iterations:
        raise InputError(f"warmup ({run.warmup}) must be smaller than iterations "
                         f"({run.iterations})", path=("run", "warmup"))
    return run


#: Bounds on run counts (checked beside ``_parse_run``): a simulated iteration costs
#: milliseconds to seconds and per-iteration records, so a billion is a typo, not a plan.
MAX_ITERATIONS = 1_000_000
MAX_REPEATS = 1_000


def _check_run_bounds(run: RunSpec) -> None:
    for name, top in (("iterations", MAX_ITERATIONS), ("repeats", MAX_REPEATS)):
        value = getattr(run, name, None)
        if isinstance(value, int) and value > top:
            raise InputError(f"must be <= {top:,}, not {value:,}", path=("run", name))


def parse_scenario(raw: Any, file: str | None = None) -> Scenario:
    """Validate a parsed scenario mapping.  Errors get the file and line filled in.

    ``variants: [{label: ..., set: {dotted.key: value, ...}}, ...]`` parse the same scenario
    with those fields changed (e.g. another platform file, GPUDirect on) and attach them, so a
    what-if comparison across platforms is one file and one table.
    """
    try:
        first = _parse_homed(raw, file)
        check_overlap(first.workload, first.algorithm, first.compare)  # as written only
        base = with_points(first, raw, file, _parse_homed)
        if isinstance(raw, Mapping) and raw.get("variants") is not None:
            base = replace(base, variants=parse_variants(raw, file, _parse_homed))
        return base
    except InputError as exc:
        if exc.file is None:
            raise exc.located(file=file, line=line_of(raw, exc.path),
                              origin=origin_of(raw, exc.path)) from None
        raise


def _parse_homed(raw: Any, file: str | None, built: tuple[Any, Any] | None = None
                 ) -> Scenario:
    """:func:`_parse`, its "unknown field" refusals saying where the field belongs; here,
    before a sweep point or a variant rewords the message and the refusal's name is lost."""
    from clustersim.scenario.homes import rehome

    try:
        return _parse(raw, file, built)
    except InputError as exc:
        raise rehome(exc) from None


def _parse(raw: Any, file: str | None, built: tuple[Any, Any] | None = None) -> Scenario:
    """``built``: (platform, its raw form) already parsed from the same ``platform:`` and
    ``catalog:`` (the uncertain entries' check), so that it is not built again."""
    if not isinstance(raw, Mapping):
        raise InputError("a scenario must be a YAML mapping (name:, platform:, ...)")
    if "topology" in raw and "platform" not in raw:  # QA 10 M11: was "did you mean 'catalog'?"
        shown = file or "FILE"
        raise InputError(f"this looks like a platform (topology) file, not a scenario; a "
                         f"scenario names it with 'platform: {shown}' and adds 'name:' and a "
                         f"'benchmark:' or 'workload:' and 'algorithm:' (docs/scenarios.md)",
                         path=("topology",))
    s = Section(raw, (), _TOP, what="scenario section")
    base = Path(file).resolve().parent if file else None
    catalog = builtin_catalog().extended(s.get("catalog", default=None))
    placement = parse_placement(s.get("placement", default=None))
    if built is not None:  # grouped already, if placement asks for it
        platform, praw = built
    else:
        platform, praw = parse_platform(s.get("platform", default=None), base, catalog, file)
        if placement.devices_per_worker > 1:
            from clustersim.platform.describe import build_platform

            praw, grouped = group_devices(dict(praw), catalog, placement.devices_per_worker)
            platform = build_platform(praw, grouped, ("platform",))
    check_kind(s.raw)  # a benchmark or a training prediction, not both
    bench = parse_benchmark(s.raw["benchmark"]) if s.has("benchmark") else None
    workload = _parse_workload(s.raw["workload"], base) if s.has("workload") else None
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
    if sweep is not None and not sweep.workers:  # axes without workers: all devices
        sweep = replace(sweep, workers=(platform.num_devices,))
    check_batch(workload, sweep)
    check_root(bench)
    check_labels(algorithm, compare, s.raw.get("compare"))
    run = _parse_run(s.get("run", default=None))
    _check_run_bounds(run)
    check_convergence(run.convergence, workload)
    ndev = platform.num_devices
    if bench is not None:
        for i, r in enumerate(bench.ranks):
            if r > ndev:
                raise too_many("ranks", r, ndev, placement.devices_per_worker, raw,
                               ("benchmark", "ranks", i))
    if sweep is not None:
        for i, w in enumerate(sweep.workers):
            if w > ndev:
                raise too_many("workers", w, ndev, placement.devices_per_worker, raw,
                               ("sweep", "workers", i))
        check_counts((algorithm, *compare) if algorithm else (), sweep.workers)
    if placement.server == "machine" and sweep is not None:
        check_servers(platform, sweep.workers, (algorithm, *compare) if algorithm else ())
    assumptions = tuple(as_list(s.get("assumptions", default=[]), ("assumptions",), as_str,
                                nonempty=False))
    name = s.get("name", as_str, Path(file).stem if file else "scenario")
    label = s.get("label", as_str, "base")
    uncertain: tuple[Any, ...] = ()
    if s.has("uncertain"):
        from clustersim.uncertainty.spec import parse_uncertain

        uncertain = parse_uncertain(s.raw["uncertain"])
    return Scenario(
        name=name,
        about=s.get("about", as_str, ""),
        file=file,
        catalog=catalog,
        platform=platform,
        platform_raw=praw,
        network=_parse_network(s.get("network", default=None), platform),
        run=run,
        benchmark=bench,
        workload=workload,
        algorithm=algorithm,
        compare=compare,
        sweep=sweep,
        assumptions=assumptions,
        label=label,
        uncertain=uncertain,
        placement=placement,
    )


def load_scenario(path: str | Path, sets: Sequence[str] = ()) -> Scenario:
    """Load and validate a scenario file (``sets``: ``--set key=value`` overrides)."""
    raw = load_yaml(path, what="scenario file")
    if sets:
        if not isinstance(raw, dict):
            raise InputError("a scenario must be a YAML mapping", file=str(path))
        try:
            raw = apply_overrides(raw, sets)
        except InputError as exc:
            raise exc.located(file=str(path)) from None
    scn = parse_scenario(raw, str(path))
    if scn.uncertain:  # each entry applied to the scenario (clustersim.scenario.uncertain)
        from clustersim.scenario.uncertain import check_applied

        def parse_set(sraw: Any, field: str) -> Any:
            keep = field.split(".", 1)[0] not in ("platform", "catalog", "placement")
            return _parse(sraw, str(path), (scn.platform, scn.platform_raw) if keep else None)

        check_applied(raw, str(path), scn.uncertain, parse_set)
    return scn
