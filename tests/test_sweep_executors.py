"""clustersim sweep's executors when things go wrong: a signal stops a sweep at once, keeps
the finished rows and leaves no process; --mpi without mpiexec fails instead of hanging;
bad or unusable --dask addresses are one message; Dask workers running other code are
refused (their rows would be cached under this code's version)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.explore import dask_exec

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SMALL = """\
name: small
platform: {file: crossbar16}
workload: {model: resnet50, batch_per_worker: 32, bucket: 25 MiB}
algorithm: {name: bsp, strategy: ring, label: ring}
sweep:
  workers: [2, 4]
  axes:
    workload.batch_per_worker: [16, 32]
run: {iterations: 4, warmup: 1}
"""
# ~1,500 points: several seconds on 2 processes, long enough to be interrupted mid-way
LONG_AXES = ("sweep.axes={workload.batch_per_worker: ["
             + ", ".join(map(str, range(8, 72))) + "]}")


def _sweep_cmd(out: Path, *extra: str) -> list[str]:
    return [PY, "-m", "clustersim", "sweep", str(ROOT / "scenarios" / "knl_unsaturated.yaml"),
            "--set", LONG_AXES, "--out", str(out), *extra]


def _cached_rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(str(db), timeout=1) as con:
            return int(con.execute("SELECT count(*) FROM points").fetchone()[0])
    except sqlite3.Error:  # created but its table not yet committed
        return 0


def _alive_in_group(pgid: int) -> list[str]:
    """The processes of ``pgid`` still running (a zombie re-parented to an init that does
    not reap is not running: it holds no resources but its table entry)."""
    psutil = pytest.importorskip("psutil")
    left = []
    for p in psutil.process_iter(["pid", "status", "cmdline"]):
        try:
            if os.getpgid(p.pid) == pgid and p.info["status"] != psutil.STATUS_ZOMBIE:
                left.append(f"{p.pid} {' '.join(p.info['cmdline'] or [])[:120]}")
        except (ProcessLookupError, PermissionError):
            continue
    return left


def _start(cmd: list[str]) -> subprocess.Popen:
    # a session of its own (Ctrl-C reaches a whole process group), SIGINT at its default
    # (a non-interactive shell would otherwise pass it on as ignored)
    return subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _stop_after_rows(proc: subprocess.Popen, db: Path, sig: int, group: bool
                     ) -> tuple[float, str]:
    """Wait until the cache holds rows, send ``sig``; the seconds until exit and stderr."""
    try:
        deadline = time.monotonic() + 120
        while _cached_rows(db) == 0:
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no row cached after 120 s"
            time.sleep(0.05)
        t0 = time.monotonic()
        if group:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        _out, err = proc.communicate(timeout=30)
        return time.monotonic() - t0, err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


def test_ctrl_c_stops_a_pool_sweep_and_keeps_the_finished_rows(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the process group): exit 130 within seconds (was: every queued
    chunk first, 280 s on a 7,008-point sweep), no process left, finished rows cached."""
    out = tmp_path / "run"
    proc = _start(_sweep_cmd(out, "-j", "2", "-q"))
    took, err = _stop_after_rows(proc, out / "points.sqlite", signal.SIGINT, group=True)
    assert proc.returncode == 130, err[-2000:]
    assert took < 5, f"took {took:.1f} s to stop"
    assert err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err
    time.sleep(0.2)
    assert _alive_in_group(proc.pid) == []
    kept = _cached_rows(out / "points.sqlite")
    assert kept > 0
    # the output says what a rerun finds (QA 19 M5: it said only "interrupted")
    assert (f"{kept:,} of 1,536 points are kept in the point cache {out / 'points.sqlite'}: "
            "the same command resumes from them") in err, err[-2000:]
    again = subprocess.run(_sweep_cmd(out, "-j", "2"), cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"{kept:,} from the cache" in again.stdout or f"{kept} from the cache" in again.stdout


@pytest.mark.parametrize("extra, sig, group, code", [
    (("-j", "2"), signal.SIGINT, False, 130),     # kill -INT <driver>
    (("-j", "2"), signal.SIGTERM, False, 143),    # kill -TERM <driver>
    (("--dask", "local", "-j", "2"), signal.SIGINT, True, 130),
    (("--dask", "local", "-j", "2"), signal.SIGTERM, False, 143),
], ids=["pool-int-driver", "pool-term-driver", "dask-ctrl-c", "dask-term-driver"])
def test_a_signal_stops_the_sweep_at_once(tmp_path: Path, extra: tuple, sig: int,
                                          group: bool, code: int) -> None:
    if extra[0] == "--dask":
        pytest.importorskip("dask.distributed")
    out = tmp_path / "run"
    proc = _start(_sweep_cmd(out, *extra, "-q"))
    took, err = _stop_after_rows(proc, out / "points.sqlite", sig, group)
    assert proc.returncode == code, err[-2000:]
    assert took < 5, f"took {took:.1f} s to stop"
    assert "Traceback" not in err, err[-2000:]
    time.sleep(0.5)
    assert _alive_in_group(proc.pid) == []
    assert _cached_rows(out / "points.sqlite") > 0


def test_mpi_without_mpiexec_fails_at_once(tmp_path: Path) -> None:
    """Plain --mpi where no mpiexec is on PATH: MPICH's spawn would block for ever inside
    MPI (deaf to signals); a run failure instead, with the command to use."""
    pytest.importorskip("mpi4py")
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not (Path(d) / "mpiexec").exists())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI", "HYD", "OMPI"))}
    env.update(PATH=path or "/usr/bin:/bin", PYTHONPATH=str(ROOT))
    out = tmp_path / "mpi"
    (tmp_path / "s.yaml").write_text(SMALL)
    proc = subprocess.run([PY, "-m", "clustersim", "sweep", str(tmp_path / "s.yaml"), "--mpi",
                           "-q", "--out", str(out)], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, start_new_session=True)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "--mpi: mpi4py.futures could not start its workers" in proc.stderr
    assert "mpiexec -n N python -m mpi4py.futures" in proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()


