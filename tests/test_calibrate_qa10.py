"""``calibrate --real`` refuses bad input before it measures anything (QA 10: H4, H5, H6,
M5) and says what a stop or a failure kept (M1).

No test here starts MPI: the launchers are replaced by stubs that fail the test (or record the
call), so a check that comes too late shows up as a launch, not as minutes of measuring.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from clustersim.cli import main
from clustersim.scenario.schema import PROJECT_ROOT

SCN = PROJECT_ROOT / "scenarios"


class Launched(Exception):
    """A benchmark or a validation run was started."""


@pytest.fixture
def no_launch(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Benchmarks and validation runs raise :class:`Launched`; the machine has 2 cores."""
    import clustersim.calibration.measure as measure
    import realrun.train as train

    calls: list[str] = []

    def bench(*_a: Any, **_k: Any) -> Any:
        calls.append("bench")
        raise Launched("bench")

    def run(*_a: Any, **_k: Any) -> Any:
        calls.append("run")
        raise Launched("run")

    monkeypatch.setattr(measure, "run_benchmarks", bench)
    monkeypatch.setattr(train, "run_scenario", run)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    return calls


def calib(tmp_path: Path, *extra: str) -> list[str]:
    return ["calibrate", "--real", "--quick", "--work-dir", str(tmp_path / "w"),
            "--out", str(tmp_path / "p.yaml"), *extra]


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], calls: list[str]) -> str:
    assert main(argv) == 2
    assert calls == []
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_np_beyond_cores_refused_before_benchmarks(tmp_path, capsys, no_launch):  # H6
    err = refused(calib(tmp_path, "--np", "100", "--no-validate"), capsys, no_launch)
    assert "--np 100" in err and "2 core(s)" in err and "--oversubscribe" in err
    err = refused(calib(tmp_path, "--np", "17", "--oversubscribe", "--no-validate"), capsys,
                  no_launch)
    assert "at most 16" in err


def test_oversubscribe_lets_np_through(tmp_path, no_launch):  # H6: the rule, not a ban
    with pytest.raises(Launched):
        main(calib(tmp_path, "--np", "3", "--oversubscribe", "--no-validate"))
    assert no_launch == ["bench"]


def test_validation_scenario_beyond_cores_refused(tmp_path, capsys, no_launch):  # H6
    err = refused(calib(tmp_path, "--scenarios", str(SCN / "knl_4253.yaml")), capsys,
                  no_launch)
    assert "knl_4253.yaml" in err and "4253 MPI ranks" in err


def test_benchmark_scenario_refused(tmp_path, capsys, no_launch):  # H5
    err = refused(calib(tmp_path, "--scenarios", str(SCN / "allreduce_crossbar16.yaml")),
                  capsys, no_launch)
    assert "allreduce_crossbar16.yaml" in err and "collective benchmark" in err


def test_benchmark_scenario_refused_with_traces_too(tmp_path, capsys):  # H5, --runs path
    (tmp_path / "runs").mkdir()
    trace = tmp_path / "trace.rank0.jsonl"
    trace.write_text("")
    argv = ["calibrate", str(trace), "--runs", str(tmp_path / "runs"),
            "--scenarios", str(SCN / "allreduce_crossbar16.yaml")]
    assert main(argv) == 2
    assert "collective benchmark" in capsys.readouterr().err


def test_validation_not_a_folder_refused(tmp_path, capsys, no_launch):  # H5
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "validation").write_text("")
    err = refused(calib(tmp_path), capsys, no_launch)
    assert "validation" in err and "not a directory" in err


def test_unknown_link_refused_first(tmp_path, capsys, no_launch):  # M5
    err = refused(calib(tmp_path, "--link", "bogus", "--no-validate"), capsys, no_launch)
    assert "'bogus'" in err and "localhost_shm" in err


@pytest.mark.parametrize("case", ["file_above", "too_long", "loop"])
def test_bad_work_dir_refused(tmp_path, capsys, no_launch, case):  # H4
    if case == "file_above":
        (tmp_path / "afile").write_text("")
        work, why = tmp_path / "afile" / "w", "not a directory"
    elif case == "too_long":
        work, why = tmp_path / ("x" * 300), "too long"
    else:
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        work, why = tmp_path / "a" / "w", "symbolic links"
    argv = ["calibrate", "--real", "--quick", "--no-validate", "--work-dir", str(work),
            "--out", str(tmp_path / "p.yaml")]
    err = refused(argv, capsys, no_launch)
    assert "--work-dir" in err and why in err
