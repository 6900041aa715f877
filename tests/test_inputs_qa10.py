"""QA 10 input and output paths: a name too long, a symbolic link loop, a directory or a
device where a file is expected, an unsafe scenario name as sweep's folder, routes' limits,
the model's size.  Each is one message and exit 2, never a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.commands.sweep import default_out

ROOT = Path(__file__).resolve().parents[1]
MLP = ROOT / "scenarios" / "real_bsp_mlp.yaml"
LOCALHOST = str(ROOT / "topologies" / "localhost.yaml")


def _mlp(tmp_path: Path, **subs: str) -> str:
    """A copy of real_bsp_mlp.yaml with its platform by absolute path and ``subs`` applied."""
    text = MLP.read_text().replace("topologies/localhost.yaml", LOCALHOST)
    for old, new in subs.items():
        assert old in text
        text = text.replace(old, new)
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return str(p)


@pytest.fixture
def loop(tmp_path: Path) -> Path:
    a, b = tmp_path / "loopA", tmp_path / "loopB"
    a.symlink_to(b)
    b.symlink_to(a)
    return a


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], *words: str) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    for w in words:
        assert w in err, err
    return err


def test_output_name_too_long(tmp_path, capsys):
    long = str(tmp_path / ("x" * 300 + ".json"))
    _refused(capsys, ["predict", str(MLP), "-q", "--json", long], "--json", "too long")


def test_output_symlink_loop(tmp_path, capsys, loop):
    _refused(capsys, ["predict", str(MLP), "-q", "--json", str(loop)], "--json",
             "symbolic link loop")


def test_sweep_out_symlink_loop(tmp_path, capsys, loop):
    _refused(capsys, ["sweep", str(MLP), "-q", "--out", str(loop)], "symbolic link loop")
    assert not any(p.name.endswith(".probe") for p in tmp_path.iterdir())


def test_input_name_too_long(tmp_path, capsys):
    long = str(tmp_path / ("x" * 300 + ".yaml"))
    err = _refused(capsys, ["validate", long], "too long")
    assert len(err) < 600  # the 300-character name is cut


def test_scenario_symlink_loop_is_not_file_not_found(capsys, loop):
    err = _refused(capsys, ["validate", str(loop)], "symbolic link loop")
    assert "not found" not in err


@pytest.mark.parametrize("what", ["dir", "device", "loop"])
def test_platform_path_that_is_no_file(tmp_path, capsys, loop, what):
    target = {"dir": str(tmp_path), "device": os.devnull, "loop": str(loop)}[what]
    scn = _mlp(tmp_path, **{LOCALHOST: target})
    word = {"dir": "is a directory", "device": "not a regular file",
            "loop": "symbolic link loop"}[what]
    err = _refused(capsys, ["validate", scn], word, "platform")
    assert "not found" not in err


@pytest.mark.parametrize("name, folder", [
    ("/tmp/evil", "_tmp_evil.sweep"), ("../../x", ".._.._x.sweep"[2:]),
    ("n" * 5000, "n" * 100 + ".sweep"), ("...", "scenario.sweep"), ("ok-1.2", "ok-1.2.sweep")])
def test_sweep_default_folder_is_a_safe_name(name, folder):
    out = default_out(name)
    assert str(out) == folder and out.parent == Path(".")


def test_sweep_name_with_a_path_writes_in_the_working_folder(tmp_path, capsys, monkeypatch):
    evil = tmp_path / "outside"
    scn = _mlp(tmp_path, **{"name: real_bsp_mlp": f"name: {evil}/x"})
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["sweep", scn, "-q", "-j", "1", "--no-cache"]) == 0, capsys.readouterr().err
    assert not evil.exists()
    assert [p.name for p in work.iterdir()] == [str(default_out(f"{evil}/x"))]


def _ft(tmp_path: Path) -> str:
    p = tmp_path / "ft.yaml"
    p.write_text(f"name: topo_ft\nplatform: {ROOT / 'topologies' / 'fattree_k16.yaml'}\n"
                 "benchmark: {op: allreduce, algorithms: [ring], ranks: [2], sizes: [1 MiB]}\n")
    return str(p)


@pytest.mark.parametrize("alg", ["direct", "auto"])
def test_routes_alltoall_too_many_flows_is_refused_at_once(tmp_path, capsys, alg):
    _refused(capsys, ["routes", _ft(tmp_path), "--op", "alltoall", "--algorithm", alg,
                      "--ranks", "256", "--size", "1MiB", "-q"],
             "--ranks", "65,280", "8,192", "pairwise")


def test_routes_alltoall_pairwise_still_runs(tmp_path, capsys):
    assert main(["routes", _ft(tmp_path), "--op", "alltoall", "--algorithm", "pairwise",
                 "--ranks", "256", "--size", "1MiB", "-q"]) == 0


@pytest.mark.parametrize("ranks", ["0", "1"])
def test_routes_ranks_below_two_are_refused_with_the_range(tmp_path, capsys, ranks):
    _refused(capsys, ["routes", _ft(tmp_path), "--ranks", ranks, "-q"],
             "--ranks", "from 2 to 1024", f"not {ranks}")


def test_routes_step_range_says_the_steps_repeat(tmp_path, capsys):
    _refused(capsys, ["routes", _ft(tmp_path), "--ranks", "256", "--step", "9", "-q"],
             "2 distinct steps, 510 in all")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_device_output_is_named(tmp_path, capsys):
    ok = tmp_path / "ok.json"
    # exit 2: a named output that cannot be written is the user's to change, as an
    # unwritable one found before the run is (QA 16c); standard output on a full disk, 1
    assert main(["predict", str(MLP), "-q", "--json", str(ok), "--csv", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert "/dev/full" in err and "standard output" not in err and not ok.exists()


def test_topology_file_given_as_a_scenario_says_how_to_use_it(capsys):
    crossbar = str(ROOT / "topologies" / "crossbar16.yaml")
    err = _refused(capsys, ["validate", crossbar], "platform (topology) file",
                   f"platform: {crossbar}")
    assert "did you mean" not in err


def test_platform_file_catalog_error_cites_its_line(tmp_path, capsys):
    text = Path(LOCALHOST).read_text()
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip().startswith("bandwidth:"))
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines[at] = f"{indent}bandwidth: -1.4 GB/s"
    plat = tmp_path / "p.yaml"
    plat.write_text("\n".join(lines) + "\n")
    scn = _mlp(tmp_path, **{LOCALHOST: str(plat)})
    _refused(capsys, ["validate", scn], f"p.yaml:{at + 1},", "bandwidth")


@pytest.mark.parametrize("hidden, words", [
    ("[9000000000000000000, 9000000000000000000]", ("hidden", "up to 1,000,000", "9e+18")),
    ("[1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000, "
     "1000000, 1000000, 1000000]", ("parameters", "at most 1e+13")),
])
def test_model_size_is_bounded(tmp_path, capsys, hidden, words):
    scn = _mlp(tmp_path, **{"hidden: [1024, 1024]": f"hidden: {hidden}"})
    err = _refused(capsys, ["validate", scn], *words)
    assert len(err) < 400


def test_huge_whole_number_is_echoed_short(tmp_path, capsys):
    scn = _mlp(tmp_path, **{"batch_per_worker: 64": "batch_per_worker: 1e308"})
    err = _refused(capsys, ["validate", scn], "batch_per_worker", "1e+308")
    assert len(err) < 300
