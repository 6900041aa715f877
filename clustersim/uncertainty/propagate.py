"""Propagation: the uncertain inputs' samples through the simulator, and the quantiles of
what comes out.

A sample is one scenario: the file's fields with the sampled values set as ``--set`` would
(so each is validated like one written in the file), and the profile with its covariance
blocks' sampled values.  Every sample keeps ``run.seed``: the same jitter stream in every
sample (common random numbers), so the spread is the inputs', not the seeds'.

:func:`evaluate` is the one place that runs samples (a local process pool); the sweep
executors of ``clustersim.explore`` can take its place without touching the rest.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clustersim._signals import check
from clustersim.errors import InputError
from clustersim.uncertainty.spec import UncertainInput

__all__ = ["Sample", "Inputs", "collect_inputs", "draw", "sample_scenario", "evaluate"]


@dataclass
class Inputs:
    """Everything uncertain in one prediction: the scenario's fields and the profile's
    covariance blocks (each block takes as many cube dimensions as it has parameters)."""

    fields: tuple[UncertainInput, ...] = ()
    blocks: tuple[Any, ...] = ()  # clustersim.calibration.covariance.CovBlock
    profile: Any = None

    @property
    def dims(self) -> int:
        return len(self.fields) + sum(len(b.parameters) for b in self.blocks)

    @property
    def names(self) -> list[str]:
        return [f.field for f in self.fields] + [f"calibration:{p}" for b in self.blocks
                                                 for p in b.parameters]


@dataclass
class Sample:
    """One draw: values of the scenario's fields and of the profile's parameters."""

    fields: dict[str, Any] = field(default_factory=dict)
    profile: dict[str, float] = field(default_factory=dict)


def collect_inputs(scn: Any, profile: Any = None) -> Inputs:
    """The scenario's ``uncertain:`` inputs and, with a profile, its covariance blocks -
    only the parameters the profile applies to this platform (a device or link class the
    platform lacks is "not applied": moving it would move nothing, yet it would count as an
    input and take cube dimensions).  A block partly applied keeps its applied parameters
    (the marginal of a multivariate normal: their rows and columns).  Nothing uncertain is
    an input error naming the scenario file."""
    blocks = tuple(b for b in (_applied(b, scn.platform, profile) for b in
                               (profile.covariance if profile is not None else ()))
                   if b is not None)
    inputs = Inputs(tuple(scn.uncertain), blocks, profile)
    if inputs.dims == 0:
        _nothing_uncertain(scn, profile)
    return inputs


def _applied(block: Any, platform: Any, profile: Any) -> Any:
    """``block`` reduced to the parameters the profile applies to ``platform`` (None: none),
    by the rules of :func:`clustersim.calibration.applyprofile.apply_profile_data`."""
    from clustersim.calibration.covariance import without
    from clustersim.network.params import ANY_CLASS

    devices = {platform.spec(d).name for d in range(platform.num_devices)}
    links = set(platform.link_kind)
    any_applied = bool(devices & set(profile.devices) or links & set(profile.links))

    def applies(name: str) -> bool:
        parts = name.split(".")
        if parts[0] == "network" and parts[1] == "protocols":  # applied with its link class
            return any_applied and ".".join(parts[2:-2]) in (links | {ANY_CLASS})
        if parts[0] == "network":
            return any_applied
        end = -2 if parts[0] == "devices" and len(parts) >= 4 and \
            parts[-2] == "efficiency_by_class" else -1
        return ".".join(parts[1:end]) in (devices if parts[0] == "devices" else links)

    return without(block, {n for n in block.parameters if not applies(n)})


def _nothing_uncertain(scn: Any, profile: Any) -> None:
    from clustersim.scenario.yamlio import line_of, load_yaml

    raw: Any = load_yaml(scn.file, what="scenario file") if scn.file else {}
    has = isinstance(raw, Mapping) and "uncertain" in raw
    what = ("its 'uncertain:' section is empty" if has else
            "the scenario has no 'uncertain:' section")
    if profile is None:
        prof = "and no calibration profile with a covariance was given"
    elif profile.covariance:
        prof = "and the calibration profile's covariance blocks are not applied to this " \
               "platform (none of their devices or link classes is in it)"
    else:
        prof = "and the calibration profile has no 'covariance:' section"
    raise InputError(f"nothing is uncertain: {what} {prof}; allowed: entries like "
                     f"'workload.jitter: {{uniform: [0, 0.05]}}' (docs/uncertainty.md)",
                     file=scn.file, path=("uncertain",),
                     line=line_of(raw, ("uncertain",)) if has else None)


#: what the model accepts of a profile parameter drawn from its block's Gaussian
MAX_TRIES = 64


def _accepts(names: Sequence[str], mean: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Which rows of ``x`` (draws of one block) the model accepts: efficiencies above 0,
    rates and bandwidths above 1 % of the fitted value (a delta-method Gaussian says nothing
    about a rate 100 times off its fit).  The physical limits - an efficiency of 1 (the
    device's peak), an overhead or latency of 0 - are not conditions: a draw beyond them is
    projected onto them (see :func:`_profile_values`)."""
    ok = np.ones(x.shape[0], dtype=bool)
    for j, name in enumerate(names):
        last = name.rsplit(".", 1)[-1]
        if "efficiency" in name:
            ok &= x[:, j] > 0.0
        elif last not in ("overhead", "latency", "step_overhead"):
            ok &= x[:, j] >= 0.01 * mean[j]
    return ok


