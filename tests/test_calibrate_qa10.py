"""``calibrate --real`` refuses bad input before it measures anything (QA 10: H4, H5, H6,
M5) and says what a stop or a failure kept (M1).

No test here starts MPI: the launchers are replaced by stubs that fail the test (or record the
call), so a check that comes too late shows up as a launch, not as minutes of measuring.
"""

from __future__ import annotations

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
    monkeypatch.setattr("clustersim._jobs.usable_cores", lambda: 2)  # a 2-core machine
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


def recorded_bench(monkeypatch: pytest.MonkeyPatch, then: BaseException | None) -> None:
    """The benchmark stub writes the 4-rank traces of test_calibration_roundtrip to its
    folder, as realrun does, then raises ``then`` (None: returns them)."""
    from test_calibration_roundtrip import traces

    import clustersim.calibration.measure as measure
    from clustersim.trace import TraceWriter

    def bench(_plan: Any, *, out_dir: Any, **_k: Any) -> Any:
        _, events = traces()
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        heads = [{"rank": r, "host": "node7", "backend": "real"} for r in range(4)]
        for r in range(4):
            with TraceWriter(Path(out_dir) / f"trace.rank{r}.jsonl", heads[r]) as w:
                for ev in events:
                    if ev.actor == r:
                        w.write(ev)
        if then is not None:
            raise then
        return events, heads

    monkeypatch.setattr(measure, "run_benchmarks", bench)


def platform_file(tmp_path: Path) -> str:
    from test_calibration_profile import PLATFORM_YAML

    plat = tmp_path / "rt.yaml"
    plat.write_text(PLATFORM_YAML)
    return str(plat)


def test_stop_says_what_was_kept_and_its_command_fits_it(tmp_path, capsys, no_launch,
                                                         monkeypatch):  # M1
    import shlex

    recorded_bench(monkeypatch, KeyboardInterrupt())
    plat = platform_file(tmp_path)
    assert main(calib(tmp_path, "--platform", plat, "--statistic", "median")) == 130
    err = capsys.readouterr().err
    assert f"kept in {tmp_path / 'w' / 'bench'}" in err
    cmd = err.split("fit them without measuring again: ")[1].splitlines()[0]
    argv = shlex.split(cmd)
    assert argv[:2] == ["clustersim", "calibrate"] and "--statistic" in argv
    assert main([*argv[1:], "-q"]) == 0  # the printed command fits the kept traces
    assert (tmp_path / "p.yaml").is_file()


def test_failed_validation_run_keeps_the_fitted_profile(tmp_path, capsys, no_launch,
                                                        monkeypatch):  # M1
    from realrun.launch import RealRunError

    recorded_bench(monkeypatch, None)
    import realrun.train as train

    def run(*_a: Any, **_k: Any) -> Any:
        raise RealRunError("rank 1 exited with code 3", kind="failed", rank=1, log=None,
                           reason="exit")

    monkeypatch.setattr(train, "run_scenario", run)
    argv = calib(tmp_path, "--platform", plat_file := platform_file(tmp_path), "-q",
                 "--scenarios", str(SCN / "real_bsp_mlp.yaml"))
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "rank 1 exited with code 3" in err and "a validation run failed" in err
    assert "--validate" in err and plat_file in err
    from clustersim.calibration.profile import load_profile

    prof = load_profile(tmp_path / "p.yaml")
    assert prof.validation is None and prof.source["kind"] == "real"
