"""A new user's first session (QA 18b): a misspelled scenario name, a check that came after
the simulation, and a comparison table whose columns did not say what they compare."""

from __future__ import annotations

import pytest

from clustersim.cli import main


@pytest.mark.parametrize("arg,said", [
    ("knl_4235", "did you mean 'knl_4253'? (clustersim list scenarios)"),
    ("resnet50_fabrics", "did you mean 'fabrics_resnet50'?"),
    ("nothing_like_it", "no shipped scenario has that name (clustersim list scenarios)"),
])
@pytest.mark.parametrize("command", ["predict", "validate", "whatif", "sweep", "sensitivity"])
def test_a_misspelled_scenario_name_gets_the_closest_shipped_one(arg, said, command, capsys,
                                                                  tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([command, arg]) == 2
    err = capsys.readouterr().err
    assert f"{arg}: cannot read scenario file: file not found" in err and said in err
    assert "Traceback" not in err and not any(tmp_path.iterdir())


def test_a_path_into_scenarios_from_another_folder_names_the_bare_name(capsys, tmp_path,
                                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["predict", "scenarios/knl_4253.yaml"]) == 2
    err = capsys.readouterr().err
    assert "the shipped scenario 'knl_4253' is found by its bare name from any folder" in err


def test_a_missing_file_of_ones_own_is_only_missing(capsys, tmp_path):
    assert main(["validate", str(tmp_path / "mine.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith("cannot read scenario file: file not found")


def test_uncertainty_without_uncertain_inputs_is_refused_before_any_simulation(capsys,
                                                                               monkeypatch):
    """`predict --uncertainty N` on a scenario with no `uncertain:` section: refused at
    once (it simulated the whole nominal sweep first, then said so)."""
    import clustersim.uncertainty.predict as up

    ran = []
    monkeypatch.setattr(up, "sweep_with_band", lambda *a, **k: ran.append(1))
    assert main(["predict", "theano_mpi_googlenet", "--uncertainty", "4"]) == 2
    err = capsys.readouterr().err
    assert "nothing is uncertain" in err and not ran
