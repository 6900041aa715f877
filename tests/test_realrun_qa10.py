"""QA 10 findings on real runs (``run --real``, :mod:`realrun`): each test fails on the code
the QA report tested.

* H1: a partial run was measured as if complete (divided by the scenario's iteration count).
* H2: a failed run left the previous run's ``metrics.json``/``trace.chrome.json`` in ``--out``.
* H3: an ``mpiexec`` that starts no rank was a success with NaN metrics.
* H4: ``--out`` an existing file / not creatable / a name too long: a traceback.
* M2/L2: a timeout blamed a stack in an empty log, or diagnosed a hang in a healthy run.
* M3: ``--timeout nan`` disabled the time limit; M4: ``--backend cupy`` without a GPU was
  found inside the ranks; L1: a killed mpiexec "exited with code -9".

Most are unit tests (no MPI); the CLI ones use ``--mpiexec /bin/true`` (starts no rank) or
stop before any process starts, so the file runs in a few seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.errors import InputError
from clustersim.trace import TraceEvent

ROOT = Path(__file__).resolve().parents[1]
BSP = ROOT / "scenarios" / "real_bsp_mlp.yaml"  # 2 workers, 30 iterations, 5 warm-up
STEP = 0.01  # seconds per synthetic iteration


def _write_run(out: Path, iterations: int, *, finished: bool, ranks: int = 2) -> None:
    """Traces of a BSP run on ``ranks`` workers that did ``iterations`` iterations of one
    ``STEP``-second compute each (plus the start of the next one when not ``finished``)."""
    out.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        evs: list[TraceEvent] = []
        started = iterations if finished else iterations + 1
        for i in range(started):
            t = i * STEP
            evs.append(TraceEvent(r, "worker", "record", t, t, label="iteration", iteration=i,
                                  value=float(i)))
            if i < iterations:
                evs.append(TraceEvent(r, "worker", "compute", t, t + STEP, label="forward",
                                      iteration=i))
            else:  # the iteration it was in when stopped: half done
                evs.append(TraceEvent(r, "worker", "compute", t, t + STEP / 2,
                                      label="forward", iteration=i))
        if finished:
            end = iterations * STEP
            evs.append(TraceEvent(r, "worker", "record", end, end, label="actor_end",
                                  iteration=iterations, value=float(iterations)))
        lines = [json.dumps({"header": {"rank": r}})]
        lines += [json.dumps(e.to_dict(), sort_keys=True) for e in evs]
        (out / f"trace.rank{r}.jsonl").write_text("\n".join(lines) + "\n")


# -- H1 ------------------------------------------------------------------------------------------
def test_a_complete_run_is_measured_as_before(tmp_path: Path) -> None:
    from realrun.train import load_run

    _write_run(tmp_path, 30, finished=True)
    res = load_run(BSP, tmp_path, workers=2)
    assert res.metrics.iteration_time == pytest.approx(STEP)
    assert res.coverage.complete and res.to_dict()["iterations_measured"] == 25


def test_a_partial_run_is_refused_or_measured_over_its_own_iterations(tmp_path: Path) -> None:
    from realrun.train import load_run

    _write_run(tmp_path, 12, finished=False)  # stopped in iteration 12 of 30
    with pytest.raises(InputError) as exc:  # it had been measured at 7/25 of STEP, silently
        load_run(BSP, tmp_path, workers=2)
    msg = str(exc.value)
    assert "incomplete" in msg and "12 of 30" in msg and "did not finish" in msg
    res = load_run(BSP, tmp_path, workers=2, partial=True)
    assert res.metrics.iteration_time == pytest.approx(STEP)
    assert res.metrics.compute == pytest.approx(STEP)  # the half-done 13th is not counted
    assert not res.coverage.complete and res.coverage.measured == 7
    assert res.to_dict()["complete"] is False


def test_a_run_that_died_in_its_warm_up_measures_nothing(tmp_path: Path) -> None:
    from realrun.train import load_run

    _write_run(tmp_path, 3, finished=False)
    with pytest.raises(InputError, match="nothing after the warm-up to measure"):
        load_run(BSP, tmp_path, workers=2, partial=True)


def test_a_rank_without_a_trace_makes_the_run_incomplete(tmp_path: Path) -> None:
    from realrun.coverage import coverage
    from realrun.train import load_run

    _write_run(tmp_path, 30, finished=True, ranks=1)
    with pytest.raises(InputError, match="rank\\(s\\) 1 traced nothing"):
        load_run(BSP, tmp_path, workers=2)
    assert coverage([], np=2, workers=[0, 1], asked=30, warmup=5).missing == (0, 1)


# -- H3, L1 --------------------------------------------------------------------------------------
def test_ranks_that_never_reported_are_a_failure(tmp_path: Path) -> None:
    from realrun.verdict import verdict

    err = verdict(tmp_path, 2, {}, False, (None, ""), 0, 10.0)
    assert err is not None and err.kind == "launch"
    assert "rank(s) 0,1 of 2 never reported" in str(err)
    # one rank reported 0, the other nothing: still a failure
    err = verdict(tmp_path, 2, {0: (0, 1.0)}, False, (None, ""), 0, 10.0)
    assert err is not None and "rank(s) 1 of 2" in str(err)
    assert verdict(tmp_path, 2, {0: (0, 1.0), 1: (0, 1.0)}, False, (None, ""), 0, 10.0) is None
    # a launcher without the rank variables the wrapper knows: statuses cannot be attributed
    (tmp_path / "rankx.exit").write_text("0\n")
    assert verdict(tmp_path, 2, {}, False, (None, ""), 0, 10.0) is None


def test_a_killed_mpiexec_is_said_to_be_killed(tmp_path: Path) -> None:
    from realrun.verdict import describe_status, verdict

    assert describe_status(-9) == "was killed by signal 9 (SIGKILL)"
    err = verdict(tmp_path, 2, {}, False, (None, ""), -9, 10.0, ["pid 1 (rank 0): x"])
    assert err is not None and "mpiexec was killed by signal 9 (SIGKILL)" in str(err)
    assert "code -9" not in str(err) and "1 process(es) of the run outlived it" in str(err)


def test_run_real_with_an_mpiexec_that_starts_nothing_fails(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    out = tmp_path / "run"
    assert main(["run", "--real", str(BSP), "--out", str(out), "--mpiexec", "/bin/true",
                 "--json", str(tmp_path / "r.json"), "-q"]) == 1
    err = capsys.readouterr().err
    assert "never reported an exit status" in err and "no rank wrote a trace" in err
    assert not (out / "metrics.json").exists() and not (tmp_path / "r.json").exists()


# -- H2 ------------------------------------------------------------------------------------------
def test_a_failed_run_leaves_nothing_of_the_previous_one(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    out = tmp_path / "run"
    (out / "logs").mkdir(parents=True)
    stale = [out / "metrics.json", out / "trace.chrome.json", out / "trace.rank3.jsonl",
             out / "math.rank0.json", out / "grad_norms.csv", out / "logs" / "rank5.err",
             tmp_path / "r.json"]
    for p in stale:
        p.write_text("{}")
    keep = out / "notes.txt"  # not an output of a run: left alone
    keep.write_text("mine")
    assert main(["run", "--real", str(BSP), "--out", str(out), "--mpiexec", "/bin/true",
                 "--json", str(tmp_path / "r.json"), "-q"]) == 1
    assert [p.name for p in stale if p.exists()] == []
    assert keep.read_text() == "mine"


# -- H4 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["file", "under_file", "long", "loop"])
def test_an_unusable_out_folder_is_bad_input(case: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    (tmp_path / "loopA").symlink_to(tmp_path / "loopB")
    (tmp_path / "loopB").symlink_to(tmp_path / "loopA")
    out = {"file": afile, "under_file": afile / "w", "long": tmp_path / ("x" * 300),
           "loop": tmp_path / "loopA"}[case]
    assert main(["run", "--real", str(BSP), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot write --out") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_an_out_folder_that_cannot_be_created_is_bad_input(tmp_path: Path) -> None:
    from realrun.outdir import check_out_dir

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):  # root: permissions do not stop it
            pytest.skip("running as root")
        with pytest.raises(InputError, match="permission denied"):
            check_out_dir(ro / "run")
    finally:
        ro.chmod(0o700)
    check_out_dir(tmp_path / "new" / "run")  # missing folders are fine: the run makes them
    assert not (tmp_path / "new").exists()


# -- M3, M4 --------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_a_timeout_must_be_finite_and_positive(value: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--real", str(BSP), "--out", str(tmp_path / "r"), "--timeout", value,
                 "-q"]) == 2
    assert "--timeout must be a finite number of seconds > 0" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_launch_refuses_a_nan_timeout(tmp_path: Path) -> None:
    from realrun.launch import launch

    with pytest.raises(InputError, match="finite"):
        launch("realrun.selftest", [], 2, timeout=float("nan"), log_dir=tmp_path)


def test_cupy_without_a_gpu_is_refused_before_launch(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    import importlib.util

    from realrun import arrays

    monkeypatch.setattr(arrays, "gpu_present", lambda: False)
    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "cupy" else real_find(name, *a))
    with pytest.raises(InputError, match="none was found"):
        arrays.check_backend("cupy")
    arrays.check_backend("numpy")
    arrays.check_backend("auto")
    out = tmp_path / "r"
    assert main(["run", "--real", str(BSP), "--out", str(out), "--backend", "cupy",
                 "-q"]) == 2
    assert "needs an NVIDIA GPU" in capsys.readouterr().err
    assert not (out / "logs").exists()  # nothing was started


# -- M2, L2 --------------------------------------------------------------------------------------
def test_a_timeout_in_start_up_blames_no_stack(tmp_path: Path) -> None:
    from realrun.verdict import STARTING, timeout_blame, verdict

    assert timeout_blame({0: None, 1: None}) == (None, STARTING)
    err = verdict(tmp_path, 2, {}, True, (None, STARTING), -15, 0.2)
    assert err is not None and err.kind == "timeout" and err.rank is None
    assert "during start-up" in str(err) and "stack" not in str(err)
    assert "too short" in str(err)
    # one rank stuck without a state record: named, but its empty log is no "stack"
    err = verdict(tmp_path, 2, {}, True, (1, "never reported its state"), -15, 5.0)
    assert err is not None and "stack" not in str(err) and f"logs are in {tmp_path}" in str(err)


def test_a_healthy_run_past_its_timeout_is_not_called_a_hang(tmp_path: Path) -> None:
    from realrun.rankstate import RankState
    from realrun.verdict import PROGRESSING, timeout_blame, verdict

    now = time.time()
    busy = {0: RankState(0, "compute", "forward", now - 0.01, 500),
            1: RankState(1, "comm", "allreduce", now - 0.02, 498)}
    assert timeout_blame(busy, now) == (None, PROGRESSING)
    trace = tmp_path / "trace.rank0.jsonl"
    trace.write_text('{"header": {}}\n' + '{"label": "iteration"}\n' * 42)
    (tmp_path / "rank0.trace").write_text(str(trace))
    err = verdict(tmp_path, 2, {}, True, (None, PROGRESSING), -15, 3.0)
    assert err is not None and "still progressing (42 iteration(s) started" in str(err)
    assert "longer --timeout" in str(err) and "waited for it" not in str(err)
    # a rank stuck for long while the other waits: still a hang, with its culprit
    hung = {0: RankState(0, "comm", "allreduce", now - 4.0, 40),
            1: RankState(1, "run", "", now - 4.0, 41)}
    rank, why = timeout_blame(hung, now)
    assert rank == 1 and "waited for it" in why


# -- H8 ------------------------------------------------------------------------------------------
HANG = """import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
while True:
    time.sleep(0.05)
