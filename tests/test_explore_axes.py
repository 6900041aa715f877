"""Sweep axes: grid order and size, Sobol/LHS designs, ranges, constraints, input errors."""

from __future__ import annotations

import math

import pytest

from clustersim.errors import InputError
from clustersim.explore.axes import expand, parse_axes


def test_grid_is_the_cartesian_product_last_axis_fastest() -> None:
    spec = parse_axes({"a": [1, 2, 3], "b.c": ["x", "y"]}, None, [], workers=[4, 8])
    pts = expand(spec)
    assert len(pts) == 2 * 3 * 2
    assert spec.names == ("workers", "a", "b.c")  # sweep.workers becomes the first axis
    assert pts[0] == {"workers": 4, "a": 1, "b.c": "x"}
    assert pts[1] == {"workers": 4, "a": 1, "b.c": "y"}
    assert pts[-1] == {"workers": 8, "a": 3, "b.c": "y"}


def test_constraints_drop_points_by_closed_form_count() -> None:
    # pairs (b, w) in {16..256 by 2x} x {1..64 by 2x} with b * w <= 1024: b=2^i, w=2^j,
    # i in 4..8, j in 0..6, i + j <= 10
    bs = [2 ** i for i in range(4, 9)]
    ws = [2 ** j for j in range(7)]
    spec = parse_axes({"workload.batch_per_worker": bs, "workers": ws}, None,
                      ["workload.batch_per_worker * workers <= 1024 and not workers == 2"])
    pts = expand(spec)
    want = sum(1 for i in range(4, 9) for j in range(7) if i + j <= 10 and j != 1)
    assert len(pts) == want
    assert all(p["workload.batch_per_worker"] * p["workers"] <= 1024 for p in pts)


@pytest.mark.parametrize("method", ["sobol", "lhs"])
def test_sampled_designs_are_deterministic_and_in_range(method: str) -> None:
    axes = {"x": {"from": 1, "to": 1000, "log": True}, "workers": {"from": 2, "to": 64},
            "alg": ["a", "b", "c", "d"]}
    spec = parse_axes(axes, {"method": method, "n": 256, "seed": 7}, [])
    p1, p2 = expand(spec), expand(spec)
    assert p1 == p2 and len(p1) == 256
    xs = [p["x"] for p in p1]
    assert all(1 <= x <= 1000 for x in xs)
    # log-uniform: about half the points below the geometric mid-point sqrt(1*1000)
    below = sum(x < math.sqrt(1000) for x in xs) / len(xs)
    assert abs(below - 0.5) < 0.05
    assert all(isinstance(p["workers"], int) and 2 <= p["workers"] <= 64 for p in p1)
    # a grid axis in a sampled design is categorical: LHS puts exactly n/4 in each value
    counts = {v: sum(p["alg"] == v for p in p1) for v in "abcd"}
    if method == "lhs":
        assert set(counts.values()) == {64}
    else:  # scrambled Sobol' with n = 2^8: balanced as well
        assert set(counts.values()) == {64}
    other = expand(parse_axes(axes, {"method": method, "n": 256, "seed": 8}, []))
    assert other != p1


@pytest.mark.parametrize("axes, sample, constraints, workers, needle", [
    ({"x": {"from": 1, "to": 2}}, None, [], (), "needs sweep.sample"),
    ({"x": {"from": 2, "to": 1}}, {"method": "sobol", "n": 4}, [], (), "must be larger"),
    ({"x": {"from": 0, "to": 1, "log": True}}, {"method": "lhs", "n": 4}, [], (), "log range"),
    ({"x": [1]}, {"method": "halton", "n": 4}, [], (), "sobol"),
    ({"workers": [1, 2]}, None, [], (1, 2), "once"),
    ({"sweep.workers": [1]}, None, [], (), "cannot change 'sweep'"),
    ({"x": [1]}, None, ["y > 2"], (), "not an axis"),
    ({"x": [1]}, None, ["__import__('os')"], (), "a function call"),
    ({"x": [1]}, None, ["x >"], (), "cannot read"),
    ({"x": [], "y": [1]}, None, [], (), "must not be empty"),
])
def test_bad_axes_name_their_field(axes, sample, constraints, workers, needle) -> None:
    with pytest.raises(InputError) as exc:
        parse_axes(axes, sample, constraints, workers)
    assert needle in str(exc.value)
    assert exc.value.path[0] == "sweep"


def test_a_huge_grid_is_refused() -> None:
    with pytest.raises(InputError, match="1,000,000"):
        parse_axes({f"a{i}": list(range(10)) for i in range(7)}, None, [])


@pytest.mark.parametrize("workers, needle", [
    ([0], "whole number >= 1, not 0"), ([-2], "not -2"), (["x"], 'not "x"'),
    ([[2]], "not [2]"), ([2.5], "not 2.5"), ([True], "not true"),
    ([4, 4], "given twice"), ({"from": 0, "to": 8}, "not 0"),
    ({"from": 1, "to": 8, "integer": False}, "whole number"),
])
def test_worker_axis_values_are_checked(workers, needle) -> None:
    sample = {"method": "lhs", "n": 4} if isinstance(workers, dict) else None
    with pytest.raises(InputError) as exc:
        parse_axes({"workers": workers}, sample, [])
    assert needle in str(exc.value)
    assert exc.value.path[:3] == ("sweep", "axes", "workers")


