"""Design-space axes: any scenario field as a grid, or sampled (Sobol / Latin hypercube),
with constraints.

The ``sweep:`` section of a scenario may hold::

    sweep:
      axes:
        platform.file: [supercloud_v100_eth25, supercloud_v100_opa100]   # a grid axis
        workload.batch_per_worker: {from: 16, to: 256, log: true, integer: true}   # a range
        network.overhead: {from: 1 us, to: 20 us, log: true}   # ends with the field's unit
        workers: [2, 8, 32]          # the worker count is an axis like any other
      sample: {method: sobol, n: 64, seed: 0}   # without it: the full grid (no ranges allowed)
      constraints: ["workload.batch_per_worker * workers <= 4096"]

Why ``scipy.stats.qmc``: scrambled Sobol' and Latin hypercube designs with a seed are the
standard space-filling designs (Sobol' 1967; McKay, Beckman & Conover 1979); SciPy's are
well tested and deterministic for a given seed.  A grid axis in a sampled design is
categorical: the unit coordinate picks one of its values (``floor(u * len)``).  A range is
drawn on SI numbers: an end written with its unit (``1 us``, on a field that reads a time) is
read as that number (:mod:`clustersim.explore.rangeunits`), so its points are the plain
range's.

Constraints are Python-like expressions over the axis names (dotted names are fine):
arithmetic, comparisons, ``and``/``or``/``not``, ``in`` a literal list
(:mod:`clustersim.explore.constraints`).  A point that breaks a constraint is dropped, so a
sampled design may end with fewer than ``n`` points (the command says how many).
"""

from __future__ import annotations

import itertools
import json
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clustersim.errors import InputError
from clustersim.explore.constraints import TooLarge, compile_constraint, eval_constraint
from clustersim.explore.rangeunits import range_end
from clustersim.scenario.fields import Section, as_bool, as_choice, as_int

__all__ = ["Axis", "AxesSpec", "parse_axes", "design", "expand", "expand_counted",
           "axis_name", "WORKERS"]

#: the axis that sets the worker count (not a scenario field)
WORKERS = "workers"
#: top-level sections an axis may not change: the sweep itself and the case list (variants,
#: compare: an axis on compare replaced the cases, and a case vanished without a word), and
#: the text fields no simulation reads (an ``about`` axis doubled the table with equal rows)
_FORBIDDEN = ("sweep", "variants", "compare", "name", "label", "uncertain", "about",
              "assumptions")
#: a design larger than this is a typo, not a plan (10^6 points x >= 10 ms each = hours)
MAX_POINTS = 1_000_000


@dataclass(frozen=True)
class Axis:
    """One input dimension: a list of values (grid / categorical) or a numeric range."""

    name: str
    values: tuple[Any, ...] = ()
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    integer: bool = False

    @property
    def is_range(self) -> bool:
        return not self.values

    def at(self, u: float) -> Any:
        """The value at unit coordinate ``u`` in [0, 1)."""
        if self.values:
            return self.values[min(int(u * len(self.values)), len(self.values) - 1)]
        if self.log:
            x = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            x = self.low + u * (self.high - self.low)
        if self.integer:
            return self._integer(u)
        return float(x)

    def _integer(self, u: float) -> int:
        """Each whole number of [low, high] owns a bin of width 1 ([k - 0.5, k + 0.5), or
        that bin's log-width with ``log``), so a uniform range gives every count the same
        chance; rounding a draw over [low, high] gave the two end values half of it."""
        lo, hi = math.ceil(self.low), math.floor(self.high)
        a, b = lo - 0.5, hi + 0.5
        if self.log:
            x = math.exp(math.log(a) + u * (math.log(b) - math.log(a)))
        else:
            x = a + u * (b - a)
        return int(min(hi, max(lo, math.floor(x + 0.5))))


