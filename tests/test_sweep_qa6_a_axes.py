"""``clustersim sweep`` defects found by QA pass 6a in what a sweep's axes and constraints
accept: constraints that build huge lists, axis names that are no field path, ``compare`` as
an axis, and constraints that are not text."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

# the scenario and helpers of the first half of these QA tests
from test_sweep_qa6_a import _refused, _scenario, _sweep

from clustersim.errors import InputError
from clustersim.explore.axes import parse_axes


# --------------------------------------------------------------------------- H3
@pytest.mark.parametrize("constraint, says", [
    # 10,000 lists of 10,000 (each '*' within the old per-operation limit): 10^12
    # comparisons in C, where not even SIGTERM stopped the process
    ("[[[1]*10000]*10000]*10000 == [[[1]*10000]*10000]*10000", "builds a list of more"),
    ("[[1]*100]*1000 == [[1]*100]*1000", "repeats a text or list to 101,000 items"),
    ("[1]*6000 + [1]*6000 == [0]", "joins a text or list of more than 10,000"),
    ("9**300 * 9**300 > 0", "computes a product with about"),
])
def test_a_constraint_that_would_build_a_huge_value_is_refused(
        tmp_path: Path, capsys, constraint: str, says: str) -> None:
    path = _scenario(tmp_path, f"  workers: [1, 2]\n  constraints: ['{constraint}']\n")
    t0 = time.perf_counter()
    err = _refused(capsys, _sweep(path, tmp_path / "o"))
    assert f"{path}:" in err and "sweep.constraints[0]" in err and says in err, err
    assert time.perf_counter() - t0 < 60  # (the old code ran for hours; no timing asserted)


def test_small_lists_in_constraints_still_work(tmp_path: Path, capsys) -> None:
    path = _scenario(tmp_path, "  workers: [1, 2, 4]\n"
                               "  constraints: ['workers in [1] * 2 + [4]']\n")
    assert _sweep(path, tmp_path / "o") == 0
    assert "4 points" in capsys.readouterr().out  # 2 workers x 2 cases


# --------------------------------------------------------------------------- M1, L5
@pytest.mark.parametrize("name", ["", ".", "  ", "workload..batch_per_worker", "workload."])
def test_an_axis_name_that_is_no_field_path_is_one_clean_error(tmp_path: Path, capsys,
                                                              name: str) -> None:
    path = _scenario(tmp_path, f"  workers: [2]\n  axes:\n    '{name}': [32]\n")
    err = _refused(capsys, _sweep(path, tmp_path / "o"))
    assert f"{path}:" in err and "an axis name is workers or a field path" in err, err
    assert f"not {name!r}" in err


def test_an_axis_name_is_read_without_its_blanks(tmp_path: Path, capsys) -> None:
    """The column is the field's name (it was ' workload.batch_per_worker ', blanks and
    all), and two spellings of one field are one axis given twice."""
    path = _scenario(tmp_path, "  workers: [2]\n  axes:\n"
                               "    ' workload . batch_per_worker ': [32, 64]\n")
    out = tmp_path / "o"
    assert _sweep(path, out, "-q") == 0
    assert (out / "sweep.csv").read_text().startswith(
        "algorithm,workers,workload.batch_per_worker,seed,")
    path = _scenario(tmp_path, "  workers: [2]\n  axes:\n"
                               "    workload.batch_per_worker: [32]\n"
                               "    ' workload.batch_per_worker': [64]\n")
    err = _refused(capsys, _sweep(path, out))
    assert "the axis 'workload.batch_per_worker' is given twice" in err
    assert f"{path}:11" in err  # the line of the second spelling


def test_parse_axes_refuses_an_empty_name() -> None:
    with pytest.raises(InputError, match="an axis name is workers or a field path"):
        parse_axes({"": [1]}, None, ())


# --------------------------------------------------------------------------- M4
def test_compare_is_not_an_axis(tmp_path: Path, capsys) -> None:
    """An axis on ``compare`` replaced the case list: a case vanished and another ran in
    its place, under its name."""
    path = _scenario(tmp_path, "  workers: [2]\n  axes:\n"
                               "    compare: [[], [{name: bsp, strategy: nccl32}]]\n")
    err = _refused(capsys, _sweep(path, tmp_path / "o"))
    assert f"{path}:10" in err and "an axis cannot change 'compare'" in err, err



# --------------------------------------------------------------------------- L7
@pytest.mark.parametrize("given, what", [("{a: 'workers < 2'}", "a mapping"),
                                         ("[null]", "empty"), ("[[x]]", "a list")])
def test_a_constraint_that_is_not_text_is_named_plainly(tmp_path: Path, capsys, given: str,
                                                        what: str) -> None:
    path = _scenario(tmp_path, f"  workers: [1, 2]\n  constraints: {given}\n")
    err = _refused(capsys, _sweep(path, tmp_path / "o"))
    assert f"{path}:9" in err and "a constraint is a condition as text" in err, err
    assert err.rstrip().endswith(f"not {what}") and "LineDict" not in err
