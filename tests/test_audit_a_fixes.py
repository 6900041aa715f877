"""Audit A fixes: calibrate's one rule for "not determined" (M3) and its flag on a protocol
segment faster than its link; a section's own field preferred in a "did you mean" (L3);
the sweep summary's axis values at 4 significant digits (L9); `list --wide` and a list
argument error naming `clustersim list --help` (L7)."""

from __future__ import annotations

import math

import pytest
from rich.console import Console

from clustersim.calibration.fitlines import FitLine, undetermined


def _line(name: str, v: float, lo: float, hi: float, unit: str = "1") -> FitLine:
    return FitLine(name, v, lo, hi, unit, 8, 0.01, "pingpong")


# ---- M3: one rule for "not determined" -----------------------------------------------------

def test_undetermined_is_a_half_width_above_the_value_not_a_standard_error():
    """1.915 [1.158 .. 5.532] (half-width 2.19 > 1.915, standard error 1.12 < 1.915): the
    interval is wider than twice the value, so it is named; the standard-error rule had
    let it through.  Just inside the rule stays sampled."""
    wide = _line("network.protocol.c.0.efficiency", 1.915, 1.158, 5.532)
    inside = _line("compute.efficiency.fc", 0.5, 0.01, 0.99)  # half 0.49 < 0.5
    between = _line("compute.efficiency.conv", 0.5, 0.0, 1.2)  # half 0.6: sd 0.31 < 0.5
    unbounded = _line("device.d.pack_rate", 8e13, 2e12, math.inf, "B/s")
    assert [ln.parameter for ln in undetermined([wide, inside, between, unbounded])] == [
        "network.protocol.c.0.efficiency", "compute.efficiency.conv", "device.d.pack_rate"]


def test_each_undetermined_parameter_has_its_reason():
    from clustersim.calibration.fitlines import loose_reason

    wide = _line("network.protocol.c.0.efficiency", 1.915, 1.158, 5.532)
    inside = _line("compute.efficiency.fc", 0.5, 0.01, 0.99)
    unbounded = _line("device.d.pack_rate", 8e13, 2e12, math.inf, "B/s")
    assert loose_reason(wide) == "95% interval wider than twice the value"
    assert loose_reason(unbounded) == "95% interval reaches infinity"
    assert loose_reason(inside) == ""
    assert loose_reason(_line("network.protocol.c.0.collective_efficiency", 100.0, 99.0,
                              101.0)) == "on the fit's bound (100)"
    assert loose_reason(_line("network.step_overhead", 0.0, 0.0, 1e-6, "s")) == \
        "time 0; 95% interval wider than twice the value"


def test_a_protocol_efficiency_above_1_is_flagged_not_clamped():
    from clustersim.calibration.fitlines import above_link

    lines = [_line("network.protocol.c.0.efficiency", 1.915, 1.158, 5.532),
             _line("network.protocol.c.1.efficiency", 1.3, 1.2, 1.4),
             _line("network.protocol.c.2.efficiency", 1.0, 0.9, 1.1),
             _line("compute.efficiency.fc", 1.2, 1.1, 1.3)]
    assert [ln.parameter for ln in above_link(lines)] == [
        "network.protocol.c.0.efficiency", "network.protocol.c.1.efficiency"]
    assert [ln.value for ln in above_link(lines)] == [1.915, 1.3]


class _Cal:
    def __init__(self, lines: list[FitLine]) -> None:
        self.lines, self.notes, self.collective = lines, [], None


