"""Processes: a signalled real run leaves no process behind and keeps clean traces; a
cluster-sized scenario is not launched on this machine; SIGTERM/SIGHUP unwind like Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _procs import no_strays

from clustersim import _signals
from clustersim.cli import main
from clustersim.errors import InputError
from clustersim.trace import TraceEvent, TraceWriter, read_jsonl
from realrun.launch import OVERSUBSCRIBE_LIMIT, check_rank_count
from realrun.runtime import TraceFile, trim_padding, trim_traces

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "CLUSTERSIM_JOBS": "1"}


def _events(n: int) -> list[TraceEvent]:
    return [TraceEvent(0, "worker", "allreduce", i * 1e-3, i * 1e-3 + 5e-4, "ring", 4096.0, i)
            for i in range(n)]


def _strict_lines(path: Path) -> list[dict]:
    """What a strict line-by-line JSON reader sees: every line must parse."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- traces of a rank that died --------------------------------------------------------------
_DIE = """
import os, sys
from realrun.runtime import TraceFile
from clustersim.trace import TraceEvent
t = TraceFile(sys.argv[1], header={"rank": 0})
for i in range(int(sys.argv[2])):
    t.write(TraceEvent(0, "worker", "allreduce", i * 1e-3, i * 1e-3 + 5e-4, "ring", 4096.0, i))
if len(sys.argv) > 3:  # die in the middle of a line
    t._append(b'{"actor": 0, "end": 0.1')
os._exit(0)  # killed: no close(), the mapping's NUL padding stays on disk
"""


@pytest.mark.parametrize("half_line", [False, True])
def test_trace_of_a_killed_rank_is_cut_to_what_was_written(tmp_path, half_line):
    path = tmp_path / "trace.rank0.jsonl"
    argv = [sys.executable, "-c", _DIE, str(path), "7"] + (["half"] if half_line else [])
    subprocess.run(argv, check=True, env=_env(), timeout=60)
    raw = path.read_bytes()
    assert len(raw) == TraceFile.CHUNK and raw.endswith(b"\0")  # the defect, reproduced
    (tmp_path / "rank0.trace").write_text(f"{path}\n")  # what RankContext records
    assert trim_traces(tmp_path, 1) == [path]
    # byte for byte what the simulator's TraceWriter writes for the same events
    ref = tmp_path / "ref.jsonl"
    with TraceWriter(ref, header={"rank": 0}) as w:
        for ev in _events(7):
            w.write(ev)
    assert path.read_bytes() == ref.read_bytes()
    assert len(_strict_lines(path)) == 8
    assert trim_padding(path) is False  # a clean file is left alone


def test_trim_leaves_a_closed_trace_alone(tmp_path):
    path = tmp_path / "t.jsonl"
    t = TraceFile(path, header={"rank": 3})
    for ev in _events(3):
        t.write(ev)
    t.close()
    before = path.read_bytes()
    assert trim_padding(path) is False and path.read_bytes() == before
    assert len(read_jsonl(path)[1]) == 3


# --- too many ranks for this machine ---------------------------------------------------------
def test_rank_count_limits(tmp_path):
    check_rank_count(4, cores=4)
    hosts = tmp_path / "hosts"  # the hostfile must exist: checked here since audit E (H4)
    hosts.write_text("node1\nnode2\n")
    check_rank_count(4253, cores=2, hostfile=str(hosts))  # a cluster: not ours to judge
    with pytest.raises(InputError, match="does not exist"):
        check_rank_count(4253, cores=2, hostfile=str(tmp_path / "none"))
    with pytest.raises(InputError, match="5 MPI ranks but this machine has 4 core"):
        check_rank_count(5, cores=4)
    check_rank_count(OVERSUBSCRIBE_LIMIT * 4, cores=4, oversubscribe=True)
    with pytest.raises(InputError, match=f"at most {OVERSUBSCRIBE_LIMIT * 4}"):
        check_rank_count(OVERSUBSCRIBE_LIMIT * 4 + 1, cores=4, oversubscribe=True)


@pytest.mark.parametrize("extra", [[], ["--oversubscribe"]])
def test_run_real_refuses_a_cluster_scenario(tmp_path, capsys, extra):
    out = tmp_path / "out"
    code = main(["run", "--real", str(ROOT / "scenarios" / "knl_4253.yaml"), "--out", str(out),
                 *extra])
    err = capsys.readouterr().err
    assert code == 2 and "4253 MPI ranks" in err and "Traceback" not in err
    assert ("--oversubscribe to run" in err) != bool(extra)
    assert not out.exists()  # nothing launched


