"""What a point's result depends on besides its fields - the bytes of the files its parse
reads - reaches the point cache's key and the per-process memos, and a user's Dask workers
read the files the driver keyed (audit B, H2-H4).

Each test compares a run after an edit with what a fresh run of the edited input gives:
the promise is "a changed input file never serves an old number", on every executor."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from clustersim.cli import main
from clustersim.explore import PointCache, load_study, run_study, study_points
from clustersim.explore import points as points_mod

CONSTANTS = ("constants: {k_s: 1.0, k_m: 1.0, k_d: 1.0, k_e: 1.0, k_g: 1.0, "
             "gossip_share: 0.3333333333333333}\n")
AXIS = """name: small_async
platform: crossbar16
workload: {model: resnet18, batch_per_worker: 32, optimizer: sgd, convergence: {constants: ca.yaml}}
algorithm: {name: async_sgd, label: ps}
sweep: {workers: [4], axes: {workload.convergence.constants: [ca.yaml, cb.yaml]}}
run: {iterations: 4, warmup: 1, seed: 0}
"""
PLATFORM = """name: myxbar
topology: star
hosts: 8
device: k80
link: {name: xbar10g, bandwidth: 10 Gb/s, latency: 1 us}
"""
SCENARIO = """name: dkstale
platform: plat.yaml
workload: {model: alexnet, batch_per_worker: 32, optimizer: sgd, bucket: 0}
algorithm: {name: bsp, strategy: ring, label: ring}
sweep: {workers: [2, 8]}
run: {iterations: 3, warmup: 1, seed: 0}
"""


def _rows(out: Path) -> str:
    return (out / "sweep.csv").read_text()


def test_a_constants_file_an_axis_names_is_keyed_by_its_bytes(tmp_path: Path, capsys) -> None:
    (tmp_path / "s.yaml").write_text(AXIS)
    (tmp_path / "ca.yaml").write_text(CONSTANTS)
    (tmp_path / "cb.yaml").write_text(CONSTANTS)
    db = str(tmp_path / "c.sqlite")
    s = str(tmp_path / "s.yaml")
    assert main(["sweep", s, "-j", "1", "--out", str(tmp_path / "a"), "--cache", db, "-q"]) == 0
    (tmp_path / "cb.yaml").write_text(CONSTANTS.replace("k_s: 1.0", "k_s: 50.0"))
    assert main(["sweep", s, "-j", "1", "--out", str(tmp_path / "b"), "--cache", db, "-q"]) == 0
    assert main(["sweep", s, "-j", "1", "--out", str(tmp_path / "f"), "--no-cache", "-q"]) == 0
    assert _rows(tmp_path / "b") == _rows(tmp_path / "f") != _rows(tmp_path / "a")


def test_an_edited_platform_file_is_read_again_in_the_same_process(tmp_path: Path) -> None:
    """The per-process memos (a notebook's, a long-lived Dask worker's) were keyed by the
    file's name: the second study simulated the 10 Gb/s platform after the edit to 100."""
    (tmp_path / "plat.yaml").write_text(PLATFORM)
    (tmp_path / "s.yaml").write_text(SCENARIO)

    def throughputs(db: str) -> list[float]:
        _scn, study = load_study(str(tmp_path / "s.yaml"))
        pts = study_points(study)
        res = run_study(study, pts, jobs=1, cache=PointCache(tmp_path / db))
        return [res.results[p.index]["throughput"] for p in pts]

    before = throughputs("a.sqlite")
    (tmp_path / "plat.yaml").write_text(PLATFORM.replace("10 Gb/s", "100 Gb/s"))
    after = throughputs("b.sqlite")
    points_mod._PARSED.clear()
    points_mod._PLATFORMS.clear()
    fresh = throughputs("c.sqlite")
    assert after == fresh and after[-1] > 2 * before[-1]


def test_a_users_worker_reads_the_files_the_driver_keyed(tmp_path: Path, scheduler,
                                                         monkeypatch) -> None:
    """A worker started in another folder had looked a relative scenario path up there -
    another platform file of the same name - and the rows differed from the local pool's."""
    mine, theirs = tmp_path / "driver", tmp_path / "worker"
    for folder, bw in ((mine, "10 Gb/s"), (theirs, "100 Gb/s")):
        (folder / "sub").mkdir(parents=True)
        (folder / "sub" / "plat.yaml").write_text(PLATFORM.replace("10 Gb/s", bw))
        (folder / "sub" / "s.yaml").write_text(SCENARIO)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    worker = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_worker", scheduler.scheduler_address,
         "--nworkers", "1", "--nthreads", "1", "--no-dashboard"], cwd=theirs, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not scheduler.scheduler.workers and time.monotonic() < deadline:
            time.sleep(0.2)
        assert scheduler.scheduler.workers, "the worker did not start"
        monkeypatch.chdir(mine)
        assert main(["sweep", "sub/s.yaml", "--dask", scheduler.scheduler_address, "--out",
                     "d", "--no-cache", "-q"]) == 0
        assert main(["sweep", "sub/s.yaml", "-j", "1", "--out", "l", "--no-cache", "-q"]) == 0
        assert _rows(mine / "d") == _rows(mine / "l")
    finally:
        os.killpg(worker.pid, 15)
        worker.wait(timeout=30)


def test_an_emulation_gives_the_same_bytes_with_any_blas_thread_count(tmp_path: Path) -> None:
    """The digits task's float32 products summed in another order on two BLAS threads:
    every emulated loss moved at ~1e-9 with ``OPENBLAS_NUM_THREADS`` (audit B M1)."""
    out = []
    for threads in ("1", "2"):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads,
                   PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        path = tmp_path / f"t{threads}.json"
        subprocess.run([sys.executable, "-m", "clustersim", "predict", "emulate_digits", "-j",
                        "1", "-q", "--json", str(path), "--set", "sweep.workers=[4]", "--set",
                        "compare=[]"], env=env, check=True, timeout=300)
        out.append(path.read_bytes())
    assert out[0] == out[1]


def test_a_file_edited_while_the_sweep_runs_is_not_stored_under_the_old_bytes(
        tmp_path: Path, capsys, monkeypatch) -> None:
    """Workers read a constants file edited after the points were keyed: their rows were
    stored under the old bytes' keys, and the file put back served them (audit C H1).  Now
    the run stops, names the file, and keeps only rows read as keyed."""
    (tmp_path / "s.yaml").write_text(AXIS)
    (tmp_path / "ca.yaml").write_text(CONSTANTS)
    (tmp_path / "cb.yaml").write_text(CONSTANTS)
    s, db = str(tmp_path / "s.yaml"), str(tmp_path / "c.sqlite")
    real = points_mod.run_point

    def editing(study, point):
        (tmp_path / "cb.yaml").write_text(CONSTANTS.replace("k_s: 1.0", "k_s: 50.0"))
        return real(study, point)

    monkeypatch.setattr(points_mod, "run_point", editing)
    assert main(["sweep", s, "-j", "1", "--out", str(tmp_path / "a"), "--cache", db,
                 "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{(tmp_path / 'cb.yaml').resolve()} changed while the sweep ran: 1 point(s)" in err
    monkeypatch.setattr(points_mod, "run_point", real)
    (tmp_path / "cb.yaml").write_text(CONSTANTS)  # put back: nothing stale is served
    assert main(["sweep", s, "-j", "1", "--out", str(tmp_path / "b"), "--cache", db, "-q"]) == 0
    assert main(["sweep", s, "-j", "1", "--out", str(tmp_path / "f"), "--no-cache", "-q"]) == 0
    assert _rows(tmp_path / "b") == _rows(tmp_path / "f")
