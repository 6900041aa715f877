"""Algorithms written as bare names (``algorithm: sync_easgd``, ``compare: [async_sgd]``)
take an ``algorithm.X`` sweep axis like mappings do: the axis had replaced the main one by
``{tau: 1}`` ("algorithm.name: is required") and crashed on a compare entry (TypeError)."""

from __future__ import annotations

import csv

import yaml

from clustersim.cli import main

SCN = {
    "name": "bare",
    "platform": {"topology": "star", "hosts": 4, "device": "v100", "link": "eth10g"},
    "workload": {"model": "resnet50", "batch_per_worker": 32},
    "algorithm": "sync_easgd",
    "compare": ["async_sgd", "bsp"],
    "sweep": {"workers": [4]},
    "run": {"iterations": 3, "warmup": 1, "fidelity": "analytic"},
}


def test_a_tau_axis_reaches_algorithms_written_as_names(tmp_path):
    f = tmp_path / "bare.yaml"
    f.write_text(yaml.safe_dump(SCN))
    assert main(["sweep", str(f), "-j", "1", "--no-cache", "-q", "--out", str(tmp_path / "o"),
                 "--set", "sweep.axes={algorithm.tau: [1, 10]}"]) == 0
    rows = list(csv.DictReader((tmp_path / "o" / "sweep.csv").open()))
    got = [(r["algorithm"], r["algorithm.tau"]) for r in rows]
    assert got == [("sync_easgd", "1"), ("sync_easgd", "10"), ("async_sgd", "1"),
                   ("async_sgd", "10"), ("bsp", "")]
    by = {(r["algorithm"], r["algorithm.tau"]): float(r["iteration_time"])
          for r in rows}
    assert by[("async_sgd", "10")] != by[("async_sgd", "1")]  # the axis reached it
