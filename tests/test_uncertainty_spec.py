"""The ``uncertain:`` section: distributions, their values, and the errors people get."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from clustersim.cli import main
from clustersim.errors import InputError
from clustersim.uncertainty.sampling import to_value, unit_sobol
from clustersim.uncertainty.spec import parse_uncertain

ROOT = Path(__file__).resolve().parents[1]


def one(spec: dict):
    return parse_uncertain({"workload.jitter": spec})[0]


def test_distributions_map_the_unit_interval_by_their_inverse_cdf():
    u = np.array([0.1, 0.5, 0.9])
    cases = [({"uniform": [2, 6]}, stats.uniform(2, 4)),
             ({"normal": [0.9, 0.05]}, stats.norm(0.9, 0.05)),
             ({"lognormal": [3.0, 0.5]}, stats.lognorm(s=0.5, scale=3.0)),
             ({"loguniform": [1, 100]}, stats.loguniform(1, 100)),
             ({"triangular": [0, 1, 4]}, stats.triang(c=0.25, loc=0, scale=4))]
    for spec, dist in cases:
        inp = one(spec)
        assert [to_value(inp, x) for x in u] == pytest.approx(dist.ppf(u), rel=1e-12)


def test_int_range_gives_every_whole_number_equally():
    inp = one({"range": [4, 7], "kind": "int"})
    vals = [to_value(inp, x) for x in (np.arange(4000) + 0.5) / 4000]
    assert sorted(set(vals)) == [4, 5, 6, 7]
    assert all(isinstance(v, int) for v in vals)
    assert np.bincount(vals)[4:].tolist() == [1000] * 4


def test_clip_truncates_instead_of_piling_at_the_bounds():
    inp = one({"normal": [0.9, 0.05], "clip": [0.85, 1]})
    vals = np.array([to_value(inp, x) for x in (np.arange(1000) + 0.5) / 1000])
    assert vals.min() >= 0.85 and vals.max() <= 1.0
    assert np.sum(vals == 0.85) <= 1  # a truncated normal has no atom at its bound
    # the median of N(0.9, 0.05) truncated to [0.85, inf): Phi^-1((Phi(-1) + 1) / 2)
    f = stats.norm(0.9, 0.05)
    lo, hi = f.cdf(0.85), f.cdf(1.0)
    assert np.median(vals) == pytest.approx(f.ppf(lo + 0.5 * (hi - lo)), rel=1e-3)


def test_choice_with_weights_and_units():
    inp = parse_uncertain({"algorithm.allreduce": {"choice": ["ring", "tree"],
                                                  "weights": [3, 1]}})[0]
    vals = [to_value(inp, x) for x in (np.arange(400) + 0.5) / 400]
    assert vals.count("ring") == 300 and vals.count("tree") == 100
    t = parse_uncertain({"network.overhead": {"uniform": ["1 us", "3 us"]}})[0]
    assert t.params == pytest.approx((1e-6, 3e-6))


def test_sobol_points_are_seeded_and_in_the_cube():
    a, b, c = unit_sobol(16, 3, 0), unit_sobol(16, 3, 0), unit_sobol(16, 3, 1)
    assert a.tobytes() == b.tobytes() and a.tobytes() != c.tobytes()
    assert a.shape == (16, 3) and np.all((a >= 0) & (a < 1))
    # a scrambled Sobol net of 16 points puts exactly one point in each 1/16 of every axis
    for j in range(3):
        assert sorted(np.floor(a[:, j] * 16).astype(int).tolist()) == list(range(16))


@pytest.mark.parametrize("spec, message", [
    ({"uniform": [5, 1]}, "must be smaller"),
    ({"normal": [0.9, 0]}, "must be > 0"),
    ({"uniform": [0, 1], "normal": [0, 1]}, "exactly one distribution"),
    ({"unifrom": [0, 1]}, "did you mean 'uniform'"),
    ({"range": [4.2, 4.8], "kind": "int"}, "no whole number"),
    ({"choice": ["ring"]}, "at least two"),
    ({"uniform": [0, "fast"]}, "quantity with units"),
    ({"uniform": [0, 1], "kind": "integer"}, "kind"),
    ([0, 1], "must be a mapping"),
])
def test_bad_distributions_name_the_field(spec, message):
    with pytest.raises(InputError) as e:
        parse_uncertain({"workload.jitter": spec})
    assert message in str(e.value)
    assert e.value.path[:2] == ("uncertain", "workload.jitter")


def test_fields_that_say_what_is_run_are_refused():
    for field in ("sweep.workers", "compare", "name.x"):
        with pytest.raises(InputError):
            parse_uncertain({field: {"uniform": [1, 2]}})
    # run fields that are not inputs: a sampled seed made seed-to-seed noise an "input
    # uncertainty", a sampled convergence switch gave statistical efficiencies of inf%
    for field, says in (("run.seed", "seed-to-seed"), ("run.repeats", "how many seeds"),
                        ("run.convergence", "time to target is computed")):
        with pytest.raises(InputError) as e:
            parse_uncertain({field: {"range": [0, 2], "kind": "int"}})
        assert f"cannot change {field}" in str(e.value) and says in str(e.value)
    parse_uncertain({"run.iterations": {"range": [2, 8], "kind": "int"}})  # a modelling choice


def test_an_empty_section_and_a_set_split_at_the_dots_say_what_to_write():
    with pytest.raises(InputError, match="is empty: give entries like"):
        parse_uncertain({})
    # what --set 'uncertain.workload.jitter={uniform: [0, 0.1]}' makes of the key
    with pytest.raises(InputError) as e:
        parse_uncertain({"workload": {"jitter": {"uniform": [0, 0.1]}}})
    assert "--set 'uncertain={workload.jitter: {...}}'" in str(e.value)


def test_error_in_a_scenario_file_names_file_and_line(tmp_path, capsys):
    text = (ROOT / "scenarios" / "knl_4253.yaml").read_text()
    bad = text.replace("workload.jitter: {uniform: [0, 0.05]",
                       "workload.jitter: {uniform: [0.05, 0]")
    assert bad != text
    f = tmp_path / "bad.yaml"
    f.write_text(bad.replace("platform: cori_knl_cores", f"platform: {ROOT}/topologies/"
                             "cori_knl_cores.yaml"))
    line = next(i for i, ln in enumerate(bad.splitlines(), 1)
                if ln.strip().startswith("workload.jitter:"))
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}:{line}" in err and "uncertain.workload.jitter" in err
    assert "Traceback" not in err and math.isfinite(line)


def test_a_sampled_value_the_scenario_refuses_is_an_input_error(capsys):
    rc = main(["predict", "knl_4253", "--uncertainty", "2", "-q", "-j", "1",
               "--set", "compare=[]", "--set", "sweep.workers=[68]",
               "--set", "uncertain={workload.jitter: {uniform: [2, 3]}}"])
    err = capsys.readouterr().err
    assert rc == 2 and "uncertain.workload.jitter" in err and "refused" in err


def _alexnet_with(tmp_path: Path, entry: str) -> tuple[Path, int]:
    """theano_mpi_alexnet with its ``uncertain:`` section replaced by ``entry`` (one line,
    or nothing: an empty section); the file and the entry's line."""
    text = (ROOT / "scenarios" / "theano_mpi_alexnet.yaml").read_text()
    start = text.index("uncertain:")
    end = text.index("\nsweep:")
    new = text[:start] + "uncertain:\n" + (f"  {entry}" if entry else "") + text[end:]
    f = tmp_path / "alex.yaml"
    f.write_text(new)
    return f, new[:start].count("\n") + 2


