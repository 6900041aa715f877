"""Convergence profiles: shipped defaults load and cite sources; bad input names the field."""

from __future__ import annotations

import pytest

from clustersim.convergence import NoiseSchedule, load_constants, load_profile, shipped_profiles
from clustersim.errors import InputError
from clustersim.workload.zoo import list_models


def test_every_shipped_profile_loads_cites_and_is_a_zoo_model():
    names = shipped_profiles()
    assert {"alexnet", "googlenet", "vgg16", "resnet50", "resnet101", "inception_v3"} <= set(names)
    for name in names:
        assert name in list_models()
        prof = load_profile(name)
        assert prof is not None and prof.sources and prof.assumed
        assert all(len(s) > 20 for s in prof.sources)
        assert 0 < prof.target_value < 1 and prof.ref_steps > 0
        if prof.epochs is not None:
            assert prof.ref_steps == pytest.approx(prof.epochs * prof.dataset_size / prof.ref_batch)


def test_resnet50_reference_is_goyal_90_epochs_at_256():
    prof = load_profile("resnet50")
    assert prof.ref_batch == 256 and prof.epochs == 90
    assert prof.ref_steps == pytest.approx(90 * 1281167 / 256)


def test_overrides_disable_and_noise_forms():
    assert load_profile("resnet50", False) is None
    assert load_profile("resnet50", "off") is None
    assert load_profile("lenet5") is None
    p = load_profile("resnet50", {"noise_scale": 4000, "lr_rule": "linear", "epochs": 45})
    assert p.noise == NoiseSchedule.constant(4000.0) and p.lr_rule == "linear"
    assert p.ref_steps == pytest.approx(45 * 1281167 / 256)
    p = load_profile("resnet101", {"epochs": 90})       # shipped in steps, user in epochs
    assert p.ref_steps == pytest.approx(90 * 1281167 / 256)
    p = load_profile("resnet50", {"noise_scale": [[0, 1000], [1, 8000]]})
    assert p.noise.mean() == NoiseSchedule.geometric(1000.0, 8000.0).mean()
    p = load_profile("mlp", {"target": {"metric": "acc", "value": 0.98}, "ref_batch": 64,
                             "ref_steps": 5000, "noise_scale": {"from": 50, "to": 400}})
    assert p.target_metric == "acc" and p.ref_steps == 5000


@pytest.mark.parametrize("raw,field,words", [
    ({"lr_rul": "tuned"}, "lr_rul", "did you mean 'lr_rule'"),
    ({"lr_rule": "cubic"}, "lr_rule", "tuned, linear, sqrt, none"),
    ({"ref_batch": -1}, "ref_batch", "positive number"),
    ({"momentum": 1.5}, "momentum", "[0, 1)"),
    ({"noise_scale": {"from": 1000}}, "noise_scale", "'from' and 'to'"),
    ({"noise_scale": [[0.5, 100], [0.2, 200]]}, "noise_scale[1][0]", "increasing"),
    ({"noise_scale": "big"}, "noise_scale", "[progress, value]"),
    ({"target": {"metric": "top1"}}, "target", "metric: NAME, value: NUMBER"),
])
def test_bad_fields_are_named(raw, field, words):
    with pytest.raises(InputError) as err:
        load_profile("resnet50", raw)
    msg = str(err.value)
    assert f"workload.convergence.{field}" in msg and words in msg


def test_incomplete_profile_for_unknown_model_lists_missing_fields():
    with pytest.raises(InputError) as err:
        load_profile("lenet5", {"target": 0.99})
    msg = str(err.value)
    for name in ("ref_batch", "ref_steps or epochs", "noise_scale"):
        assert name in msg
    assert "target" not in msg.split("give ")[1].split(" (all")[0]
    with pytest.raises(InputError, match="mapping"):
        load_profile("resnet50", 3)


