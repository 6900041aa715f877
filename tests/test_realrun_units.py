"""realrun pieces that need no MPI run: serialisation, state records, blame, process scan,
array backend, buffer conventions, result rows, launcher input checks and import hygiene."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from clustersim.collectives import build_schedule
from clustersim.errors import InputError
from clustersim.trace import TraceEvent, TraceWriter, read_jsonl
from realrun.arrays import get_backend, gpu_present
from realrun.collectives import LIBRARY_OPS, busbw_factor, element_count, make_buffers
from realrun.launch import _command, _describe_status, launch
from realrun.mbresults import results_from_events
from realrun.proctree import MARKER, find_marked, kill_marked
from realrun.rankstate import RankState, StateFile, blame_hang, read_states, state_path
from realrun.runtime import TraceFile, event_line

# --- trace serialisation ------------------------------------------------------------------------
EVENTS = [
    TraceEvent(0, "worker", "allreduce", 0.5, 0.75, "allreduce ring", 4096.0, 3),
    TraceEvent(1, "server", "recv", 1e-7, 2.5e-3, "", 0.0, None, 0, None),
    TraceEvent(2, "bench", "record", 3.0, 3.0, "staleness", 0.0, 0, None, 2.0),
    TraceEvent(3, "bench", "pingpong", 0.0, 1.0, "pp \"quoted\" é", 8.0, 0, 1, None,
               {"bench": "pingpong", "iters": 10, "pair": [0, 1], "nested": {"b": 1, "a": 2.5}}),
    TraceEvent(4, "worker", "compute", 0, 2, "int times", 1, 7, None, -1.5, {}),
]


@pytest.mark.parametrize("ev", EVENTS, ids=lambda e: e.kind)
def test_event_line_is_byte_identical_to_schema_serialisation(ev: TraceEvent) -> None:
    assert event_line(ev) == json.dumps(ev.to_dict(), sort_keys=True) + "\n"


def test_trace_file_matches_trace_writer_and_reads_back(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    head = {"rank": 0, "backend": "real"}
    with TraceWriter(tmp_path / "a.jsonl", head) as w:
        for ev in EVENTS:
            w.write(ev)
    monkeypatch.setattr(TraceFile, "CHUNK", 256)  # force several remaps of the growing file
    tf = TraceFile(tmp_path / "b.jsonl", head)
    for ev in EVENTS:
        tf.write(ev)
    # every event is on disk before close (what a killed rank leaves): NUL padding after it
    assert read_jsonl(tmp_path / "b.jsonl") == ({"schema": 1, **head}, EVENTS)
    assert (tmp_path / "b.jsonl").read_bytes().rstrip(b"\0") == \
        (tmp_path / "a.jsonl").read_bytes()
    tf.close()
    tf.close()  # idempotent
    assert (tmp_path / "b.jsonl").read_bytes() == (tmp_path / "a.jsonl").read_bytes()


# --- state records and blame --------------------------------------------------------------------
def test_state_file_round_trip_and_long_escaped_ops(tmp_path: Path) -> None:
    sf = StateFile(state_path(tmp_path, 2), 2)
    sf.set("comm", "allreduce ring")
    st = read_states(tmp_path, 3)
    assert st[0] is None and st[1] is None
    assert st[2] is not None and (st[2].state, st[2].op, st[2].n) == ("comm", "allreduce ring", 0)
    assert st[2].pid == os.getpid() and abs(st[2].since - time.time()) < 5
    sf.set("run", count=True)
    sf.set("compute", "\u00e9" * 100)  # escapes to 6 chars each: must stay valid JSON
    st2 = read_states(tmp_path, 3)[2]
    assert st2 is not None and st2.state == "compute" and st2.n == 1
    assert st2.op and set(st2.op) == {"\u00e9"}
    sf.close()


def _st(rank: int, state: str, since: float, n: int = 5) -> RankState:
    return RankState(rank, state, "op", since, n, 100 + rank)


def test_blame_rank_not_waiting_in_communication() -> None:
    now = time.time()
    rank, why = blame_hang({0: _st(0, "comm", now - 1), 1: _st(1, "run", now - 9),
                            2: _st(2, "comm", now - 2)})
    assert rank == 1 and "2 other rank(s) waited" in why
    # two busy ranks: the one busy for longer
    rank, _ = blame_hang({0: _st(0, "compute", now - 3), 1: _st(1, "run", now - 9),
                          2: _st(2, "comm", now - 2)})
    assert rank == 1


def test_blame_missing_state_then_deadlock_then_done() -> None:
    now = time.time()
    assert blame_hang({0: _st(0, "comm", now), 1: None})[0] == 1
    rank, why = blame_hang({0: _st(0, "comm", now, n=7), 1: _st(1, "comm", now, n=4),
                            2: _st(2, "comm", now, n=4)})
    assert rank == 1 and "deadlock" in why
    assert blame_hang({0: _st(0, "done", now), 1: _st(1, "done", now)})[0] is None
    # finished ranks do not count as waiting for the hung one
    assert blame_hang({0: _st(0, "done", now), 1: _st(1, "compute", now - 1)})[0] == 1


# --- process scan -------------------------------------------------------------------------------
def test_find_and_kill_marked_processes() -> None:
    run_id = "test" + os.urandom(6).hex()
    env = {**os.environ, MARKER: run_id, "PMI_RANK": "3"}
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env,
                              start_new_session=True) for _ in range(2)]
    try:
        found = {p.pid: p for p in find_marked(run_id)}
        assert set(found) == {p.pid for p in procs}
        assert all(p.rank == 3 and "time.sleep" in p.cmdline for p in found.values())
        killed = kill_marked(run_id)
        assert {p.pid for p in killed} == {p.pid for p in procs}
        for p in procs:
            assert p.wait(timeout=10) == -9
        assert find_marked(run_id) == []
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


# --- array backend ------------------------------------------------------------------------------
def test_numpy_backend_kernels() -> None:
    be = get_backend("numpy")
    assert be.name == "numpy" and be.direct_mpi and not be.is_gpu
    a = be.random(1000, "float32", seed=5)
    assert a.dtype == np.float32 and np.array_equal(a, be.random(1000, "float32", seed=5))
    assert a.min() >= 0.0 and a.max() < 1.0
    b = be.random(1000, "float32", seed=6)
    want = a + b
    out = be.add_(a, b)
    assert out is a and np.array_equal(a, want)
    assert be.to_fp16(a).dtype == np.float16
    assert be.to_fp32(be.to_fp16(a)).dtype == np.float32
    assert be.random(10, "fp16").dtype == np.float16
    k = be.gemm(7, 5, 3, "float64", seed=1)
    c = k()
    a_ = be.random(21, "float64", 1).reshape(7, 3)
    b_ = be.random(15, "float64", 2).reshape(3, 5)
    assert np.allclose(c, a_ @ b_) and k.flops == 2 * 7 * 5 * 3
    be.synchronize()
    assert be.zeros(4).tolist() == [0.0] * 4 and len(be.empty(9)) == 9


def test_backend_choices_are_checked() -> None:
    with pytest.raises(InputError, match="allowed: auto, numpy, cupy"):
        get_backend("cuda")
    if not gpu_present():
        with pytest.raises(InputError, match="cupy"):
            get_backend("cupy")
        assert get_backend("auto").name == "numpy"
    with pytest.raises(InputError, match="unknown dtype"):
        get_backend("numpy").empty(3, "bf16")


# --- buffer conventions -------------------------------------------------------------------------
@pytest.mark.parametrize("op", [o for o in LIBRARY_OPS if o != "barrier"])
@pytest.mark.parametrize("p", [2, 3, 4])
def test_buffers_follow_nccl_tests_size_and_match_schedule_busbw(op: str, p: int) -> None:
    be = get_backend("numpy")
    bufs = make_buffers(be, op, 4000, p, rank=1)
    n = element_count(op, 4000, p, 4)
    assert bufs.count == n and bufs.nbytes == 4 * n
    blocked = op in ("allgather", "reduce_scatter", "alltoall", "gather", "scatter")
    if blocked:
        assert n % p == 0 and n == (1000 // p) * p
    send_len = n // p if op in ("allgather", "gather") else n
    recv_len = {"broadcast": None, "reduce_scatter": n // p, "scatter": n // p}.get(op, n)
    assert len(bufs.send) == send_len
    assert (bufs.recv is None) if recv_len is None else len(bufs.recv) == recv_len
    # a different rank gets different values (a dropped contribution would show)
    other = make_buffers(be, op, 4000, p, rank=0)
    assert not np.array_equal(bufs.send, other.send)
    alg = {"allreduce": "ring", "broadcast": "binomial", "reduce": "binomial",
           "allgather": "ring", "reduce_scatter": "ring", "alltoall": "pairwise",
           "gather": "linear", "scatter": "linear"}[op]
    sched = build_schedule(op, alg, p, float(bufs.nbytes))
    assert busbw_factor(op, p) == pytest.approx(sched.busbw_factor)


# --- result rows --------------------------------------------------------------------------------
def _bench_ev(rank: int, dur: float, rep: int, **meta: object) -> TraceEvent:
    return TraceEvent(rank, "bench", "x", 10.0 * rep, 10.0 * rep + dur, meta={**meta,
                                                                             "repeat": rep})


def test_results_rows_from_synthetic_events() -> None:
    evs = []
    # collective on 4 ranks, 3 repeats, 10 iterations each; slowest rank per repeat counts
    for rep, durs in enumerate([(1.0, 1.2, 0.9, 1.1), (2.0, 2.0, 2.0, 2.0), (1.5, 1.0, 1.0, 1.0)]):
        for r, d in enumerate(durs):
            evs.append(_bench_ev(r, d, rep, bench="collective", op="allreduce", algorithm="ring",
                                 ranks=4, size=1 << 20, count=1 << 18, dtype="float32", iters=10))
    # ping-pong: only the pair's first rank counts, time is half the round trip
    for rep, d in enumerate([4e-3, 2e-3, 3e-3]):
        evs.append(_bench_ev(0, d, rep, bench="pingpong", size=64, pair=[0, 1], iters=100))
        evs.append(_bench_ev(1, 99.0, rep, bench="pingpong", size=64, pair=[0, 1], iters=100))
    evs.append(_bench_ev(0, 0.5, 0, bench="gemm", m=2, n=3, k=4, dtype="float32",
                         flops=48.0, iters=1000))
    evs.append(_bench_ev(0, 1.0, 0, bench="memory", kernel="copy", size=100,
                         bytes_moved=200, dtype="float32", iters=4))
    evs.append(_bench_ev(0, 2.0, 0, bench="reduce", size=100, dtype="float32", iters=4))
    evs.append(TraceEvent(0, "worker", "compute", 0, 1))  # not a benchmark: ignored
    rows = {r["bench"]: r for r in results_from_events(evs)}
    assert set(rows) == {"collective", "pingpong", "gemm", "memory", "reduce"}
    c = rows["collective"]
    assert c["time"] == pytest.approx(0.15)            # median of (0.12, 0.20, 0.15)
    assert c["time_min"] == pytest.approx(0.12) and c["repeats"] == 3
    assert c["algbw"] == pytest.approx((1 << 20) / 0.15)
    assert c["busbw"] == pytest.approx(c["algbw"] * 2 * 3 / 4)
    pp = rows["pingpong"]
    assert pp["time"] == pytest.approx(3e-3 / 100 / 2)
    assert pp["bandwidth"] == pytest.approx(64 / pp["time"])
    assert rows["gemm"]["flop_rate"] == pytest.approx(48.0 / (0.5 / 1000))
    assert rows["memory"]["bandwidth"] == pytest.approx(200 / 0.25)
    assert rows["reduce"]["rate"] == pytest.approx(100 / 0.5)


# --- launcher (no ranks started) ----------------------------------------------------------------
def test_launch_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="np must be"):
        launch("realrun", [], 0, timeout=5, log_dir=tmp_path)
    with pytest.raises(InputError, match="timeout must be"):
        launch("realrun", [], 2, timeout=0, log_dir=tmp_path)
    with pytest.raises(InputError, match="mpiexec") as exc:
        launch("realrun", [], 2, timeout=5, log_dir=tmp_path, mpiexec=tmp_path / "nope")
    assert exc.value.path == ("mpiexec",)
    with pytest.raises(InputError, match="hostfile"):
        launch("realrun", [], 2, timeout=5, log_dir=tmp_path, hostfile=tmp_path / "hosts")


def test_command_line_wraps_every_rank(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n")
    from realrun.launch import find_mpiexec

    exe = find_mpiexec()
    cmd = _command("realrun", ["selftest", "--out", "x"], 3, exe, hosts, "/py", ["-v"], [])
    assert cmd[:3] == [exe, "-n", "3"] and cmd[3:5] == ["-f", str(hosts)]  # pip MPICH: hydra
    i = cmd.index("sh")
    assert cmd[i + 1] == "-c" and "rank$r.exit" in cmd[i + 2] and "\n" not in cmd[i + 2]
    assert cmd[i + 3:] == ["realrun-rank", "/py", "-m", "realrun", "selftest", "--out", "x"]
    script = _command("/a/b.py", [], 1, exe, None, "/py", [], [])
    assert script[-2:] == ["/py", "/a/b.py"]
    assert _describe_status(3) == "exited with code 3"
    assert _describe_status(137) == "was killed by signal 9 (SIGKILL)"


def test_importing_does_not_initialise_mpi_or_cuda() -> None:
    code = ("import sys, clustersim, realrun, realrun.api, realrun.microbench, "
            "realrun.collectives, realrun.schedexec, realrun.runtime, realrun.main; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mpi4py', 'cupy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_staged_library_call_copies_device_to_host_in_place_and_back():
    """A backend whose MPI may not read its arrays stages each collective through host
    buffers allocated once (no fresh host array per call: the H200 run showed what that
    costs above 32 MiB) and writes the result back into the device buffer."""
    import numpy as np

    from realrun.arrays import Backend
    from realrun.collectives import CollectiveBuffers, library_call

    pinned = []

    class Staged(Backend):  # as CuPy's: reaching host memory makes a host copy
        def to_host(self, a):
            return np.array(a, copy=True)

        def host_empty(self, n, dtype="float32"):  # CuPy's pins these (cupyx.empty_pinned)
            pinned.append(super().host_empty(n, dtype))
            return pinned[-1]

    be = Staged(np, name="staged", is_gpu=False)
    be.direct_mpi = False
    calls = []

    class Comm:  # a 2-rank all-reduce whose peer holds the same values: recv = 2 * send
        def Allreduce(self, send, recv, op):
            calls.append((send.ctypes.data, recv.ctypes.data))
            np.multiply(send, 2, out=recv)

    send = np.arange(8, dtype=np.float32)
    recv = np.zeros(8, dtype=np.float32)
    call = library_call(Comm(), CollectiveBuffers("allreduce", 8, send, recv), backend=be)
    call()
    send += 1
    call()
    assert np.array_equal(recv, 2 * (np.arange(8) + 1))
    # the same two host buffers both times, and never the device (caller's) arrays
    assert calls[0] == calls[1]
    assert send.ctypes.data not in calls[0] and recv.ctypes.data not in calls[0]
    # and they are the backend's staging buffers (page-locked on a GPU), made once
    assert calls[0] == tuple(b.ctypes.data for b in pinned)


def test_gemm_precisions_on_numpy_fp32_fp16_run_tf32_bf16_are_refused():
    """tf32 and bf16 exist only on a GPU (cuBLAS): the NumPy backend refuses them with the
    precisions it has, and never emulates them; fp16 and fp32 run and say so in ``dtype``."""

    from clustersim.errors import InputError
    from realrun.arrays import get_backend
    from realrun.precision import meta_dtype

    be = get_backend("numpy")
    for prec, name in (("fp32", "float32"), ("fp16", "float16")):
        kern = be.gemm(8, 4, 16, precision=prec)
        kern()
        assert kern.dtype_name == name and kern.flops == 2 * 8 * 4 * 16
    for prec in ("tf32", "bf16"):
        with pytest.raises(InputError, match="needs a GPU.*allowed precisions are fp32, fp16"):
            be.gemm(8, 8, 8, precision=prec)
    with pytest.raises(InputError, match="allowed: fp32, tf32, bf16, fp16"):
        meta_dtype("int4")


def test_a_rank_in_a_smaller_world_than_launched_fails_at_once(monkeypatch):
    """mpi4py on another MPI than mpiexec's: each rank is alone in its world.  The rank says
    so and names the fix instead of waiting for peers until the time limit."""
    from realrun.rankstate import WORLD_VAR, check_world

    monkeypatch.setenv(WORLD_VAR, "2")
    with pytest.raises(RuntimeError) as exc:
        check_world(1, "Open MPI v4.1.6, package: Debian OpenMPI\nmore")
    msg = str(exc.value)
    assert "world of 1" in msg and "started 2" in msg and "Open MPI v4.1.6" in msg
    assert "MPI4PY_LIBMPI" in msg
    check_world(2, "MPICH Version: 5.0.2")  # the world it was launched as: fine
    monkeypatch.delenv(WORLD_VAR)
    check_world(1, "")  # not started by realrun's launcher: nothing to check
