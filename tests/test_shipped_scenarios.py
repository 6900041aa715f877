"""Every shipped scenario and topology file validates (they are documentation users copy)."""

from pathlib import Path

import pytest

from clustersim.scenario.schema import load_scenario

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.yaml")), ids=lambda p: p.stem)
def test_scenario_validates_and_states_its_assumptions(path):
    scn = load_scenario(path)
    assert scn.name and scn.platform.num_devices >= 1
    assert scn.benchmark is not None or scn.algorithms
    # every scenario says what it assumes beyond its sources (docs/references.md)
    assert scn.assumptions and all(len(a) > 20 for a in scn.assumptions)