# --- SIGTERM/SIGHUP as exceptions ------------------------------------------------------------
@pytest.fixture(autouse=True)
def _default_hangup():
    """These tests are about our handlers: a suite started under ``nohup`` inherits SIGHUP
    ignored, which ``as_interrupt`` rightly leaves alone (and children inherit), so put the
    default disposition back for each test and restore what was there after."""
    prev = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGHUP, prev)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signals_raise_terminated(sig):
    with _signals.as_interrupt(), pytest.raises(KeyboardInterrupt) as exc:
        os.kill(os.getpid(), sig)
        time.sleep(5)
    assert isinstance(exc.value, _signals.Terminated) and exc.value.signum == sig
    assert signal.getsignal(sig) is signal.SIG_DFL  # restored


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_inside_a_simulated_process_stays_terminated(sig):
    """SimPy and the engine's loop re-raise a process's exception as ``type(e)(*e.args)``:
    a SIGTERM that landed inside a simulated actor had become "ValueError: 'SIGTERM' is not
    a valid Signals" with a traceback, instead of the command's "terminated by SIGTERM"."""
    from clustersim.sim.events import _Environment

    env = _Environment()

    def actor(env):
        yield env.timeout(1)
        raise _signals.Terminated(sig)

    env.process(actor(env))
    with pytest.raises(_signals.Terminated) as exc:
        env.run()
    assert exc.value.signum == sig and str(exc.value) == sig.name


def test_a_forked_child_gets_the_default_disposition_back():
    """A pool worker must die of SIGTERM in the kernel: a Python-level handler can miss a
    signal that lands just before the worker blocks on its task queue, and Pool.terminate()
    then waits for it forever (2 in 12 runs of ``predict --uncertainty 16 -j 2`` hung)."""
    r, w = os.pipe()
    with _signals.as_interrupt():
        pid = os.fork()
        if pid == 0:  # the child reports what it has, then waits to be killed
            os.write(w, b"".join(b"D" if signal.getsignal(s) is signal.SIG_DFL else b"P"
                                 for s in _signals.CATCH))
            time.sleep(30)
            os._exit(0)
        got = os.read(r, 8)
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # ours, in the parent
    os.close(r)
    os.close(w)
    assert got == b"DD"
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


def test_terminating_an_idle_pool_never_hangs():
    """The end of every pooled prediction: workers idle on the task queue, terminated.

    Run in a fresh interpreter of its own process group, not forked from pytest's: a fork
    of a process with other threads (a Dask or BLAS thread left by an earlier test) may copy
    a lock held by one of them, and the child then hangs on it whatever the pool does."""
    code = (
        "import multiprocessing, os\n"
        "from clustersim import _signals\n"
        "with _signals.as_interrupt():\n"
        "    for _ in range(40):\n"
        "        with multiprocessing.get_context('fork').Pool(2) as pool:\n"
        "            assert sorted(pool.imap_unordered(abs, range(-4, 0))) == [1, 2, 3, 4]\n"
        "os._exit(0)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], env=_env(), cwd=ROOT,
                            start_new_session=True, stderr=subprocess.PIPE, text=True)
    try:
        _out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("Pool.terminate() hung on a worker that missed its SIGTERM"
                             ) from None
    assert proc.returncode == 0, err[-2000:]


def test_deferred_holds_a_signal_until_cleanup_is_done():
    done = []
    with _signals.as_interrupt(), pytest.raises(_signals.Terminated), _signals.deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        done.append("cleanup finished")
    assert done == ["cleanup finished"]


