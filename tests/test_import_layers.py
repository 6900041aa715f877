"""The layers, enforced on what a run really loads (audit J H1, M2).

The core (scenario, uncertainty, sim, network, collectives, algorithms, convergence,
calibration, platform, workload, catalog) is imported by the layers above it - report,
explore, explorer, commands, cli - never the other way round, and it loads none of the
heavy optional packages (plotly, dask, pandas, pyarrow, SALib, mpi4py, cupy) at import time.
Function-local imports hide a wrong edge from ``python -X importtime`` on the bare package:
loading a scenario with an ``uncertain:`` section had imported 11 modules of the sweep layer
(its SQLite cache among them) and the report layer.  So this loads every shipped scenario,
and simulates one point, in a fresh interpreter and looks at ``sys.modules``.
"""

from __future__ import annotations

import subprocess
import sys

from clustersim.scenario.schema import PROJECT_ROOT

ABOVE = ("clustersim.report", "clustersim.explore", "clustersim.explorer",
         "clustersim.commands", "clustersim.cli")
HEAVY = ("plotly", "dask", "distributed", "pandas", "pyarrow", "SALib", "mpi4py", "cupy")

_CODE = """
import sys
from pathlib import Path
from clustersim.scenario.schema import load_scenario
from clustersim.sim.sweep import simulate_point, worker_counts
scns = [load_scenario(p) for p in sorted(Path(sys.argv[1]).glob("*.yaml"))]
small = next(s for s in scns if s.name == "theano_mpi_googlenet")  # uncertain: inputs
simulate_point(small, small.algorithms[0], worker_counts(small)[0], 0)
bad = sorted(m for m in sys.modules
             if m.startswith(tuple(sys.argv[2].split(","))) or m in sys.argv[3].split(","))
print(len(scns), bad)
sys.exit(1 if bad else 0)
"""


def test_loading_every_shipped_scenario_and_simulating_stays_in_the_core() -> None:
    r = subprocess.run([sys.executable, "-c", _CODE, str(PROJECT_ROOT / "scenarios"),
                        ",".join(ABOVE), ",".join(HEAVY)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert int(r.stdout.split()[0]) >= 20  # every shipped scenario was loaded
