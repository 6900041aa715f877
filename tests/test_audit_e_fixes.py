"""Audit E fixes: an output never replaces an input (H1, H2); a real run's profile and
hostfile are checked before anything is cleared or started (H3, H4, M3); an uncertain value's
unit must be the field's (H5); Ctrl-C while the command is still being imported (H6);
``--json /dev/stdout`` into a pipe (M1); an empty ``--calibration`` (M2)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = f"""name: base
platform: {ROOT / "topologies/localhost.yaml"}
workload:
  model: {{zoo: mlp, options: {{features: 64, hidden: [64], classes: 10}}}}
  batch_per_worker: 8
algorithm: {{name: bsp, strategy: ring}}
sweep: {{workers: [2]}}
run: {{iterations: 3, warmup: 1, seed: 0}}
"""


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture()
def scn(tmp_path: Path) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO, encoding="utf-8")
    return p


# ---- H1: an output naming an input ---------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["predict", "{s}", "-q", "--json", "{s}"],
    ["predict", "{s}", "-q", "--csv", "{s}"],
    ["sweep", "{s}", "-q", "--csv", "{s}", "--out", "{d}/sw"],
    ["whatif", "{s}", "-q", "-o", "{s}", "--no-cache"],
])
def test_an_output_over_the_scenario_is_refused(scn: Path, argv: list[str],
                                                capsys: pytest.CaptureFixture) -> None:
    before = _digest(scn)
    if argv[0] == "whatif":
        pytest.importorskip("plotly")
    code = main([a.format(s=scn, d=scn.parent) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and "it is an input of this command" in err, err
    assert _digest(scn) == before


def test_a_trace_over_the_platform_file_the_scenario_names(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture
                                                           ) -> None:
    plat = tmp_path / "lh.yaml"
    plat.write_bytes((ROOT / "topologies/localhost.yaml").read_bytes())
    s = tmp_path / "s.yaml"
    s.write_text(SCENARIO.replace(str(ROOT / "topologies/localhost.yaml"), str(plat)),
                 encoding="utf-8")
    before = _digest(plat)
    assert main(["predict", str(s), "-q", "--trace", str(plat)]) == 2
    assert "--trace" in capsys.readouterr().err and _digest(plat) == before


def test_inputs_are_one_commands_own(scn: Path, tmp_path: Path) -> None:
    """A file one command read may be another's output later in the same process."""
    out = tmp_path / "o.json"
    assert main(["predict", str(scn), "-q", "--json", str(out)]) == 0
    copy = tmp_path / "c.yaml"
    copy.write_bytes(scn.read_bytes())
    assert main(["validate", str(copy)]) == 0
    assert main(["predict", str(scn), "-q", "--json", str(copy)]) == 0
    assert json.loads(copy.read_text())["algorithms"]