# --- real runs, signalled --------------------------------------------------------------------
def _wait_for_events(traces: Path, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Until every rank's trace holds events (the ranks are past MPI start-up, computing)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, proc.communicate()
        files = sorted(traces.rglob("trace.rank*.jsonl"))
        if len(files) >= 2 and all(f.stat().st_size and f.read_bytes().count(b"\n") > 3
                                   for f in files):
            return
        time.sleep(0.2)
    raise AssertionError("the run never started tracing")


def _no_strays_under(root: Path) -> None:
    for state in {p.parent for p in root.rglob("rank*.state")}:
        no_strays(state)


@pytest.mark.mpi
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_signalled_real_run_leaves_no_process_and_clean_traces(tmp_path, sig, code):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "clustersim", "run", "--real",
                             str(ROOT / "scenarios" / "real_bsp_mlp.yaml"),
                             "--iterations", "100000", "--out", str(out)],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_events(out, proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert f"terminated by {signal.Signals(sig).name}" in err and "Traceback" not in err
    assert f"partial traces (everything measured before the stop) are in {out}" in err
    no_strays(out / "logs")
    for r in (0, 1):  # kept, and clean: every line is JSON, no NUL padding
        lines = _strict_lines(out / f"trace.rank{r}.jsonl")
        assert "header" in lines[0] and len(lines) > 3


@pytest.mark.mpi
def test_signalled_calibration_leaves_no_process(tmp_path):
    work = tmp_path / "work"
    proc = subprocess.Popen([sys.executable, "-m", "clustersim", "calibrate", "--real",
                             "--quick", "--no-validate", "-q", "--work-dir", str(work),
                             "--out", str(tmp_path / "p.yaml")],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_events(work, proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert "Traceback" not in err and not (tmp_path / "p.yaml").exists()
    _no_strays_under(work)
    for f in work.rglob("trace.rank*.jsonl"):
        assert "header" in _strict_lines(f)[0]


def _children(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(stat[1]) == pid and stat[0] not in ("Z", "X"):
                out.append(int(name))
    return out


def test_signalled_pooled_prediction_stops_its_workers_quietly():
    """SIGTERM during a sweep on a process pool: exit 143, one line on stderr (no traceback
    per worker: forked workers die of the signal as before), no worker left."""
    proc = subprocess.Popen([sys.executable, "-m", "clustersim", "predict",
                             str(ROOT / "scenarios" / "knl_4253.yaml"), "-q", "-j", "2"],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 120
        while len(kids := _children(proc.pid)) < 2 and time.monotonic() < end:
            assert proc.poll() is None
            time.sleep(0.05)
        assert len(kids) == 2
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143 and out == "" and err == "terminated by SIGTERM\n"
    time.sleep(0.2)
    assert [k for k in kids if k in _children(proc.pid) or Path(f"/proc/{k}").exists()] == []


@pytest.mark.mpi
def test_traces_of_a_killed_rank_are_clean(tmp_path):
    from realrun.api import run_selftest
    from realrun.launch import RealRunError

    with pytest.raises(RealRunError):
        run_selftest(3, out_dir=tmp_path, iterations=40, fault="kill", fault_rank=1,
                     fault_after=6, timeout=60)
    for r in range(3):
        raw = (tmp_path / f"trace.rank{r}.jsonl").read_bytes()
        assert b"\0" not in raw and raw.endswith(b"\n")
        assert "header" in _strict_lines(tmp_path / f"trace.rank{r}.jsonl")[0]
    no_strays(tmp_path / "logs")


def test_a_signal_inside_the_fork_hooks_leaves_no_mask_and_is_not_lost():
    """CPython runs pending handlers inside ``pthread_sigmask`` after applying the block; a
    SIGTERM handled there (a Terminated inside an at-fork hook, which Python only prints)
    had left SIGTERM blocked for good in the forking thread and in the child (review 19).
    Stand-in: a ``pthread_sigmask`` that raises the handler's Terminated after blocking.
    Neither process may stay blocked, and the signal is kept for ``_signals.check()``."""
    code = (
        "import os, signal, types\n"
        "from clustersim import _signals\n"
        "real = signal.pthread_sigmask\n"
        "def sigmask(how, mask):\n"
        "    old = real(how, mask)\n"
        "    if how == signal.SIG_BLOCK and mask:\n"
        "        _signals._raise(signal.SIGTERM, None)\n"
        "    return old\n"
        "ns = {k: getattr(signal, k) for k in dir(signal) if not k.startswith('__')}\n"
        "_signals.signal = types.SimpleNamespace(**ns)\n"
        "_signals.signal.pthread_sigmask = sigmask\n"
        "BIT = 1 << (signal.SIGTERM - 1)\n"
        "def blocked(path):\n"
        "    line = next(x for x in open(path) if x.startswith('SigBlk'))\n"
        "    return bool(int(line.split()[1], 16) & BIT)\n"
        "with _signals.as_interrupt():\n"
        "    r, w = os.pipe()\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.write(w, b'1' if blocked('/proc/self/status') else b'0')\n"
        "        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "    child = os.read(r, 1) == b'1'\n"
        "    parent = blocked(f'/proc/self/task/{os.getpid()}/status')\n"
        "    try:\n"
        "        _signals.check()\n"
        "        kept = False\n"
        "    except _signals.Terminated:\n"
        "        kept = True\n"
        "print(child, parent, kept)\n")
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to read signal masks")
    out = subprocess.run([sys.executable, "-c", code], env=_env(), cwd=ROOT, timeout=60,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "False", "True"], out.stdout + out.stderr[-2000:]
    assert "Exception ignored" not in out.stderr, out.stderr[-2000:]
