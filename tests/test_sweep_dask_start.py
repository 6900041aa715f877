"""A SIGTERM while ``--dask local`` starts its LocalCluster: the command's one line, exit
143, no process left - and no Dask traceback.  Dask's own exit hook closed the half-started
cluster and failed (``AssertionError: Status.init``), printed as "Exception ignored in atexit
callback", followed by its INFO lines about reaping stray processes (QA, 2026-11-28)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_sweep_executors import _alive_in_group, _sweep_cmd

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