def test_shipped_constants_load_with_sources():
    """constants.yaml (real workloads): theory or assumed values with their source;
    constants_emulation.yaml (the emulated tasks): fitted values inside their intervals."""
    from importlib import resources

    import yaml

    from clustersim.convergence.constants import emulation_constants

    k = load_constants()
    assert k.gossip_share == pytest.approx(1 / 3)
    for name, item in yaml.safe_load(resources.files("clustersim.convergence").joinpath(
            "constants.yaml").read_text())["constants"].items():
        assert item["source"] and item["status"] in ("theory", "assumed"), name
        assert getattr(k, name) == item["value"], name
    e = emulation_constants()
    raw = yaml.safe_load(resources.files("clustersim.convergence").joinpath(
        "constants_emulation.yaml").read_text())["constants"]
    for name, item in raw.items():
        assert item["source"] and item["status"] in ("fitted", "theory"), name
        if item["status"] == "fitted":
            lo, hi = item["interval"]
            assert lo <= getattr(e, name) == item["value"] <= hi and item["fitted_on"], name
    with pytest.raises(ValueError, match="unknown convergence constant"):
        load_constants({"k_x": 1.0})


def test_layer_imports_no_simulator_or_algorithms():
    import subprocess
    import sys
    code = ("import sys, clustersim.convergence; "
            "print(sorted(m for m in sys.modules if m.startswith('clustersim.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    allowed = {"clustersim._yaml", "clustersim.errors", "clustersim.units"}
    mods = eval(out)  # noqa: S307 - our own printed list
    assert [m for m in mods if not m.startswith("clustersim.convergence") and m not in allowed] == []


@pytest.mark.parametrize("target", [{"metric": "top1", "value": 0.99},
                                    {"metric": "loss", "value": 0.764}, 1.5])
def test_a_new_target_needs_its_own_steps(target):
    """QA 16: the shipped steps are the steps to the shipped target (ResNet-50: top-1
    0.764), so another target without ref_steps or epochs would get their time under the
    new name - refused, naming the shipped target; with its own steps it is taken."""
    with pytest.raises(InputError, match=r"workload\.convergence\.target: a target other "
                                         r"than the shipped profile's \(top1 0\.764\)"):
        load_profile("resnet50", {"target": target})
    assert load_profile("resnet50", {"target": 0.764}).ref_steps == \
        load_profile("resnet50").ref_steps
    own = load_profile("resnet50", {"target": target, "epochs": 40})
    assert own.ref_steps == pytest.approx(40 * 1281167 / 256)


@pytest.mark.parametrize("target", ["0.764", "76.4%", True, {"metric": "top1", "value": "x"}])
def test_a_target_of_the_wrong_type_is_told_so(target):
    """Review of 2026-11-29: a string or boolean target got "a target other than the
    shipped profile's" instead of what is wrong with it."""
    with pytest.raises(InputError) as err:
        load_profile("resnet50", {"target": target})
    assert "positive number" in str(err.value) or "metric: NAME" in str(err.value)
    assert "other than the shipped" not in str(err.value)


def test_a_noise_scale_the_scenario_gives_is_not_said_to_be_assumed():
    """audit A L6: a noise scale measured with calibrate --convergence and pasted under
    workload.convergence as the docs say kept the shipped profile's "assumed" label; other
    assumptions stay, and an ``assumed`` the scenario gives is taken as written."""
    from clustersim.convergence.profile import mentions_noise_scale

    shipped = load_profile("resnet50")
    assert any(mentions_noise_scale(a) for a in shipped.assumed)
    mine = load_profile("resnet50", {"noise_scale": {"from": 48.5, "to": 6580}})
    assert not any(mentions_noise_scale(a) for a in mine.assumed)
    assert len(mine.assumed) == len(shipped.assumed) - 1
    kept = load_profile("resnet50", {"noise_scale": 500, "assumed": ["noise scale: a guess"]})
    assert kept.assumed == ("noise scale: a guess",)
