"""Bad input: one clear message naming file, line and field path, exit code 2, no traceback,
nothing written.  Each case runs the real CLI entry point."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clustersim.cli import main

GOOD = """\
name: ok
platform:
  topology: star
  hosts: 4
  device: v100
  link: {bandwidth: 10 Gb/s, latency: 1 us}
benchmark:
  op: allreduce
  algorithms: [ring]
  ranks: [2, 4]
  sizes: [1 KiB, 1 MiB]
"""


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_good_scenario_runs(tmp_path, capsys):
    f = write(tmp_path, GOOD)
    out_json = tmp_path / "o.json"
    code, out, err = run_cli(capsys, "predict", str(f), "--json", str(out_json))
    assert code == 0, err
    assert "busbw" in out and out_json.exists()


CASES = [
    # (replace this, with that, expected fragments of the message, expected line)
    ("  device: v100", "  device: k8O", ["platform.device", "did you mean 'k80'"], 5),
    ("  hosts: 4", "  hosts: four", ["platform.hosts"], 4),
    ("latency: 1 us}", "latency: 1 fortnight}", ["platform.link", "time"], 6),
    ("bandwidth: 10 Gb/s", "bandwidth: 0 Gb/s", ["platform.link", "positive"], 6),
    ("bandwidth: 10 Gb/s", "bandwidth: -5 Gb/s", ["platform.link", "positive"], 6),
    ("  op: allreduce", "  op: allreduse", ["benchmark.op", "did you mean 'allreduce'"], 8),
    ("algorithms: [ring]", "algorithms: [rign]", ["benchmark.algorithms[0]", "'ring'"], 9),
    ("ranks: [2, 4]", "ranks: [2, 8]", ["benchmark.ranks[1]", "only 4 devices"], 10),
    ("ranks: [2, 4]", "ranks: [2, 0]", ["benchmark.ranks[1]", ">= 2"], 10),
    ("sizes: [1 KiB, 1 MiB]", "sizes: [1 KiB, 1 MiV]", ["benchmark.sizes[1]", "size"], 11),
    ("name: ok", "name: ok\nbenchmarks: {}", ["benchmarks", "did you mean 'benchmark'"], 2),
    ("  topology: star", "  topology: stra", ["platform.topology", "did you mean 'star'"], 3),
]


@pytest.mark.parametrize("old, new, fragments, line", CASES)
def test_bad_field(tmp_path, capsys, old, new, fragments, line):
    assert old in GOOD
    f = write(tmp_path, GOOD.replace(old, new))
    out_json = tmp_path / "o.json"
    code, out, err = run_cli(capsys, "predict", str(f), "--json", str(out_json))
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert f"{f}:{line}" in err, err
    for frag in fragments:
        assert frag in err, err
    assert "Traceback" not in err
    assert not out_json.exists()


def test_yaml_syntax_error(tmp_path, capsys):
    f = write(tmp_path, GOOD.replace("ranks: [2, 4]", "ranks: [2, 4"))
    code, _, err = run_cli(capsys, "predict", str(f))
    assert code == 2 and "YAML syntax error" in err and str(f) in err


def test_missing_scenario_file(tmp_path, capsys):
    code, _, err = run_cli(capsys, "predict", str(tmp_path / "nope.yaml"))
    assert code == 2 and "not found" in err


def test_missing_platform_file(tmp_path, capsys):
    f = write(tmp_path, GOOD.split("platform:")[0] + "platform: topologies/nope.yaml\n"
              + "benchmark:" + GOOD.split("benchmark:")[1])
    code, _, err = run_cli(capsys, "predict", str(f))
    assert code == 2 and "platform file" in err and "not found" in err and "platform" in err


def test_disconnected_topology(tmp_path, capsys):
    text = GOOD.split("platform:")[0] + textwrap.dedent("""\
        platform:
          topology: explicit
          link: {bandwidth: 10 Gb/s, latency: 1 us}
          device: v100
          nodes: [{name: a, host: 0}, {name: b, host: 1}, {name: s1}, {name: s2}]
          links: [[a, s1], [b, s2]]
        """) + "benchmark:" + GOOD.split("benchmark:")[1].replace("[2, 4]", "[2]")
    f = write(tmp_path, text)
    code, _, err = run_cli(capsys, "predict", str(f))
    assert code == 2 and "disconnected" in err


def test_more_workers_than_devices(tmp_path, capsys):
    f = write(tmp_path, """\
        platform: {topology: star, hosts: 2, device: v100, link: eth10g}
        workload: {model: lenet5, batch_per_worker: 8}
        algorithm: bsp
        sweep: {workers: [1, 2, 3]}
        """)
    code, _, err = run_cli(capsys, "predict", str(f))
    assert code == 2 and "sweep.workers[2]" in err and "only 2 devices" in err


SWEEP_AT = """\
    platform: {topology: star, hosts: 4, device: v100, link: eth10g}
    workload: {model: lenet5, batch_per_worker: 8}
    algorithm: bsp
    sweep:
      workers: [1, 2, 4]
      at:
        %s
    run: {iterations: 3, warmup: 1}
    """


@pytest.mark.parametrize("at, fragments", [
    ("3: {workload.batch_per_worker: 4}", ["sweep.at[3]", "not a point", "[1, 2, 4]"]),
    ("4: {algorithm: {name: bsp}}", ["sweep.at[4].algorithm", "cannot change"]),
    ("4: []", ["sweep.at[4]", "dotted.field"]),
    ("4: {workload.batch_per_worker: -4}", ["at 4 workers", "workload.batch_per_worker"]),
])
def test_bad_sweep_point_override(tmp_path, capsys, at, fragments):
    f = write(tmp_path, SWEEP_AT % at)
    code, out, err = run_cli(capsys, "predict", str(f))
    assert code == 2 and not out, err
    for frag in fragments:
        assert frag in err, (frag, err)


def test_sweep_point_override_changes_only_its_point(tmp_path):
    """``sweep.at`` changes the fields of one point; the others are the scenario as written."""
    from clustersim.scenario.schema import load_scenario
    from clustersim.sim.sweep import run_sweep

    plain = load_scenario(write(tmp_path, SWEEP_AT % "4: {}", "a.yaml"), ["sweep.at={}"])
    over = load_scenario(write(tmp_path, SWEEP_AT % "4: {workload.batch_per_worker: 2}",
                               "b.yaml"))
    a, b = run_sweep(plain, jobs=1).points["bsp"], run_sweep(over, jobs=1).points["bsp"]
    assert [p.batch_per_worker for p in b] == [8, 8, 2]
    for pa, pb in zip(a[:2], b[:2]):
        assert pa.iteration_time == pb.iteration_time
    assert b[2].compute < a[2].compute  # a quarter of the batch at 4 workers


def test_unknown_algorithm_and_parameter(tmp_path, capsys):
    base = """\
        platform: {topology: star, hosts: 2, device: v100, link: eth10g}
        workload: {model: lenet5, batch_per_worker: 8}
        algorithm: %s
        """
    f = write(tmp_path, base % "{name: bps}")
    code, _, err = run_cli(capsys, "predict", str(f))
    assert code == 2 and "did you mean 'bsp'" in err and ":3" in err
    f = write(tmp_path, base % "{name: bsp, stratgy: ar}")
    code, _, err = run_cli(capsys, "predict", str(f))
    assert code == 2 and "algorithm.stratgy" in err and "did you mean 'strategy'" in err
    f = write(tmp_path, base % "{name: bsp, strategy: nccl64}")
    code, _, err = run_cli(capsys, "predict", str(f))
    assert code == 2 and "algorithm.strategy" in err and "nccl16" in err


def test_unknown_model(tmp_path, capsys):
    f = write(tmp_path, """\
        platform: {topology: star, hosts: 2, device: v100, link: eth10g}
        workload: {model: resnet5O, batch_per_worker: 8}
        algorithm: bsp
        """)
    code, _, err = run_cli(capsys, "predict", str(f))
    assert code == 2 and "workload.model" in err and "resnet50" in err


def test_bad_set_override(tmp_path, capsys):
    f = write(tmp_path, GOOD)
    code, _, err = run_cli(capsys, "predict", str(f), "--set", "run.fidelity=exact")
    assert code == 2 and "run.fidelity" in err and "analytic" in err


def test_bad_cli_usage(capsys):
    code, _, err = run_cli(capsys, "predict")
    assert code == 2 and "required" in err
    code, _, err = run_cli(capsys, "frobnicate")
    assert code == 2


def test_output_into_a_directory_is_refused(tmp_path, capsys):
    f = write(tmp_path, GOOD)
    code, _, err = run_cli(capsys, "predict", str(f), "--json", str(tmp_path))
    assert code == 2 and "directory" in err


def test_console_script_exit_code_and_no_traceback(tmp_path):
    f = write(tmp_path, GOOD.replace("device: v100", "device: k8O"))
    r = subprocess.run([sys.executable, "-m", "clustersim", "predict", str(f)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "did you mean 'k80'" in r.stderr


def test_set_a_field_of_a_platform_named_by_its_file(tmp_path, capsys):
    """``--set platform.X=...`` on a scenario whose platform is a file name changes that
    file's field (as a sweep's platform.* axis does) instead of replacing the platform by a
    one-field mapping: the error named 'topology', which nobody had touched."""
    from clustersim.scenario.schema import load_scenario

    knl = "scenarios/knl_unsaturated.yaml"
    root = Path(__file__).resolve().parents[1]
    scn = load_scenario(root / knl, ["platform.routing.policy=ugal"])
    assert scn.platform.routing.policy == "ugal"
    assert load_scenario(root / knl).platform.num_devices == scn.platform.num_devices
    code, _, err = run_cli(capsys, "validate", str(root / knl), "--set",
                           "platform.host_link.bandwidth=0 Gb/s")
    assert code == 2
    assert "platform.host_link.bandwidth" in err and "positive" in err
    assert "topology" not in err


def test_an_uncertain_entry_from_set_is_named_not_line_1(capsys):
    """A refused value of an ``uncertain:`` entry given with ``--set`` names that item; it
    pointed at line 1 of the file, which does not hold it."""
    root = Path(__file__).resolve().parents[1]
    item = "uncertain={algorithm.strategy: {choice: [nccl32, bogus]}}"
    code, _, err = run_cli(capsys, "validate", str(root / "scenarios" / "theano_mpi_alexnet.yaml"),
                           "--set", item)
    assert code == 2
    assert f"(--set {item})" in err and ".yaml:1," not in err
    assert "uncertain.algorithm.strategy.choice[1]" in err


@pytest.mark.parametrize("labels, bad, line, words", [
    (["base"], "variants[0].label", 11, "already the base case's label"),
    (["big", "big"], "variants[1].label", 12, "already variant 1's label"),
])
def test_variant_labels_collide_at_the_parse(tmp_path, capsys, labels, bad, line, words):
    """A variant named like the base case (or like another variant) would give two rows of
    one name: refused by validate at the variant's line, as predict refuses it (it had
    passed validate and failed predict naming 'compare' and no line)."""
    items = "".join(f"  - {{label: {lb}, set: {{workload.batch_per_worker: {8 * (k + 2)}}}}}\n"
                    for k, lb in enumerate(labels))
    p = write(tmp_path, "name: v\nplatform: dgx1_edr8\nworkload: {model: resnet50, "
              "batch_per_worker: 32}\nalgorithm: {name: bsp}\nsweep:\n  workers: [8]\n"
              "run: {iterations: 2, warmup: 1}\n\n\nvariants:\n" + items)
    for cmd in ("validate", "predict"):
        code, out, err = run_cli(capsys, cmd, str(p))
        assert code == 2 and out == ""
        assert f"s.yaml:{line}, {bad}: label" in err and words in err, err
    head, _, tail = p.read_text().rpartition(f"label: {labels[-1]},")
    p.write_text(f"{head}label: other,{tail}")
    assert run_cli(capsys, "validate", str(p))[0] == 0


def test_an_empty_worker_list_without_axes_is_refused(capsys):
    """sweep.workers: [] with no sweep.axes ran every device of the platform, unsaid (QA 8)."""
    code, out, err = run_cli(capsys, "predict", "theano_mpi_alexnet", "--set",
                             "sweep.workers=[]", "-q")
    assert code == 2 and "sweep.workers: must list at least one worker count" in err


def test_a_long_set_echoed_in_part_says_so(capsys):
    """A long --set was echoed cut mid-value, and the closing parenthesis made the cut read
    as the whole value ("... {choice: [16, 32, 64])"); the cut now ends in an ellipsis."""
    value = ", ".join(f"f{k}.x: {{choice: [16, 32, 64]}}" for k in range(20))
    code, out, err = run_cli(capsys, "predict", "theano_mpi_alexnet", "--set",
                             f"uncertain={{{value}}}", "--uncertainty", "2", "-q", "--json",
                             "/dev/null")
    assert code == 2 and "(--set uncertain={f0.x" in err and "…)" in err, err
