"""The headline's swing: each uncertain input moved alone over its range, the others kept
at the scenario's own values - the band and the top drivers that ``predict`` prints under
the tables of any scenario with an ``uncertain:`` section.

Why one at a time here, when ``predict --uncertainty N`` and ``sensitivity`` do it properly:
cost.  A headline must not be printed without the range its free parameters span, so this
runs on every ``predict``, and it must cost about a second, not a minute: with k inputs it is
at most 2k simulations of one algorithm at the sweep's two ends (the nominal is the
prediction's own point; 7 for knl_4253, ~0.6 s more on two cores, run on the sweep's own
pool by ``predict``), where a Sobol design is N (k + 2).  It is the classic tornado: what each input
alone can do to the headline, which is also how such ranges are quoted in papers ("moves
between 52.6 % and 98.4 % when batch, tau, jitter or the all-reduce change one at a time").
It is a screening band, not a probability interval: interactions (two inputs moved together)
and the inputs' distributions do not enter; the output says so and names the two commands
that include them.

Values tried: a range's or a uniform's two ends (within its ``clip``; whole numbers inside
for ``kind: int``), a choice's every other option of positive weight, and the 5th and 95th
percentiles of any other distribution (within its ``clip``): a normal's ends are infinite,
and a triangular's or loguniform's ends are where it rarely or never draws, unlike a
uniform's; a value equal to the one the scenario sets is not run again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from clustersim.uncertainty.propagate import Sample, evaluate, sample_scenario
from clustersim.uncertainty.spec import UncertainInput

__all__ = ["Swing", "Moved", "SwingPlan", "outside", "swing_values", "swing_plan", "swing_result",
           "headline_swing"]

_MISSING = object()


@dataclass
class Moved:
    """One input and the headline's metrics at each value it was moved to."""

    input: UncertainInput
    values: list[Any]
    metrics: list[dict[str, float | None]]

    def span(self, metric: str, nominal: float | None) -> tuple[float, float] | None:
        """The metric's lowest and highest value over this input's values and the nominal
        (a time to target never reached counts as infinite; None: another metric missing)."""
        vals = [_finite_or_never(metric, m.get(metric)) for m in self.metrics]
        vals.append(_finite_or_never(metric, nominal))
        if any(v is None for v in vals):
            return None
        return min(vals), max(vals)  # type: ignore[type-var]


def _finite_or_never(metric: str, v: float | None) -> float | None:
    return float("inf") if v is None and metric == "time_to_target" else v


@dataclass
class Swing:
    """The nominal headline, every input's :class:`Moved`, and the runs it took."""

    algorithm: str
    workers: int
    nominal: dict[str, float | None]
    moved: list[Moved] = field(default_factory=list)
    runs: int = 0
    #: inputs whose scenario value lies outside their entry: (field, that value)
    outside: list[tuple[str, Any]] = field(default_factory=list)
    #: the variant measured (``algorithm`` then reads ``VARIANT · TITLE``); None: the
    #: scenario has no variants
    variant: str | None = None

    def band(self, metric: str) -> tuple[float, float] | None:
        """Lowest and highest value of ``metric`` over every run (None: not in every run)."""
        spans = [m.span(metric, self.nominal.get(metric)) for m in self.moved]
        if not spans or any(s is None for s in spans):
            return None
        return min(s[0] for s in spans), max(s[1] for s in spans)  # type: ignore[index]

    def drivers(self, metric: str) -> list[tuple[Moved, float]]:
        """Inputs by how far they move ``metric`` (largest first; ties keep file order)."""
        out = []
        for m in self.moved:
            s = m.span(metric, self.nominal.get(metric))
            if s is not None:
                out.append((m, s[1] - s[0] if s[1] != s[0] else 0.0))  # never - never: 0
        return sorted(out, key=lambda t: -t[1])


def _raw_get(raw: Mapping[str, Any], dotted: str) -> Any:
    node: Any = raw
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def swing_values(inp: UncertainInput, current: Any = _MISSING) -> list[Any]:
    """The values ``inp`` is moved to (see the module's docstring), ``current`` left out."""
    from clustersim.uncertainty.sampling import to_value

    if inp.dist == "choice":  # an option of weight 0 is never drawn: not moved to either
        weights = inp.weights or (1.0,) * len(inp.params)
        vals = [v for v, w in zip(inp.params, weights) if w > 0]
    elif inp.dist in ("range", "uniform"):
        lo, hi = inp.params
        if inp.clip is not None:  # clipped first, then whole numbers inside what is left
            lo, hi = max(lo, inp.clip[0]), min(hi, inp.clip[1])
        vals = [math.ceil(lo), math.floor(hi)] if inp.kind == "int" else [lo, hi]
    else:
        vals = [to_value(inp, 0.05), to_value(inp, 0.95)]
    out: list[Any] = []
    for v in vals:
        if v not in out and not _same(v, current):
            out.append(v)
    return out