@dataclass(frozen=True)
class AxesSpec:
    """A scenario's ``sweep:`` design (module docs): its axes, the sampling ``method`` with
    ``n`` draws and ``seed`` (None: the full grid), and the constraints as written."""

    axes: tuple[Axis, ...]
    method: str | None = None  # None: grid; "sobol" | "lhs"
    n: int = 0
    seed: int = 0
    constraints: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    @property
    def flags(self) -> tuple[str, ...]:
        """The axes whose values are all true/false: a condition on their own."""
        return tuple(a.name for a in self.axes
                     if a.values and all(isinstance(v, bool) for v in a.values))


_RANGE_KEYS = ("from", "to", "log", "integer")


def _worker(value: Any, path: tuple) -> int:
    """A worker count: a whole number >= 1 (``1e3`` counts, as in sweep.workers)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and value == int(value) and 1 <= value <= 10**9
    if not ok:
        raise InputError(f"a worker count must be a whole number >= 1, not "
                         f"{json.dumps(value, default=str)[:40]}", path=path)
    return int(value)


def _check_values(name: str, values: list, path: tuple) -> None:
    """Repeats give duplicate rows; worker counts are whole numbers >= 1 (as sweep.workers):
    a 0 gave rows of zero throughput, 2.5 or true ran silently as 2 or 1 workers."""
    seen: dict[str, int] = {}
    for i, v in enumerate(values):
        if name == WORKERS:
            _worker(v, (*path, i))
        # 64 and 64.0 are one value (the scenario reads both as 64): by value, not type
        number = isinstance(v, (int, float)) and not isinstance(v, bool)
        key = (repr(float(v)) if number
               else json.dumps(v, sort_keys=True, default=str) + type(v).__name__)
        if key in seen:
            raise InputError(f"the value {v!r} is given twice (items {seen[key]} and {i}); "
                             f"each value once", path=(*path, i))
        seen[key] = i
    if name == "algorithm":
        _check_titles(values, path)


def _check_titles(values: list, path: tuple) -> None:
    """The whole algorithms of an ``algorithm`` axis are reported under titles of their own
    (its label, else its name), as ``predict`` asks of ``compare`` (QA 19 L14): two values
    labelled alike made rows that only the ``algorithm (axis)`` column told apart, and
    charts grouped by ``algorithm`` drew them as one series."""
    seen: dict[str, int] = {}
    for i, v in enumerate(values):
        label = v.get("label") if isinstance(v, Mapping) else None
        label = label.strip() if isinstance(label, str) else label  # as the reader keeps it
        title = (label or v.get("name")) if isinstance(v, Mapping) else v
        if not isinstance(title, str):
            continue  # the point's own parse names what is wrong with it
        if title in seen:
            where = (*path, i, "label") if isinstance(v, Mapping) and "label" in v \
                else (*path, i)
            raise InputError(f"items {seen[title]} and {i} would both be reported as "
                             f"{title!r} (the algorithm column): give them distinct "
                             f"'label's", path=where)
        seen[title] = i


def axis_name(key: Any) -> str | None:
    """An axis name as the sweep uses it (``workers`` or a dotted field path), blanks around
    it and its parts dropped; None where it is not one (empty, or an empty part as in
    ``workload..x``).  Why: the name is the table's column and the constraints' variable;
    ``" workload.batch_per_worker "`` made a column with blanks in it, and ``""`` a crash."""
    parts = [p.strip() for p in str(key).split(".")]
    return ".".join(parts) if all(parts) else None


def _axis(name: str, raw: Any, path: tuple) -> Axis:
    top = name.split(".", 1)[0]
    if top in _FORBIDDEN:
        why = (" (the cases: list them there; an algorithm.X axis reaches every compare "
               "entry that takes X)" if top == "compare" else "")
        raise InputError(f"an axis cannot change {top!r}{why}; allowed: workers or a field of "
                         f"platform.*, workload.*, algorithm.*, network.*, run.*, catalog.* or "
                         f"placement.*", path=path)
    if isinstance(raw, list):
        if not raw:
            raise InputError("must not be empty", path=path)
        _check_values(name, raw, path)
        return Axis(name, tuple(_worker(v, path) for v in raw) if name == WORKERS
                    else tuple(raw))
    if isinstance(raw, Mapping):
        odd = [str(k) for k in raw if k not in _RANGE_KEYS]
        if odd:  # `--set sweep.axes.workload.batch_per_worker=[..]` splits at the dots
            raise InputError(
                f"an axis is a list of values or a range {{from:, to:}} (allowed keys: "
                f"{', '.join(_RANGE_KEYS)}), not a mapping with {odd[0]!r}; a dotted field is "
                f"one axis name: write the whole mapping, e.g. --set 'sweep.axes={{{name}."
                f"{odd[0]}: [32, 64]}}'", path=path)
        s = Section(raw, path, _RANGE_KEYS)
        # an end with its unit (``1 us``) where the field reads one: its SI number (rangeunits)
        lo = s.get("from", range_end, name=name)
        hi = s.get("to", range_end, name=name)
        log = s.get("log", as_bool, False)
        if hi <= lo:
            raise InputError(f"'to' ({hi:g}) must be larger than 'from' ({lo:g})", path=path)
        if log and lo <= 0:
            said = raw.get("from")  # as written: 1e-400 reads as 0, which nobody wrote
            shown = f"{said!r} (0 in floating point)" if lo == 0 and said != 0 else f"{lo:g}"
            raise InputError(f"a log range needs 'from' > 0, not {shown}",
                             path=(*path, "from"))
        integer = s.get("integer", as_bool, name == WORKERS)
        if name == WORKERS:
            if not integer:
                raise InputError("a worker count is a whole number: leave out 'integer' or "
                                 "set it true", path=(*path, "integer"))
            _worker(math.ceil(lo), (*path, "from"))
        if integer and math.ceil(lo) > math.floor(hi):
            raise InputError(f"no whole number between {lo:g} and {hi:g}", path=path)
        return Axis(name, (), lo, hi, log, integer)
    if name == WORKERS:
        return Axis(name, (_worker(raw, path),))
    return Axis(name, (raw,))  # a single value: a fixed field, shown as a column


def parse_axes(axes: Mapping[str, Any], sample: Mapping[str, Any] | None,
               constraints: Sequence[str], workers: Sequence[int] = ()) -> AxesSpec:
    """Read ``sweep.axes``/``sample``/``constraints``; ``workers`` (the old ``sweep.workers``
    form) becomes the ``workers`` axis when the axes do not name one."""
    path = ("sweep", "axes")
    out: list[Axis] = []
    given: dict[str, str] = {}
    for k, v in axes.items():
        name = axis_name(k)
        if name is None:
            raise InputError(f"an axis name is workers or a field path such as "
                             f"workload.batch_per_worker (dotted, no empty part), not "
                             f"{str(k)!r}", path=(*path, str(k)) if str(k).strip(" .") else path)
        if name in given:
            raise InputError(f"the axis {name!r} is given twice (as {given[name]!r} and "
                             f"{str(k)!r}); each axis once", path=(*path, str(k)))
        given[name] = str(k)
        out.append(_axis(name, v, (*path, str(k))))
    if workers and any(a.name == WORKERS for a in out):
        raise InputError("give the worker counts once: in sweep.workers or as the 'workers' "
                         "axis (to use the axis over a file's sweep.workers: --set "
                         "sweep.workers=null)", path=(*path, WORKERS))
    if workers and not any(a.name == WORKERS for a in out):
        out.insert(0, Axis(WORKERS, tuple(workers)))
    method, n, seed = None, 0, 0
    if sample is not None:
        sp = ("sweep", "sample")
        if not isinstance(sample, Mapping):
            raise InputError(f"must be a mapping {{method: sobol or lhs, n: N, seed: S}}, not "
                             f"{'a list' if isinstance(sample, list) else repr(sample)}",
                             path=sp)
        s = Section(sample, sp, ("method", "n", "seed"))
        method = s.get("method", as_choice, choices=("sobol", "lhs"), kind="sampling method")
        n = s.get("n", as_int, minimum=1, maximum=MAX_POINTS)
        seed = s.get("seed", as_int, 0, minimum=0)
    else:
        for a in out:
            if a.is_range:
                raise InputError("a range {from:, to:} needs sweep.sample (sobol or lhs with "
                                 "n); a grid axis is a list of values", path=(*path, a.name))
        size = math.prod(len(a.values) for a in out)
        if size > MAX_POINTS:
            raise InputError(f"the grid has {size:,} points, more than {MAX_POINTS:,}; "
                             f"sample it (sweep.sample) or use fewer values", path=path)
    spec = AxesSpec(tuple(out), method, n, seed, tuple(constraints))
    for i, c in enumerate(spec.constraints):
        compile_constraint(c, spec.names, ("sweep", "constraints", i), spec.flags)
    return spec


def _unit_design(spec: AxesSpec) -> Any:
    from scipy.stats import qmc

    d = len(spec.axes)
    if spec.method == "sobol":
        eng = qmc.Sobol(d, scramble=True, seed=spec.seed)
        with warnings.catch_warnings():  # n not a power of 2 loses balance; that is allowed
            warnings.simplefilter("ignore", UserWarning)
            return eng.random(spec.n)
    return qmc.LatinHypercube(d, seed=spec.seed).random(spec.n)


def design(spec: AxesSpec) -> list[dict[str, Any]]:
    """Every point of the design before the constraints, in order."""
    if not spec.axes:
        return [{}]
    if spec.method is None:
        return [dict(zip(spec.names, combo))
                for combo in itertools.product(*(a.values for a in spec.axes))]
    return [{a.name: a.at(float(u)) for a, u in zip(spec.axes, row)}
            for row in _unit_design(spec)]


def expand(spec: AxesSpec) -> list[dict[str, Any]]:
    """Every point of the design as ``{axis: value}``, in a fixed order (grid: the last axis
    varies fastest; sampled: the design's order), constraints applied.  Constraints that
    leave no point are an input error: an empty table is never what was meant."""
    return expand_counted(spec)[0]


def expand_counted(spec: AxesSpec) -> tuple[list[dict[str, Any]], int]:
    """:func:`expand` and how many points of the design the constraints excluded (the
    summary says so: a 3 x 3 grid printing "6 points" left the user guessing)."""
    points = design(spec)
    checks = [(compile_constraint(c, spec.names, ("sweep", "constraints", i), spec.flags), i)
              for i, c in enumerate(spec.constraints)]
    kept = []
    for p in points:
        for tree, i in checks:
            try:
                ok = eval_constraint(tree, p)
            except (TypeError, ZeroDivisionError, OverflowError, ValueError) as exc:
                # a float overflow's text is an errno tuple: say what it means
                why = ("a number beyond a float's range" if isinstance(exc, OverflowError)
                       else exc)
                raise InputError(f"the constraint {spec.constraints[i]!r} cannot be evaluated "
                                 f"at {_show(p)}: {why}", path=("sweep", "constraints", i)
                                 ) from None
            except TooLarge as exc:
                raise InputError(f"the constraint {spec.constraints[i]!r} {exc}; constraints "
                                 f"compare values, they do not build huge numbers or lists",
                                 path=("sweep", "constraints", i)) from None
            if not ok:
                break
        else:
            kept.append(p)
    if points and not kept:
        raise InputError(f"the constraints leave no point ({len(points):,} of {len(points):,} "
                         f"points excluded); loosen them or change the axes",
                         path=("sweep", "constraints"))
    return kept, len(points) - len(kept)


def _show(point: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}={v!r}" for k, v in point.items()) + "}"
