"""The worked example of docs/writing_an_algorithm.md runs as written (docs that cannot rot)."""

import re
from pathlib import Path

from clustersim.algorithms.base import REGISTRY
from clustersim.scenario.schema import parse_scenario
from clustersim.sim.sweep import run_sweep

DOC = Path(__file__).resolve().parents[1] / "docs" / "writing_an_algorithm.md"


def test_worked_example_runs_and_simulates(monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    ns: dict = {}
    exec(compile(blocks[0], "guide-example", "exec"), ns)  # noqa: S102
    exec(compile(blocks[1], "guide-test", "exec"), ns)  # noqa: S102 - asserts inside
    monkeypatch.setitem(REGISTRY, "local_sgd", ns["LOCAL_SGD"])
    scn = parse_scenario({
        "platform": {"topology": "star", "hosts": 4, "device": "v100", "link": "eth10g"},
        "workload": {"model": "resnet50", "batch_per_worker": 32},
        "algorithm": {"name": "local_sgd", "every": 4},
        "compare": [{"name": "bsp", "exchange": "weights", "every": 1, "label": "every step"}],
        "sweep": {"workers": [1, 4]},
        "run": {"iterations": 9, "warmup": 1, "fidelity": "analytic"},
    })
    res = run_sweep(scn)
    local, every = res.points["local_sgd"][-1], res.points["every step"][-1]
    # averaging every 4 steps instead of every step: a quarter of the communication
    assert local.comm * 4 == every.comm or abs(local.comm * 4 - every.comm) < 1e-9 * every.comm