def outside(inp: UncertainInput, value: Any) -> bool:
    """Whether the scenario's own ``value`` of the input lies where the entry never draws:
    outside its bounds (clip included), or not among a choice's options of positive weight.

    Why say so: the band always spans the nominal run, so with ``network.efficiency: 0.9``
    and ``{uniform: [0.3, 0.4]}`` it read "74.4% to 89.2%", a range no allowed value gives
    (most likely a typo in one of the two)."""
    from clustersim.uncertainty.spec import as_quantity, bounds

    if value is _MISSING or value is None or isinstance(value, bool):
        return False
    if inp.dist == "choice":
        weights = inp.weights or (1.0,) * len(inp.params)
        return not any(_same(v, value) for v, w in zip(inp.params, weights) if w > 0)
    read = as_quantity(value)
    if read is None:
        return False
    x = read[0]
    lo, hi = bounds(inp)
    return not lo - 1e-12 * abs(lo) <= x <= hi + 1e-12 * abs(hi)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    return a == b


@dataclass
class SwingPlan:
    """What a swing runs, parsed and built before anything runs: the focused scenario of
    each run (``scenarios[0]`` the nominal) and the input each moves (-1: none)."""

    title: str
    inputs: Sequence[UncertainInput]
    tried: list[list[Any]]
    moved: list[int]
    scenarios: list[Any]
    outside: list[tuple[str, Any]] = field(default_factory=list)
    variant: str | None = None


def swing_plan(raw: Mapping[str, Any], file: str | None, inputs: Sequence[UncertainInput],
               profile: Any = None, platform: Any = None) -> SwingPlan:
    """The runs of :func:`headline_swing`.  Runs that move a ``workload.*`` or
    ``algorithm.*`` field share one platform object - ``platform`` (the prediction's own,
    whose routes and message plans its sweep has cached in the pool's processes) or else the
    nominal run's: such a field does not change the platform, and a process then computes
    what it caches on it once, not once per run (~0.3 s of ~0.45 s per run at 4,253
    workers)."""
    from dataclasses import replace

    from clustersim.uncertainty.focus import focus_case

    focused = focus_case(raw, None)
    focus, title = focused.raw, focused.title
    moved = [-1]  # the nominal first
    samples = [Sample()]
    tried: list[list[Any]] = []
    off: list[tuple[str, Any]] = []
    for k, inp in enumerate(inputs):
        own = _raw_get(raw, inp.field)
        if outside(inp, own):
            off.append((inp.field, own))
        vals = swing_values(inp, own)
        tried.append(vals)
        moved += [k] * len(vals)
        samples += [Sample({inp.field: v}) for v in vals]
    scns = [sample_scenario(focus, file, s, profile) for s in samples]
    base = scns[0].platform if platform is None else platform
    for i, k in enumerate(moved):
        if k >= 0 and inputs[k].field.split(".", 1)[0] in ("workload", "algorithm"):
            scns[i] = replace(scns[i], platform=base)
    return SwingPlan(str(title), inputs, tried, moved, scns, off, focused.variant)


def swing_result(plan: SwingPlan, metrics: Sequence[dict[str, float | None]],
                 runs: int) -> Swing:
    """The :class:`Swing` of a plan from each run's headline metrics, in plan order (the
    nominal's first); ``runs``: how many were simulated for it."""
    from clustersim.sim.sweep import worker_counts

    out = Swing(plan.title, int(worker_counts(plan.scenarios[0])[-1]), metrics[0], runs=runs,
                outside=list(plan.outside), variant=plan.variant)
    for k, inp in enumerate(plan.inputs):
        out.moved.append(Moved(inp, plan.tried[k],
                               [r for j, r in zip(plan.moved, metrics) if j == k]))
    return out


def headline_swing(raw: Mapping[str, Any], file: str | None,
                   inputs: Sequence[UncertainInput], jobs: int,
                   progress: Callable[[int], AbstractContextManager[Any]] = lambda n: nullcontext(
                       lambda k=1: None),
                   profile: Any = None,
                   run: Callable[[Any], dict[str, float | None]] | None = None,
                   nominal: dict[str, float | None] | None = None) -> Swing:
    """Move each input alone (``raw``: the scenario file's fields, ``--set`` applied;
    ``profile``: a calibration profile applied to every run, as to the prediction;
    ``nominal``: the headline's metrics already simulated - the prediction's own point,
    which the nominal run equals - or None to run it; ``run``: a scenario's headline
    metrics, by default its focused sweep's).

    Every value is parsed before anything runs (a value the scenario refuses is an input
    error naming its ``uncertain:`` entry, as with ``--uncertainty``); see
    :func:`swing_plan` for the platform the runs share."""
    from clustersim.uncertainty.focus import headline_metrics

    plan = swing_plan(raw, file, inputs, profile)
    scns = plan.scenarios
    todo = list(range(1 if nominal is not None else 0, len(scns)))
    with progress(len(todo)) as advance:
        res = evaluate(lambda i: scns[todo[i]], len(todo), jobs, advance,
                       run=run or headline_metrics)
    if nominal is not None:
        res = [nominal, *res]
    return swing_result(plan, res, len(todo))
