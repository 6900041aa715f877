"""clustersim sweep: rows equal predict's points, the cache, byte-identical tables on every
executor, input errors, the master's saturation point."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.explore import PointCache, load_study, run_study, study_points, tidy_rows
from clustersim.scenario.schema import load_scenario
from clustersim.sim.sweep import run_sweep

ROOT = Path(__file__).resolve().parent.parent

BSP = """\
name: grid
platform: {file: crossbar16}
workload: {model: resnet50, batch_per_worker: 32, bucket: 25 MiB}
algorithm: {name: bsp, strategy: ring, label: ring}
compare: [{name: bsp, strategy: ar, overlap: false, label: ar}]
variants:
  - {label: slow, set: {network.overhead: 20 us}}
sweep:
  workers: [2, 4, 8]
  axes:
    workload.batch_per_worker: [16, 32]
  constraints: ["workload.batch_per_worker * workers <= 128"]
run: {iterations: 4, warmup: 1}
"""

PS = """\
name: ps_knee
platform: {file: crossbar16}
workload:
  model: {zoo: mlp, options: {features: 1024, hidden: [1024, 1024], classes: 10}}
  batch_per_worker: 64
algorithm: {name: async_sgd, shards: 1, tau: 1}
sweep: {axes: {workers: [1, 2, 4, 8, 15]}}
run: {iterations: 20, warmup: 4, seed: 0}
"""


def _write(tmp: Path, text: str, name: str = "s.yaml") -> str:
    p = tmp / name
    p.write_text(text)
    return str(p)


def test_rows_are_predicts_points(tmp_path: Path) -> None:
    """The same point through ``predict``'s sweep and through the explore runner: same
    numbers, bit for bit (variants and compare become cases; the axis sets a field)."""
    f = _write(tmp_path, BSP)
    scn, study = load_study(f)
    pts = study_points(study)
    # 2 variants x 2 algorithms x (b=16: w 2,4,8; b=32: w 2,4) = 20
    assert len(pts) == 20
    rows = tidy_rows(study, pts, run_study(study, pts).results)
    assert {r["variant"] for r in rows} == {"base", "slow"}
    for b in (16, 32):
        ref = run_sweep(load_scenario(f, [f"workload.batch_per_worker={b}"]), jobs=1)
        for title, mets in ref.points.items():
            variant, alg = title.split(" · ")
            for m in mets:
                if b * m.workers > 128:
                    continue
                (row,) = [r for r in rows if r["variant"] == variant and r["algorithm"] == alg
                          and r["workers"] == m.workers
                          and r["workload.batch_per_worker"] == b]
                assert row["throughput"] == m.throughput
                assert row["iteration_time"] == m.iteration_time
                assert row["batch_per_worker"] == b


def test_cache_resumes_and_extends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = _write(tmp_path, BSP)
    _, study = load_study(f)
    pts = study_points(study)
    cache = PointCache(tmp_path / "c.sqlite")
    first = run_study(study, pts[:7], cache=cache)
    assert (first.ran, first.cached) == (7, 0)
    again = run_study(study, pts, cache=cache)  # an interrupted sweep, resumed
    assert (again.ran, again.cached) == (13, 7)
    assert [again.results[p.index] for p in pts[:7]] == [first.results[p.index]
                                                         for p in pts[:7]]
    # an extended sweep: one more axis value, only its points run
    _, wider = load_study(f, ["sweep.axes={workload.batch_per_worker: [16, 32, 8]}"])
    wpts = study_points(wider)
    out = run_study(wider, wpts, cache=cache)
    assert out.ran == len(wpts) - len(pts) == 12 and out.cached == 20
    # another code version: nothing is reused
    import clustersim.explore.cache as cmod

    monkeypatch.setattr(cmod, "code_version", lambda: "another version")
    assert run_study(study, pts[:3], cache=cache).ran == 3
    cache.close()


def _sweep(tmp: Path, f: str, out: str, *extra: str) -> Path:
    d = tmp / out
    assert main(["sweep", f, "--out", str(d), "-q", *extra]) == 0
    return d


def test_tables_identical_on_every_executor(tmp_path: Path) -> None:
    f = _write(tmp_path, BSP)
    ref = _sweep(tmp_path, f, "j1", "-j", "1", "--no-cache")
    others = [_sweep(tmp_path, f, "j2", "-j", "2", "--no-cache", "--chunk", "3"),
              _sweep(tmp_path, f, "dask", "--dask", "local", "-j", "2", "--no-cache"),
              _sweep(tmp_path, f, "cached", "-j", "2")]
    others.append(_sweep(tmp_path, f, "cached", "-j", "1"))  # every row from the cache
    for d in others:
        for name in ("sweep.parquet", "sweep.csv", "sweep.json"):
            assert (d / name).read_bytes() == (ref / name).read_bytes(), (d, name)
    rows = list(csv.DictReader((ref / "sweep.csv").open()))
    assert len(rows) == 20
    import pyarrow.parquet as pq

    t = pq.read_table(ref / "sweep.parquet")
    assert t.num_rows == 20 and t.column_names == list(rows[0])
    assert t.column("throughput").to_pylist() == [float(r["throughput"]) for r in rows]
    # the axes are named in the schema: a reader need not guess them (sim_events is an int)
    axes = json.loads((ref / "sweep.json").read_text())["inputs"]
    assert t.schema.metadata[b"clustersim.inputs"].decode().split(",") == axes
    assert "sim_events" not in axes


@pytest.mark.mpi
def test_mpi_futures_table_is_identical(tmp_path: Path) -> None:
    f = _write(tmp_path, BSP)
    ref = _sweep(tmp_path, f, "j1", "-j", "1", "--no-cache")
    mpiexec = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or "mpiexec"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPIR_CVAR_POLLS_BEFORE_YIELD": "1",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = tmp_path / "mpi"
    cmd = [mpiexec, "-n", "3", sys.executable, "-m", "mpi4py.futures", "-m", "clustersim",
           "sweep", f, "--mpi", "--no-cache", "-q", "--out", str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in ("sweep.parquet", "sweep.csv", "sweep.json"):
        assert (out / name).read_bytes() == (ref / name).read_bytes(), name


def test_bad_axis_value_is_an_input_error(tmp_path: Path, capsys) -> None:
    f = _write(tmp_path, BSP.replace("[16, 32]", "[16, 0]"))
    assert main(["sweep", f, "--out", str(tmp_path / "o"), "-q", "-j", "1"]) == 2
    err = capsys.readouterr().err
    assert "workload.batch_per_worker=0" in err and "must be >= 1" in err
    assert "Traceback" not in err and f in err
    assert not (tmp_path / "o" / "sweep.csv").exists()
    g = _write(tmp_path, BSP.replace("<= 128", "<= 'x'"), "g.yaml")
    assert main(["sweep", g, "--out", str(tmp_path / "o"), "-q"]) == 2
    assert "sweep.constraints" in capsys.readouterr().err


def test_master_saturation_point(tmp_path: Path, capsys) -> None:
    """1 PS shard on a 10 Gb/s crossbar: each exchange occupies the server's link for the
    weights' bytes / 1.25 GB/s plus its update compute; a worker's step is its compute plus
    a push and a pull.  W* = step / service, and throughput stays under batch / service."""
    f = _write(tmp_path, PS)
    assert main(["sweep", f, "--out", str(tmp_path / "o"), "-j", "1", "--no-cache"]) == 0
    text = capsys.readouterr().out
    rows = {int(r["workers"]): r for r in csv.DictReader((tmp_path / "o/sweep.csv").open())}
    one = rows[1]
    grad = float(one["bytes_per_iteration"])  # the push; the pull is as large
    comp = float(one["compute"])
    s = float(one["service_time"])
    update = s - grad / 1.25e9
    assert 0 < update < 0.05 * s  # the link, not the update, is the master's bottleneck
    step = float(one["iteration_time"])
    assert step == pytest.approx(comp + 2 * grad / 1.25e9 + update, rel=0.01)
    w_star = step / s
    assert float(one["saturation_workers"]) == pytest.approx(w_star, rel=1e-12)
    assert f"master saturates at ~{w_star:,.0f} workers" in text
    batch = 64
    for w, r in rows.items():
        assert float(r["throughput"]) <= batch / (grad / 1.25e9) * (1 + 1e-9), w
    # far from linear past W*: 15 workers give less than half of 15x one worker
    assert float(rows[15]["throughput"]) < 0.5 * 15 * float(one["throughput"])


def test_predict_prints_the_sweeps_saturation_point(tmp_path: Path, capsys) -> None:
    """``predict`` names the same W* as ``sweep`` under a master-based method's table (its
    smallest point), and its JSON carries the service time; a method without a master
    prints none."""
    f = _write(tmp_path, PS.replace("sweep: {axes: {workers: [1, 2, 4, 8, 15]}}",
                                    "sweep: {workers: [1, 15]}\ncompare: [{name: bsp}]"))
    assert main(["sweep", f, "--out", str(tmp_path / "o"), "-j", "1", "--no-cache"]) == 0
    rows = [r for r in csv.DictReader((tmp_path / "o/sweep.csv").open())
            if r["algorithm"] == "async_sgd" and int(r["workers"]) == 1]
    capsys.readouterr()
    out = tmp_path / "p.json"
    assert main(["predict", f, "-j", "1", "--json", str(out), "--wide"]) == 0
    text = capsys.readouterr().out
    w_star = float(rows[0]["saturation_workers"])
    assert f"master saturates at ~{w_star:,.0f} workers" in text
    assert text.count("master saturates") == 1  # not under bsp's table
    doc = json.loads(out.read_text())
    one = doc["algorithms"]["async_sgd"][0]
    assert one["service_time"] == pytest.approx(float(rows[0]["service_time"]), rel=1e-12)
    assert one["saturation_workers"] == pytest.approx(w_star, rel=1e-12)
    assert doc["algorithms"]["bsp"][0]["service_time"] is None