def _capped(name: str) -> bool:
    """A device's efficiency, at most 1 (its peak).  A protocol segment's or a collective's
    efficiency is relative to the link's fitted bandwidth or to a lone message and may
    exceed 1 (a segment whose sizes do not show their bandwidth term, a collective whose
    transfers overlap better than one message)."""
    return "efficiency" in name and not name.startswith("network.")


def _profile_values(block: Any, u: np.ndarray) -> dict[str, float]:
    """A multivariate normal draw of one block at cube coordinates ``u`` (inverse CDF of
    each coordinate, then the covariance's square root), truncated to what the model
    accepts (:func:`_accepts`): a draw outside is redrawn - from a generator seeded by
    ``u`` itself, so the same point gives the same values - until one is accepted, which is
    exact sampling of the Gaussian conditioned on the accepted region.  Why not clip there:
    a Gaussian has tails the physics does not, and clipping piled them up on the bound (half
    the samples of a rate whose sd is 17 times its value sat at exactly 1 % of it).

    At the physical limits - a device's efficiency of 1, an overhead or latency of 0 - a
    draw is clipped instead (projected onto the limit).  Why: fits land on them (a GEMM faster than
    the nominal peak is held at efficiency 1, an overhead too small to resolve at 0), and
    conditioning on the allowed side kept only the half of such a parameter's Gaussian away
    from its fit - every draw below 1, or above 0 - which moved the whole band off the
    nominal prediction (a calibrated CPU run: nominal 21.6 ms, band 24.0 [22.5, 26.2] ms).
    Projected, a parameter's median stays its fitted value: this is how an estimate
    constrained to a region is distributed when the truth is on its edge (half its mass on
    the edge; Self & Liang, JASA 82, 1987).  (A fit *on* the limit is not sampled at all:
    ``calibrate`` leaves it out of the covariance, :func:`~clustersim.calibration.fitlines.
    undetermined` - each of its draws could only move the step one way.)  After
    :data:`MAX_TRIES` batches the draw is
    clipped (a block whose Gaussian is almost all outside is the fit's problem; its values
    still stay within the bounds)."""
    from scipy.stats import norm

    mean = np.asarray(block.value, dtype=float)
    cov = np.asarray(block.matrix, dtype=float)
    # the square root of a PSD matrix (singular ones included) by eigendecomposition of the
    # *correlation* matrix: the parameters of one block differ by 20 orders of magnitude
    # (an efficiency and a rate in B/s), and eigh of the raw covariance would lose the small
    # ones in the round-off of the large ones
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    safe = np.where(sd > 0, sd, 1.0)
    w, v = np.linalg.eigh(cov / np.outer(safe, safe))
    root = (sd[:, None] * v) * np.sqrt(np.clip(w, 0.0, None))
    u = np.asarray(u, dtype=float)
    x = (mean + root @ norm.ppf(np.clip(u, 1e-12, 1 - 1e-12)))[None, :]
    names = list(block.parameters)
    if not _accepts(names, mean, x)[0]:
        rng = np.random.default_rng(np.frombuffer(u.tobytes(), dtype=np.uint32))
        for _ in range(MAX_TRIES):
            cand = mean + rng.standard_normal((256, len(mean))) @ root.T
            ok = np.flatnonzero(_accepts(names, mean, cand))
            if ok.size:
                x = cand[ok[:1]]
                break
    out = {}
    for name, m, val in zip(names, mean, x[0]):
        last = name.rsplit(".", 1)[-1]
        if "efficiency" in name:
            val = min(max(val, 1e-6), 1.0) if _capped(name) else max(val, 1e-6)
        elif last in ("overhead", "latency", "step_overhead"):
            val = max(val, 0.0)
        else:
            val = max(val, 0.01 * m)
        out[name] = float(val)
    return out


