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
    ({"x": [1]}, None, ["__import__('os')"], (), "Call"),
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
