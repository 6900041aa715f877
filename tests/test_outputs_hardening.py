"""Outputs: checked before any simulation, written all or none with the umask's mode; -j, -q,
a closed pipe, --trace on a benchmark, CSV columns with units."""

from __future__ import annotations

import csv
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim import fsio
from clustersim.cli import main
from clustersim.report import output

ROOT = Path(__file__).resolve().parents[1]
BENCH = str(ROOT / "scenarios" / "allreduce_crossbar16.yaml")
SMALL_BENCH = [BENCH, "--set", "benchmark.ranks=[4]", "--set", "benchmark.algorithms=[ring]"]
TRAIN = """\
name: small
platform: {topology: star, hosts: 4, device: v100, link: eth25g}
workload: {model: resnet50, batch_per_worker: 32, bucket: 25 MiB}
algorithm: {name: bsp, overlap: true}
sweep: {workers: [1, 2, 4]}
run: {iterations: 4, warmup: 1, seed: 7}
"""


@pytest.fixture
def train(tmp_path):
    p = tmp_path / "small.yaml"
    p.write_text(TRAIN)
    return str(p)


@pytest.fixture
def no_simulation(monkeypatch):
    """Any simulation is a test failure: the error must come before it."""
    def boom(*a, **k):
        raise AssertionError("simulated before checking the outputs")
    monkeypatch.setattr("clustersim.sim.collective_bench.run_benchmark", boom)
    monkeypatch.setattr("clustersim.sim.sweep.run_sweep", boom)


@pytest.mark.parametrize("flag, path, why", [
    ("--csv", "/proc/nope/x.csv", "cannot create directory '/proc/nope'"),
    ("--json", "/dev/null/x.json", "'/dev/null' is not a directory"),
    ("--trace", "{tmp}", "is a directory"),
])
def test_unwritable_output_is_refused_before_simulating(tmp_path, capsys, no_simulation,
                                                        flag, path, why):
    ok = tmp_path / "ok.json"
    for scenario in (BENCH, str(ROOT / "scenarios" / "theano_mpi_alexnet.yaml")):
        code = main(["predict", scenario, "--json" if flag != "--json" else "--csv", str(ok),
                     flag, path.format(tmp=tmp_path)])
        err = capsys.readouterr().err
        assert code == 2 and flag in err and why in err and "Traceback" not in err
        assert not ok.exists()


@pytest.mark.parametrize("argv", [
    ["predict", BENCH, "--json", ""],
    ["predict", "knl_4253", "--uncertainty", "2", "--uncertainty-plot", ""],
    ["whatif", BENCH, "-o", ""],
    ["sensitivity", "knl_4253", "--plot", " "],
    ["sweep", "theano_mpi_alexnet", "--csv", ""],
    ["sweep", "theano_mpi_alexnet", "--out", ""],
])
def test_an_empty_output_name_is_refused(tmp_path, capsys, monkeypatch, no_simulation, argv):
    # it was ignored (exit 0, nothing written) or, for whatif, a traceback
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "cannot write --" in err and "an empty" in err
    assert "Traceback" not in err and _listing(tmp_path) == []


def test_same_file_twice_is_refused(tmp_path, capsys, no_simulation):
    f = tmp_path / "x"
    assert main(["predict", BENCH, "--json", str(f), "--csv", str(f)]) == 2
    assert "--json writes the same file" in capsys.readouterr().err


