"""QA 16c: bad scenario input gets one clear message (file, line, field, allowed values) and
exit 2 - the HIGH and MEDIUM findings on scenario and uncertainty parsing, and the quick LOW
ones on their messages."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clustersim.cli import main
from clustersim.errors import InputError
from clustersim.scenario.schema import load_scenario
from clustersim.scenario.yamlio import load_yaml_text

BASE = """\
name: b
platform: crossbar16
workload: {model: resnet50, batch_per_worker: 32, optimizer: sgd}
algorithm: {name: bsp, label: BSP}
compare:
  - {name: bsp, strategy: ar, label: AR}
sweep: {workers: [2, 4]}
run: {iterations: 3, warmup: 1, seed: 0}
"""


def _write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _refused(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str],
             *extra: str) -> str:
    """Run ``validate``: exit 2, one line on stderr, no traceback; that line."""
    path = _write(tmp_path, text)
    assert main(["validate", str(path), *extra]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def _ok(tmp_path: Path, text: str, *extra: str) -> None:
    assert main(["validate", str(_write(tmp_path, text)), *extra]) == 0


# H1 -----------------------------------------------------------------------------------------

def test_h1_an_integer_of_5000_digits_is_out_of_range_not_a_crash(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = BASE.replace("batch_per_worker: 32", "batch_per_worker: " + "1" * 5000)
    err = _refused(tmp_path, text, capsys)
    assert "s.yaml:3, workload.batch_per_worker" in err and "out of range" in err
    err = _refused(tmp_path, BASE, capsys, "--set", "run.seed=" + "1" * 5000)
    assert "run.seed" in err and "out of range" in err


def test_h1_long_integers_with_leading_zeros_still_read() -> None:
    assert load_yaml_text("a: " + "0" * 5000 + "7")["a"] == 7
    assert load_yaml_text("a: 9223372036854775807")["a"] == 2**63 - 1
    with pytest.raises(InputError, match="out of range"):
        load_yaml_text("a: 9223372036854775808")


# H2 / M8 ------------------------------------------------------------------------------------

UNC = BASE.replace("{", "{{").replace("}", "}}") + "uncertain:\n  {field}: {{choice: {values}}}\n"


def test_h2_a_bare_number_in_a_choice_on_a_rate_field_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = UNC.format(field="catalog.devices.k80.peak", values="[1, 10]")
    err = _refused(tmp_path, text, capsys)
    assert "s.yaml:10, uncertain.catalog.devices.k80.peak.choice[0]" in err
    assert "compute rate needs its unit" in err
    star = BASE.replace("platform: crossbar16", "platform: {topology: star, hosts: 16, "
                        "device: v100, link: {bandwidth: 10 Gb/s, latency: 1 us}}")
    err = _refused(tmp_path, star + "uncertain:\n  platform.link.bandwidth: "
                   "{choice: [1.4, 2.8]}\n", capsys)
    assert "platform.link.bandwidth.choice[0]: a bandwidth needs its unit" in err
    _ok(tmp_path, star + "uncertain:\n  platform.link.bandwidth: "
        "{choice: [10 Gb/s, 25 Gb/s]}\n")


def test_m8_a_bare_number_beside_units_in_a_choice_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(tmp_path, UNC.format(field="network.overhead", values="[1 us, 2]"), capsys)
    # a time is held to the rate rule now (QA 18b M4): the bare 2 is refused for its own sake
    assert "network.overhead.choice[1]: a time needs its unit" in err
    err = _refused(tmp_path, UNC.format(field="network.overhead", values="[1 us, 2 GB/s]"),
                   capsys)
    assert "choice[1]: mixes units" in err
    _ok(tmp_path, UNC.format(field="network.overhead", values="[1 us, 2 us]"))
    err = _refused(tmp_path, UNC.format(field="network.overhead", values="[1e-6, 2e-6]"),
                   capsys)
    assert "choice[0]: a time needs its unit" in err and "read as seconds" in err
    err = _refused(tmp_path, UNC.format(field="workload.batch_per_worker", values="[1, 2 us]"),
                   capsys)
    assert "mixes a bare number with units" in err  # a field that is no rate or time


# H3 -----------------------------------------------------------------------------------------

def test_h3_choice_weights_whose_sum_overflows_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = BASE + "uncertain:\n  workload.jitter: {choice: [0.01, 0.02], weights: [1e308, 1e308]}\n"
    err = _refused(tmp_path, text, capsys)
    assert "uncertain.workload.jitter.weights" in err and "finite sum" in err
    _ok(tmp_path, text.replace("1e308, 1e308", "1, 0"))


# H5 -----------------------------------------------------------------------------------------

def test_h5_model_params_past_2_to_60_bytes_of_gradients_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = BASE.replace("model: resnet50", "model: {params: 1e20, fwd_flops: 1e9}")
    err = _refused(tmp_path, text, capsys)
    assert "workload.model.params" in err and "2^60 B" in err and "2^58" in err
    _ok(tmp_path, text.replace("1e20", "1e12"))


# H6 / M3 ------------------------------------------------------------------------------------

def test_h6_global_batch_and_batch_per_worker_together_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = BASE.replace("batch_per_worker: 32", "global_batch: 64, batch_per_worker: 32")
    err = _refused(tmp_path, text, capsys)
    assert "s.yaml:3, workload.global_batch: give batch_per_worker or global_batch, not both" \
        in err and "weak scaling" in err and "sweep.scaling: strong" in err


def test_m3_global_batch_under_weak_scaling_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = BASE.replace("batch_per_worker: 32", "global_batch: 3")
    err = _refused(tmp_path, text, capsys)
    assert "workload.global_batch" in err and "'scaling: strong'" in err
    _ok(tmp_path, text.replace("workers: [2, 4]", "workers: [2, 4], scaling: strong"))
    err = _refused(tmp_path, BASE.replace("workers: [2, 4]", "workers: [2, 4], scaling: strong"),
                   capsys)
    assert "sweep.scaling: strong scaling splits workload.global_batch" in err


# H7 -----------------------------------------------------------------------------------------

def test_h7_benchmark_beside_workload_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = ("name: bm\nplatform: crossbar16\nbenchmark: {op: allreduce, algorithms: [ring], "
            "ranks: [4], sizes: [4 B]}\nworkload: {model: resnet50, batch_per_worker: 32}\n")
    err = _refused(tmp_path, text + "algorithm: bsp\n", capsys)
    assert "s.yaml:4, workload: a scenario is either a collective benchmark" in err
    err = _refused(tmp_path, text, capsys)  # had said "algorithm: is required"
    assert "either a collective benchmark" in err and "is required" not in err


# M2 -----------------------------------------------------------------------------------------

def test_m2_a_key_beside_a_merge_overrides_it() -> None:
    doc = load_yaml_text(BASE.replace("algorithm: {name: bsp, label: BSP}",
                                      "algorithm: &a {name: bsp, strategy: ar, label: BSP}")
                         .replace("{name: bsp, strategy: ar, label: AR}", "{<<: *a, label: B2}"))
    assert doc["compare"][0] == {"name": "bsp", "strategy": "ar", "label": "B2"}
    doc = load_yaml_text("x: &x {p: 1}\ny: &y {p: 2, q: 3}\nz: {<<: [*x, *y]}\n")
    assert doc["z"] == {"p": 1, "q": 3}  # of two merges, the first wins
    with pytest.raises(InputError, match="duplicate key 'p'"):
        load_yaml_text("x: &x {p: 1}\nz: {<<: *x, p: 2, p: 3}\n")


# M4 -----------------------------------------------------------------------------------------

def test_m4_validate_catches_a_root_past_the_ranks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = ("name: bm\nplatform: crossbar16\nbenchmark: {op: broadcast, algorithms: "
            "[binomial], ranks: [4], sizes: [4 B], root: 7}\n")
    err = _refused(tmp_path, text, capsys)
    assert "s.yaml:3, benchmark.root: root 7 is not a rank of 4" in err and "0 to 3" in err


def test_m4_validate_catches_duplicate_labels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(tmp_path, BASE.replace("label: AR", "label: BSP"), capsys)
    assert "s.yaml:6, compare[0].label: two algorithms would both be reported as 'BSP'" in err
    text = BASE.replace("{name: bsp, label: BSP}", "bsp").replace(
        "{name: bsp, strategy: ar, label: AR}", "bsp")
    err = _refused(tmp_path, text, capsys)
    assert "compare[0]: two algorithms would both be reported as 'bsp'" in err


# M5 -----------------------------------------------------------------------------------------

def test_m5_set_into_a_list_is_refused_with_the_whole_list_form(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(tmp_path, BASE, capsys, "--set", "compare.1.name=bsp")
    assert "(--set compare.1.name=bsp), compare: is a list" in err
    assert "--set 'compare=[...]'" in err and "is required" not in err


# M6 -----------------------------------------------------------------------------------------

def test_m6_control_characters_are_refused_and_never_echoed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(tmp_path, BASE.replace("name: b\n", 'name: "\\e[31mRED\\e[2J"\n'), capsys)
    assert "s.yaml:1, name: control character \\x1b" in err and "\x1b" not in err
    err = _refused(tmp_path, BASE, capsys, "--set", "run.seed=\x1b[2Jx")
    assert "\x1b" not in err and "\\x1b[2Jx" in err
    assert "\x07" not in str(InputError("bad \x07", file="f\x00"))


# M7 -----------------------------------------------------------------------------------------

def test_m7_too_many_workers_for_the_replicas_names_placement(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = ("name: pl\nplatform: cori_knl_cores\nworkload: {model: googlenet, "
            "batch_per_worker: 8, optimizer: sgd}\nalgorithm: {name: async_easgd, tau: 1, "
            "label: A}\nsweep: {workers: [17, 68]}\nrun: {iterations: 3, warmup: 1, seed: 0}\n"
            "placement: {devices_per_worker: 68}\n")
    err = _refused(tmp_path, text, capsys)
    assert "sweep.workers[1]: 68 workers but the platform has only 64 replicas of 68 " \
           "devices (placement.devices_per_worker, line 7" in err


# M9 -----------------------------------------------------------------------------------------

def test_m9_fractional_byte_messages_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = ("name: bm\nplatform: crossbar16\nbenchmark: {op: allreduce, algorithms: [ring], "
            "ranks: [4], sizes: [1 b, 3 b]}\n")
    err = _refused(tmp_path, text, capsys)
    assert "benchmark.sizes[0]: a message size is a whole number of bytes, not 0.125 B" in err
    _ok(tmp_path, text.replace("1 b, 3 b", "8 b, 64 b"))
    path = _write(tmp_path, text.replace("1 b, 3 b", "4 B"), "bm.yaml")
    assert main(["routes", str(path), "--ranks", "4", "--size", "1 b"]) == 2
    assert "--size: a message size is a whole number of bytes" in capsys.readouterr().err


# LOW ----------------------------------------------------------------------------------------

def test_low_underscores_only_between_digits() -> None:
    assert load_yaml_text("a: 1_000")["a"] == 1000
    assert load_yaml_text("a: 1_")["a"] == "1_"
    assert load_yaml_text("a: 1__0")["a"] == "1__0"


def test_low_messages_write_values_as_yaml(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(tmp_path, BASE.replace("batch_per_worker: 32", "batch_per_worker: true"),
                   capsys)
    assert err.endswith("must be a whole number, not true")
    err = _refused(tmp_path, BASE + "~: 1\n", capsys)
    assert "null: unknown scenario section null" in err and "None" not in err
    err = _refused(tmp_path, BASE, capsys, "--set", "platform={topology: star, hosts: 4, "
                   "device: v100, link: {bandwidth: [1 GB/s], latency: 1 us}}")
    assert "not [1 GB/s]" in err and "['" not in err
    err = _refused(tmp_path, BASE.replace("label: BSP", "label: BSP, exchange: [a, b]"), capsys)
    assert "exchange must be one of gradients, weights, not [a, b]" in err


def test_low_a_second_document_is_named_as_such(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(tmp_path, BASE + "---\nname: c\n", capsys)
    assert "s.yaml:9: a second YAML document starts here" in err and "one document" in err


def test_shipped_scenarios_still_load() -> None:
    """Every shipped scenario loads, under its file's name, saying what it is (audit J L2:
    only the first 8 were loaded, and nothing was asserted)."""
    paths = sorted(Path(__file__).resolve().parents[1].glob("scenarios/*.yaml"))
    assert len(paths) >= 20
    for path in paths:
        scn = load_scenario(path)
        assert scn.name == path.stem and scn.about.strip(), path


def test_low_constraint_that_is_no_condition_is_refused() -> None:
    """QA 16c LOW-9: a constraint is a condition; a bare axis name was a truth value."""
    from clustersim.explore.constraints import compile_constraint

    names = ["workers", "workload.batch_per_worker"]
    for text in ("workload.batch_per_worker", "workers + 1"):
        with pytest.raises(InputError, match="is not a condition"):
            compile_constraint(text, names, ("sweep", "constraints", 0))
    for text in ("workers <= 4", "not (workers > 2) and workers < 9", "True",
                 "workers in [2, 4]"):
        compile_constraint(text, names, ("sweep", "constraints", 0))


@pytest.mark.parametrize("ranks, words", [("[1, 4]", ">= 2"), ("[4, 4]", "twice")])
def test_low_benchmark_rank_counts_are_two_or_more_and_once_each(ranks, words) -> None:
    """QA 16c LOW-15: one rank gave algbw inf and busbw nan; a count twice, two tables."""
    from clustersim.scenario.schema import parse_scenario

    raw = {"name": "b", "platform": "crossbar16",
           "benchmark": {"op": "allreduce", "algorithms": ["ring"], "ranks": yaml.safe_load(ranks),
                         "sizes": ["1 KiB"]}}
    with pytest.raises(InputError, match=words):
        parse_scenario(raw)


def test_low_an_empty_label_is_refused() -> None:
    """QA 16c LOW-16: label "" fell back to the algorithm's name unseen."""
    from clustersim.scenario.schema import parse_scenario

    raw = {"name": "l", "platform": "crossbar16",
           "workload": {"model": "resnet50", "batch_per_worker": 32},
           "algorithm": {"name": "bsp", "label": " "}, "sweep": {"workers": [2]}}
    with pytest.raises(InputError, match=r"algorithm\.label: must not be empty"):
        parse_scenario(raw)


