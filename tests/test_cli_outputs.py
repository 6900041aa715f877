"""predict's machine outputs: JSON, CSV and Chrome trace are valid, complete and deterministic
(same scenario + seed = the same bytes, also across processes)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.trace import LANE_STRIDE

ROOT = Path(__file__).resolve().parents[1]
SMALL = """\
name: small
platform: {topology: star, hosts: 4, device: v100, link: eth25g}
workload: {model: resnet50, batch_per_worker: 32, bucket: 25 MiB, jitter: 0.05}
algorithm: {name: bsp, overlap: true}
compare: [{name: bsp, strategy: ar, label: host-staged}]
sweep: {workers: [1, 2, 4]}
run: {iterations: 4, warmup: 1, seed: 7, repeats: 2}
"""


@pytest.fixture
def small(tmp_path):
    p = tmp_path / "small.yaml"
    p.write_text(SMALL)
    return p


def test_json_csv_trace(tmp_path, small, capsys):
    j, c, t = tmp_path / "o.json", tmp_path / "o.csv", tmp_path / "o.trace.json"
    assert main(["predict", str(small), "--json", str(j), "--csv", str(c), "--trace", str(t)]) == 0
    out = capsys.readouterr().out
    assert "samples/s" in out and "comparison at 4 workers" in out
    data = json.loads(j.read_text())
    assert set(data["algorithms"]) == {"bsp", "host-staged"}
    pts = data["algorithms"]["bsp"]
    assert [p["workers"] for p in pts] == [1, 2, 4]
    assert pts[-1]["seeds"] == 2 and "iteration_time" in pts[-1]["interval"]
    rows = list(csv.DictReader(c.open()))
    assert len(rows) == 6 and {"algorithm", "workers", "throughput_samples_per_s"} <= set(rows[0])
    trace = json.loads(t.read_text())["traceEvents"]
    xs = [e for e in trace if e["ph"] == "X"]
    assert {e["cat"] for e in xs} >= {"compute", "allreduce"}
    # one track per worker of the largest point, and lanes beside it for what overlaps
    # without nesting (the overlapped buckets' all-reduces: QA 13 F4)
    assert {e["tid"] % LANE_STRIDE for e in xs} == {0, 1, 2, 3}
    assert len({e["tid"] for e in xs}) > 4
    assert all(e["dur"] >= 0 for e in xs)
    for tid in {e["tid"] for e in xs}:  # every thread's events follow or nest in one another
        open_ends: list[float] = []
        for e in sorted((e for e in xs if e["tid"] == tid), key=lambda e: (e["ts"], -e["dur"])):
            while open_ends and open_ends[-1] <= e["ts"] + 1e-6:  # us; float round-off
                open_ends.pop()
            assert not open_ends or e["ts"] + e["dur"] <= open_ends[-1] + 1e-6, (tid, e)
            open_ends.append(e["ts"] + e["dur"])


def test_same_seed_same_bytes_across_processes(tmp_path, small):
    outs = []
    for k in range(2):
        f = tmp_path / f"run{k}.json"
        r = subprocess.run([sys.executable, "-m", "clustersim", "predict", str(small), "-q",
                            "--json", str(f)], capture_output=True, text=True, timeout=300,
                           env={"PYTHONHASHSEED": str(k + 1), "PATH": ""})
        assert r.returncode == 0, r.stderr
        outs.append(f.read_bytes())
    assert outs[0] == outs[1]


def test_another_seed_changes_jittered_results(tmp_path, small, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["predict", str(small), "-q", "--json", str(a)]) == 0
    assert main(["predict", str(small), "-q", "--json", str(b), "--seed", "8"]) == 0
    assert a.read_bytes() != b.read_bytes()


def test_collective_benchmark_json(tmp_path, capsys):
    j = tmp_path / "b.json"
    assert main(["predict", str(ROOT / "scenarios" / "allreduce_crossbar16.yaml"),
                 "--set", "benchmark.ranks=[4]", "--set", "benchmark.algorithms=[ring]",
                 "--json", str(j)]) == 0
    rows = json.loads(j.read_text())["rows"]
    assert [r["size"] for r in rows][:2] == [4.0, 16.0]
    big = rows[-1]  # 64 MiB ring on 4 ranks: 2(p-1)(alpha + n/(pB)) + reduction
    n, p, bw = 64 * 2**20, 4, 1.25e9
    assert big["time"] == pytest.approx(2 * (p - 1) * (2e-6 + n / (p * bw)), rel=0.02)
    assert big["busbw"] == pytest.approx(big["algbw"] * 2 * (p - 1) / p)


@pytest.mark.parametrize("what", ["devices", "links", "transports", "topologies", "collectives",
                                  "algorithms", "models"])
def test_list(capsys, what):
    assert main(["list", what]) == 0
    assert len(capsys.readouterr().out.splitlines()) > 4


def test_list_one_algorithm_shows_its_parameters(capsys):
    """Every parameter of the registry row appears with its default and source."""
    from clustersim.algorithms.base import get_algorithm

    assert main(["list", "algorithms", "async_measgd"]) == 0
    out = capsys.readouterr().out
    d = get_algorithm("async_measgd")
    assert d.summary[:40] in out and "source: " + d.source[:30] in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines()
            if line.startswith("│") and line.split("│")[1].strip()}
    assert set(rows) == set(d.params) == {"tau", "beta", "alpha", "momentum"}
    for key, prm in d.params.items():
        assert rows[key].split("│")[2].strip() == str(prm.default)
    assert ">= 0 and <= 1" in rows["beta"]


def test_list_scenarios_names_every_shipped_file_with_its_about(capsys, monkeypatch):
    """Each scenarios/*.yaml appears once, sorted, with its whole about: on a wide terminal."""
    from clustersim._yaml import safe_load

    monkeypatch.setenv("COLUMNS", "1000")
    assert main(["list", "scenarios"]) == 0
    rows = [[c.strip() for c in line.split("│")[1:3]] for line in capsys.readouterr().out
            .splitlines() if line.startswith("│")]
    files = sorted((ROOT / "scenarios").glob("*.yaml"))
    assert len(files) > 10
    expected = [[f.stem, " ".join(safe_load(f.read_text())["about"].split())] for f in files]
    assert rows == expected


def test_list_scenarios_fits_the_width_with_names_whole(capsys, monkeypatch):
    """At 80 columns every line fits, names are never cut and long abouts end in '…'."""
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["list", "scenarios"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in lines
            if line.startswith("│")}
    assert set(rows) == {f.stem for f in (ROOT / "scenarios").glob("*.yaml")}
    assert rows["knl_4253"].startswith("Sync EASGD vs the EASGD family")
    assert rows["knl_4253"].endswith("…")


def test_list_one_scenario_shows_its_path_and_header(capsys):
    assert main(["list", "scenarios", "knl_4253"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == str(ROOT / "scenarios" / "knl_4253.yaml")
    assert lines[1].startswith("about: Sync EASGD vs the EASGD family")
    # the header comment, unwrapped and without its '# '
    assert lines[3] == ("The headline use: You, Buluc, Demmel (SC17, arXiv 1708.02983) report "
                        "91.5% weak-scaling")
    assert "  clustersim predict scenarios/knl_4253.yaml" in lines
    assert not any(line.startswith(("name:", "#")) for line in lines)


@pytest.mark.parametrize("args, message", [
    (["list", "algorithms", "async_eagsd"], "did you mean 'async_easgd'"),
    (["list", "devices", "k80"], "takes no name"),
    (["list", "scenarios", "knl_425"],
     "unknown shipped scenario 'knl_425' — did you mean 'knl_4253'? (allowed: "
     "allreduce_crossbar16, bsp_100k,"),
])
def test_list_with_a_bad_name(capsys, args, message):
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_validate(capsys):
    assert main(["validate", str(ROOT / "scenarios" / "theano_mpi_alexnet.yaml")]) == 0
    assert "ok:" in capsys.readouterr().out


def test_process_pool_gives_the_same_bytes(tmp_path, small, capsys):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert main(["predict", str(small), "-q", "--json", str(one), "--jobs", "1"]) == 0
    assert main(["predict", str(small), "-q", "--json", str(two), "--jobs", "2"]) == 0
    assert one.read_bytes() == two.read_bytes()


def test_csv_rows_carry_the_emulated_time_to_target_with_units():
    """An emulated scenario's CSV had every time-to-target cell empty: the emulation's
    figures were only in the JSON.  They are columns now, with their units, and a target
    never reached is an empty cell, not inf."""
    import math
    from types import SimpleNamespace

    from clustersim.report.tables import TRAINING_CSV_COLUMNS, with_units
    from clustersim.report.training import training_rows
    from clustersim.sim.emulate import EmulationResult
    from clustersim.sim.metrics import PointMetrics

    zero = dict.fromkeys(("compute", "comm", "wait", "comm_total", "comm_share",
                          "comm_share_total", "worker_utilization", "bytes_per_iteration",
                          "makespan"), 0.0)
    none = dict.fromkeys(("server_utilization", "update_rate", "staleness_mean",
                          "staleness_p90", "staleness_max"))
    pts = [PointMetrics(algorithm="BSP", workers=w, batch_per_worker=8.0, iteration_time=1.0,
                        throughput=8.0 * w, sim_events=0, flows=0, **zero, **none)
           for w in (4, 16)]
    ems = [EmulationResult("BSP", 4, "digits", "accuracy", 0.9, time_to_target=294.0,
                           steps_to_target=1200, samples_to_target=9600,
                           updates_to_target=300),
           EmulationResult("BSP", 16, "digits", "accuracy", 0.9)]  # never reached: inf
    result = SimpleNamespace(points={"BSP": pts}, emulation={"BSP": ems},
                             emulation_analytic={"BSP": [264.0, None]})
    rows = with_units(training_rows(None, result), TRAINING_CSV_COLUMNS)
    assert rows[0]["emulated_time_to_target_s"] == 294.0
    assert rows[0]["emulated_samples_to_target_samples"] == 9600
    assert rows[0]["analytic_time_to_target_s"] == 264.0
    assert rows[1]["emulated_time_to_target_s"] is None and math.isinf(ems[1].time_to_target)
    assert "efficiency_fraction" in rows[0] and "service_time_s" in rows[0]


def test_list_scenarios_narrow_terminal_keeps_names_whole(capsys, monkeypatch):
    """Narrower than the names and some about (20 columns): one line per scenario, the name
    whole and first, its about after it, not a table cut at the margin."""
    monkeypatch.setenv("COLUMNS", "20")
    assert main(["list", "scenarios"]) == 0
    lines = capsys.readouterr().out.splitlines()
    stems = sorted(f.stem for f in (ROOT / "scenarios").glob("*.yaml"))
    assert [line.split()[0] for line in lines] == stems
    assert lines[stems.index("knl_4253")].split(None, 1)[1].startswith(
        "Sync EASGD vs the EASGD family")


def test_a_value_of_the_wrong_type_is_named_in_the_users_words(capsys):
    """A mapping where a number belongs was called 'LineDict' (the YAML reader's class)."""
    assert main(["validate", "theano_mpi_alexnet", "--set", "run.seed={a: 1}"]) == 2
    err = capsys.readouterr().err
    assert "run.seed: must be a whole number, not a mapping" in err and "LineDict" not in err


def test_seed_intervals_have_a_legend(capsys):
    """run.repeats with jitter prints [..] intervals: a line says what they are, and the
    header names the seeds (it had said "seed 0" with no legend, unless --uncertainty)."""
    args = ["predict", "theano_mpi_alexnet", "--set", "compare=[]", "--set",
            "sweep.workers=[1, 2]", "--set", "workload.jitter=0.02", "--no-band", "-j", "1"]
    assert main([*args, "--set", "run.repeats=3"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "seeds 0-2" in text and "[..]: 5th-95th percentile over the 3 seeds" in text
    assert main([*args, "--set", "run.repeats=1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "seed 0" in text and "[..]" not in text


def test_seed_legend_describes_the_cases_that_were_repeated(tmp_path, capsys):
    """The legend and header had read the base case's repeats and jitter (3 seeds, jitter
    0) beside the intervals of a variant that ran 5 seeds with jitter 0.05."""
    f = tmp_path / "v.yaml"
    f.write_text("name: v\nplatform: dgx1_edr8\nworkload: {model: resnet50, "
                 "batch_per_worker: 32}\nalgorithm: {name: bsp}\nsweep:\n  workers: [8]\n"
                 "run: {iterations: 2, warmup: 1, repeats: 3}\nvariants:\n"
                 "  - {label: noisy, set: {workload.jitter: 0.05, run.repeats: 5, "
                 "run.seed: 10}}\n")
    assert main(["predict", str(f), "--no-band", "-j", "1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "seed 0; seeds 10-14 where repeated" in text  # the base case ran seed 0 alone
    assert "over the 5 seeds (run.repeats, compute jitter 0.05)" in text
    f.write_text(f.read_text() + "  - {label: calm, set: {workload.jitter: 0.01}}\n")
    assert main(["predict", str(f), "--no-band", "-j", "1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "seeds per case" in text and "over each case's seeds" in text
