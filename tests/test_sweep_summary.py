"""The sweep's summary line adds up: points = from the cache + run + skipped, and the rate
is over the points simulated (skipped points were counted as run: '4 run, 2 skipped' for
4 points, and a rate inflated by points that cost nothing)."""

from __future__ import annotations

import re
from pathlib import Path

from clustersim.cli import main

SKIPPING = """\
name: small
platform: {file: crossbar16}
workload: {model: resnet50, batch_per_worker: 32, bucket: 25 MiB}
algorithm: {name: bsp, strategy: ring, label: ring}
sweep:
  axes:
    workers: [2, 64]
    workload.batch_per_worker: [16, 32]
run: {iterations: 4, warmup: 1}
"""


def _first_line(tmp_path: Path, capsys) -> str:
    assert main(["sweep", str(tmp_path / "s.yaml"), "-j", "1", "--out",
                 str(tmp_path / "o")]) == 0
    return capsys.readouterr().out.splitlines()[0]


def test_skipped_points_are_not_counted_as_run(tmp_path: Path, capsys) -> None:
    (tmp_path / "s.yaml").write_text(SKIPPING)  # 64 workers > the crossbar's 16 devices
    line = _first_line(tmp_path, capsys)
    assert re.match(r"small: 4 points - 0 from the cache, 2 run \(local, [\d,.]+ "
                    r"points/s\), 2 skipped; ", line), line
    again = _first_line(tmp_path, capsys)  # skipped rows are cached too: still not 'cached'
    assert again.startswith("small: 4 points - 2 from the cache, 0 run (local, 0.0 points/s),"
                            " 2 skipped; "), again
