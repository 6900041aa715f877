"""QA 16c, LOW findings on input: ``--set`` key spelling, the origin an error names (an
option, a ``--set`` item), integers echoed as written, ``like:`` naming an entry beside it,
and ``%YAML`` directives.  Each bad input ends in one line, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.errors import InputError
from clustersim.scenario.schema import load_scenario

BASE = """\
name: b
platform: crossbar16
workload: {model: resnet50, batch_per_worker: 32, optimizer: sgd}
algorithm: {name: bsp, label: BSP}
sweep: {workers: [2, 4]}
run: {iterations: 3, warmup: 1, seed: 0}
"""

UNCERTAIN = BASE + "uncertain:\n  workload.jitter: {uniform: [0, 0.05]}\n"


def _write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def _refused(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str],
             *extra: str, command: str = "validate") -> str:
    """Run ``command``: exit 2, one line on stderr, no traceback; that line."""
    assert main([command, str(_write(tmp_path, text)), *extra]) == 2
    return _one_line(capsys)


# 1: --set key spelling -------------------------------------------------------------------

@pytest.mark.parametrize("key", ["run..seed", ".run.seed", "run.seed.", "run. .seed"])
def test_a_set_key_with_an_empty_part_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str) -> None:
    """``run..seed=3`` had been read as ``run.seed=3``, the typo dropped in silence."""
    err = _refused(tmp_path, BASE, capsys, "--set", f"{key}=3")
    assert f"(--set {key}=3)" in err
    assert f"the field name {key!r} has an empty part" in err
    assert "like run.seed" in err


def test_a_variant_set_key_with_an_empty_part_is_refused_at_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = BASE + "variants:\n  - {label: v, set: {run..seed: 3}}\n"
    err = _refused(tmp_path, text, capsys)
    assert "s.yaml:8, variants[0].set" in err
    assert "'run..seed' has an empty part" in err


@pytest.mark.parametrize("item", [" run . seed =5", "run.seed =5", "run .seed= 5"])
def test_spaces_around_each_dotted_part_and_around_equals_are_stripped(
        tmp_path: Path, item: str) -> None:
    """One rule for every part: ``' run . seed =1'`` had been the section ``'run '``."""
    assert load_scenario(_write(tmp_path, BASE), [item]).run.seed == 5


def test_a_spaced_set_key_is_named_by_its_field_in_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(tmp_path, BASE, capsys, "--set", " run . seed =-1")
    assert "(--set  run . seed =-1), run.seed: must be >= 0, not -1" in err


# 2: the origin of an error ---------------------------------------------------------------

@pytest.mark.parametrize("command", ["predict", "sensitivity"])
def test_seed_option_errors_name_the_option(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    """``--seed -1`` had been reported as ``(--set run.seed=-1)``, never typed."""
    err = _refused(tmp_path, UNCERTAIN, capsys, "--seed", "-1", command=command)
    assert "s.yaml (--seed -1), run.seed: must be >= 0, not -1" in err
    assert "--set" not in err


def test_fidelity_option_errors_name_the_option(tmp_path: Path) -> None:
    from clustersim.scenario.overrides import option_item

    item = option_item("run.fidelity", "--fidelity", "bogus")
    with pytest.raises(InputError) as exc:
        load_scenario(_write(tmp_path, BASE), [item])
    assert "s.yaml (--fidelity bogus), run.fidelity: " in str(exc.value)
    assert "--set" not in str(exc.value)


@pytest.mark.parametrize("command, extra", [
    ("sensitivity", ()),
    ("predict", ("--uncertainty", "2", "-q", "--json", "OUT")),
])
def test_set_uncertain_null_is_reported_at_the_set_item(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str,
        extra: tuple[str, ...]) -> None:
    """``--set uncertain=~`` had been reported at the file's ``uncertain:`` line (7 here),
    which the item had replaced."""
    extra = tuple(str(tmp_path / "o.json") if e == "OUT" else e for e in extra)
    err = _refused(tmp_path, UNCERTAIN, capsys, "--set", "uncertain=~", *extra,
                   command=command)
    assert "s.yaml (--set uncertain=~), uncertain: nothing is uncertain" in err
    assert "s.yaml:" not in err
    assert not (tmp_path / "o.json").exists()


# 3: an integer echoed as written ---------------------------------------------------------

@pytest.mark.parametrize("where", ["range: [1, 9223372036854775807]",
                                   "normal: [10, 1], clip: [1, 9223372036854775807]"])
def test_a_huge_int_end_is_named_as_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    """It had been named 9223372036854775808, one more than written (a float)."""
    text = (BASE.replace("{name: bsp, label: BSP}", "{name: sync_easgd, label: E, tau: 4}")
            + f"uncertain:\n  algorithm.tau: {{{where}, kind: int}}\n")
    err = _refused(tmp_path, text, capsys)
    assert "s.yaml:8, uncertain.algorithm.tau." in err
    assert "the high end 9223372036854775807 is refused" in err
    assert "not 9223372036854775807" in err
    assert "9223372036854775808" not in err


# 4: like: naming an entry of the same catalog --------------------------------------------

BUILTIN_DEVICES = ("a100, cpu_core, h100, h200, k20, k20x, k40, k80, knl7250, p100, "
                   "p100_pcie, v100, v100_pcie, xeon6248")


@pytest.mark.parametrize("catalog, like", [
    ("{devices: {mydev: {like: mydev, peak: 20 TFLOP/s}}}", "mydev"),
    ("{devices: {d2: {like: v100}, mydev: {like: d2, peak: 20 TFLOP/s}}}", "d2"),
    ("{devices: {mydev: {like: d2, peak: 20 TFLOP/s}, d2: {like: v100}}}", "d2"),
])
def test_like_naming_a_device_of_the_same_catalog_says_it_takes_a_builtin_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], catalog: str, like: str) -> None:
    """It had said "unknown device 'mydev'" of the entry defined right there."""
    text = BASE.replace("platform: crossbar16", "platform: {topology: star, hosts: 4, "
                        "device: mydev, link: {bandwidth: 10 Gb/s, latency: 1 us}}")
    err = _refused(tmp_path, text + f"catalog: {catalog}\n", capsys)
    assert "s.yaml:7, catalog.devices.mydev.like: must name a built-in device" in err
    assert f"{like!r} is defined in this same catalog" in err
    assert f"(allowed: {BUILTIN_DEVICES})" in err
    assert "unknown device" not in err


# 5: %YAML directives ---------------------------------------------------------------------

@pytest.mark.parametrize("version", ["1.1", "1.3", "2.0"])
def test_a_yaml_directive_other_than_1_2_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str) -> None:
    """``%YAML 1.1`` had been ignored in silence while 010 read as 10 and yes as a string."""
    err = _refused(tmp_path, f"# a comment\n%YAML {version}\n---\n{BASE}", capsys)
    assert err.startswith(f"error: {tmp_path / 's.yaml'}:2: a '%YAML {version}' directive")
    assert "reads every file as YAML 1.2" in err and "remove the directive" in err


def test_a_yaml_1_2_directive_is_read(tmp_path: Path) -> None:
    scn = load_scenario(_write(tmp_path, "%YAML 1.2\n---\n" + BASE.replace("seed: 0",
                                                                          "seed: 010")))
    assert scn.run.seed == 10


def test_an_option_item_keeps_its_origin_through_pickle_and_copy():
    """The sets travel to pool, Dask and MPI workers pickled: an option's item must arrive
    (a str subclass whose __new__ takes two arguments failed to unpickle)."""
    import copy
    import pickle

    from clustersim.scenario.overrides import option_item

    item = option_item("run.seed", "--seed", 3)
    for back in (pickle.loads(pickle.dumps(item)), copy.deepcopy(item), copy.copy(item)):
        assert back == "run.seed=3" and back.origin == "--seed 3"