def test_low_a_true_false_axis_is_a_condition_on_its_own() -> None:
    """Review of 2026-11-29: ``not algorithm.fp16`` is a condition where the axis is one
    of true/false values; a numeric axis alone still is not."""
    from clustersim.explore.constraints import compile_constraint

    names = ["workers", "algorithm.fp16"]
    for text in ("not algorithm.fp16", "algorithm.fp16 and workers > 2"):
        compile_constraint(text, names, ("sweep", "constraints", 0), ("algorithm.fp16",))
    with pytest.raises(InputError, match="is not a condition"):
        compile_constraint("workers", names, ("sweep", "constraints", 0), ("algorithm.fp16",))


def test_an_integer_input_clipped_gives_every_kept_number_its_whole_interval() -> None:
    """QA 17 HIGH-1: {range: [1, 10], kind: int, clip: [2, 5]} drew 2 and 5 half as often as
    3 and 4 (the clip cut the end numbers' intervals [1.5, 2.5) and [4.5, 5.5) in half)."""
    from collections import Counter

    import numpy as np

    from clustersim.uncertainty.sampling import to_value
    from clustersim.uncertainty.spec import _parse_one

    us = (np.arange(10_000) + 0.5) / 10_000
    inp = _parse_one("algorithm.tau", {"range": [1, 10], "kind": "int", "clip": [2, 5]},
                     ("uncertain", "algorithm.tau"))
    assert Counter(to_value(inp, u) for u in us) == {2: 2500, 3: 2500, 4: 2500, 5: 2500}
    # a normal: each kept number with its interval's mass, renormalised over [2.5, 6.5)
    inp = _parse_one("algorithm.tau", {"normal": [5, 2], "kind": "int", "clip": [3, 6]},
                     ("uncertain", "algorithm.tau"))
    got = Counter(to_value(inp, u) for u in us)
    from scipy.stats import norm

    mass = {n: norm.cdf(n + 0.5, 5, 2) - norm.cdf(n - 0.5, 5, 2) for n in (3, 4, 5, 6)}
    total = sum(mass.values())
    for n, m in mass.items():
        assert got[n] / 10_000 == pytest.approx(m / total, abs=2e-4)