def _listing(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_all_or_none_when_the_second_output_fails(tmp_path, monkeypatch):
    """A failing second file leaves no first file, no temporary, no created directory; a file
    that existed keeps its old content."""
    old = tmp_path / "old.json"
    old.write_text("previous\n")
    real_stage = fsio._stage
    calls = []

    def fail_second(path, data, made):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_stage(path, data, made)

    monkeypatch.setattr(fsio, "_stage", fail_second)
    with pytest.raises(OSError, match="No space"):
        output.write_outputs([(tmp_path / "new" / "a.csv", "a\n"), (tmp_path / "b.csv", "b\n")])
    assert _listing(tmp_path) == ["old.json"]
    monkeypatch.setattr(fsio, "_stage", real_stage)

    real_replace = os.replace
    n = []

    def fail_second_rename(src, dst):
        n.append(dst)
        if len(n) == 2:
            raise OSError(5, "I/O error")
        return real_replace(src, dst)

    monkeypatch.setattr(output.os, "replace", fail_second_rename)
    with pytest.raises(OSError, match="I/O error"):
        output.write_outputs([(old, "new\n"), (tmp_path / "b.csv", "b\n")])
    monkeypatch.setattr(output.os, "replace", real_replace)
    assert old.read_text() == "previous\n" and _listing(tmp_path) == ["old.json"]


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_outputs_follow_the_umask(tmp_path, umask, mode):
    prev = os.umask(umask)
    try:
        for name in ("a.json", "b.csv", "c.trace.json"):
            output.atomic_write(tmp_path / "d" / name, "x\n")
            assert stat.S_IMODE((tmp_path / "d" / name).stat().st_mode) == mode
    finally:
        os.umask(prev)


def test_a_replaced_file_keeps_its_mode_and_a_link_is_followed(tmp_path):
    f = tmp_path / "f.json"
    f.write_text("old")
    f.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(f)
    output.atomic_write(link, "new")
    assert link.is_symlink() and f.read_text() == "new"
    assert stat.S_IMODE(f.stat().st_mode) == 0o640


@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_jobs_out_of_range(capsys, value, no_simulation):
    assert main(["predict", BENCH, "-j", value]) == 2
    err = capsys.readouterr().err
    assert "--jobs" in err and "whole number >= 1" in err and repr(value) in err


def test_quiet_renders_nothing(tmp_path, capsys, monkeypatch, train):
    def boom(*a, **k):
        raise AssertionError("rendered a table under -q")
    monkeypatch.setattr("clustersim.report.training.print_training", boom)
    monkeypatch.setattr("clustersim.report.tables.print_benchmark", boom)
    j = tmp_path / "t.json"
    assert main(["predict", train, "-q", "--json", str(j)]) == 0
    assert main(["predict", *SMALL_BENCH, "-q"]) == 0
    assert capsys.readouterr().out == "" and j.is_file()


@pytest.mark.parametrize("scenario", ["allreduce_crossbar16.yaml", "theano_mpi_alexnet.yaml"])
def test_closed_pipe_exits_quietly(tmp_path, scenario):
    """`clustersim predict ... | head -1`: 141 (SIGPIPE), nothing on stderr, outputs whole."""
    j = tmp_path / "o.json"
    proc = subprocess.Popen([sys.executable, "-m", "clustersim", "predict",
                             str(ROOT / "scenarios" / scenario), "--json", str(j)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "CLUSTERSIM_JOBS": "1"})
    assert proc.stdout.readline()
    proc.stdout.close()  # what head does after its line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141 and err == ""
    json.loads(j.read_text())


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["predict", "sweep"])
def test_stdout_on_a_full_disk_is_one_line(tmp_path, command):
    """`clustersim ... > /dev/full`: one `failed:` line, exit 1, the files whole (it was an
    OSError traceback from the summary's print, after the files had been written)."""
    j = tmp_path / "o.json"
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "clustersim", command,
                               str(ROOT / "scenarios" / "theano_mpi_alexnet.yaml"),
                               "--json", str(j), "--set", "sweep.workers=[1, 2]",
                               *(["--no-cache", "--out", str(tmp_path / "o")]
                                 if command == "sweep" else [])],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT),
                                   "CLUSTERSIM_JOBS": "1"})
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stderr == ("failed: cannot write the standard output: No space left on "
                           "device\n")
    json.loads(j.read_text())


def test_benchmark_trace_lays_out_the_schedule(tmp_path):
    """Ring all-reduce on p ranks: 2(p-1) steps, every rank busy in each, ending at the
    benchmark's time for that point; one Perfetto process per algorithm."""
    t, j = tmp_path / "b.trace.json", tmp_path / "b.json"
    assert main(["predict", BENCH, "-q", "--set", "benchmark.ranks=[4,8]", "--set",
                 "benchmark.algorithms=[ring,recursive_doubling]", "--trace", str(t),
                 "--json", str(j)]) == 0
    rows = json.loads(j.read_text())["rows"]
    trace = json.loads(t.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in trace if e["name"] == "process_name"}
    assert len(names) == 2 and "ring · 8 ranks" in names[0]
    for pid, alg, steps in ((0, "ring", 2 * 7), (1, "recursive_doubling", 3)):
        xs = [e for e in trace if e["pid"] == pid and e["ph"] == "X"]
        assert {e["tid"] for e in xs} == set(range(8))
        assert all(sum(e["tid"] == r for e in xs) == steps for r in range(8))
        row = next(r for r in rows if r["algorithm"] == alg and r["ranks"] == 8
                   and r["size"] == 64 * 2**20)
        end = max(e["ts"] + e["dur"] for e in xs) / 1e6
        assert end == pytest.approx(row["time"], rel=1e-9)


def test_benchmark_trace_too_large_is_refused(capsys, monkeypatch, no_simulation):
    monkeypatch.setattr("clustersim.sim.collective_bench.MAX_TRACE_EVENTS", 100)
    assert main(["predict", BENCH, "--trace", "/tmp/never-written.json"]) == 2
    assert "more than 100 events" in capsys.readouterr().err
    assert not Path("/tmp/never-written.json").exists()