@pytest.mark.parametrize("entry", [
    "network.efficiency: {normal: [0.42, 0.04], clip: [5, 6]}",
    "workload.jitter: {uniform: [0, 0.03], clip: [0.5, 0.6]}",
    # legal-looking, 12 sd out: cdf(0.9) rounds to 1 and the old code crashed on it
    "network.efficiency: {normal: [0.42, 0.04], clip: [0.9, 1]}",
])
def test_a_clip_without_probability_is_refused_when_read(tmp_path, capsys, entry):
    f, line = _alexnet_with(tmp_path, entry)
    field = entry.split(":")[0]
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}:{line}, uncertain.{field}.clip:" in err and "allowed:" in err
    assert "Traceback" not in err
    assert main(["predict", str(f), "-q", "--json", str(tmp_path / "x.json")]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_a_clip_in_a_far_but_kept_tail_is_sampled_inside_it():
    # 4 sd out (3e-5 of the mass): kept, and every value inside the clip, none at its edge
    inp = parse_uncertain({"network.efficiency": {"normal": [0.42, 0.04],
                                                  "clip": [0.58, 1]}})[0]
    vals = np.array([to_value(inp, x) for x in (np.arange(200) + 0.5) / 200])
    assert vals.min() > 0.58 and vals.max() < 0.7 and len(set(vals)) == 200


@pytest.mark.parametrize("entry, where, says", [
    ("workload.jiter: {uniform: [0, 0.03]}", "uncertain.workload.jiter:",
     "did you mean 'jitter'"),
    ("wrkload.jitter: {uniform: [0, 0.03]}", "uncertain.wrkload.jitter:",
     "unknown scenario section 'wrkload'"),
    ("algorithm.nonexistent: {uniform: [0, 1]}", "uncertain.algorithm.nonexistent:",
     "unknown parameter"),
    ("platform.bogus: {uniform: [0, 1]}", "uncertain.platform.bogus:", "unknown node field"),
    ("algorithm.strategy: {choice: [nccl32, bogus_strategy]}",
     "uncertain.algorithm.strategy.choice[1]:", "allowed: "),
    ("algorithm.strategy: {choice: [nccl32, bogus_strategy], weights: [1, 0]}",
     "uncertain.algorithm.strategy.choice[1]:", "allowed: "),
    ("network.efficiency: {choice: [0.5, 7]}", "uncertain.network.efficiency.choice[1]:",
     "must be <= 1"),
    ("network.overhead: {uniform: [5 us, 20 Gb/s]}", "uncertain.network.overhead.uniform[1]:",
     "mixes units"),
    ("workload.jitter: {uniform: [0, 1.5]}", "uncertain.workload.jitter.uniform[1]:",
     "narrow the distribution"),
    # whole-number ends, but the draws between them are not: refused when read, with the
    # fix (it had passed validate and failed at the first draw, "narrow the distribution")
    ("workload.batch_per_worker: {uniform: [4, 32]}",
     "uncertain.workload.batch_per_worker.uniform:", "add 'kind: int' to the entry"),
    # a number for a name, a size for a time: no narrower range helps, so say what does
    ("workload.model: {uniform: [1, 2]}", "uncertain.workload.model.uniform[0]:",
     "the field takes a name (here 'alexnet'): give 'choice: [...]' of names"),
    # (refused by the entry's own check since audit E H5, set in the scenario or not)
    ("network.overhead: {uniform: [5 GB, 20 GB]}", "uncertain.network.overhead.uniform[0]:",
     "network.overhead is a time, and '5 GB' is a size"),
])
def test_validate_applies_every_entry_to_the_scenario(tmp_path, capsys, entry, where, says):
    f, line = _alexnet_with(tmp_path, entry)
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}:{line}, {where}" in err and says in err and "Traceback" not in err
    assert err.count("\n") == 1
    if "unknown" in says:  # a misspelled name is not the distribution's fault
        assert "narrow" not in err


