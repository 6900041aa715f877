"""``clustersim sweep`` leftovers of QA pass 10: a bad field in a platform file that an axis
names is reported at that file's line (as for a file the scenario names), and a
``placement.server`` axis does not reach an algorithm without servers (an empty cell, one
run, as ``algorithm.X`` for an algorithm that does not take X)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.cli import main

ROOT = Path(__file__).resolve().parents[1]
K80 = (ROOT / "topologies" / "theano_mpi_k80.yaml").read_text()

SCN = ("name: s\nplatform: {file: good.yaml}\n"
       "workload: {model: alexnet, batch_per_worker: 32}\n"
       "algorithm: {name: bsp, strategy: ring, label: ring}\n"
       "run: {iterations: 2, warmup: 1, seed: 0}\n"
       "sweep:\n  workers: [2]\n")


def _files(tmp_path: Path) -> dict[str, int]:
    """good.yaml (the shipped K80 node), bad.yaml (pcie: pcie3x8, an unknown link class)
    and two.yaml (sockets: two); the line of each bad field."""
    assert "pcie: pcie3x16" in K80 and "sockets: 2" in K80
    (tmp_path / "good.yaml").write_text(K80)
    bad = K80.replace("pcie: pcie3x16", "pcie: pcie3x8")
    two = K80.replace("sockets: 2", "sockets: two")
    (tmp_path / "bad.yaml").write_text(bad)
    (tmp_path / "two.yaml").write_text(two)

    def line(text: str, field: str) -> int:
        return next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == field)

    return {"bad": line(bad, "pcie: pcie3x8"), "two": line(two, "sockets: two")}


def _refused(capsys: pytest.CaptureFixture, code: int) -> str:
    """The one-line message of a refusal (exit 2, no traceback)."""
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("bad, field, what", [
    ("bad", "platform.node.pcie", "unknown link class 'pcie3x8'"),
    ("two", "platform.node.sockets", "not 'two'"),
])
def test_a_platform_file_axis_value_is_reported_at_the_files_line(
        tmp_path: Path, capsys, bad: str, field: str, what: str) -> None:
    """The error had named neither the platform file nor its line ("sweep.axes: at the
    sweep point {platform.file='bad.yaml'}: platform.node.pcie: unknown link class"): it is
    now at the file's line and field, then the point and the axis's --set item."""
    lines = _files(tmp_path)
    scn = tmp_path / "s.yaml"
    scn.write_text(SCN)
    out = tmp_path / "o"
    axes = f"sweep.axes={{platform.file: [good.yaml, {bad}.yaml]}}"
    err = _refused(capsys, main(["sweep", str(scn), "--set", axes, "--out", str(out),
                                 "--no-cache", "-j", "1"]))
    assert f"{bad}.yaml:{lines[bad]}, {field}: " in err, err
    assert what in err, err
    assert f"sweep point {{platform.file='{bad}.yaml'}}" in err, err
    assert f"the axis platform.file at {scn} (--set {axes})" in err, err
    assert "platform file of scenario" not in err, err  # the point named it, not the scenario
    assert not out.exists()


def test_an_axis_written_in_the_file_is_named_by_its_line(tmp_path: Path, capsys) -> None:
    """The axis in the scenario file: its line follows the platform file's; a ``platform``
    axis of file names is blamed the same way."""
    lines = _files(tmp_path)
    scn = tmp_path / "s.yaml"
    scn.write_text(SCN + "  axes:\n    platform.file: [good.yaml, bad.yaml]\n")
    err = _refused(capsys, main(["sweep", str(scn), "--out", str(tmp_path / "o"),
                                 "--no-cache", "-j", "1"]))
    axis_line = len(SCN.splitlines()) + 2
    assert f"bad.yaml:{lines['bad']}, platform.node.pcie: unknown link class" in err, err
    assert f"the axis platform.file at {scn}:{axis_line})" in err, err
    scn.write_text(SCN.replace("platform: {file: good.yaml}", "platform: good.yaml")
                   + "  axes:\n    platform: [good.yaml, bad.yaml]\n")
    err = _refused(capsys, main(["sweep", str(scn), "--out", str(tmp_path / "o"),
                                 "--no-cache", "-j", "1"]))
    assert f"bad.yaml:{lines['bad']}, platform.node.pcie: " in err, err
    assert f"sweep point {{platform='bad.yaml'}}; the axis platform at {scn}:{axis_line})" \
        in err, err


def test_a_scenario_axis_error_is_still_at_the_axis(tmp_path: Path, capsys) -> None:
    """A bad value the axis itself gives (not a file's) stays at the axis's --set item."""
    _files(tmp_path)
    scn = tmp_path / "s.yaml"
    scn.write_text(SCN)
    axes = "sweep.axes={platform.node.pcie: [pcie3x16, pcie3x8]}"
    err = _refused(capsys, main(["sweep", str(scn), "--set", axes, "--out",
                                 str(tmp_path / "o"), "--no-cache", "-j", "1"]))
    assert err.startswith(f"error: {scn} (--set {axes}), sweep.axes.platform.node.pcie: at "
                          "the sweep point {platform.node.pcie='pcie3x8'}: "
                          "platform.node.pcie: unknown link class 'pcie3x8'"), err


# --------------------------------------------------------------------- placement.server
KNL = ["compare=[{name: async_easgd, tau: 1, label: Async EASGD}]", "sweep.workers=[17]",
       "run.iterations=3", "run.warmup=1", "workload.jitter=0"]


def test_a_server_placement_axis_skips_an_algorithm_without_servers() -> None:
    """Sync EASGD has no master: ``placement.server: [device, machine]`` ran it twice with
    identical rows.  It runs once with an empty cell, as a case an ``algorithm.X`` axis does
    not reach; the master-based case runs both, and the saturation summary has a line for
    each of its placements only."""
    from clustersim.explore import input_columns, load_study, run_study, study_points, tidy_rows
    from clustersim.explore.saturation import saturation_summary

    _, study = load_study("knl_unsaturated", [
        *KNL, "sweep.axes={placement.server: [device, machine]}"])
    pts = study_points(study)
    assert [(study.cases[p.case].algorithm, dict(p.sets)["placement.server"]) for p in pts] \
        == [("Sync EASGD", "device"), ("Async EASGD", "device"), ("Async EASGD", "machine")]
    assert [c.servers for c in study.cases] == [False, True]
    rows = tidy_rows(study, pts, run_study(study, pts, jobs=1).results)
    cells = [(r["algorithm"], r["placement.server"]) for r in rows]
    assert cells == [("Sync EASGD", None), ("Async EASGD", "device"),
                     ("Async EASGD", "machine")]
    dev, mach = rows[1], rows[2]
    assert mach["service_time"] < dev["service_time"]  # a whole node serves faster
    summary = saturation_summary(rows, input_columns(study))
    assert [label for label, *_ in summary] == [
        "algorithm=Async EASGD, placement.server=device, seed=0",
        "algorithm=Async EASGD, placement.server=machine, seed=0"]


def test_an_axis_that_changes_the_main_algorithm_places_servers_per_point() -> None:
    """Where an ``algorithm`` axis replaces the main algorithm, ``placement.server`` reaches
    the points whose algorithm has servers: the master-based value runs at both placements,
    Sync EASGD (no master) once with an empty cell - it had run once per placement, with
    identical rows labelled as if the placement had been tried."""
    from clustersim.explore import load_study, run_study, study_points, tidy_rows

    _, study = load_study("knl_unsaturated", [
        *KNL, "compare=[]",
        "sweep.axes={algorithm: [{name: sync_easgd, tau: 1, label: s}, "
        "{name: async_easgd, tau: 1, label: a}], placement.server: [device, machine]}"])
    pts = study_points(study)
    assert [c.servers for c in study.cases] == [True]  # may have them: per point
    rows = tidy_rows(study, pts, run_study(study, pts, jobs=1).results)
    assert sorted((r["algorithm"], str(r["placement.server"])) for r in rows) == [
        ("a", "device"), ("a", "machine"), ("s", "None")]
    by = {(r["algorithm"], r["placement.server"]): r for r in rows}
    assert by["a", "machine"]["service_time"] < by["a", "device"]["service_time"]


def test_an_algorithm_name_axis_places_servers_per_point() -> None:
    """The same through ``algorithm.name``, and with a name whose algorithm is not known
    until its parse (the axis then reaches it: the parse reports the name)."""
    from clustersim.explore import load_study, study_points
    from clustersim.explore.points import Case
    from clustersim.explore.reach import axis_target

    _, study = load_study("knl_unsaturated", [
        *KNL, "compare=[]",
        "sweep.axes={algorithm.name: [sync_easgd, async_easgd, async_sgd], "
        "placement.server: [device, machine]}"])
    pts = study_points(study)
    assert sorted((dict(p.sets)["algorithm.name"], dict(p.sets)["placement.server"])
                  for p in pts if axis_target(study.cases[p.case], "placement.server",
                                              p.sets) is not None) == [
        ("async_easgd", "device"), ("async_easgd", "machine"),
        ("async_sgd", "device"), ("async_sgd", "machine")]
    assert len(pts) == 5  # sync_easgd once
    main = Case("", "x", (), 0, (), servers=True)
    assert axis_target(main, "placement.server", (("algorithm.name", "nope"),)) == \
        ("placement", "server")
    assert axis_target(main, "placement.server", (("algorithm.name", "sync_easgd"),)) is None


def test_the_reach_of_a_server_field() -> None:
    """``axis_target``: placement.server reaches a case with servers only; the other
    placement field (devices_per_worker) reaches every case."""
    from clustersim.explore.points import Case
    from clustersim.explore.reach import axis_target

    without = Case("", "Sync EASGD", (), 0, ("tau",), servers=False)
    with_ = Case("", "Async EASGD", (), 1, ("tau",), servers=True)
    assert axis_target(without, "placement.server") is None
    assert axis_target(with_, "placement.server") == ("placement", "server")
    assert axis_target(without, "placement.devices_per_worker") == \
        ("placement", "devices_per_worker")
