"""QA 18: a field written in the wrong section says where it belongs (not a loose "did you
mean"), and ``algorithm.overlap: true`` without gradient buckets is refused instead of run
as ``overlap: false`` unseen.  Each bad input: exit 2, one line naming file, line and field,
no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.scenario.homes import field_homes

HEAD = """\
name: q
platform: crossbar16
"""
WORKLOAD = "workload: {model: resnet50, batch_per_worker: 64}\n"
SWEEP = "sweep: {workers: [1, 2]}\n"


def _refused(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str],
             *extra: str) -> str:
    """``validate`` exits 2 with one line (no traceback) and writes nothing; that line."""
    path = tmp_path / "s.yaml"
    path.write_text(text)
    assert main(["validate", str(path), *extra]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert captured.out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]
    assert str(path) in err
    return err


def test_overhead_in_workload_points_at_network(tmp_path, capsys):
    err = _refused(tmp_path, HEAD + "workload: {model: resnet50, batch_per_worker: 64, "
                   "overhead: 5 us}\nalgorithm: bsp\n" + SWEEP, capsys)
    assert "s.yaml:3, workload.overhead: unknown field 'overhead'" in err
    assert "'overhead' is a field of network: (network.overhead)" in err
    # every section that has it, read from the readers: compute overrides, catalog entries
    assert "workload.compute.overhead" in err and "catalog.transports.NAME.overhead" in err
    assert "did you mean 'convergence'" not in err and "did you mean" not in err


def test_iterations_in_sweep_points_at_run(tmp_path, capsys):
    err = _refused(tmp_path, HEAD + WORKLOAD + "algorithm: bsp\n"
                   "sweep: {workers: [1, 2], iterations: 5}\n", capsys)
    assert "sweep.iterations: unknown field 'iterations'" in err
    assert "'iterations' is a field of run: (run.iterations)" in err
    assert "(allowed: at, axes, constraints, sample, scaling, workers)" in err


def test_batch_in_algorithm_points_at_workload(tmp_path, capsys):
    err = _refused(tmp_path, HEAD + WORKLOAD + "algorithm: {name: bsp, batch_per_worker: 64}\n"
                   + SWEEP, capsys)
    assert "s.yaml:4, algorithm.batch_per_worker: unknown parameter of bsp" in err
    assert "'batch_per_worker' is a field of workload: (workload.batch_per_worker)" in err
    assert "(allowed: every, exchange, fp16, overlap, strategy)" in err


def test_algorithm_parameter_in_workload_points_at_the_algorithms(tmp_path, capsys):
    err = _refused(tmp_path, HEAD + "workload: {model: resnet50, batch_per_worker: 64, "
                   "overlap: true}\nalgorithm: bsp\n" + SWEEP, capsys)
    assert "'overlap' is a parameter of algorithm bsp (algorithm.overlap)" in err


def test_another_algorithms_parameter_is_named(tmp_path, capsys):
    err = _refused(tmp_path, HEAD + WORKLOAD + "algorithm: {name: bsp, tau: 4}\n" + SWEEP,
                   capsys)
    assert "'tau' is a parameter of algorithms" in err and "(algorithm.tau)" in err


def test_platform_field_and_top_section_are_homes(tmp_path, capsys):
    err = _refused(tmp_path, HEAD + "workload: {model: resnet50, batch_per_worker: 64, "
                   "hosts: 4}\nalgorithm: bsp\n" + SWEEP, capsys)
    assert "'hosts' is a field of platform: (platform.hosts" in err
    err = _refused(tmp_path, HEAD + "workload: {model: resnet50, batch_per_worker: 64, "
                   "network: {}}\nalgorithm: bsp\n" + SWEEP, capsys)
    assert "'network' is a scenario section at the top level (network:)" in err
    err = _refused(tmp_path, HEAD + WORKLOAD + "algorithm: bsp\n" + SWEEP + "iterations: 5\n",
                   capsys)
    assert "iterations: unknown scenario section 'iterations' — 'iterations' is a field of " \
           "run: (run.iterations)" in err


def test_two_homes_are_both_named(tmp_path, capsys):
    err = _refused(tmp_path, HEAD + WORKLOAD + "algorithm: bsp\n" + SWEEP
                   + "run: {target: 0.9}\n", capsys)
    assert "(workload.convergence.target) or run.emulation: (run.emulation.target)" in err


def test_misspelling_alone_keeps_did_you_mean(tmp_path, capsys):
    err = _refused(tmp_path, HEAD + "workload: {model: resnet50, batch_per_worker: 64, "
                   "jiter: 0.1}\nalgorithm: bsp\n" + SWEEP, capsys)
    assert "unknown field 'jiter' — did you mean 'jitter'?" in err and "is a field of" not in err


def test_misspelling_and_home_give_both(tmp_path, capsys):
    """'algorithm' is a top section and one letter from benchmark.algorithms: both apply."""
    err = _refused(tmp_path, HEAD + "benchmark: {op: allreduce, algorithm: ring, ranks: [4], "
                   "sizes: [1 MiB]}\n", capsys)
    assert "'algorithm' is a scenario section at the top level (algorithm:)" in err
    assert "did you mean 'algorithms'?" in err


def test_home_named_in_a_sweep_point_and_a_set(tmp_path, capsys):
    err = _refused(tmp_path, HEAD + WORKLOAD + "algorithm: bsp\n"
                   "sweep: {workers: [1, 2], at: {2: {workload.overhead: 5 us}}}\n", capsys)
    assert "at 2 workers: workload.overhead: unknown field 'overhead' — 'overhead' is a " \
           "field of network: (network.overhead)" in err
    err = _refused(tmp_path, HEAD + WORKLOAD + "algorithm: bsp\n" + SWEEP, capsys,
                   "--set", "sweep.iterations=3")
    assert "'iterations' is a field of run: (run.iterations)" in err


def test_index_is_read_from_the_readers():
    """Every section's own reader fills the index: a field added to one shows up."""
    homes = field_homes()
    assert any("network.overhead" in p for _, p in homes["overhead"])
    assert any("run.emulation.max_time" in p for _, p in homes["max_time"])
    assert any("workload.input.decode_rate" in p for _, p in homes["decode_rate"])
    assert any("benchmark.ranks" in p for _, p in homes["ranks"])
    assert any("placement.server" in p for _, p in homes["server"])
    assert any("platform.k" in p for _, p in homes["k"])