"""

LAUNCHER = """import sys
from realrun.launch import launch
launch(sys.argv[1], [sys.argv[2]], 1, timeout=120, log_dir=sys.argv[3])
"""


def _alive(pid: int) -> bool:
    from realrun.proctree import _is_zombie

    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return not _is_zombie(pid)


@pytest.mark.mpi
def test_a_killed_launcher_takes_its_run_with_it(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    from realrun.proctree import die_with_parent

    assert die_with_parent() is not None  # Linux: the parent-death signal is available
    script = tmp_path / "hang.py"
    script.write_text(HANG)
    pidfile = tmp_path / "rank.pid"
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(script), str(pidfile),
                                 str(tmp_path / "logs")], cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text().strip()):
            assert time.monotonic() < deadline, "the rank never started"
            assert launcher.poll() is None, "the launcher ended early"
            time.sleep(0.05)
        rank = int(pidfile.read_text())
        launcher.send_signal(signal.SIGKILL)  # no finally runs in the launcher
        launcher.wait()
        deadline = time.monotonic() + 15
        while _alive(rank) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(rank), "the rank outlived its SIGKILLed launcher"
    finally:
        if launcher.poll() is None:
            launcher.kill()
        if pidfile.exists() and pidfile.read_text().strip():
            with contextlib.suppress(OSError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