@pytest.mark.parametrize("address", ["tcp://127.0.0.1", "tls://127.0.0.1:8799", "foo",
                                     "tcp://127.0.0.1:99999", "127.0.0.1:8786", ""])
def test_a_bad_dask_address_is_one_input_error(tmp_path: Path, capsys, address: str) -> None:
    (tmp_path / "s.yaml").write_text(SMALL)
    out = tmp_path / "o"
    assert main(["sweep", str(tmp_path / "s.yaml"), "--dask", address, "--out", str(out),
                 "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dask" in err and "tcp://host:port" in err
    assert "'local'" in err and not out.exists()


def test_an_unreachable_scheduler_is_a_run_failure(tmp_path: Path, capsys,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("dask.distributed")
    monkeypatch.setattr(dask_exec, "DASK_TIMEOUT", 1.0)
    (tmp_path / "s.yaml").write_text(SMALL)
    out = tmp_path / "o"
    assert main(["sweep", str(tmp_path / "s.yaml"), "--dask", "tcp://127.0.0.1:1", "--out",
                 str(out), "-q"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("failed: --dask: cannot reach the Dask scheduler at tcp://127.0.0.1:1")
    assert err.count("\n") == 1 and not out.exists()


def test_a_refused_port_fails_at_once(tmp_path: Path, capsys) -> None:
    """Nothing listening: the connection is refused, and the run fails then, not after
    Dask's retries for DASK_TIMEOUT (10 s)."""
    import time

    pytest.importorskip("dask.distributed")
    (tmp_path / "s.yaml").write_text(SMALL)
    t0 = time.monotonic()
    assert main(["sweep", str(tmp_path / "s.yaml"), "--dask", "tcp://127.0.0.1:1", "--out",
                 str(tmp_path / "o"), "-q"]) == 1
    assert time.monotonic() - t0 < dask_exec.DASK_TIMEOUT / 2
    err = capsys.readouterr().err
    assert "connection refused" in err and err.count("\n") == 1


def test_a_scheduler_without_workers_is_a_run_failure(tmp_path: Path, capsys, scheduler,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dask_exec, "DASK_TIMEOUT", 1.0)
    address = scheduler.scheduler_address
    (tmp_path / "s.yaml").write_text(SMALL)
    out = tmp_path / "o"
    assert main(["sweep", str(tmp_path / "s.yaml"), "--dask", address, "--out", str(out),
                 "-q"]) == 1
    err = capsys.readouterr().err
    assert f"has no workers (waited 1 s; start some with `dask worker {address}`)" in err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("late", [False, True], ids=["at-start", "per-chunk"])
def test_workers_running_other_code_are_refused(tmp_path: Path, capsys, scheduler, late: bool,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker whose code_version differs: exit 1 naming it, nothing cached.  ``late``: a
    worker that joined after the start-up check is caught by its chunk's version."""
    cluster, address = scheduler, scheduler.scheduler_address
    cluster.scale(1)
    cluster.wait_for_workers(1, timeout=30)
    worker = next(iter(cluster.scheduler.workers))
    monkeypatch.setattr(dask_exec, "_worker_version", lambda: "other code")
    if late:
        monkeypatch.setattr(dask_exec, "_check_versions", lambda *a: None)
    (tmp_path / "s.yaml").write_text(SMALL)
    out = tmp_path / "o"
    assert main(["sweep", str(tmp_path / "s.yaml"), "--dask", address, "--out", str(out),
                 "-q"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"failed: --dask: worker(s) {worker} run different clustersim code")
    assert "Traceback" not in err and _cached_rows(out / "points.sqlite") == 0
    assert not (out / "sweep.csv").exists()


def test_no_more_pool_processes_than_tasks(tmp_path: Path, monkeypatch) -> None:
    """A fork pool starts all its processes up front: a 2-point sweep at -j 16 forked 16
    (and at -j 2,048 took 33 s).  The pool and the LocalCluster get no more than the tasks,
    and the table is the same bytes."""
    import concurrent.futures

    sizes: list[int] = []
    real = concurrent.futures.ProcessPoolExecutor

    def recording(n, *a, **k):
        sizes.append(n)
        return real(n, *a, **k)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", recording)
    path = tmp_path / "s.yaml"
    path.write_text(SMALL)
    common = ["sweep", str(path), "--set", "sweep.axes=null", "--set", "sweep.workers=[1, 2]",
              "--no-cache", "-q"]
    assert main([*common, "-j", "16", "--out", str(tmp_path / "a")]) == 0
    assert sizes == [2]
    assert main([*common, "-j", "1", "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "a/sweep.csv").read_bytes() == (tmp_path / "b/sweep.csv").read_bytes()


def test_a_stop_while_a_batch_is_stored_reports_what_the_cache_holds(
        tmp_path: Path, capsys, monkeypatch) -> None:
    """A Ctrl-C that lands while a finished batch is stored: the count the driver prints is
    the count the cache holds (the stop had been acted on between the store and the count,
    and the message said 64 rows kept of 128 stored: the CI of 2026-11-30)."""
    from clustersim.explore.cache import PointCache

    real = PointCache.put_many
    stored: list[int] = []

    def store_then_interrupt(self, items) -> None:
        real(self, items)
        stored.append(1)
        if len(stored) == 2:  # the second batch: Ctrl-C arrives as it is written
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(PointCache, "put_many", store_then_interrupt)
    path = tmp_path / "s.yaml"
    path.write_text(SMALL)
    out = tmp_path / "o"
    code = main(["sweep", str(path), "-j", "1", "--chunk", "1", "--out", str(out), "-q"])
    assert code == 130
    kept = _cached_rows(out / "points.sqlite")
    assert kept == 2  # the batch stored when the signal came is kept (one point a batch)
    err = capsys.readouterr().err
    assert f"{kept} of 4 points are kept in the point cache" in err, err
