"""A run's server utilisation is its busiest server's, as its service time is (audit D: a
hybrid's global server, 37.8 % busy, read 17.0 % as the mean over it and its groups' local
parameter servers on hetero_hybrid)."""

from __future__ import annotations

import json
from pathlib import Path

from clustersim.cli import main


def test_the_hybrids_utilisation_is_its_global_servers(tmp_path: Path) -> None:
    out = tmp_path / "h.json"
    assert main(["predict", "hetero_hybrid", "--no-band", "-q", "--json", str(out)]) == 0
    algs = json.loads(out.read_text())["algorithms"]
    hyb = algs["hybrid"][0]
    # the utilisation law at the busiest server: its service time x the update rate (the
    # global server applies every update), to the window's few exchanges
    busy = hyb["service_time"] * hyb["update_rate"]
    assert abs(hyb["server_utilization"] - busy) < 0.02, (hyb["server_utilization"], busy)
    assert hyb["server_utilization"] > 0.3
