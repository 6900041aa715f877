"""An ``algorithm.X`` axis beside an axis that replaces the main algorithm (``algorithm``,
``algorithm.name``) reaches the main case at the points whose algorithm takes X: the
point's algorithm, not the one written.  It had been refused where the written algorithm
did not take X (``algorithm.shards`` beside ``algorithm.name: [sync_easgd, async_sgd]``),
and given to points whose algorithm does not take it where the written one did."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from clustersim.cli import main

#: Sync EASGD written without its collective parameters, which Async SGD does not take (an
#: ``algorithm.name`` axis changes the name only: the written parameters stay)
BASE = ["algorithm={name: sync_easgd, tau: 1}", "compare=[]", "sweep.workers=[68]",
        "run.iterations=3", "run.warmup=1", "workload.jitter=0"]
NAME_SHARDS = "sweep.axes={algorithm.name: [sync_easgd, async_sgd], algorithm.shards: [1, 2]}"


def _sets(*items: str) -> list[str]:
    return [a for item in (*BASE, *items) for a in ("--set", item)]


def _sweep(tmp_path: Path, name: str, *args: str) -> list[dict[str, str]]:
    out = tmp_path / name
    assert main(["sweep", "knl_unsaturated", "--out", str(out), "--no-cache", *args]) == 0
    return list(csv.DictReader(io.StringIO((out / "sweep.csv").read_text())))


def test_a_parameter_of_a_named_algorithm_reaches_the_points_that_run_it(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rows = _sweep(tmp_path, "o", "-j", "1", *_sets(NAME_SHARDS))
    assert "knl_unsaturated: 3 points" in capsys.readouterr().out
    got = [(r["algorithm"], r["algorithm.name"], r["algorithm.shards"], r["servers"])
           for r in rows]
    # Sync EASGD takes no shards: one row, an empty cell (and no servers)
    assert got == [("sync_easgd", "sync_easgd", "", "0"), ("async_sgd", "async_sgd", "1", "1"),
                   ("async_sgd", "async_sgd", "2", "2")]


def test_the_same_bytes_with_one_process_or_two(tmp_path: Path) -> None:
    args = _sets(NAME_SHARDS)
    _sweep(tmp_path, "one", "-q", "-j", "1", *args)
    _sweep(tmp_path, "two", "-q", "-j", "2", *args)
    assert (tmp_path / "one" / "sweep.csv").read_bytes() == \
        (tmp_path / "two" / "sweep.csv").read_bytes()


def test_a_parameter_no_named_algorithm_takes_is_refused(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    axes = "sweep.axes={algorithm.name: [sync_easgd, async_sgd], algorithm.momentum: [0.9]}"
    assert main(["sweep", "knl_unsaturated", "--out", str(tmp_path / "o"), "-q",
                 *_sets(axes)]) == 2
    err = capsys.readouterr().err
    assert "no algorithm of this scenario takes a parameter 'momentum'" in err
    # the allowed parameters: the written algorithm's and the named Async SGD's
    assert "(allowed: allreduce, alpha, beta, broadcast, collective, reduce, shards, tau)" \
        in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("axes", [
    # a parameter the written algorithm takes and one named algorithm does not
    "{algorithm.name: [sync_easgd, async_sgd], algorithm.alpha: [0.01, 0.02]}",
    # an algorithm axis of a mapping and a bare name; the part axis written before the whole
    "{algorithm.alpha: [0.01, 0.02], algorithm: [sync_easgd, {name: async_sgd, tau: 2}]}",
])
def test_the_points_of_an_algorithm_that_does_not_take_the_parameter_collapse(
        axes: str) -> None:
    from clustersim.explore import load_study, study_points
    from clustersim.explore.cache import point_key
    from clustersim.explore.points import applied, point_raw

    _, study = load_study("knl_unsaturated", [*BASE, f"sweep.axes={axes}"])
    pts = study_points(study)
    cells = [applied(study, p).get("algorithm.alpha") for p in pts]
    algs = [point_raw(study, p)["algorithm"] for p in pts]
    assert sorted(cells, key=str) == [0.01, 0.02, None]
    for cell, alg in zip(cells, algs):
        assert alg.get("alpha") == cell  # run with the value it is labelled with, or none
        assert (alg["name"] == "sync_easgd") == (cell is not None)
    assert len({point_key(study, p) for p in pts}) == 3


def test_the_whole_algorithm_is_set_before_its_parameter() -> None:
    """``algorithm.shards`` written before ``algorithm`` had been set, then replaced with
    the whole mapping: rows labelled shards 2 ran with one shard."""
    from clustersim.explore import load_study, study_points
    from clustersim.explore.points import point_raw

    _, study = load_study("knl_unsaturated", [
        *BASE, "algorithm={name: async_sgd, tau: 1}",
        "sweep.axes={algorithm.shards: [1, 2], algorithm: [{name: async_sgd, tau: 2}]}"])
    assert [point_raw(study, p)["algorithm"] for p in study_points(study)] == [
        {"name": "async_sgd", "tau": 2, "shards": 1},
        {"name": "async_sgd", "tau": 2, "shards": 2}]
