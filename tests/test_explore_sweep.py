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
    """1 PS shard on a 10 Gb/s crossbar: the server's link, not its update, is its
    bottleneck - each answer is on the wire for the weights' bytes / 1.25 GB/s, and the
    update overlaps the next push coming in on the other direction - so the service time is
    that link time; a worker's step is its compute plus a push, the update and a pull.
    W* = step / service, and throughput stays under batch / service."""
    f = _write(tmp_path, PS)
    assert main(["sweep", f, "--out", str(tmp_path / "o"), "-j", "1", "--no-cache"]) == 0
    text = capsys.readouterr().out
    rows = {int(r["workers"]): r for r in csv.DictReader((tmp_path / "o/sweep.csv").open())}
    one = rows[1]
    grad = float(one["bytes_per_iteration"])  # the push; the pull is as large
    comp = float(one["compute"])
    s = float(one["service_time"])
    link = grad / 1.25e9
    assert s == pytest.approx(link, rel=0.01)  # the link, not the update, is the bottleneck
    step = float(one["iteration_time"])
    assert comp + 2 * link < step < comp + 2 * link + 0.05 * s  # + the server's update
    w_star = step / s
    assert float(one["saturation_workers"]) == pytest.approx(w_star, rel=1e-12)
    assert f"master saturates at ~{w_star:,.0f} workers" in text
    # the knee and the column are two definitions: the output says which is which (QA 18b L5)
    assert "the table's saturation_workers is each point's step as measured" in text
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


KNL = """\
name: knl_small
platform: {file: crossbar16}
workload:
  model: {zoo: mlp, options: {features: 256, hidden: [256], classes: 10}}
  batch_per_worker: 16
algorithm: {name: async_easgd, tau: 1, label: easgd}
compare:
  - {name: async_measgd, tau: 1, momentum: 0.9, label: measgd}
  - {name: bsp, label: bsp}
sweep: {axes: {workers: [2, 4], algorithm.tau: [1, 2], algorithm.momentum: [0.5, 0.9]}}
run: {iterations: 4, warmup: 1, seed: 0}
"""


def test_algorithm_axes_reach_every_case_that_takes_them(tmp_path: Path) -> None:
    """``algorithm.tau`` changes the compare entries too; a case whose algorithm does not
    take the parameter has an empty cell and runs once, not once per value (D3)."""
    f = _write(tmp_path, KNL)
    _, study = load_study(f)
    pts = study_points(study)
    # easgd takes tau only (2 workers x 2 tau), measgd both (x 2 momentum), bsp neither
    assert len(pts) == 2 * 2 + 2 * 4 + 2
    rows = tidy_rows(study, pts, run_study(study, pts).results)
    by = {(r["algorithm"], r["workers"], r["algorithm.tau"], r["algorithm.momentum"]): r
          for r in rows}
    assert len(by) == len(rows)
    # the compare entry runs with the axis's tau: the two values differ
    m1 = by[("measgd", 4, 1, 0.9)]["iteration_time"]
    m2 = by[("measgd", 4, 2, 0.9)]["iteration_time"]
    assert m1 != m2
    g = _write(tmp_path, KNL.replace("{name: async_measgd, tau: 1,", "{name: async_measgd, tau: 2,"),
               "ref.yaml")
    ref = run_sweep(load_scenario(g, ["sweep={workers: [4]}"]), jobs=1)
    (meas,) = [m for m in ref.points["measgd"] if m.workers == 4]
    assert meas.iteration_time == m2
    assert {r["algorithm.momentum"] for r in rows if r["algorithm"] == "easgd"} == {None}
    assert {(r["algorithm.tau"], r["algorithm.momentum"]) for r in rows
            if r["algorithm"] == "bsp"} == {(None, None)}


