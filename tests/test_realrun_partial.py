"""A failed, hung or stopped real run keeps what it measured as ``metrics.json``
(``"complete": false``, :mod:`realrun.partial`), says so in one line, and still ends with its
own exit code and no process left; ``--np`` errors cite what the user typed.

Each MPI test fails on the code before :mod:`realrun.partial`: a failed or stopped run wrote
no ``metrics.json`` and printed no ``measured before the ...`` line.  The runs are 2-rank
``real_bsp_mlp`` runs stopped after a few traced iterations (the trace files are polled, no
fixed sleep), so the file takes about 15 s.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _procs import no_strays

from clustersim import _signals
from clustersim.cli import main

ROOT = Path(__file__).resolve().parents[1]
BSP = ROOT / "scenarios" / "real_bsp_mlp.yaml"  # 2 workers, 5 warm-up iterations
WARMUP = 5
#: what a successful run's metrics.json holds (RealRunResult.to_dict), plus the stop reason
FIELDS = {"complete", "iterations_completed", "iterations_measured", "scenario", "algorithm",
          "workers", "np", "out_dir", "traces", "metrics", "elapsed", "math", "stopped"}
LINE = re.compile(r"measured before the (stop|failure): (\d+) of (\d+) iterations on every "
                  r"worker \((\d+) after the (\d+) warm-up\), ([\d.]+) ms per iteration; "
                  r"written to (.+)/metrics\.json \(complete: false\)$", re.M)


def _have_mpi() -> bool:
    try:
        from realrun.launch import find_mpiexec

        find_mpiexec()
        import mpi4py  # noqa: F401
    except Exception:  # noqa: BLE001 - any reason: no MPI here
        return False
    return True


needs_mpi = pytest.mark.skipif(not _have_mpi(), reason="needs mpiexec and mpi4py")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "CLUSTERSIM_JOBS": "1"}


def _default_sigint() -> None:
    # a shell without job control starts background jobs with SIGINT ignored, and Python
    # keeps an ignored SIGINT ignored: the CLI must get Ctrl-C as a terminal would send it
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(out: Path, *extra: str) -> subprocess.Popen[str]:
    """``clustersim run --real`` in a process group of its own (mpiexec has its own)."""
    return subprocess.Popen([sys.executable, "-m", "clustersim", "run", "--real", str(BSP),
                             "--out", str(out), "-q", *extra], env=_env(), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_default_sigint)


def _starts(trace: Path) -> list[float]:
    """Start times of a trace's ``iteration`` records, read with the json module alone (a
    truncated last line, being written when read, is skipped)."""
    out = []
    for line in trace.read_text(encoding="utf-8").splitlines():
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        if ev.get("kind") == "record" and ev.get("label") == "iteration":
            out.append(float(ev["start"]))
    return out


def _stop_after(out: Path, proc: subprocess.Popen[str], iterations: int,
                sig: int) -> tuple[int, str]:
    """Send ``sig`` to the CLI's process group once both ranks traced ``iterations``
    iteration starts; its exit code and stderr."""
    try:
        end = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < end, "the run never got that far"
            traces = [out / f"trace.rank{r}.jsonl" for r in (0, 1)]
            if all(t.is_file() and len(_starts(t)) >= iterations for t in traces):
                break
            time.sleep(0.05)
        os.killpg(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err


def _traced_mean(out: Path, completed: int) -> float:
    """Mean seconds per measured iteration over the workers, from the traces themselves:
    from the start of iteration ``WARMUP`` to the start of ``completed``."""
    means = []
    for r in (0, 1):
        s = _starts(out / f"trace.rank{r}.jsonl")
        means.append((s[completed] - s[WARMUP]) / (completed - WARMUP))
    return sum(means) / len(means)


def _check_kept(out: Path, err: str, what: str, asked: int) -> dict:
    """The line and the metrics.json of a run that kept its measured iterations."""
    m = LINE.search(err)
    assert m is not None, err
    assert m.group(1) == what and int(m.group(3)) == asked and int(m.group(5)) == WARMUP
    assert m.group(7) == str(out)
    completed, measured = int(m.group(2)), int(m.group(4))
    assert measured == completed - WARMUP >= 1
    data = json.loads((out / "metrics.json").read_text())
    assert set(data) == FIELDS
    assert data["complete"] is False
    assert data["iterations_completed"] == completed and data["iterations_measured"] == measured
    t = data["metrics"]["iteration_time"]
    assert float(m.group(6)) == pytest.approx(t * 1e3, abs=0.051)
    mean = _traced_mean(out, completed)
    assert 0.8 * mean < t < 1.25 * mean, (t, mean)
    assert not list(out.glob(".metrics.json*")) and not list(out.glob("*.tmp"))
    return data


# -- a stopped run ------------------------------------------------------------------------------
@pytest.mark.mpi
@needs_mpi
def test_a_run_stopped_by_ctrl_c_keeps_its_measured_iterations(tmp_path: Path) -> None:
    out = tmp_path / "run"
    code, err = _stop_after(out, _start(out, "--iterations", "100000"), 12, signal.SIGINT)
    assert code == 130, err
    assert "Traceback" not in err and err.rstrip().endswith("interrupted")
    lines = err.splitlines()
    assert lines[0] == f"partial traces (everything measured before the stop) are in {out}"
    assert LINE.match(lines[1]) and len(lines) == 3, err  # the new line, then main's
    data = _check_kept(out, err, "stop", 100000)
    assert data["stopped"] == "interrupted by SIGINT"
    no_strays(out)


@pytest.mark.mpi
@needs_mpi
def test_a_run_stopped_in_its_warm_up_writes_nothing_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = _start(out, "--set", "run.iterations=100000", "--set", "run.warmup=99990")
    code, err = _stop_after(out, proc, 8, signal.SIGTERM)
    assert code == 143 and "Traceback" not in err, err
    assert re.search(r"^measured before the stop: not enough for metrics \(every worker "
                     r"completed \d+ of 100000 iteration\(s\), none after the 99990 warm-up\); "
                     r"no metrics\.json written$", err, re.M), err
    assert err.rstrip().endswith("terminated by SIGTERM")
    assert not (out / "metrics.json").exists()
    no_strays(out)


# -- a failed run -------------------------------------------------------------------------------
@pytest.mark.mpi
@needs_mpi
def test_a_failed_run_keeps_its_measured_iterations(tmp_path: Path, capsys,
                                                    monkeypatch) -> None:
    out = tmp_path / "run"
    monkeypatch.setenv("REALRUN_FAULT", "kill:1:14")  # rank 1 killed as it starts iteration 14
    assert main(["run", "--real", str(BSP), "--iterations", "50", "--out", str(out),
                 "--timeout", "60", "-q"]) == 1
    err = capsys.readouterr().err
    assert "rank 1 was killed by signal 9 (SIGKILL)" in err and "Traceback" not in err
    assert "partial traces (everything measured before the failure)" in err
    assert LINE.match(err.rstrip().splitlines()[-1]), err  # after the existing lines
    data = _check_kept(out, err, "failure", 50)
    assert data["stopped"].startswith("rank 1 was killed by signal 9 (SIGKILL); see its log")
    assert "\n" not in data["stopped"]
    assert data["iterations_completed"] <= 14
    no_strays(out)


@pytest.mark.mpi
@needs_mpi
def test_a_run_past_its_timeout_keeps_its_measured_iterations(tmp_path: Path,
                                                             capsys) -> None:
    out = tmp_path / "run"
    assert main(["run", "--real", str(BSP), "--iterations", "100000", "--out", str(out),
                 "--timeout", "6", "-q"]) == 1
    err = capsys.readouterr().err
    assert "run timed out after 6 s" in err and "Traceback" not in err
    data = _check_kept(out, err, "failure", 100000)
    assert data["stopped"].startswith("run timed out after 6 s")
    no_strays(out)


# -- the stop path itself (no MPI) --------------------------------------------------------------
def _stopped_run(monkeypatch, first: BaseException) -> None:
    """``run_scenario`` stopped by ``first``; measuring its traces stopped by a Ctrl-C."""
    import realrun.partial
    import realrun.train

    def run(*_a: object, **_k: object) -> None:
        raise first

    def second(*_a: object, **_k: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(realrun.train, "run_scenario", run)
    monkeypatch.setattr(realrun.partial, "keep_partial", second)


@pytest.mark.parametrize("first, code", [(KeyboardInterrupt(), 130),
                                         (_signals.Terminated(signal.SIGTERM), 143)])
def test_a_second_ctrl_c_while_measuring_still_ends_the_run(first: BaseException, code: int,
                                                            tmp_path: Path, capsys,
                                                            monkeypatch) -> None:
    _stopped_run(monkeypatch, first)
    out = tmp_path / "run"
    assert main(["run", "--real", str(BSP), "--out", str(out), "-q"]) == code
    err = capsys.readouterr().err
    assert "stopped again: partial metrics not written" in err and "Traceback" not in err
    assert not (out / "metrics.json").exists()


def test_a_stop_after_the_run_finished_keeps_its_metrics(tmp_path: Path) -> None:
    """A stop that lands after the success wrote metrics.json (while the Chrome trace is
    written) must not replace it with a partial one."""
    from realrun.partial import keep_partial, stop_reason
    from realrun.train import prepare

    (tmp_path / "trace.rank0.jsonl").write_text('{"header": {}}\n')
    done = tmp_path / "metrics.json"
    done.write_text('{"complete": true}')
    line = keep_partial(prepare(BSP), tmp_path, stop_reason(KeyboardInterrupt()), what="stop")
    assert line == f"measured before the stop: the run had completed; its metrics are in {done}"
    assert done.read_text() == '{"complete": true}'
    assert stop_reason(_signals.Terminated(signal.SIGHUP)) == "terminated by SIGHUP"
    assert stop_reason(RuntimeError("rank 0 failed\n  last lines")) == "rank 0 failed"


def test_no_trace_at_all_is_said_plainly(tmp_path: Path) -> None:
    from realrun.partial import keep_partial
    from realrun.train import prepare

    line = keep_partial(prepare(BSP), tmp_path, "x", what="failure")
    assert line == ("measured before the failure: nothing (no rank wrote a trace); no "
                    "metrics.json written")
    assert not (tmp_path / "metrics.json").exists()


# -- --np and the options the user typed (QA 10 L8) ---------------------------------------------
@pytest.mark.parametrize("scenario, np, want", [
    ("real_bsp_mlp", "0", "--np must be at least 1 (bsp needs at least 1 worker plus 0 "
                          "server(s)), not 0"),
    ("real_async_ps", "1", "--np must be at least 2 (async_sgd needs at least 1 worker plus 1 "
                           "server(s)), not 1"),
])
def test_np_too_small_says_the_least_it_can_be(scenario: str, np: str, want: str,
                                               tmp_path: Path, capsys) -> None:
    assert main(["run", "--real", scenario, "--np", np, "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == f"error: {want}\n"


@pytest.mark.parametrize("option", [["--np", "100"], ["--workers", "100"]])
def test_a_bad_worker_count_cites_the_option_typed(option: list[str], tmp_path: Path,
                                                   capsys) -> None:
    assert main(["run", "--real", "real_bsp_mlp", *option, "--oversubscribe",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"({' '.join(option)}), sweep.workers[0]: 100 workers" in err
    assert "--set" not in err