def test_csv_columns_carry_units(tmp_path, train):
    c, j = tmp_path / "t.csv", tmp_path / "t.json"
    assert main(["predict", train, "-q", "--csv", str(c), "--json", str(j)]) == 0
    rows = list(csv.DictReader(c.open()))
    pts = json.loads(j.read_text())["algorithms"]["bsp"]
    assert {"iteration_time_s", "throughput_samples_per_s", "comm_s", "comm_share_fraction",
            "bytes_per_iteration_B"} <= set(rows[0])
    assert not {"iteration_time", "throughput", "comm"} & set(rows[0])
    for r, p in zip(rows, pts):
        assert float(r["iteration_time_s"]) == p["iteration_time"]
        assert float(r["throughput_samples_per_s"]) == p["throughput"]

    b, bj = tmp_path / "b.csv", tmp_path / "b.json"
    assert main(["predict", *SMALL_BENCH, "-q", "--csv", str(b), "--json", str(bj)]) == 0
    rows = list(csv.DictReader(b.open()))
    assert list(rows[0])[:7] == ["op", "algorithm", "ranks", "size_B", "time_s",
                                 "algbw_B_per_s", "busbw_B_per_s"]
    for r, p in zip(rows, json.loads(bj.read_text())["rows"]):
        assert float(r["busbw_B_per_s"]) == p["busbw"] and float(r["time_s"]) == p["time"]


def test_a_killed_pool_worker_fails_cleanly_not_hangs(tmp_path):
    """A sweep worker killed from outside (the OOM killer, a stray kill) must end predict with
    one line and exit 1 - multiprocessing.Pool would have waited for its result forever."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "o.json"
    proc = subprocess.Popen([sys.executable, "-m", "clustersim", "predict",
                             "scenarios/knl_4253.yaml", "-q", "-j", "2", "--json", str(out)],
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    victim = None
    deadline = time.monotonic() + 60
    while victim is None and time.monotonic() < deadline:  # a forked worker: child of proc
        time.sleep(0.2)
        try:
            kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        except OSError:
            kids = []
        victim = int(kids[0]) if kids else None
    assert victim is not None, "no pool worker appeared"
    os.kill(victim, signal.SIGKILL)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1, err
    assert "simulation process died" in err and "Traceback" not in err
    assert not out.exists()


def test_a_job_count_past_eight_per_core_is_refused_before_any_process_starts(
        tmp_path, capsys, monkeypatch):
    """``-j 16384`` forked 16,384 workers and filled the machine's memory; it is refused,
    as CLUSTERSIM_JOBS is, naming the bound (8 per core); --chunk has no such bound."""
    from clustersim import _jobs

    cap = _jobs.PER_CORE * _jobs.usable_cores()
    out = tmp_path / "o"
    for cmd in (["predict"], ["sweep", "--out", str(out)]):
        assert main([*cmd, "fabrics_resnet50", "-j", str(cap + 1)]) == 2
        err = capsys.readouterr().err
        assert f"at most {cap:,} on this machine (8 per core" in err and "Traceback" not in err
    assert not out.exists()
    monkeypatch.setenv("CLUSTERSIM_JOBS", str(cap + 1))
    assert main(["predict", "fabrics_resnet50"]) == 2
    assert "CLUSTERSIM_JOBS: at most" in capsys.readouterr().err
    monkeypatch.delenv("CLUSTERSIM_JOBS")
    assert _jobs.parse_jobs(str(cap)) == cap  # the bound itself is allowed


def test_run_real_with_a_missing_mpiexec_creates_nothing(tmp_path, capsys):
    """A bad --mpiexec is bad input, found before --out is made (QA 19 M4: exit 2 and an
    empty --out folder left behind)."""
    out = tmp_path / "run"
    assert main(["run", "--real", "real_bsp_mlp", "--mpiexec", str(tmp_path / "no-mpiexec"),
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no-mpiexec' not found or not executable" in err and "Traceback" not in err
    assert not out.exists()


def test_clustersim_jobs_of_zero_is_refused_as_minus_j_zero_is(capsys, monkeypatch):
    """CLUSTERSIM_JOBS=0 (or below) meant one process without a word, where -j 0 is
    refused (review 19 LOW-5); both are refused now, naming the variable."""
    monkeypatch.setenv("CLUSTERSIM_JOBS", "0")
    assert main(["predict", "fabrics_resnet50"]) == 2
    assert "CLUSTERSIM_JOBS: must be a whole number >= 1" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity here")
def test_the_process_count_follows_the_cpu_affinity_not_the_machine():
    """A batch job given one core of a bigger node (``taskset -c 0``, a Slurm or container
    cpuset) gets one pool process by default and at most 8 with -j, not 8 x the node's cores:
    the default and the bound are read off the affinity mask."""
    code = ("from clustersim import _jobs; from clustersim.sim.sweep import "
            "default_jobs; print(_jobs.usable_cores(), _jobs.max_jobs(), default_jobs(), "
            "_jobs.check_jobs(9))")
    env = {k: v for k, v in os.environ.items() if k != "CLUSTERSIM_JOBS"}
    one = min(os.sched_getaffinity(0))
    pre = f"import os; os.sched_setaffinity(0, {{{one}}}); "
    out = subprocess.run([sys.executable, "-c", pre + code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("1 8 1 at most 8 on this machine (8 per core, 1 usable core)")