def test_an_axis_a_variant_sets_is_refused(tmp_path: Path, capsys) -> None:
    f = _write(tmp_path, BSP.replace("workload.batch_per_worker: [16, 32]",
                                     "network.overhead: [1 us, 5 us]")
               .replace('  constraints: ["workload.batch_per_worker * workers <= 128"]\n', ""))
    assert main(["sweep", f, "--out", str(tmp_path / "o"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "network.overhead" in err and "variant 'slow'" in err and f in err
    assert not (tmp_path / "o").exists()
    g = _write(tmp_path, KNL.replace("algorithm.momentum", "algorithm.momentm"), "g.yaml")
    assert main(["sweep", g, "--out", str(tmp_path / "o"), "-q"]) == 2
    assert "did you mean 'momentum'" in capsys.readouterr().err


def test_an_axis_sweep_at_sets_is_refused(tmp_path: Path, capsys) -> None:
    # the axis won at every point and the sweep.at entry was dropped, silently
    vgg = str(ROOT / "scenarios" / "theano_mpi_vgg16_16.yaml")
    axes = "sweep.axes={workload.compute.efficiency: [{conv: 0.4, fc: 0.4}]}"
    assert main(["sweep", vgg, "--set", axes, "--out", str(tmp_path / "o"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "which sweep.at sets at 8 workers" in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("axes, needle", [
    ("{workers: [0]}", "sweep.axes.workers[0]: a worker count must be a whole number >= 1"),
    ("{workers: [2.5]}", "not 2.5"),
    ("{workers: [[2]]}", "not [2]"),
    ("{workers: [4, 4]}", "given twice"),
    ("{workload.batch_per_worker: [32, abc]}", "workload.batch_per_worker='abc'"),
])
def test_bad_values_are_refused_before_anything_runs(tmp_path: Path, capsys, axes: str,
                                                     needle: str) -> None:
    """Exit 2, one line with the --set item, no output folder, no cache (D4, D7, D8)."""
    f = _write(tmp_path, PS)
    out = tmp_path / "o" / "deep"
    assert main(["sweep", f, "--set", f"sweep.axes={axes}", "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and f"--set sweep.axes={axes}" in err
    assert not (tmp_path / "o").exists()


def test_errors_name_the_line_of_the_axis(tmp_path: Path, capsys) -> None:
    lines = BSP.splitlines()
    at = next(i for i, ln in enumerate(lines, 1) if "workload.batch_per_worker: [16" in ln)
    for text, needle in ((BSP.replace("[16, 32]", "[]"), "must not be empty"),
                         (BSP.replace("workload.batch_per_worker: [16, 32]",
                                      "workload.batch_per_workr: [16, 32]"),
                          "did you mean 'batch_per_worker'")):
        f = _write(tmp_path, text.replace(
            '  constraints: ["workload.batch_per_worker * workers <= 128"]\n', ""))
        assert main(["sweep", f, "--out", str(tmp_path / "o"), "-q"]) == 2
        err = capsys.readouterr().err
        assert f"{f}:{at}, sweep.axes.workload.batch_per_work" in err and needle in err, err


def test_constraints_leaving_nothing_and_huge_powers(tmp_path: Path, capsys) -> None:
    f = _write(tmp_path, BSP)
    for c, needle in (('["workers > 100"]', "leave no point (6 of 6 points excluded)"),
                      ('["9 ** 9 ** 9 > workers"]', "digits")):
        assert main(["sweep", f, "--set", f"sweep.constraints={c}", "--out",
                     str(tmp_path / "o"), "-q"]) == 2
        err = capsys.readouterr().err
        assert needle in err and "--set sweep.constraints" in err
        assert not (tmp_path / "o").exists()


def test_cache_folder_checked_and_a_damaged_cache_is_skipped(tmp_path: Path, capsys) -> None:
    f = _write(tmp_path, BSP)
    sent = [f"--{k}={tmp_path / ('t.' + k)}" for k in ("parquet", "csv", "json")]
    assert main(["sweep", f, "--out", "/proc/nope/x", "-q", "-j", "1", *sent]) == 2
    assert "cannot keep the point cache in /proc/nope/x" in capsys.readouterr().err
    assert not (tmp_path / "t.csv").exists()
    for damage in ("garbage", "folder"):
        d = tmp_path / damage
        d.mkdir()
        if damage == "folder":
            (d / "points.sqlite").mkdir()
        else:
            (d / "points.sqlite").write_text("garbage")
        assert main(["sweep", f, "--out", str(d), "-q", "-j", "1"]) == 0
        err = capsys.readouterr().err
        assert err.count("cannot be used") == 1 and "Traceback" not in err
        assert (d / "sweep.csv").exists()


def test_platform_fields_as_axes_and_the_design_in_the_json(tmp_path: Path) -> None:
    """A platform named by its file takes ``platform.*`` axes (its fields are the file's,
    changed); the JSON describes the design so that it can be drawn again."""
    f = _write(tmp_path, KNL.replace("platform: {file: crossbar16}", "platform: crossbar16")
               .replace("sweep: {axes: {workers: [2, 4], algorithm.tau: [1, 2], "
                        "algorithm.momentum: [0.5, 0.9]}}",
                        "sweep: {axes: {workers: {from: 2, to: 4}, network.overhead: [1 us]},"
                        " sample: {method: lhs, n: 3, seed: 5},"
                        " constraints: ['workers >= 2']}"))
    d = _sweep(tmp_path, f, "o", "-j", "1", "--no-cache")
    doc = json.loads((d / "sweep.json").read_text())
    assert (doc["design"], doc["n"], doc["seed"]) == ("lhs", 3, 5)
    assert doc["axes"]["workers"] == {"from": 2.0, "to": 4.0, "log": False, "integer": True}
    assert doc["axes"]["network.overhead"] == ["1 us"]
    assert doc["constraints"] == ["workers >= 2"]
    g = _write(tmp_path, PS.replace("platform: {file: crossbar16}", "platform: crossbar16")
               .replace("axes: {workers: [1, 2, 4, 8, 15]}",
                        "axes: {workers: [2], platform.hosts: [2, 4]}"), "g.yaml")
    d = _sweep(tmp_path, g, "p", "-j", "1", "--no-cache")
    rows = list(csv.DictReader((d / "sweep.csv").open()))
    assert [(r["platform.hosts"], r["devices"]) for r in rows] == [("2", "2"), ("4", "4")]


def test_saturation_summary_is_capped(capsys) -> None:
    from types import SimpleNamespace

    from clustersim.commands.sweep import MAX_SATURATION_LINES, _summary

    sat = [(f"b={i}", 80.0, 0.02, 1.6, 2) for i in range(25)]
    res = SimpleNamespace(ran=1, cached=0, skipped=[], results={})
    _summary(SimpleNamespace(name="x"), [1], res, [], [], 1.0, "local",
             {"--parquet": "a", "--csv": "b", "--json": "c"}, sat)
    out = capsys.readouterr().out
    assert out.count("master saturates") == MAX_SATURATION_LINES
    assert "… 15 more master-based groups" in out
