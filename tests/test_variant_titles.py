"""A scenario with variants: the headline band under ``predict``'s tables and ``sensitivity``
name the variant they measured, as the tables title it ("slow · ring"), and ``sensitivity
--algorithm 'VARIANT · TITLE'`` analyses that variant's algorithm (audit M2: the band was
titled "NCCL ring" beside four tables of that name, and 'fast · ring' was refused)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clustersim.cli import main

SCENARIO = """\
name: small_variants
label: slow
platform: {topology: star, hosts: 8, device: v100, link: {bandwidth: 10 Gb/s, latency: 2 us}}
workload: {model: resnet50, batch_per_worker: 32}
algorithm: {name: bsp, strategy: ring, label: ring}
compare:
  - {name: bsp, strategy: ar, label: ar}
variants:
  - {label: fast, set: {platform.link.bandwidth: 100 Gb/s}}
uncertain:
  network.efficiency: {uniform: [0.6, 1.0]}
sweep: {workers: [2, 8]}
run: {iterations: 3, warmup: 1, seed: 0}
"""

SENS = ["--method", "morris", "-n", "2", "-j", "1"]


@pytest.fixture()
def scenario(tmp_path: Path) -> str:
    path = tmp_path / "small_variants.yaml"
    path.write_text(SCENARIO)
    return str(path)


def test_the_headline_band_is_titled_with_its_variant(scenario, tmp_path, capsys):
    js = tmp_path / "p.json"
    assert main(["predict", scenario, "-j", "1", "--wide", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "slow · ring at 8 workers — each uncertain input alone over its range" in out
    assert "(2 runs of slow · ring at the sweep's two ends)" in out
    data = json.loads(js.read_text())
    assert data["headline_band"]["algorithm"] == "slow · ring"
    assert data["headline_band"]["algorithm"] in data["algorithms"]  # a table's own title
    # a key of its own, as sensitivity's JSON has it
    assert data["headline_band"]["variant"] == "slow"


def test_sensitivity_names_the_base_variant_it_analysed(scenario, tmp_path, capsys):
    js = tmp_path / "s.json"
    assert main(["sensitivity", scenario, *SENS, "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "slow · ring at 8 workers — scaling efficiency" in out
    assert "variant analysed: slow (of slow, fast;" in out.replace("\n", " ")
    data = json.loads(js.read_text())
    assert (data["algorithm"], data["variant"], data["workers"]) == ("slow · ring", "slow", 8)


def test_sensitivity_analyses_a_variant_named_as_its_table(scenario, tmp_path, capsys):
    a, b = tmp_path / "fast.json", tmp_path / "slow.json"
    assert main(["sensitivity", scenario, *SENS, "--algorithm", "fast · ar", "-q",
                 "--json", str(a)]) == 0
    assert main(["sensitivity", scenario, *SENS, "--algorithm", "ar", "-q",
                 "--json", str(b)]) == 0
    fast, slow = json.loads(a.read_text()), json.loads(b.read_text())
    assert (fast["algorithm"], fast["variant"]) == ("fast · ar", "fast")
    assert (slow["algorithm"], slow["variant"]) == ("slow · ar", "slow")
    # the fast variant's link is 10x the base's: its exchange is exposed far less
    med = {k: d["metrics"]["comm_share"]["band"]["median"] for k, d in
           (("fast", fast), ("slow", slow))}
    assert med["fast"] < 0.5 * med["slow"]


def test_an_unknown_algorithm_lists_the_variant_qualified_titles(scenario, capsys):
    assert main(["sensitivity", scenario, *SENS, "--algorithm", "fast · rin"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"error: {scenario} (--algorithm): 'fast · rin' is neither")
    assert err.rstrip().endswith(
        "(allowed: ring, bsp, ar, slow · ring, slow · ar, fast · ring, fast · ar)")


def test_focus_without_variants_keeps_the_bare_title():
    from clustersim.scenario.yamlio import LineDict
    from clustersim.uncertainty.focus import focus_case

    f = focus_case(LineDict({"algorithm": {"name": "bsp", "label": "a"}}), None)
    assert (f.title, f.variant) == ("a", None)


def test_a_label_with_blanks_around_it_is_named_as_its_table_prints_it(tmp_path: Path,
                                                                       capsys) -> None:
    """The reader drops the blanks around a label, and the tables print ``fast · ring``;
    sensitivity had refused that and accepted only ``'fast · ring '`` (audit C M1)."""
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.replace("label: ring}", "label: 'ring '}"))
    out = tmp_path / "s.json"
    assert main(["sensitivity", str(path), *SENS, "--algorithm", "fast · ring",
                 "--json", str(out)]) == 0
    assert json.loads(out.read_text())["algorithm"] == "fast · ring"
    assert "ring  at" not in capsys.readouterr().out
