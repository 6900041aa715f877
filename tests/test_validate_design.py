"""``clustersim validate`` checks a sweep design's points as ``sweep`` does before it runs.

It had said "ok" for a scenario whose ``sweep.axes`` held a value every command running the
design refuses: the axes were parsed, but not the scenarios of their points."""

from __future__ import annotations

from clustersim.cli import main


def test_validate_refuses_a_bad_axis_value_as_sweep_does(capsys):
    sets = ["--set", "sweep.axes={workload.batch_per_worker: [32, -1]}"]
    assert main(["validate", "theano_mpi_alexnet", *sets]) == 2
    err = capsys.readouterr().err
    assert "at the sweep point {workload.batch_per_worker=-1}" in err
    assert "must be >= 1, not -1" in err and "Traceback" not in err
    assert main(["sweep", "theano_mpi_alexnet", *sets, "--no-cache", "-q"]) == 2
    assert capsys.readouterr().err == err  # the same one message


def test_validate_counts_the_points_it_checked(capsys):
    # 6 algorithms x 4 worker counts x 2 batches
    assert main(["validate", "theano_mpi_alexnet", "--set",
                 "sweep.axes={workload.batch_per_worker: [32, 64]}"]) == 0
    assert "sweep design: 48 points checked\n" in capsys.readouterr().out
    # placement.server reaches only the algorithms with a master: Sync EASGD once per count
    assert main(["validate", "knl_unsaturated", "--set",
                 "sweep.axes={placement.server: [device, machine]}"]) == 0
    assert "sweep design: 45 points checked\n" in capsys.readouterr().out


def test_validate_without_axes_says_nothing_of_a_design(capsys):
    assert main(["validate", "theano_mpi_alexnet"]) == 0
    assert "sweep design" not in capsys.readouterr().out


def test_validate_names_the_points_that_would_be_skipped(capsys):
    # the K80 node has 8 devices: 16 workers would be skipped by sweep, not run
    assert main(["validate", "theano_mpi_alexnet", "--set", "sweep.workers=null", "--set",
                 "sweep.axes={workers: [8, 16]}"]) == 0
    out = capsys.readouterr().out
    assert "sweep design: 12 points checked (6 would be skipped" in out