def to_samples(inputs: Inputs, units: np.ndarray) -> list[Sample]:
    """The cube points (n x dims) as samples."""
    from clustersim.calibration.covariance import segment_collectives
    from clustersim.uncertainty.sampling import to_value

    out = []
    k = len(inputs.fields)
    # the blocks' fitted values and the held collective efficiencies (_hold_products)
    fitted = {**segment_collectives(inputs.profile),
              **{n: v for b in inputs.blocks for n, v in zip(b.parameters, b.value)}}
    for row in np.atleast_2d(units):
        s = Sample({f.field: to_value(f, row[j]) for j, f in enumerate(inputs.fields)})
        j = k
        for b in inputs.blocks:
            s.profile.update(_profile_values(b, row[j:j + len(b.parameters)]))
            j += len(b.parameters)
        _hold_products(s.profile, fitted)
        out.append(s)
    return out


def _hold_products(values: dict[str, float], fitted: Mapping[str, float]) -> None:
    """A segment's fitted collective efficiency (sampled, or held) follows its link's sampled
    bandwidth and the segment's sampled lone-message efficiency inversely: ``bandwidth x
    efficiency x collective_efficiency`` keeps the collective fit's (sampled) product.

    Why: ``calibrate`` fits the collective efficiencies *given* the ping-pong's bandwidth
    and segment efficiencies, so the collective measurements fix the product - a collective
    of that size moves its bytes at ``bandwidth x efficiency x collective_efficiency`` -
    and the collective fit's covariance is conditional on the ping-pong values.  Drawn
    independently, a segment efficiency known to +-70 % (a few ping-pong sizes) moved
    every all-reduce of that size by as much, although the all-reduces themselves were
    measured to +-17 %: a refitted H200 run's band reached 3.6 times its nominal step.  A
    held collective efficiency (QA 17 LOW-2) had moved as 1/bandwidth, by +-3 %."""
    from clustersim.calibration.collfit import EFFICIENCY_BOUNDS

    for coll in [n for n in fitted if n.startswith("network.protocols.")
                 and n.endswith(".collective_efficiency")]:
        seg = coll[:-len("collective_efficiency")]
        scale = 1.0
        eff = seg + "efficiency"
        if eff in fitted and eff in values:
            scale *= fitted[eff] / values[eff]
        bw = "links." + ".".join(seg.split(".")[2:-2]) + ".bandwidth"
        if bw in fitted and bw in values:
            scale *= fitted[bw] / values[bw]
        if scale != 1.0:  # within the fit's range (a held 100 is its bound, not a figure)
            values[coll] = min(max(values.get(coll, fitted[coll]) * scale,
                                   EFFICIENCY_BOUNDS[0]), EFFICIENCY_BOUNDS[1])