OVERLAP = "algorithm: {name: bsp, overlap: true}\n"


@pytest.mark.parametrize("bucket", ["", ", bucket: none", ", bucket: false"])
def test_overlap_without_buckets_is_refused(tmp_path, capsys, bucket):
    err = _refused(tmp_path, HEAD + "workload: {model: resnet50, batch_per_worker: 64"
                   f"{bucket}}}\n" + OVERLAP + SWEEP, capsys)
    assert "s.yaml:4, algorithm.overlap:" in err
    assert "workload.bucket" in err and "overlap: false" in err


def test_overlap_in_compare_without_buckets_is_refused(tmp_path, capsys):
    err = _refused(tmp_path, HEAD + WORKLOAD + "algorithm: {name: bsp, label: a}\n"
                   "compare: [{name: bsp, overlap: true, label: b}]\n" + SWEEP, capsys)
    assert "compare[0].overlap:" in err and "workload.bucket" in err


@pytest.mark.parametrize("split", ["bucket: 0", "bucket: 25 MiB", "fusion: ddp"])
def test_overlap_with_buckets_validates(tmp_path, capsys, split):
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + f"workload: {{model: resnet50, batch_per_worker: 64, {split}}}\n"
                    + OVERLAP + SWEEP)
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


def test_overlap_fixed_by_set(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + WORKLOAD + OVERLAP + SWEEP)
    assert main(["validate", str(path), "--set", "workload.bucket=25 MiB"]) == 0
    assert main(["validate", str(path), "--set", "algorithm.overlap=false"]) == 0
    capsys.readouterr()


def test_overlap_with_whole_fusion_is_refused(tmp_path, capsys):
    """``fusion: whole`` is one all-reduce after the backward pass, as no bucket is: overlap
    there was run as ``overlap: false`` without a word."""
    err = _refused(tmp_path, HEAD + "workload: {model: resnet50, batch_per_worker: 64, "
                   "fusion: whole}\n" + OVERLAP + SWEEP, capsys)
    assert "s.yaml:4, algorithm.overlap:" in err and "workload.fusion is whole" in err


def test_overlap_with_weights_exchange_is_refused(tmp_path, capsys):
    """``exchange: weights`` averages the weights after the update: nothing overlaps the
    backward pass, buckets or not (bsp.py never reads ``overlap`` on that path)."""
    err = _refused(tmp_path, HEAD + "workload: {model: resnet50, batch_per_worker: 64, "
                   "bucket: 25 MiB}\nalgorithm: {name: bsp, exchange: weights, every: 4, "
                   "overlap: true}\n" + SWEEP, capsys)
    assert "s.yaml:4, algorithm.overlap:" in err and "exchange: weights" in err
    assert "overlap: false" in err


def test_a_typo_of_a_field_of_another_section_names_its_home(tmp_path, capsys):
    """'overhed' under workload: the near-exact match is network.overhead, not the loose
    'convergence' a same-section "did you mean" had offered."""
    err = _refused(tmp_path, HEAD + "workload: {model: resnet50, batch_per_worker: 64, "
                   "overhed: 5 us}\nalgorithm: bsp\n" + SWEEP, capsys)
    assert "s.yaml:3, workload.overhed:" in err
    assert "did you mean 'overhead'? It is a field of network: (network.overhead)" in err
    assert "'convergence'?" not in err


def test_a_typo_at_home_keeps_its_own_suggestion(tmp_path, capsys):
    """A misspelling closest to a field of its own section stays a plain "did you mean"."""
    err = _refused(tmp_path, HEAD + "workload: {model: resnet50, batch_per_worker: 64, "
                   "jiter: 0.1}\nalgorithm: bsp\n" + SWEEP, capsys)
    assert "did you mean 'jitter'? (allowed:" in err and "It is" not in err
    err = _refused(tmp_path, HEAD + WORKLOAD + "algorithm: bsp\nsweep: {workers: [1, 2], "
                   "iteratons: 3}\n", capsys)
    assert "sweep.iteratons:" in err and "did you mean 'iterations'? It is a field of run:" \
        in err


