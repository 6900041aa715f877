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