def test_shipped_uncertain_sections_still_validate(capsys):
    for name in ("knl_4253", "theano_mpi_alexnet", "fabrics_resnet50", "hetero_hybrid",
                 "knl_easgd_compare"):
        assert main(["validate", name]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("spec", [
    {"loguniform": [100.2, 100.8], "kind": "int"},
    {"normal": [100, 1], "clip": [100.2, 100.8], "kind": "int"},
    {"triangular": [4.1, 4.5, 4.9], "kind": "int"},
])
def test_kind_int_without_a_whole_number_in_its_bounds_is_refused(spec):
    with pytest.raises(InputError) as e:
        parse_uncertain({"workload.batch_per_worker": spec})
    assert "no whole number" in str(e.value)


def test_kind_int_rounds_within_the_bounds():
    for spec, lo, hi in (({"loguniform": [4.2, 9.8], "kind": "int"}, 5, 9),
                         ({"normal": [100, 5], "clip": [97.4, 103.3], "kind": "int"}, 98, 103)):
        inp = parse_uncertain({"workload.batch_per_worker": spec})[0]
        vals = {to_value(inp, x) for x in (np.arange(2000) + 0.5) / 2000}
        assert vals == set(range(lo, hi + 1))


def test_choice_reports_the_kind_of_its_values():
    kinds = [parse_uncertain({"algorithm.x": {"choice": c}})[0].kind
             for c in (["ring", "tree"], [1, 4], [0.5, 1], [True, False], ["ring", 2])]
    assert kinds == ["name", "int", "float", "bool", "mixed"]


def test_distributions_are_described_in_the_units_they_were_written_in():
    t = parse_uncertain({"network.overhead": {"uniform": ["5 us", "20 us"]}})[0]
    assert t.describe() == "uniform [5 us, 20 us]" and t.params == pytest.approx((5e-6, 2e-5))
    b = parse_uncertain({"platform.link.bandwidth": {"normal": ["10 Gb/s", "1 Gb/s"],
                                                     "clip": ["5 Gb/s", "20 Gb/s"]}})[0]
    assert b.describe() == "normal [1.25 GB/s, 125 MB/s] within [625 MB/s, 2.5 GB/s]"
    assert one({"uniform": [0, 0.05]}).describe() == "uniform [0, 0.05]"
    # a choice's weights are part of it (they had been dropped from the printed inputs)
    w = parse_uncertain({"algorithm.strategy": {"choice": ["nccl32", "ar"],
                                                "weights": [3, 1]}})[0]
    assert w.describe() == "choice [nccl32, ar] weights [3, 1]"


def test_an_empty_section_says_so_with_the_file(tmp_path, capsys):
    f, line = _alexnet_with(tmp_path, "")
    assert main(["predict", str(f), "--uncertainty", "4", "-q", "--json",
                 str(tmp_path / "u.json")]) == 2
    err = capsys.readouterr().err
    assert f"{f}:{line - 1}, uncertain:" in err and "section is empty" in err
    assert "has no 'uncertain:' section" not in err


def test_entries_under_a_section_that_set_replaced_are_left_to_their_use(capsys):
    # the convergence fit reads knl_easgd_compare with another algorithm (no tau): reading
    # must not fail on the file's algorithm.tau entry; predict's band still checks it
    assert main(["validate", "knl_easgd_compare", "--set", "algorithm={name: gosgd}"]) == 0
    capsys.readouterr()


def test_quiet_bands_shown_nowhere_are_refused(tmp_path, capsys):
    """-q --uncertainty 64 without an output file ran 64 sweeps and printed nothing."""
    assert main(["predict", "theano_mpi_alexnet", "--uncertainty", "2", "-q"]) == 2
    err = capsys.readouterr().err
    assert "shows its bands nowhere" in err and err.count("\n") == 1
    assert main(["predict", "theano_mpi_alexnet", "--uncertainty", "2", "-q", "-j", "1",
                 "--set", "sweep.workers=[1, 2]", "--set", "compare=[]",
                 "--json", str(tmp_path / "u.json")]) == 0
    assert "uncertainty" in (tmp_path / "u.json").read_text()