# ---- QA 19: bytes that are not UTF-8 on the command line ------------------------------------

def _argv(text: bytes) -> str:
    """A command-line argument as Python receives it (undecodable bytes as surrogates)."""
    import os

    return os.fsdecode(text)


@pytest.mark.parametrize("item, shown", [(b"name=caf\xe9", "--set name=caf\\xe9"),
                                         (b"run.se\xffed=1", "--set run.se\\xffed=1")])
def test_a_set_item_that_is_not_utf8_is_one_line(tmp_path, capsys, item, shown):
    """A latin-1 byte in a --set value was a UnicodeEncodeError traceback (exit 1) from the
    YAML parser; in a key it was echoed as '\\udcff'.  Both: exit 2, the byte as \\xNN."""
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + WORKLOAD + "algorithm: bsp\n" + SWEEP)
    assert main(["validate", str(path), "--set", _argv(item)]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert f"({shown}): not UTF-8 text (byte 0x" in err and "udc" not in err


def test_argparse_echoes_an_undecodable_byte_as_the_byte(capsys):
    assert main(["predict", "theano_mpi_alexnet", "--seed", _argv(b"\xe9")]) == 2
    err = capsys.readouterr().err
    assert "invalid int value: '\\xe9'" in err and "udc" not in err


def test_a_set_item_with_newlines_is_echoed_on_one_line(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + WORKLOAD + "algorithm: bsp\n" + SWEEP)
    assert main(["validate", str(path), "--set", "run.seed=1\n---\n2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "(--set run.seed=1\\n---\\n2)" in err, err


# ---- QA 19 lows: messages that say what to do ------------------------------------------------

def test_a_platform_file_without_a_yaml_name_is_not_called_missing(tmp_path, capsys,
                                                                    tmp_path_factory):
    other = tmp_path_factory.mktemp("elsewhere") / "plat"
    other.write_text("topology: star\n")
    err = _refused(tmp_path, HEAD.replace("crossbar16", str(other)) + WORKLOAD
                   + "algorithm: bsp\n" + SWEEP, capsys)
    assert "has no .yaml or .yml name: only YAML files are read" in err
    assert "not found" not in err


def test_empty_variants_say_how_to_drop_them(tmp_path, capsys):
    err = _refused(tmp_path, HEAD + WORKLOAD + "algorithm: bsp\n" + SWEEP + "variants: []\n",
                   capsys)
    assert "variants: must not be empty: list the variants, or set variants: null" in err


def test_calibrate_names_the_shipped_topologies_for_an_unknown_platform(tmp_path, capsys):
    trace = Path(__file__).parent / "data" / "gpu_h200_pinned" / "bench"
    assert main(["calibrate", str(trace), "--platform", "nosuch.yaml", "-q",
                 "--out", str(tmp_path / "p.yaml")]) == 2
    err = capsys.readouterr().err
    assert "--platform 'nosuch.yaml': no such file" in err and "h200_shared" in err
    assert not (tmp_path / "p.yaml").exists()


def test_run_iterations_zero_names_the_option(tmp_path, capsys):
    assert main(["run", "--real", "real_bsp_mlp", "--iterations", "0",
                 "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "argument --iterations: must be a whole number >= 1, not '0'" in err
    assert not (tmp_path / "r").exists()


def test_a_range_with_units_of_another_kind_names_the_kind(tmp_path, capsys):
    """Range ends take the field's own units (tests/test_axes_units.py); a size on a time
    field is refused naming both kinds (it had said "plain numbers in SI" to any unit)."""
    err = _refused(tmp_path, HEAD + WORKLOAD + "algorithm: bsp\nsweep: {workers: [1, 2], "
                   "axes: {network.overhead: {from: 1 GB, to: 20 us}}, "
                   "sample: {method: sobol, n: 4}}\n", capsys)
    assert ("sweep.axes.network.overhead.from: network.overhead is a time, and '1 GB' is a "
            "size") in err


def test_a_damaged_parquet_table_is_one_line(tmp_path, capsys):
    bad = tmp_path / "t.parquet"
    bad.write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1")
    pytest.importorskip("pyarrow")
    from clustersim.errors import InputError
    from clustersim.explorer.table import read_table

    with pytest.raises(InputError) as exc:  # explore reads the table before it serves
        read_table(bad)
    err = str(exc.value)
    assert "not a readable Parquet table" in err and len(err.splitlines()) == 1, err


def test_a_value_that_starts_with_a_dash_gets_the_equals_hint(capsys):
    assert main(["whatif", "theano_mpi_alexnet", "--bandwidth", "-1,1"]) == 2
    err = capsys.readouterr().err
    assert "argument --bandwidth: expected one argument (a value that starts with '-' goes " \
           "after '=': --bandwidth=-1)" in err