def draw(inputs: Inputs, n: int, seed: int) -> list[Sample]:
    """``n`` samples from a scrambled Sobol sequence seeded with ``seed``."""
    from clustersim.uncertainty.sampling import unit_sobol

    if inputs.dims == 0:  # collect_inputs said why, with the file
        raise InputError("nothing is uncertain (docs/uncertainty.md)", path=("uncertain",))
    return to_samples(inputs, unit_sobol(n, inputs.dims, seed))


def sample_scenario(raw: Mapping[str, Any], file: str | None, sample: Sample,
                    profile: Any = None) -> Any:
    """The scenario of one sample; a sampled value the scenario refuses is an input error
    naming the ``uncertain:`` entry that produced it."""
    from clustersim.scenario.overrides import set_fields
    from clustersim.scenario.schema import parse_scenario
    from clustersim.scenario.yamlio import line_of
    from clustersim.uncertainty.reach import spread_algorithm_fields

    plain = {k: v for k, v in raw.items() if k != "uncertain"}
    # algorithm.X reaches every case that takes X (uncertainty/reach.py; checked when read)
    plain, main = spread_algorithm_fields(plain, sample.fields)
    try:
        scn = parse_scenario(set_fields(plain, main), file)
    except InputError as exc:
        bad = next((f for f in sample.fields if exc.path and
                    ".".join(str(p) for p in exc.path).startswith(f)), None)
        if bad is None:
            bad = next(iter(sample.fields), "")
        from clustersim.scenario.uncertain import names_the_field, whole_advice
        from clustersim.uncertainty.spec import parse_uncertain

        try:  # the entry that drew it (parsed before this sample was drawn)
            inp = next((i for i in parse_uncertain(raw.get("uncertain") or {})
                        if i.field == bad), None)
        except InputError:
            inp = None
        whole = whole_advice(inp, exc) if inp is not None else None
        advice = ("" if names_the_field(exc, bad) else
                  f" ({whole or 'narrow the distribution'})")
        raise InputError(f"the sampled value {sample.fields.get(bad)!r} is refused: "
                         f"{exc.message}{advice}", file=file,
                         path=("uncertain", bad),
                         line=line_of(raw, ("uncertain", bad))) from None
    if profile is not None:
        from clustersim.calibration.applyprofile import apply_profile_data
        from clustersim.calibration.covariance import with_values

        prof = with_values(profile, sample.profile) if sample.profile else profile
        scn = apply_profile_data(scn, prof)[0]
    return scn


#: what the forked pool processes run (inherited, never pickled)
_POOL: list[Callable[[int], Any]] = []


def _task(i: int) -> tuple[int, Any]:
    return i, _POOL[0](i)


def _points(scn: Any) -> dict[str, list[Any]]:
    from clustersim.sim.sweep import run_sweep
    from clustersim.uncertainty.focus import measured_points

    return measured_points(run_sweep(scn, jobs=1))


def evaluate(build: Callable[[int], Any], n: int, jobs: int = 1,
             advance: Callable[[int], Any] = lambda k=1: None,
             run: Callable[[Any], Any] = _points) -> list[Any]:
    """``run(build(i))`` for i in 0..n-1, on ``jobs`` forked processes, in sample order.

    The default ``run`` is the whole sweep of the sample's scenario (every algorithm, every
    point), one process per sample: samples are the coarse, independent unit here."""
    out: list[Any] = [None] * n
    if jobs > 1 and n > 1 and "fork" in multiprocessing.get_all_start_methods():
        _POOL[:] = [lambda i: run(build(i))]
        try:
            with multiprocessing.get_context("fork").Pool(min(jobs, n)) as pool:
                for i, res in pool.imap_unordered(_task, range(n)):
                    out[i] = res
                    advance(1)
                    check()  # a SIGTERM caught inside a fork hook (clustersim._signals)
        finally:
            _POOL.clear()
    else:
        for i in range(n):
            out[i] = run(build(i))
            advance(1)
    return out
