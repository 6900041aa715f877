"""A sweep of one worker count prints no speedup or efficiency: both are relative to the
smallest point, so there they read "1.00, 100.0%" whatever the run did - beside 95.9 % of
exposed communication for bsp_100k (audit L4).  The JSON keeps its numbers."""

from __future__ import annotations

import json
from pathlib import Path

from clustersim.cli import main

SCENARIO = """\
name: one_point
platform: {topology: star, hosts: 8, device: v100, link: {bandwidth: 10 Gb/s, latency: 2 us}}
workload: {model: resnet50, batch_per_worker: 32}
algorithm: {name: bsp, strategy: ring, label: ring}
sweep: {workers: [WORKERS]}
run: {iterations: 3, warmup: 1, seed: 0}
"""


def _predict(tmp_path: Path, workers: str, capsys) -> tuple[list[str], dict]:
    path = tmp_path / f"s{workers.replace(', ', '_')}.yaml"
    path.write_text(SCENARIO.replace("WORKERS", workers))
    js = tmp_path / "p.json"
    assert main(["predict", str(path), "-j", "1", "--wide", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    head = next(ln for ln in out.splitlines() if "speedup" in ln)
    cols = [c.strip() for c in head.strip("┃").split("┃")]
    rows = [[c.strip() for c in ln.strip("│").split("│")] for ln in out.splitlines()
            if ln.startswith("│")]
    table = [dict(zip(cols, r)) for r in rows]
    return table, {"out": out, "json": json.loads(js.read_text())}


def test_one_worker_count_prints_no_speedup_or_efficiency(tmp_path, capsys):
    table, got = _predict(tmp_path, "8", capsys)
    (row,) = table
    assert row["workers"] == "8"
    assert (row["speedup"], row["efficiency"]) == ("—", "—")
    assert row["comm exposed"].endswith("%") and row["comm exposed"] != "—"
    assert "speedup, efficiency: — with one worker count" in " ".join(got["out"].split())
    (p,) = got["json"]["algorithms"]["ring"]
    assert (p["speedup"], p["efficiency"]) == (1.0, 1.0)  # JSON: as documented


def test_two_worker_counts_keep_them(tmp_path, capsys):
    table, got = _predict(tmp_path, "2, 8", capsys)
    assert [(r["speedup"], r["efficiency"]) for r in table][0] == ("1.00", "100.0%")
    assert table[1]["speedup"] not in ("—", "1.00")
    assert "with one worker count" not in got["out"]
