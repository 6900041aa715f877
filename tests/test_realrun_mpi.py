"""Real MPI runs with the pip MPICH: schedules vs the library, failures, hangs, microbenchmarks.

Correctness runs use up to 4 ranks on this 2-core machine (oversubscribed, so no timing is
asserted there); the microbenchmark runs use 2.  Every test also checks that no process of
its run survived (``/proc`` scan for the run's marker).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _procs import no_strays

from clustersim.trace import read_jsonl
from realrun.api import load_traces, run_microbenchmarks, run_selftest, verify_schedules
from realrun.launch import RealRunError
from realrun.proctree import find_marked

pytestmark = pytest.mark.mpi

ALL_OPS = ("allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "alltoall",
           "gather", "scatter")
# the allreduce schedules issue 5 names; each must agree with MPI_Allreduce
REQUIRED = {"ring", "recursive_doubling", "rabenseifner", "binomial_tree", "double_binary_tree",
            "asa", "hierarchical"}


_no_strays = no_strays


@pytest.mark.parametrize("np_", [2, 3, 4])
def test_schedules_give_the_library_sums(np_: int, tmp_path: Path) -> None:
    rows = verify_schedules(np_, out_dir=tmp_path, algorithms=["all"], ops=ALL_OPS,
                            sizes=[4, 1000, 1 << 16], ranks_per_host=2, timeout=120)
    checked = [r for r in rows if "skipped" not in r]
    assert checked and all(r["ok"] for r in checked), [r for r in checked if not r["ok"]]
    # fp32 sums of the same values in another order: a few ulps at most
    assert max(r["max_rel_error"] for r in checked if r["tolerance"] <= 1e-5) < 1e-5
    done = {r["algorithm"] for r in checked if r["op"] == "allreduce"}
    assert done >= REQUIRED, REQUIRED - done
    assert {r["op"] for r in checked} == set(ALL_OPS)
    # the only skips are the ones that cannot run here (a user tree; copper needs 2^k ranks;
    # Horovod's hierarchical allreduce needs as many ranks on every host: 3 ranks, 2 per host)
    skipped = {(r["op"], r["algorithm"]) for r in rows if "skipped" in r}
    assert skipped <= {("allreduce", "user_tree"), ("allreduce", "copper"),
                       ("allreduce", "horovod_hierarchical")}
    assert ("allreduce", "horovod_hierarchical") not in skipped or np_ % 2
    trace_header, events = read_jsonl(tmp_path / "trace.rank0.jsonl")
    assert trace_header["world"] == np_ and len(events) == 2 * len(checked)
    _no_strays(tmp_path)


def _assert_partial_trace(out: Path, np_: int, fault_after: int, failed_rank: int) -> None:
    headers, events = load_traces(out)
    assert len(headers) == np_
    mine = [e for e in events if e.actor == failed_rank and e.kind == "allreduce"]
    # everything up to the fault was flushed: exactly the iterations before it
    assert [e.iteration for e in mine] == list(range(fault_after))
    assert all(e.end >= e.start >= 0 for e in events)


@pytest.mark.parametrize("fault,reason", [("exit", "exited with code 3"),
                                          ("kill", "killed by signal 9 (SIGKILL)"),
                                          ("raise", "RuntimeError: selftest: injected")])
def test_failed_rank_is_named_with_its_log(fault: str, reason: str, tmp_path: Path) -> None:
    with pytest.raises(RealRunError) as exc:
        run_selftest(3, out_dir=tmp_path, iterations=40, fault=fault, fault_rank=1,
                     fault_after=6, timeout=60)
    err = exc.value
    assert err.kind == "failed" and err.rank == 1
    assert err.log == tmp_path / "logs" / "rank1.err" and err.log.is_file()
    assert reason in err.reason and "rank 1" in str(err) and str(err.log) in str(err)
    assert "injecting fault" in err.log.read_text()
    assert find_marked(err.run_id) == []
    _assert_partial_trace(tmp_path, 3, 6, 1)
    _no_strays(tmp_path)


def test_hung_rank_times_out_and_is_named(tmp_path: Path) -> None:
    with pytest.raises(RealRunError) as exc:
        run_selftest(3, out_dir=tmp_path, iterations=40, fault="hang", fault_rank=1,
                     fault_after=4, timeout=5)
    err = exc.value
    assert err.kind == "timeout" and err.rank == 1
    assert "timed out after 5 s" in str(err) and "waited for it in communication" in err.reason
    # the launcher asked the rank for its stack before killing it (faulthandler)
    text = err.log.read_text()
    assert "most recent call first" in text and "_inject" in text
    assert find_marked(err.run_id) == []
    _assert_partial_trace(tmp_path, 3, 4, 1)
    _no_strays(tmp_path)


def test_microbenchmarks_rows_and_traces(tmp_path: Path) -> None:
    # Sizes ~8x apart in expected time or more: on this shared 2-core VM other jobs can make
    # a small-message round trip cost a scheduler hand-off (~0.1-1 ms), so sizes whose times
    # differ by less than that are not reliably ordered - nor are they physically required to
    # be, below the eager limit.
    sizes = [8, 4 << 20, 32 << 20]
    rows = run_microbenchmarks(2, out_dir=tmp_path, sizes=sizes,
                               collective_sizes=[4096, 1 << 20], ops=["allreduce", "allgather"], algorithms=["mpi", "ring"],
                               gemm_shapes=[(64, 64, 64)], mem_sizes=[1 << 16],
                               noise_shape=(32, 32, 32), noise_calls=6, off_cache=1 << 20,
                               target=0.004, repeats=5, timeout=120)
    pp = sorted((r for r in rows if r["bench"] == "pingpong"), key=lambda r: r["size"])
    assert [r["size"] for r in pp] == sizes
    assert all(r["time_min"] <= r["time"] for r in pp)
    # monotone in size - judged on the fastest of the interleaved batches, the least disturbed
    times = [r["time_min"] for r in pp]
    assert all(t > 0 for t in times) and times == sorted(times), times
    assert all(r["bandwidth"] > 0 for r in pp)
    assert pp[-1]["bandwidth"] > pp[0]["bandwidth"]
    coll = [r for r in rows if r["bench"] == "collective"]
    assert {(r["op"], r["algorithm"]) for r in coll} == {
        (o, a) for o in ("allreduce", "allgather") for a in ("mpi", "ring")}
    for r in coll:
        assert r["ranks"] == 2 and r["time"] > 0
        assert r["algbw"] == pytest.approx(r["size"] / r["time"])
        factor = 1.0 if r["op"] == "allreduce" else 0.5  # 2(p-1)/p and (p-1)/p at p = 2
        assert r["busbw"] == pytest.approx(r["algbw"] * factor)
    kinds = {r["bench"] for r in rows}
    assert kinds == {"pingpong", "collective", "gemm", "memory", "reduce"}
    assert all(r["flop_rate"] > 0 for r in rows if r["bench"] == "gemm")
    # every trace line is valid schema: header + events that read back
    for rank in (0, 1):
        header, events = read_jsonl(tmp_path / f"trace.rank{rank}.jsonl")
        # messages rotate through buffer sets: 2 MiB per set of the 1 MiB all-reduce
        big = [e for e in events if e.meta.get("bench") == "collective"
               and e.meta.get("size") == 1 << 20]
        assert big and all(e.meta.get("buffer_sets") == 2 for e in big)
        noise = [e for e in events if e.meta.get("bench") == "noise"]
        assert [e.meta["call"] for e in noise] == list(range(6))  # each call timed alone
        assert all(e.meta["m"] == 32 and e.duration > 0 for e in noise)
        assert header["schema"] == 1 and header["rank"] == rank and header["world"] == 2
        assert events and all(e.end >= e.start for e in events)
        assert all(e.meta["bench"] in kinds | {"noise"} for e in events)
    assert json.loads((tmp_path / "results.json").read_text()) == rows
    chrome = json.loads((tmp_path / "trace.chrome.json").read_text())
    assert any(e.get("ph") == "X" for e in chrome["traceEvents"])
    _no_strays(tmp_path)


GROUP_PROGRAM = '''
import sys
import numpy as np
from realrun.collectives import ScheduledCollective, build, library_call, make_buffers
from realrun.runtime import RankContext

ctx = RankContext(sys.argv[1], role="worker", backend="numpy")
group = (0, 2)
if ctx.rank in group:
    sub = ctx.group_comm(group)
    assert ctx.group_comm(group) is sub and sub.Get_size() == 2  # cached
    me = sub.Get_rank()
    lib = make_buffers(ctx.backend, "allreduce", 4000, 2, me)
    ours = make_buffers(ctx.backend, "allreduce", 4000, 2, me)
    with ctx.op("allreduce", "group mpi", nbytes=lib.nbytes):
        library_call(sub, lib)()
    runner = ScheduledCollective(sub, build("allreduce", "ring", 2, float(ours.nbytes)), ours,
                                 ctx.backend)
    with ctx.op("allreduce", "group ring", nbytes=ours.nbytes) as meta:
        runner.run()
        meta["messages"] = runner.messages
    runner.free()
    want = sum(make_buffers(ctx.backend, "allreduce", 4000, 2, r).send for r in range(2))
    if not (np.allclose(lib.recv, want) and np.allclose(ours.recv, want)):
        sys.exit(5)
ctx.record("members", float(ctx.rank in group), iteration=0)
ctx.comm.Barrier()
ctx.close()
'''


def test_group_communicator_and_script_launch(tmp_path: Path) -> None:
    """A sub-group all-reduce (library and ring) on ranks 0 and 2 of 3, run as a script."""
    from realrun.launch import launch

    prog = tmp_path / "group_prog.py"
    prog.write_text(GROUP_PROGRAM)
    res = launch(str(prog), [str(tmp_path / "out")], 3, timeout=60, log_dir=tmp_path / "logs")
    assert res.returncode == 0 and res.strays == []
    assert all((tmp_path / "logs" / f"rank{r}.exit").read_text().strip() == "0"
               for r in range(3))
    _, events = load_traces(tmp_path / "out")
    labels = sorted((e.actor, e.label) for e in events if e.kind == "allreduce")
    assert labels == [(0, "group mpi"), (0, "group ring"), (2, "group mpi"), (2, "group ring")]
    ring = [e for e in events if e.label == "group ring"]
    assert all(e.meta == {"messages": 2} for e in ring)
    rec = sorted((e.actor, e.value) for e in events if e.kind == "record")
    assert rec == [(0, 1.0), (1, 0.0), (2, 1.0)]
    _no_strays(tmp_path)
