"""calibrate's verdict and figures (QA on `calibrate --real --quick` on a loaded 2-core VM):
a closing warning on a poor fit, 95 % intervals clipped at 0 where printed (raw in the
profile), no nan/inf text, sizes as the tool prints them, tables fitted to the terminal."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import yaml

from clustersim.calibration.fitlines import FitLine
from clustersim.calibration.pipeline import calibrate_rows, make_target
from clustersim.calibration.ppcheck import RMS_POOR, fit_verdict, readable_sizes, size_note
from clustersim.calibration.profile import dump_profile, parse_profile
from clustersim.cli import main
from clustersim.commands.calibrate_fittable import cell, interval, percent, wrap_name
from clustersim.commands.calibrate_report import print_fit
from clustersim.platform.describe import load_platform

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "tests" / "data" / "gpu_h200_pinned" / "bench"
ADVICE = ("predictions with this profile carry errors of that size - rerun on an idle machine "
          "(other jobs' load is the usual cause), with more --rounds (--real) to average the "
          "load out, and check that --platform and --link name what the ranks ran on")


def line(bench: str, rms: float, name: str = "x") -> FitLine:
    return FitLine(name, 1.0, 0.5, 1.5, "1", 10, rms, bench)


@pytest.fixture(scope="module")
def vm_cal():
    rows = json.loads((ROOT / "tests" / "data" / "calibration_rows_2rank_vm.json").read_text())
    return calibrate_rows(rows, make_target(load_platform(ROOT / "topologies" /
                                                          "localhost.yaml"), 2))


# ---- 1. the verdict ------------------------------------------------------------------------

def test_verdict_names_each_poor_fit_once_worst_first():
    lines = [line("pingpong", 0.56), line("pingpong", 0.05),      # two segments: the worst
             line("gemm", 0.30), line("memory", 0.30), line("gemm+memory", 0.30),  # one fit
             line("reduce", 0.52), line("collective", 1.03),      # > 100 %: its own warning
             line("noise", math.nan), line("collective", 0.25)]   # undefined; at the limit
    assert RMS_POOR == 0.25
    assert fit_verdict(lines) == [
        "poor fit: the pingpong (56%), reduce (52%) and gemm+memory (30%) fits miss their own "
        "measurements by more than 25% rms: " + ADVICE]
    assert fit_verdict([line("pingpong", 0.05), line("collective", 1.5)]) == []


def test_vm_rows_reduce_fit_at_53_percent_gets_the_closing_verdict(vm_cal):
    assert vm_cal.profile.warnings == [
        "poor fit: the reduce (53%) fit misses its own measurements by more than 25% rms: "
        + ADVICE]
    back = parse_profile(yaml.safe_load(dump_profile(vm_cal.profile)))
    assert back.warnings == vm_cal.profile.warnings


@pytest.fixture(scope="module")
def h200_run(tmp_path_factory):
    """calibrate on the recorded H200 benchmarks, piped at COLUMNS=80: (rc, out, err, profile)."""
    import contextlib
    import io
    import os

    out, err = io.StringIO(), io.StringIO()
    prof = tmp_path_factory.mktemp("h200") / "h.yaml"
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["calibrate", str(H200), "--platform", "topologies/h200_shared.yaml",
                       "--out", str(prof)])
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return rc, out.getvalue(), err.getvalue(), yaml.safe_load(prof.read_text())


def test_h200_verdict_closes_stderr_after_the_100_percent_warning(h200_run):
    rc, out, err, doc = h200_run
    assert rc == 0  # a poor fit is no bad input: the profile is written
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("warning: the collective fit misses its own measurements by "
                               "103% rms (more than 100%)")
    assert lines[1] == ("warning: poor fit: the reduce (36%) fit misses its own measurements "
                        "by more than 25% rms: " + ADVICE + " (kept in the profile's "
                        "warnings:)")
    assert [w[:40] for w in doc["warnings"]] == [lines[0][9:49], lines[1][9:49]]


# ---- 2. intervals clipped at 0 where printed, raw in the profile --------------------------

def test_interval_clips_a_negative_lower_end_and_says_so():
    assert interval(-102e9, 142e9, "B/s") == ("0 (clipped) .. 142 GB/s", True)
    assert interval(-1.7e-6, 4.3e-6, "s") == ("0 (clipped) .. 4.3 us", True)
    assert interval(2.81e12, math.inf, "B/s") == ("2.81 TB/s .. unbounded", False)
    assert interval(0.5, 1.5, "1") == ("0.5 .. 1.5", False)


def test_large_plain_numbers_print_without_an_exponent():
    """A loose collective efficiency's upper end printed as ``9.974e+05``; it is a number
    with thousands separators now (4 significant digits, as before); tiny ones keep theirs."""
    assert interval(-3.1, 997_412.0, "1") == ("0 (clipped) .. 997,400", True)
    assert cell(12_345.678e9, "FLOP/s") == "12,350 GFLOP/s"
    assert cell(2.5e-5, "s/B") == "25,000 ns/B"
    assert cell(1.5e-5, "1") == "1.5e-05" and cell(0.4019, "1") == "0.4019"
    assert cell(9_999.6, "1") == "10,000"  # rounded before the range is picked (review 19)


def test_vm_table_clips_alpha_while_the_profile_keeps_the_raw_interval(vm_cal, capsys):
    from rich.console import Console

    print_fit(Console(width=200, highlight=False), vm_cal)
    out = capsys.readouterr().out
    row = next(r for r in out.splitlines() if "pingpong.localhost_shm.2.alpha" in r)
    assert re.search(r"1\.31 us\s+0 \(clipped\) \.\. 4\.32 us\s", row), row
    assert "0 (clipped): the linearised 95% interval reaches below 0" in out
    fit = {f["parameter"]: f for f in vm_cal.profile.fit}
    lo, hi = fit["pingpong.localhost_shm.2.alpha"]["ci95"]
    assert lo == pytest.approx(-1.70515e-6, rel=1e-4) and hi == pytest.approx(4.3206e-6,
                                                                              rel=1e-4)


# ---- 3. no nan / inf text ------------------------------------------------------------------

def test_undefined_figures_print_as_a_dash(h200_run):
    assert percent(math.nan) == "—" and percent(math.inf, signed=True) == "—"
    assert percent(-0.0291, signed=True) == "-2.9%"
    out = h200_run[1]
    jitter = next(r for r in out.splitlines() if r.startswith("device.h200_rank.jitter"))
    assert jitter.split()[-1] == "—"
    assert not re.search(r"\bnan\b|\binf\b", out, re.I), out
    assert "2.81 TB/s .. unbounded" in out


# ---- 4. sizes as the tool prints them ------------------------------------------------------

def test_sizes_in_the_notes_are_binary_units_with_exact_bytes_where_rounded(vm_cal, h200_run):
    assert size_note(16777216.0) == "16 MiB"
    assert size_note(92682.0) == "90.5 KiB (92682 B)"
    assert readable_sizes("3 segments refused: segment 16777216 .. 33554432 B (3 points)") \
        == "3 segments refused: segment 16 MiB .. 32 MiB (3 points)"
    assert ("ping-pong: 4 segment(s), breakpoints 8 KiB, 90.5 KiB (92682 B), 11.3 MiB "
            "(11863283 B) (detected)") in vm_cal.notes
    notes = " ".join(h200_run[1].split())  # the notes wrap at 80 columns
    assert "segment 16 MiB .. 32 MiB (3 points)" in notes
    assert "collectives: 16 MiB from the refused ping-pong segmentation" in notes
    assert not re.search(r"\de[+-]\d\d B", notes), notes


# ---- 5. tables fitted to the terminal ------------------------------------------------------

def test_piped_output_fits_80_columns_names_wrapped_at_their_dots(h200_run):
    out = h200_run[1]
    assert max(len(r) for r in out.splitlines()) == 80  # was 143 (a fixed 160 when piped)
    assert "not shown at 80 columns: points, from (--wide shows every column)" in out
    rows = out.splitlines()
    k = next(i for i, r in enumerate(rows) if r.startswith("network.protocol.") and
             "0.3697" in r)
    assert [r.split()[0] for r in rows[k:k + 3]] == ["network.protocol.", "gpu_hoststaged.1.",
                                                      "collective_efficiency"]
    assert wrap_name("network.protocol.gpu_hoststaged.0.collective_efficiency", 28) == (
        "network.protocol.\ngpu_hoststaged.0.\ncollective_efficiency")
    assert wrap_name("abcdefghij.k", 4) == "abcd\nefgh\nij.k"


def test_wide_prints_every_column_whole(tmp_path, capsys):
    rc = main(["calibrate", str(H200), "--platform", "topologies/h200_shared.yaml", "--out",
               str(tmp_path / "h.yaml"), "--wide"])
    out = capsys.readouterr().out
    assert rc == 0
    row = next(r for r in out.splitlines()
               if "network.protocol.gpu_hoststaged.1.collective_efficiency" in r and "│" in r)
    assert [c.strip() for c in row.strip("│").split("│")] == [
        "network.protocol.gpu_hoststaged.1.collective_efficiency", "0.3697",
        "0.2759 .. 0.4634", "17", "102.9%", "collective"]
