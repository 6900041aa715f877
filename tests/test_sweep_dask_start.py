"""A SIGTERM while ``--dask local`` starts its LocalCluster: the command's one line, exit
143, no process left - and no Dask traceback.  Dask's own exit hook closed the half-started
cluster and failed (``AssertionError: Status.init``), printed as "Exception ignored in atexit
callback", followed by its INFO lines about reaping stray processes (QA, 2026-11-28)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_sweep_executors import SMALL, _alive_in_group, _sweep_cmd

ROOT = Path(__file__).resolve().parent.parent


def test_sigterm_while_the_cluster_starts_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed")
    psutil = pytest.importorskip("psutil")
    out = tmp_path / "run"
    proc = subprocess.Popen(_sweep_cmd(out, "--dask", "local", "-j", "2", "-q"), cwd=ROOT,
                            start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        # the first worker process exists: the cluster is starting, not yet started
        while not any("spawn_main" in " ".join(c.cmdline())
                      for c in psutil.Process(proc.pid).children(recursive=True)):
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no cluster process after 60 s"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 143, err[-2000:]
    assert err.strip().splitlines() == ["terminated by SIGTERM"], err[-3000:]
    time.sleep(0.5)
    assert _alive_in_group(proc.pid) == []


def test_a_sigterm_swallowed_by_a_callback_still_ends_the_command(tmp_path: Path,
                                                                    monkeypatch) -> None:
    """The SIGTERM handler raises wherever the main thread is; inside a weakref callback
    Python drops the exception ("Exception ignored in ...") and the sweep ran on to exit 0.
    The raise is remembered: the sweep's loop raises it again, and main reports it."""
    import weakref

    from clustersim import _signals
    from clustersim.cli import main
    from clustersim.explore import driver

    class Thing:
        pass

    fired = []

    def swallowed(_ref):  # what Python does with a handler's raise inside a callback
        fired.append(1)
        with contextlib.suppress(_signals.Terminated):
            _signals._raise(15, None)

    real = driver._take
    held = []

    def take(*a, **k):
        if not fired:
            t = Thing()
            held.append(weakref.ref(t, swallowed))
            del t  # the callback runs now, and its exception is dropped
        return real(*a, **k)

    monkeypatch.setattr(driver, "_take", take)
    path = tmp_path / "s.yaml"
    path.write_text(SMALL)
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "-j", "1", "-q",
                 "--no-cache", "--chunk", "1"]) == 143
    assert fired and not (tmp_path / "o" / "sweep.csv").exists()


def test_the_local_clusters_workers_log_nothing_below_critical(tmp_path: Path) -> None:
    """A worker process's ERROR lines reached the command's stderr: stopped by a signal on
    a loaded machine, a worker whose heartbeat met the closed scheduler printed a traceback
    under the command's one line.  A LocalCluster started as the sweep starts it prints no
    ERROR line its workers log."""
    pytest.importorskip("dask.distributed")
    script = tmp_path / "w.py"
    script.write_text(
        "import logging\n"
        "from dask.distributed import Client\n"
        "from clustersim.explore.dask_exec import LOCAL_CLUSTER\n"
        "def f(x):\n"
        "    logging.getLogger('distributed.worker').error('WORKER-ERROR-LINE')\n"
        "    return x\n"
        "if __name__ == '__main__':\n"
        "    from dask.distributed import LocalCluster\n"
        "    with LocalCluster(n_workers=1, **LOCAL_CLUSTER) as c, Client(c) as cl:\n"
        "        print(cl.submit(f, 7).result())\n")
    r = subprocess.run([os.sys.executable, str(script)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "7", r.stderr[-2000:]
    assert "WORKER-ERROR-LINE" not in r.stderr
