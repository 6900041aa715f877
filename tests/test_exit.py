"""The console script's exit (clustersim._exit): it skips freeing the run's objects one by
one, and must still end like a normal exit - every byte of output there, the exit code
kept, atexit handlers run - or take the normal path where it cannot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "CLUSTERSIM_JOBS": "1"}


def _py(code: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=ENV, timeout=300, **kw)


def test_exit_keeps_code_output_and_atexit_handlers():
    """Buffered output not yet flushed (stdout is a pipe) and an atexit handler's line
    both arrive; the code is the one given."""
    r = _py("import atexit, sys\n"
            "from clustersim._exit import exit_now\n"
            "atexit.register(lambda: print('handler ran'))\n"
            "print('x' * 100000, end='')\n"
            "sys.stderr.write('err line')\n"
            "exit_now(7)\n"
            "print('not reached')\n")
    assert r.returncode == 7
    assert r.stdout == "x" * 100000 + "handler ran\n"
    assert r.stderr == "err line"


def test_a_running_thread_takes_the_normal_path():
    """Another thread still runs: exit_now returns and the interpreter waits for it."""
    r = _py("import threading, time\n"
            "from clustersim._exit import exit_now\n"
            "t = threading.Thread(target=lambda: (time.sleep(0.3), print('thread done')))\n"
            "t.start()\n"
            "print('returned', exit_now(3))\n")
    assert r.returncode == 0
    assert r.stdout == "returned 3\nthread done\n"


def test_retain_keeps_nothing_for_in_process_callers():
    from clustersim import _exit

    assert not _exit.exiting_fast()
    _exit.retain(object())
    assert _exit._RETAINED == []


def test_console_script_end_to_end(tmp_path):
    """As installed (``clustersim.console:main``, which calls ``clustersim.cli:
    console_main``): the table whole on a pipe, the JSON written, exit 0; bad input still
    exits 2 with one message; a closed pipe 141."""
    out = tmp_path / "o.json"
    run = ("import sys; from clustersim.cli import console_main; "
           "sys.argv = ['clustersim', *sys.argv[1:]]; sys.exit(console_main())")
    r = subprocess.run([sys.executable, "-c", run, "predict", "theano_mpi_alexnet",
                        "--json", str(out)], capture_output=True, text=True, env=ENV,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    ref = subprocess.run([sys.executable, "-m", "clustersim", "predict", "theano_mpi_alexnet",
                          "--json", str(tmp_path / "ref.json")], capture_output=True,
                         text=True, env=ENV, timeout=300)
    assert r.stdout == ref.stdout  # the normal exit's output, byte for byte
    assert json.loads(out.read_text()) == json.loads((tmp_path / "ref.json").read_text())
    bad = subprocess.run([sys.executable, "-c", run, "predict", "no_such_scenario"],
                         capture_output=True, text=True, env=ENV, timeout=300)
    assert bad.returncode == 2 and bad.stderr.startswith("error:")
    assert "Traceback" not in bad.stderr
    proc = subprocess.Popen([sys.executable, "-c", run, "predict", "theano_mpi_alexnet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    assert proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=300) == 141 and proc.stderr.read() == b""


@pytest.mark.parametrize("fast", [False, True])
def test_predict_leaves_the_collector_as_found_unless_exiting(fast, tmp_path):
    """In-process callers get the collector back on; the console script's run leaves it off
    (a full collection just before os._exit is wasted: 0.6 s at 100,000 GPUs)."""
    r = _py("import gc, sys\n"
            "from clustersim import _exit\n"
            "from clustersim.cli import main\n"
            f"if {fast}: _exit.fast_exit()\n"
            "rc = main(['predict', 'theano_mpi_alexnet', '-q'])\n"
            "print(rc, gc.isenabled(), len(_exit._RETAINED))\n")
    assert r.stdout.split() == (["0", "False", "1"] if fast else ["0", "True", "0"])