def test_the_report_states_the_rule_and_names_each_reason(capsys):
    from clustersim.commands.calibrate_report import print_fit

    cal = _Cal([_line("network.protocol.c.0.efficiency", 1.915, 1.158, 5.532),
                _line("network.protocol.c.1.efficiency", 1.3, 1.2, 1.4),
                _line("network.protocol.c.2.overhead", 3e-6, 2e-6, 4e-6, "s")])
    print_fit(Console(width=200, highlight=False), cal, wide=True)
    out = capsys.readouterr().out
    text = " ".join(out.split())
    assert ("a 95% interval that reaches infinity or is wider than twice the value" in text)
    assert ("network.protocol.c.0.efficiency = 1.915 [1.158 .. 5.532]: 95% interval wider "
            "than twice the value") in text
    head, _, tail = text.partition("warning: protocol segment efficiency above 1")
    assert "faster than the link it runs on" in tail
    assert "network.protocol.c.1.efficiency = 1.3 [1.2 .. 1.4]" in tail
    assert "network.protocol.c.1.efficiency = 1.3 [" not in head.split("not sampled")[1]
    assert "c.2.overhead = " not in text  # determined, on no limit: in the table only


# ---- L3: a section's own field wins over a near name elsewhere ------------------------------

LEAF_SPINE = """\
name: ls_test
platform:
  topology: leaf_spine
  leaves: 2
  spines: 1
  hosts_per_leaf: 2
  device: v100_pcie
  host_link: eth25g
  uplink: eth100g
workload: {model: resnet50, global_batch: 64}
algorithm: bsp
"""


@pytest.mark.parametrize("typo, meant", [("lat", "latency"), ("latncy", "latency"),
                                         ("bandwith", "bandwidth"), ("band", "bandwidth")])
def test_a_link_field_typo_is_matched_in_its_own_section(tmp_path, capsys, typo, meant):
    from clustersim.cli import main

    f = tmp_path / "ls.yaml"
    f.write_text(LEAF_SPINE)
    assert main(["validate", str(f), "--set",
                 f"platform.host_link={{bandwidth: 100 Gb/s, latency: 1 us, {typo}: 1}}"]) == 2
    err = capsys.readouterr().err
    assert f"unknown link field {typo!r} — did you mean {meant!r}? (allowed: " in err, err
    assert "sweep" not in err and err.count("\n") == 1


def test_a_typo_near_only_a_field_elsewhere_still_names_its_home():
    from clustersim.scenario.homes import _near_home

    allowed = ("batch_per_worker", "global_batch", "model", "compute", "convergence")
    assert _near_home("overhed", allowed).startswith(" — did you mean 'overhead'? It is a "
                                                    "field of network: (network.overhead)")


def test_a_short_field_elsewhere_is_no_suggestion_for_a_longer_name():
    """audit C M5: network has no latency, and 'lat' was pointed at sweep's 'at'."""
    from clustersim.scenario.homes import _near_home

    allowed = ("efficiency", "execution", "overhead", "transports")
    assert _near_home("lat", allowed) == "" and _near_home("LAT", allowed) == ""
    assert _near_home("latncy", allowed).startswith(" — did you mean 'latency'?")


# ---- L9: the sweep summary's axis values at 4 significant digits ----------------------------

def test_sweep_summary_prints_axis_values_at_4_significant_digits(capsys):
    from types import SimpleNamespace

    from clustersim.commands.sweep import _summary

    x = 1.1486565197460595e-06
    points = [SimpleNamespace(index=0, sets=(("network.overhead", x),))]
    res = SimpleNamespace(ran=1, cached=0, skipped=[], results={0: {
        "stretched": [5, 10], "algorithm": "bsp", "workers": 4, "warmup_steps": 6,
        "measured_steps": 12}})
    rows = [{"throughput": 1234.5, "workers": 4, "network.overhead": x, "algorithm": "bsp"}]
    _summary(SimpleNamespace(name="s"), points, res, rows, ["workers", "network.overhead"],
             1.0, "local", {"--parquet": "a", "--csv": "b", "--json": "c"}, [])
    out = capsys.readouterr().out
    assert "(e.g. bsp at 4 workers, network.overhead=1.149e-06: 6 warm-up" in out, out
    assert "highest throughput: 1,234.5 samples/s at workers=4, network.overhead=1.149e-06" \
        in out, out
    assert "1.1486565" not in out
    assert rows[0]["network.overhead"] == x  # the table's value keeps every digit


def test_only_floats_are_rounded_in_the_summary():
    from clustersim.explore.saturation import shown

    assert (shown(64.0), shown(3), shown("ring"), shown(True)) == ("64", "3", "ring", "True")