def test_repeated_axis_values_and_a_dotted_set_are_refused() -> None:
    with pytest.raises(InputError, match="given twice"):
        parse_axes({"x": [1, 2, 1]}, None, [])
    with pytest.raises(InputError, match="given twice"):  # one value: both read as 64
        parse_axes({"workload.batch_per_worker": [64, 64.0]}, None, [])
    with pytest.raises(InputError, match="placement"):  # an uncertainty is not an axis
        parse_axes({"uncertain.workload.jitter": [0, 0.1]}, None, [])
    with pytest.raises(InputError, match=r"sweep.axes=\{workload.batch_per_worker"):
        parse_axes({"workload": {"batch_per_worker": [32, 64]}}, None, [])
    with pytest.raises(InputError, match="must be a mapping {method") as exc:
        parse_axes({"x": [1]}, ["sobol", 8], [])
    assert "LineList" not in str(exc.value) and "list" in str(exc.value)


def test_integer_ranges_give_every_count_the_same_chance() -> None:
    from collections import Counter

    from clustersim.explore.axes import Axis

    a = Axis("workers", (), 1.0, 4.0, False, True)
    got = Counter(a.at(i / 100_000) for i in range(100_000))
    assert got == {1: 25_000, 2: 25_000, 3: 25_000, 4: 25_000}
    # log: each count owns the log-width of [k - 0.5, k + 0.5)
    b = Axis("x", (), 1.0, 3.0, True, True)
    got = Counter(b.at(i / 100_000) for i in range(100_000))
    share = math.log(1.5 / 0.5) / math.log(3.5 / 0.5)
    assert got[1] == pytest.approx(100_000 * share, abs=2)


@pytest.mark.parametrize("constraint, needle", [
    ("9 ** 9 ** 9 > workers", "digits"),
    ('"a" * 10 ** 10 == "b"', "repeats a text"),
    ('"%999999999s" % 1 == "b"', "string formatting"),
    ("10.0 ** 4000 > workers", "digits"),
])
def test_constraints_cannot_compute_huge_values(constraint, needle) -> None:
    with pytest.raises(InputError, match=needle) as exc:
        expand(parse_axes({"workers": [1, 2]}, None, [constraint]))
    assert exc.value.path == ("sweep", "constraints", 0)


@pytest.mark.parametrize("constraint, needle", [
    ("2 ** 1330 > workers", "a power of 401 digits (at most 400)"),  # 401 > 400, said so
    ("0.5 ** -10000 > workers", "a power of 3,011 digits"),
    ("10.0 ** 308.5 > workers", "cannot be evaluated at {workers=1}: a number beyond a "
                                "float's range"),  # not "(34, 'Numerical result out of range')"
    ("1 << 10000 > workers", "uses <<; allowed"),  # not "uses BinOp"
    ("workers is 1", "uses is; allowed"),
    ("abs(workers) > 1", "uses a function call; allowed"),  # not "uses Call"
    ("(workers if 1 else 2) > 1", "uses if-else; allowed"),  # not "uses IfExp"
])
def test_constraint_refusals_say_what_is_wrong(constraint, needle) -> None:
    with pytest.raises(InputError) as exc:
        expand(parse_axes({"workers": [1, 2]}, None, [constraint]))
    assert needle in exc.value.message, exc.value.message


def test_small_powers_and_negative_exponents_are_computed() -> None:
    """``2 ** -10000`` is 0.0, nothing huge: it had been refused as a 3,010-digit power."""
    kept = expand(parse_axes({"workers": [1, 2]}, None,
                             ["2 ** -10000 < workers", "10 ** 399 > workers",
                              "(-2) ** 3 < workers"]))
    assert [p["workers"] for p in kept] == [1, 2]


def test_constraints_that_leave_no_point_are_an_input_error() -> None:
    with pytest.raises(InputError, match=r"leave no point \(2 of 2 points excluded\)"):
        expand(parse_axes({"workers": [1, 2]}, None, ["workers > 100"]))


def test_seed_means_keep_a_count_whole() -> None:
    """With run.repeats the master's figures are averaged over seeds; ``servers`` (the same
    count in each) came out 1.0, a float column in the table."""
    from clustersim.explore.saturation import mean_figures as _mean_figures

    out = _mean_figures([{"servers": 1, "service_time": 0.02, "saturation_workers": None},
                         {"servers": 1, "service_time": 0.04, "saturation_workers": 9.0}])
    assert out == {"servers": 1, "service_time": pytest.approx(0.03),
                   "saturation_workers": None}
    assert type(out["servers"]) is int


def test_the_table_carries_every_time_to_accuracy_figure() -> None:
    """samples_to_target and epochs_to_target were left out of the tidy table (predict's
    JSON had them)."""
    from clustersim.explore.points import METRICS
    from clustersim.sim.metrics import PointMetrics

    tta = [f for f in PointMetrics.__dataclass_fields__ if f.endswith("_to_target")]
    assert tta and set(tta) <= set(METRICS)
