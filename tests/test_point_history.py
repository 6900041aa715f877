"""A point's figures do not depend on which points its process simulated before it (the
engine keeps message plans per platform across runs, numbered in the order they were
made): a what-if page run in waves, a sweep on another executor or with other chunks must
give the same bytes as one pool."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import json, sys
from dataclasses import asdict
from clustersim.report.whatif import scaled_scenario
from clustersim.scenario.schema import load_scenario
from clustersim.sim.sweep import simulate_point, sweep_cases
scn = scaled_scenario(load_scenario(sys.argv[1], ["sweep.workers=[68, 272]"]), 0.25, 1.0)
cases = sweep_cases(scn)
for first in sys.argv[2:]:  # points run before, in this process
    ci, w = map(int, first.split(":"))
    simulate_point(cases[ci][1], cases[ci][2], w, 0, False)
m, _ = simulate_point(cases[3][1], cases[3][2], 68, 0, False)  # Async MEASGD, 68 workers
print(json.dumps(asdict(m)))
"""


def _point(*before: str) -> dict:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "scenarios/knl_4253.yaml"),
                          *before], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_a_point_is_the_same_after_other_points() -> None:
    alone = _point()
    # the same method at 272 workers first: its plans (to the master at another device)
    # are numbered before this point's (the sum of the master's link demand had then run
    # in another order: service time and utilisation differed in the last bit)
    after = _point("3:272", "1:68")
    assert after == alone, {k: (after[k], alone[k]) for k in alone if after[k] != alone[k]}