# ---- L7: list --wide, and a list argument error names list's own help ----------------------

def test_list_argument_errors_name_the_list_help(capsys):
    from clustersim.cli import main

    assert main(["list", "scenarios", "--bogus"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: clustersim list: unrecognized arguments: --bogus (see "
                   "'clustersim list --help')\n")
    assert main(["validate", "x.yaml", "--bogus"]) == 2  # every subcommand, the same way
    assert "(see 'clustersim validate --help')" in capsys.readouterr().err
    assert main(["--bogus"]) == 2
    assert "(see 'clustersim --help')" in capsys.readouterr().err


def test_list_scenarios_wide_prints_the_about_text_uncut(capsys, monkeypatch):
    from clustersim.cli import main
    from clustersim.commands.listing import _about
    from clustersim.shipped import find_shipped, shipped_names

    monkeypatch.setenv("COLUMNS", "80")
    longest = max(shipped_names("scenarios"),
                  key=lambda n: len(_about(find_shipped("scenarios", n))))
    about = _about(find_shipped("scenarios", longest))
    assert len(about) > 80
    assert main(["list", "scenarios"]) == 0
    assert about not in capsys.readouterr().out  # cut at 80 columns
    assert main(["list", "scenarios", "--wide"]) == 0
    out = capsys.readouterr().out
    row = next(r for r in out.splitlines() if f" {longest} " in r)
    assert about in row and "…" not in row


def test_one_bound_rule_for_the_fits_note_and_the_report():
    """audit C M3: the note said an efficiency of 99.9996 stopped at its bound, the report's
    reason list (1e-6 tolerance) did not."""
    from clustersim.calibration.collfit import at_efficiency_bound
    from clustersim.calibration.fitlines import FitLine, loose_reason

    assert at_efficiency_bound(99.9996) == 100.0 and at_efficiency_bound(0.010005) == 0.01
    assert at_efficiency_bound(99.8) is None and at_efficiency_bound(1.0) is None
    ln = FitLine("network.protocol.g.0.collective_efficiency", 99.9996, 0.0, 994300.0, "",
                 10, 0.1, "collective")
    assert loose_reason(ln) == ("on the fit's bound (100); 95% interval wider than twice the "
                                "value")


def test_the_report_headings_wrap_between_words_at_80_columns(capsys):
    """audit C L2: fixed heading lines of 84-85 characters wrapped mid-sentence when piped."""
    from clustersim.commands.calibrate_report import print_fit

    cal = _Cal([_line("network.protocol.c.0.efficiency", 1.915, 1.158, 5.532)])
    print_fit(Console(width=80, highlight=False), cal)
    lines = capsys.readouterr().out.splitlines()
    for first, last in (("not sampled", "covariance:"), ("efficiency above 1", "clamped:")):
        i = next(k for k, ln in enumerate(lines) if first in ln)
        j = next(k for k, ln in enumerate(lines) if k >= i and ln.endswith(last))
        block = lines[i:j + 1]
        assert all(len(ln) <= 80 for ln in block), block
        assert all(len(ln) > 60 for ln in block[:-1]), block  # no line of one stray word
    text = " ".join(" ".join(lines).split())
    assert "kept in the profile, not in its covariance:" in text
    assert "kept as fitted, not clamped:" in text


def test_saturation_groups_print_float_axes_at_4_digits_unless_two_would_read_alike():
    """audit C L1: the saturation lines printed every digit of a sampled axis's draw."""
    from clustersim.explore.saturation import _groups

    rows = [{"saturation_workers": 3.0, "workers": 2, "network.overhead": v}
            for v in (1.6283025740689033e-05, 2.5e-06, 1.00001e-06, 1.00002e-06)]
    labels = list(_groups(rows, ["workers", "network.overhead"]))
    assert labels == ["network.overhead=1.628e-05", "network.overhead=2.5e-06",
                      "network.overhead=1.00001e-06", "network.overhead=1.00002e-06"]
