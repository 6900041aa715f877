"""docs/exploration.md "Results": the pandas example prints what the text says it prints.
Its old form (``pivot_table`` over the alexnet sweep, default ``aggfunc="mean"``) averaged
the six exchange strategies into each cell without a word."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from clustersim.cli import main

ROOT = Path(__file__).resolve().parent.parent
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")


def _results_snippet() -> str:
    text = (ROOT / "docs" / "exploration.md").read_text()
    section = text[text.index("\n## Results"):text.index("\n## The cache")]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_results_example_prints_one_strategy(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "theano_mpi_alexnet", "--set",
                 "sweep.axes={workload.batch_per_worker: [32, 64, 128]}", "--out",
                 "runs/alexnet", "-j", "1", "-q", "--no-cache"]) == 0
    df = pd.read_parquet("runs/alexnet/sweep.parquet")
    assert df.algorithm.nunique() == 6  # the strategies the text names
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_results_snippet(), "exploration.md", "exec"), {})  # noqa: S102
    nccl16 = df[df.algorithm == "nccl16"].set_index(["workers", "workload.batch_per_worker"])
    at8 = [nccl16.loc[(8, b), "throughput"] for b in (32, 64, 128)]
    # "1,263 to 1,762 samples/s at 8 workers": nccl16's own numbers, not a mean of six
    assert round(at8[0]) == 1263 and round(at8[2]) == 1762
    lines = printed.getvalue().splitlines()  # the first table's row "8" comes first
    row8 = next((line for line in lines if line.split()[:1] == ["8"]), None)
    assert row8 is not None, f"no row for 8 workers printed: {printed.getvalue()!r}"
    assert [float(v) for v in row8.split()[1:4]] == pytest.approx(at8, rel=1e-5)
    assert df.groupby(["workers", "workload.batch_per_worker"]).throughput.mean()[(8, 128)] \
        != pytest.approx(at8[2])  # what the old example showed instead
