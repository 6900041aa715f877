"""explore grows a sweep's own design (audit K H2, issue 14: "asks for points not yet
computed - run through the same executor and cache"): the page's KEY=VALUE changes run the
sweep again through run_study with the sweep's points.sqlite, so the points already there
are read back and only the new ones simulated; a change that adds a column is refused."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

SCN = """name: grow_me
about: BSP ring on 16 hosts, sampled
platform: crossbar16
workload: {model: alexnet, batch_per_worker: 32}
algorithm: {name: bsp, strategy: ring, label: ring}
sweep:
  axes:
    workers: {from: 2, to: 16}
    platform.link.bandwidth: {from: 1 GB/s, to: 25 GB/s, log: true}
  sample: {method: sobol, n: 4, seed: 1}
run: {iterations: 2, warmup: 1, seed: 0}
"""


@pytest.fixture()
def swept(tmp_path: Path) -> tuple[Path, Path]:
    from clustersim.cli import main

    scn = tmp_path / "grow_me.yaml"
    scn.write_text(SCN)
    out = tmp_path / "sw"
    assert main(["sweep", str(scn), "-j", "1", "-q", "--out", str(out)]) == 0
    return scn, out


def _extender(scn: Path, out: Path):
    from clustersim.explorer.extend import SweepExtender
    from clustersim.explorer.table import read_table, split_columns

    df, inputs = read_table(out / "sweep.parquet")
    ins, _mets = split_columns(df, inputs, str(out / "sweep.parquet"))
    return df, ins, SweepExtender(str(scn), [], list(ins), out / "points.sqlite", jobs=1)


def test_more_samples_read_the_old_points_back_and_simulate_the_new(swept) -> None:
    from clustersim.explore.cache import open_cache

    scn, out = swept
    df, ins, ext = _extender(scn, out)
    study, points = ext.plan("sweep.sample.n=8")
    assert len(points) == 8
    seen: list[int] = []
    rows = ext.run(study, points, seen.append)
    assert len(rows) == 8 and sum(seen) == 8
    # the first 4 of the 8 Sobol' points are the table's (scrambled Sobol' with the same
    # seed), read from the cache: the same numbers to the bit
    merged = rows.merge(df, on=ins, suffixes=("", "_old"))
    assert len(merged) == 4
    assert (merged["throughput"] == merged["throughput_old"]).all()
    db = open_cache(out / "points.sqlite")
    try:
        from clustersim.explore.cache import point_key

        assert len(db.get_many([point_key(study, p) for p in points])) == 8  # all kept
    finally:
        db.close()


def test_a_change_that_adds_a_column_is_refused(swept) -> None:
    from clustersim.errors import InputError
    from clustersim.explorer.table import sampled_inputs

    scn, out = swept
    df, _ins, ext = _extender(scn, out)
    assert sampled_inputs(out / "sweep.parquet", list(df.columns)) == {
        "workers", "platform.link.bandwidth"}  # from sweep.json: both are ranges
    with pytest.raises(InputError, match="not a change of the sweep's design"):
        ext.plan("sweep.sample.n=8; workload.batch_per_worker=256")  # audit L M1
    with pytest.raises(InputError, match="changes the table's columns .*network.overhead"):
        ext.plan("sweep.axes={workers: {from: 2, to: 16}, network.overhead: [1 us, 2 us]}")
    with pytest.raises(InputError, match="not KEY=VALUE"):
        ext.plan("sweep.sample.n")


def test_the_page_table_grows_with_the_new_rows(swept) -> None:
    from clustersim.explorer.app import Explorer
    from clustersim.explorer.extend import start_extend

    scn, out = swept
    df, ins, ext = _extender(scn, out)
    df["bandwidth_factor"], df["latency_factor"] = 1.0, 1.0
    ins = [*ins, "bandwidth_factor", "latency_factor"]
    ex = Explorer(table=df, inputs=ins, metrics=["throughput"], extend=ext)
    said = start_extend(ex, "sweep.sample.n=8")
    assert said.startswith("running the sweep with sweep.sample.n=8: 8 points"), said
    deadline = time.monotonic() + 120
    while ex.version == 0 and time.monotonic() < deadline:  # the rows join, then version
        time.sleep(0.05)
    assert ex.version == 1 and len(ex.table) == 8, ex.message
    assert (ex.table["bandwidth_factor"] == 1.0).all()
    msg = start_extend(ex, "run.iterations=zero")  # refused before anything runs
    assert "run.iterations" in msg and not ex.running and ex.version == 1, msg