def test_a_worker_count_the_copper_tree_has_no_tree_for_is_refused_by_validate(capsys) -> None:
    """QA 17 MEDIUM-1: validate said ok to 7 workers on Theano-MPI's copper strategy, which
    predict and sweep then refused while simulating, naming no point or line.  Now at the
    count (sweep.workers) or the workers axis, with the point."""
    assert main(["validate", "theano_mpi_alexnet", "--set", "sweep.workers=[1, 7]"]) == 2
    err = capsys.readouterr().err
    assert "sweep.workers[1]: 7 workers" in err and "copper" in err
    assert main(["validate", "theano_mpi_alexnet", "--set", "sweep.workers=null",
                 "--set", "sweep.axes={workers: [2, 7]}"]) == 2
    err = capsys.readouterr().err
    assert "sweep.axes.workers: at the sweep point {workers=7}" in err
    assert main(["validate", "theano_mpi_alexnet", "--set", "sweep.workers=[1, 2, 8]"]) == 0


def test_low_empty_axes_say_so() -> None:
    """QA 16c LOW-8: ``sweep: {axes: {}}`` said "sweep.workers: is required"."""
    from clustersim.scenario.schema import parse_scenario

    raw = {"name": "a", "platform": "crossbar16",
           "workload": {"model": "resnet50", "batch_per_worker": 32},
           "algorithm": {"name": "bsp"}, "sweep": {"axes": {}}}
    with pytest.raises(InputError, match=r"sweep\.axes: is empty"):
        parse_scenario(raw)
    raw["sweep"] = {"axes": {}, "workers": [2]}
    assert parse_scenario(raw).sweep.workers == (2,)
