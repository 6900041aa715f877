"""A sweep table's units (audit K M1): the Parquet fields carry ``unit`` metadata and the JSON
a ``units`` map, from the metric's ``predict --csv`` name and the kind of quantity an axis's
field reads; the values stay SI."""

from __future__ import annotations

import io

from clustersim.explore.table import parquet_bytes
from clustersim.report.tables import column_units


def test_units_of_metrics_and_axes() -> None:
    got = column_units(["algorithm", "workers", "platform.link.bandwidth", "network.overhead",
                        "workload.bucket", "throughput", "iteration_time", "comm_share",
                        "time_to_target", "staleness_p90", "update_rate", "sim_events"])
    assert got == {"platform.link.bandwidth": "bytes/s", "network.overhead": "s",
                   "workload.bucket": "bytes", "throughput": "samples/s",
                   "iteration_time": "s", "comm_share": "fraction (0-1)",
                   "time_to_target": "s", "staleness_p90": "versions", "update_rate": "1/s"}


def test_parquet_fields_carry_their_unit() -> None:
    import pyarrow.parquet as pq

    rows = [{"workers": 4, "platform.link.bandwidth": 1.25e9, "throughput": 812.5}]
    cols = ["workers", "platform.link.bandwidth", "throughput"]
    data = parquet_bytes(rows, cols, ["workers", "platform.link.bandwidth"], "s",
                         column_units(cols))
    schema = pq.read_table(io.BytesIO(data)).schema
    assert schema.field("workers").metadata is None
    assert schema.field("platform.link.bandwidth").metadata == {b"unit": b"bytes/s"}
    assert schema.field("throughput").metadata == {b"unit": b"samples/s"}
    assert pq.read_table(io.BytesIO(data)).column("platform.link.bandwidth")[0].as_py() == 1.25e9
