"""A sweep's range ends written with the field's unit (``{from: 1 us, to: 20 us}``) are the
SI numbers a plain range gives, point for point; a unit of the wrong kind, or on a field of
plain numbers (or ``workers``), is refused in one line naming the field and what it takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.explore.axes import expand, parse_axes

SOBOL = {"method": "sobol", "n": 8, "seed": 0}


def _scenario(axis: str, extra: str = "sweep: {workers: [2],") -> str:
    return ("name: q\nplatform: crossbar16\n"
            "workload: {model: resnet50, batch_per_worker: 64}\nalgorithm: bsp\n"
            f"network: {{overhead: 5 us}}\n{extra} axes: {{{axis}}}, "
            "sample: {method: sobol, n: 8, seed: 0}}\n")


def _sweep(tmp_path: Path, tag: str, axis: str, capsys: pytest.CaptureFixture[str]
           ) -> tuple[bytes, str]:
    path = tmp_path / f"{tag}.yaml"
    path.write_text(_scenario(axis))
    assert main(["validate", str(path)]) == 0
    assert "sweep design: 8 points checked" in capsys.readouterr().out
    out = tmp_path / tag
    assert main(["sweep", str(path), "--out", str(out), "--no-cache", "-j", "1"]) == 0
    summary = capsys.readouterr().out
    return (out / "sweep.csv").read_bytes(), summary


def test_a_log_range_with_units_is_the_plain_si_range(tmp_path, capsys):
    units, said = _sweep(tmp_path, "u", "network.overhead: {from: 1 us, to: 20 us, log: true}",
                         capsys)
    plain, said_plain = _sweep(tmp_path, "p",
                               "network.overhead: {from: 1e-6, to: 2e-5, log: true}", capsys)
    assert units == plain
    # the table and the summary carry SI numbers (seconds), as from the plain range
    values = [float(line.split(b",")[2]) for line in units.splitlines()[1:]]
    assert len(values) == 8 and all(1e-6 <= v < 2e-5 for v in values)
    best = [line for line in said.splitlines() if "highest throughput" in line]
    assert best == [line for line in said_plain.splitlines() if "highest throughput" in line]
    assert "network.overhead=1.149e-06" in best[0]


def test_a_linear_range_with_units_draws_the_same_points():
    # 20 us is 20 * 1e-06 = 1.9999999999999998e-05 in floats: the end is the written 2e-05
    spec = parse_axes({"network.overhead": {"from": "1 us", "to": "20 us"}},
                      {**SOBOL, "n": 64}, ())
    plain = parse_axes({"network.overhead": {"from": 1e-6, "to": 2e-5}}, {**SOBOL, "n": 64}, ())
    assert (spec.axes[0].low, spec.axes[0].high) == (1e-6, 2e-5)
    assert expand(spec) == expand(plain)


def test_sizes_bandwidths_and_mixed_ends_are_read_in_si():
    spec = parse_axes({"workload.bucket": {"from": "1 MiB", "to": "64 MiB", "integer": True},
                       "platform.link.bandwidth": {"from": "10 Gb/s", "to": 2.5e10},
                       "network.overhead": {"from": 0, "to": "3.3 us"}}, SOBOL, ())
    ends = [(a.low, a.high) for a in spec.axes]
    assert ends == [(1048576.0, 67108864.0), (1.25e9, 2.5e10), (0.0, 3.3e-6)]
    assert all(isinstance(p["workload.bucket"], int) for p in expand(spec))


def _refused(tmp_path: Path, axis: str, capsys: pytest.CaptureFixture[str],
             extra: str = "sweep: {workers: [2],") -> str:
    path = tmp_path / "s.yaml"
    path.write_text(_scenario(axis, extra))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_a_unit_of_another_kind_is_refused_naming_the_field(tmp_path, capsys):
    err = _refused(tmp_path, "network.overhead: {from: 1 GB, to: 20 us, log: true}", capsys)
    assert "s.yaml:6, sweep.axes.network.overhead.from: network.overhead is a time, and " \
           "'1 GB' is a size; allowed: times like '1 us'" in err
    assert "or plain numbers in seconds" in err
    err = _refused(tmp_path, "network.overhead: {from: 1 us, to: 1 parsec}", capsys)
    assert "sweep.axes.network.overhead.to: network.overhead is a time: cannot read" in err


def test_a_unit_on_a_field_of_plain_numbers_is_refused(tmp_path, capsys):
    err = _refused(tmp_path, "workload.batch_per_worker: {from: 1 us, to: 20 us}", capsys)
    assert "sweep.axes.workload.batch_per_worker.from: workload.batch_per_worker takes " \
           "plain numbers" in err and "not '1 us'" in err


def test_a_worker_range_stays_plain_whole_numbers(tmp_path, capsys):
    err = _refused(tmp_path, "workers: {from: 1 us, to: 8}", capsys, extra="sweep: {")
    assert "sweep.axes.workers.from: a worker count is a plain whole number, not '1 us'" in err
    spec = parse_axes({"workers": {"from": 1, "to": 8}}, SOBOL, ())
    assert all(isinstance(p["workers"], int) and 1 <= p["workers"] <= 8 for p in expand(spec))


def test_an_end_that_underflows_is_quoted_as_written(tmp_path, capsys):
    """audit C L4: '1e-400 us' was refused as "not 0", a value nobody wrote."""
    from clustersim.cli import main

    path = tmp_path / "u.yaml"
    path.write_text("name: u\nplatform: {topology: star, hosts: 8, device: v100, link: "
                    "{bandwidth: 10 Gb/s, latency: 1 us}}\nworkload: {model: resnet50, "
                    "batch_per_worker: 32}\nalgorithm: {name: bsp}\nsweep:\n  workers: [2]\n"
                    "  axes:\n    network.overhead: {from: 1e-400 us, to: 2 us, log: true}\n"
                    "  sample: {method: sobol, n: 4}\n")
    assert main(["validate", str(path)]) == 2
    assert ("a log range needs 'from' > 0, not '1e-400 us' (0 in floating point)"
            in capsys.readouterr().err)
