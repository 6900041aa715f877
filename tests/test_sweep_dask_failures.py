"""``--dask tcp://...`` when the other end fails: a port that is not a Dask scheduler (a web
server: the command hung for ever in Dask's handshake; a service answering other bytes: a
``MemoryError`` traceback), and a cluster that loses all its workers mid-sweep (a
``TypeError`` traceback from unpacking a cancelled chunk).  Each is now one ``failed:``
line, exit 1, within about ``DASK_TIMEOUT``, with no thread or process left behind."""

from __future__ import annotations

import http.server
import os
import signal
import socketserver
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_sweep_executors import SMALL

from clustersim.cli import main
from clustersim.explore import dask_exec

pytest.importorskip("dask.distributed")

ROOT = Path(__file__).resolve().parent.parent


class _Quiet(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


class _Garbage(socketserver.BaseRequestHandler):
    """Answers every connection with an HTTP error (what a proxy does), then hangs up."""

    def handle(self) -> None:
        self.request.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4)
        time.sleep(0.2)


@pytest.fixture(params=["http", "garbage"])
def not_dask(request) -> Iterator[str]:
    """The address of a TCP service in this process that is not a Dask scheduler."""
    if request.param == "http":
        server: socketserver.TCPServer = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                                         _Quiet)
    else:
        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Garbage)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_a_port_that_is_not_a_scheduler_is_one_line(tmp_path: Path, capsys, not_dask: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dask_exec, "DASK_TIMEOUT", 1.0)
    (tmp_path / "s.yaml").write_text(SMALL)
    out = tmp_path / "o"
    t0 = time.monotonic()
    assert main(["sweep", str(tmp_path / "s.yaml"), "--dask", not_dask, "--out", str(out),
                 "-q"]) == 1
    took = time.monotonic() - t0
    err = capsys.readouterr().err
    assert err.startswith(f"failed: --dask {not_dask}: no Dask scheduler answered there"), err
    assert "(is it the dashboard or another service?)" in err
    assert err.count("\n") == 1 and "Traceback" not in err and not out.exists()
    assert took < 4, f"took {took:.1f} s with a 1 s timeout"
    assert [t.name for t in threading.enumerate() if "dask-probe" in t.name] == []


@pytest.fixture
def scheduler() -> Iterator[str]:
    """A Dask scheduler on TCP in this process, with no worker; yields its address."""
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://",
                                       scheduler_port=0, dashboard_address=":0")
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def _rows(db: Path) -> int:
    try:
        with sqlite3.connect(str(db), timeout=1) as con:
            return int(con.execute("SELECT count(*) FROM points").fetchone()[0])
    except sqlite3.Error:  # not there yet, or its table not yet committed
        return 0


def test_a_cluster_that_loses_its_workers_is_a_run_failure(tmp_path: Path,
                                                           scheduler: str) -> None:
    """The only worker killed mid-sweep: the scattered study is lost with it and the
    scheduler cancels every chunk; one line, exit 1, the finished rows kept."""
    dask = Path(sys.executable).parent / "dask"
    worker = subprocess.Popen([str(dask), "worker", scheduler, "--nthreads", "1",
                               "--no-nanny", "--no-dashboard"], start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = tmp_path / "o"
    axes = ("sweep.axes={workload.batch_per_worker: ["
            + ", ".join(map(str, range(8, 200))) + "]}")
    sweep = subprocess.Popen(
        [sys.executable, "-m", "clustersim", "sweep",
         str(ROOT / "scenarios" / "knl_unsaturated.yaml"), "--set", axes, "--dask", scheduler,
         "--chunk", "4", "--out", str(out), "-q"],
        cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        deadline = time.monotonic() + 60
        while _rows(out / "points.sqlite") == 0:
            assert sweep.poll() is None, sweep.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no row cached after 60 s"
            time.sleep(0.05)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)
        _out, err = sweep.communicate(timeout=30)
    finally:
        for proc in (sweep, worker):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert sweep.returncode == 1, err[-2000:]
    assert err.startswith(f"failed: --dask {scheduler}: the Dask cluster failed: "), err
    assert "workers lost" in err and err.count("\n") == 1 and "Traceback" not in err
    assert _rows(out / "points.sqlite") > 0