def test_calibrate_refuses_its_log_and_its_traces(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    log = tmp_path / "gn.csv"
    log.write_text("step,batch_small,batch_big,sq_norm_small,sq_norm_big\n", encoding="utf-8")
    assert main(["calibrate", "--convergence", str(log), "--out", str(log)]) == 2
    assert "input" in capsys.readouterr().err
    traces = tmp_path / "tr"
    traces.mkdir()
    trace = traces / "trace.rank0.jsonl"
    trace.write_text("{}\n", encoding="utf-8")
    assert main(["calibrate", str(traces), "--out", str(trace)]) == 2
    assert "it is an input" in capsys.readouterr().err
    assert trace.read_text() == "{}\n"


# ---- H2, H3, H4, M3: a real run refuses before it clears or starts anything ---------------
@pytest.fixture()
def real(tmp_path: Path) -> Path:
    pytest.importorskip("mpi4py")
    from realrun.launch import find_mpiexec

    try:
        find_mpiexec(None)
    except Exception:
        pytest.skip("no mpiexec")
    out = tmp_path / "ro"
    out.mkdir()
    (out / "trace.rank0.jsonl").write_text("{}\n", encoding="utf-8")  # the last run's
    (tmp_path / "old.json").write_text('{"prev": 1}', encoding="utf-8")
    return tmp_path


def _kept(tmp: Path) -> bool:
    return (tmp / "old.json").is_file() and (tmp / "ro" / "trace.rank0.jsonl").is_file()


def test_real_json_over_the_scenario(real: Path, scn: Path, capsys: pytest.CaptureFixture
                                     ) -> None:
    before = _digest(scn)
    assert main(["run", "--real", str(scn), "--out", str(real / "ro"), "--json", str(scn),
                 "-q"]) == 2
    assert "it is an input" in capsys.readouterr().err
    assert scn.is_file() and _digest(scn) == before


def test_real_bad_profile_before_the_run(real: Path, scn: Path,
                                         capsys: pytest.CaptureFixture) -> None:
    bad = real / "cal.yaml"
    bad.write_text("format: clustersim-calibration/1\ndevices:\n  localhost_core: "
                   "{efficiency: 5}\n", encoding="utf-8")
    assert main(["run", "--real", str(scn), "--out", str(real / "ro"), "--json",
                 str(real / "old.json"), "--calibration", str(bad), "-q"]) == 2
    assert "efficiency" in capsys.readouterr().err
    assert _kept(real)  # refused before --json and --out were cleared: nothing ran


@pytest.mark.parametrize("which", ["missing", "folder"])
def test_real_bad_hostfile_before_the_run(real: Path, scn: Path, which: str,
                                          capsys: pytest.CaptureFixture) -> None:
    hf = real / "hosts"
    if which == "folder":
        hf.mkdir()
    assert main(["run", "--real", str(scn), "--out", str(real / "ro"), "--json",
                 str(real / "old.json"), "--hostfile", str(hf), "-q"]) == 2
    err = capsys.readouterr().err
    assert ("is a directory" if which == "folder" else "does not exist") in err, err
    assert _kept(real)


def test_calibrate_real_bad_hostfile_keeps_the_traces(real: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    work = real / "cw"
    (work / "bench").mkdir(parents=True)
    (work / "bench" / "trace.rank0.jsonl").write_text("{}\n", encoding="utf-8")
    (real / "hosts").mkdir()
    assert main(["calibrate", "--real", "--hostfile", str(real / "hosts"), "--quick",
                 "--no-validate", "--work-dir", str(work), "--out", str(real / "p.yaml")]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert (work / "bench" / "trace.rank0.jsonl").is_file()


# ---- H5: an uncertain value's unit ---------------------------------------------------------
@pytest.mark.parametrize("entry,msg", [
    ('network.overhead: {uniform: ["1 KiB", "2 KiB"]}', "is a time, and '1 KiB' is a size"),
    ('workload.jitter: {uniform: ["10 ms", "20 ms"]}', "takes plain numbers"),
    ('network.overhead: {uniform: [1 us, 2 us], clip: [0.5 us, "1 MiB"]}', "mixes units"),
])
def test_uncertain_units_of_another_kind_are_refused(scn: Path, entry: str, msg: str,
                                                    capsys: pytest.CaptureFixture) -> None:
    scn.write_text(SCENARIO + f"uncertain:\n  {entry}\n", encoding="utf-8")
    assert main(["validate", str(scn)]) == 2
    err = capsys.readouterr().err
    assert msg in err and f"{scn.name}:10" in err, err


def test_a_quoted_plain_number_is_a_number_not_seconds() -> None:
    from clustersim.uncertainty.spec import parse_uncertain

    (inp,) = parse_uncertain({"workload.batch_per_worker": {"range": ["8", "16"],
                                                            "kind": "int"}})
    assert inp.params == (8.0, 16.0) and inp.unit is None
    (t,) = parse_uncertain({"network.overhead": {"uniform": ["1 us", "2 us"]}})
    assert t.params == pytest.approx((1e-6, 2e-6)) and t.unit == "time"


# ---- H6: Ctrl-C while the command is imported ----------------------------------------------
def test_ctrl_c_during_the_import_says_interrupted() -> None:
    """The import of clustersim.cli raising KeyboardInterrupt (what a Ctrl-C in its first
    ~0.1 s did) ends as every later Ctrl-C does: "interrupted", 130, no traceback."""
    code = ("import builtins, sys\n"
            "real = builtins.__import__\n"
            "def imp(name, *a, **k):\n"
            "    if name == 'clustersim.cli':\n"
            "        raise KeyboardInterrupt\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = imp\n"
            "from clustersim.console import main\n"
            "sys.exit(main())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 130 and r.stderr == "interrupted\n", r.stderr


# ---- M1, M2 -------------------------------------------------------------------------------
def test_json_to_stdout_into_a_pipe(scn: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "clustersim", "predict", str(scn), "-q",
                        "--json", "/dev/stdout"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["algorithms"]


def test_an_empty_calibration_is_refused(scn: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["predict", str(scn), "-q", "--calibration", ""]) == 2
    assert "an empty file name" in capsys.readouterr().err


def test_a_null_strategy_is_named_as_yaml_writes_it(scn: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    """L4: ``--set algorithm.strategy=`` (null) said ``unknown strategy 'None'``."""
    assert main(["predict", str(scn), "-q", "--set", "algorithm.strategy="]) == 2
    err = capsys.readouterr().err
    assert "unknown strategy null (allowed:" in err and "'None'" not in err
