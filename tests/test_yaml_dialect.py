"""QA 10 L3, L5, L7: what a plain YAML value means, non-JSON tags, rates without a unit.

* L3: input files follow YAML 1.2's core schema, not PyYAML's YAML 1.1 - ``1:04`` had run as
  64, ``optimizer: no`` said "unknown optimizer 'False'", ``0o100`` was a string while
  ``0x40`` was a number, dates became date objects.
* L5: ``!!set`` (and ``!!omap``, ``!!pairs``, ``!!binary``, ``!!timestamp``) are refused at
  their line; a set's message had differed from run to run (string-hash order).
* L7: a bandwidth or compute rate written without its unit is refused in the files a person
  writes (``bandwidth: 1.4`` had predicted 6,027,000,045 ms per iteration, exit 0), while the
  program's own numbers (sampled values, profiles, Python-built platforms) still work.

Each refusal: one line naming file:line, the field and what to write; exit 2; no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.scenario.yamlio import load_yaml_text

ROOT = Path(__file__).resolve().parents[1]
MLP = ROOT / "scenarios" / "real_bsp_mlp.yaml"
XBAR = ROOT / "scenarios" / "allreduce_crossbar16.yaml"
LOCALHOST = ROOT / "topologies" / "localhost.yaml"
UNITS = "like '100 Gb/s', '12.5 GB/s', '10 Gbps'"
JSON_ONLY = ("input files hold JSON types only (strings, numbers, true/false, null, lists, "
             "mappings)")


def _copy(src: Path, dest: Path, *subs: tuple[str, str]) -> Path:
    text = src.read_text().replace("topologies/localhost.yaml", str(LOCALHOST))
    for old, new in subs:
        assert old in text, old
        text = text.replace(old, new)
    dest.write_text(text)
    return dest


def _line(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Exit 2, no traceback, one line on stderr: that line."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    return err.rstrip("\n")


# -- L3: YAML 1.2 plain scalars ---------------------------------------------------------------
@pytest.mark.parametrize("text,value", [
    ("0o17", 15), ("0x1F", 31), ("010", 10), ("1:04", "1:04"), ("1:30.5", "1:30.5"),
    ("2026-11-29", "2026-11-29"), ("2026-11-29 10:00:00", "2026-11-29 10:00:00"),
    ("yes", "yes"), ("no", "no"), ("on", "on"), ("Off", "Off"), ("y", "y"), ("n", "n"),
    ("true", True), ("TRUE", True), ("False", False), ("null", None), ("=", "="),
    ("0b101", "0b101"), ("1e9", 1e9), ("1_000", 1000), ("+12", 12),
])
def test_plain_scalars_follow_yaml_1_2(text, value):
    got = load_yaml_text(f"x: {text}\n")["x"]
    assert got == value and type(got) is type(value), (text, got)


def test_yaml_1_1_boolean_words_are_string_keys_too():
    assert load_yaml_text("on: 1\nno: 2\n") == {"on": 1, "no": 2}


def test_base60_number_is_refused_with_the_rule(tmp_path, capsys):
    scn = _copy(MLP, tmp_path / "s.yaml", ("batch_per_worker: 64", "batch_per_worker: 1:04"))
    err = _refused(capsys, ["validate", str(scn)])
    assert err == (f"error: {scn}:{_line(scn, '1:04')}, workload.batch_per_worker: must be a "
                   f"whole number, not a string 1:04 (YAML 1.2 has no base-60 numbers: '1:04' "
                   f"is a string)")


def test_no_is_the_string_no(tmp_path, capsys):
    scn = _copy(MLP, tmp_path / "s.yaml", ("optimizer: momentum", "optimizer: no"))
    err = _refused(capsys, ["validate", str(scn)])
    assert err == (f"error: {scn}:{_line(scn, 'optimizer: no')}, workload.optimizer: unknown "
                   f"optimizer 'no' (allowed: adam, momentum, nesterov, sgd)")


def test_boolean_field_given_yes_names_the_rule(tmp_path, capsys):
    scn = _copy(XBAR, tmp_path / "s.yaml", ("network: {overhead: 0 us, efficiency: 1.0}",
                                            "network: {overhead: 0 us, transports: yes}"))
    err = _refused(capsys, ["validate", str(scn)])
    assert err == (f"error: {scn}:{_line(scn, 'transports: yes')}, network.transports: must be "
                   f"true or false (YAML 1.2: yes/no/on/off are strings), not 'yes'")


def test_platform_boolean_given_no_names_the_rule(tmp_path, capsys):
    plat = _copy(LOCALHOST, tmp_path / "plat.yaml",
                 ("  layout: crossbar\n", "  layout: crossbar\n  gpudirect: no\n"))
    scn = _copy(MLP, tmp_path / "s.yaml", (str(LOCALHOST), str(plat)))
    err = _refused(capsys, ["validate", str(scn)])
    assert err == (f"error: {plat}:{_line(plat, 'gpudirect')}, platform.node.gpudirect: "
                   f"gpudirect must be true or false (YAML 1.2: yes/no/on/off are strings), "
                   f"not 'no' (platform file of scenario {scn})")


@pytest.mark.parametrize("text,words", [
    ("!!int 1:04", "!!int '1:04' is not a YAML 1.2 integer (42, -7, 0o17, 0x1F)"),
    ("!!bool yes", "!!bool 'yes' is not a YAML 1.2 boolean (true or false)"),
    ("!!float 1:30", "!!float '1:30' is not a YAML 1.2 number (1.5, 1e9, .5)"),
])
def test_explicit_scalar_tags_take_only_yaml_1_2_forms(tmp_path, capsys, text, words):
    scn = _copy(MLP, tmp_path / "s.yaml", ("seed: 0}", f"seed: {text}}}"))
    err = _refused(capsys, ["validate", str(scn)])
    assert err == f"error: {scn}:{_line(scn, 'seed:')}, run.seed: {words}"


# -- L5: non-JSON types ----------------------------------------------------------------------
@pytest.mark.parametrize("value,what,instead", [
    ("!!set {a, b}", "!!set values (sets, which have no order)", "a list, like [a, b]"),
    ("!!omap [{a: 1}]", "!!omap values (ordered mappings)",
     "a mapping, like {a: 1, b: 2} (its order is kept)"),
    ("!!pairs [{a: 1}]", "!!pairs values (lists of pairs)",
     "a mapping, like {a: 1, b: 2}, or a list of mappings"),
    ("!!binary AA==", "!!binary values (binary data)", "a string"),
    ("!!timestamp 2026-11-29", "!!timestamp values (dates and times)",
     "a string, like '2026-11-29'"),
])
def test_non_json_tags_are_refused_at_their_line(tmp_path, capsys, value, what, instead):
    scn = _copy(MLP, tmp_path / "s.yaml", ("optimizer: momentum", f"optimizer: {value}"))
    err = _refused(capsys, ["validate", str(scn)])
    assert err == (f"error: {scn}:{_line(scn, 'optimizer:')}, workload.optimizer: {what} are "
                   f"not read: {JSON_ONLY}; write {instead}")


def test_set_message_is_the_same_whatever_the_hash_seed(tmp_path):
    """The QA's one non-deterministic output: the set's items in string-hash order."""
    scn = _copy(MLP, tmp_path / "s.yaml",
                ("optimizer: momentum", "optimizer: !!set {alpha, beta, gamma, delta, eps}"))
    outs = []
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-m", "clustersim", "validate", str(scn)],
                              capture_output=True, env=env, cwd=tmp_path, timeout=120)
        assert proc.returncode == 2 and b"Traceback" not in proc.stderr, proc.stderr
        outs.append(proc.stdout + b"\0" + proc.stderr)
    assert len(set(outs)) == 1, outs
    assert b"!!set values" in outs[0]


# -- L7: a rate needs its unit ---------------------------------------------------------------
def test_bare_bandwidth_in_a_platform_file_is_refused(tmp_path, capsys):
    """The QA's case: predict exits 2 and writes nothing (it had predicted 6e9 ms)."""
    plat = _copy(LOCALHOST, tmp_path / "plat.yaml", ("bandwidth: 1.4 GB/s", "bandwidth: 1.4"))
    scn = _copy(MLP, tmp_path / "s.yaml", (str(LOCALHOST), str(plat)))
    out = tmp_path / "out.json"
    err = _refused(capsys, ["predict", str(scn), "-q", "--json", str(out)])
    assert err == (f"error: {plat}:{_line(plat, 'bandwidth: 1.4')}, "
                   f"catalog.links.localhost_shm.bandwidth: a bandwidth needs its unit, "
                   f"{UNITS}; not the bare number 1.4 (platform file of scenario {scn})")
    assert not out.exists()


@pytest.mark.parametrize("old,new,path,words", [
    ("link: {bandwidth: 10 Gb/s,", "link: {bandwidth: 1.25e9,", "platform.link.bandwidth",
     f"a bandwidth needs its unit, {UNITS}; not the bare number 1.25e+09"),
    ("link: {bandwidth: 10 Gb/s,", "link: {bandwidth: '1250',", "platform.link.bandwidth",
     f"a bandwidth needs its unit, {UNITS}; not the bare number '1250'"),
    ("device: v100 ", "device: {like: v100, peak: 14e12} ", "platform.device.peak",
     "a compute rate needs its unit, like '6.1 TFLOP/s', '2.8 TFLOPS', '450 GFLOPs'; not the "
     "bare number 1.4e+13"),
    ("network: {", "catalog: {devices: {fast: {like: v100, mem_bw: 900}}}\nnetwork: {",
     "catalog.devices.fast.mem_bw", f"a bandwidth needs its unit, {UNITS}; not the bare "
     f"number 900"),
])
def test_bare_rates_in_a_scenario_are_refused(tmp_path, capsys, old, new, path, words):
    scn = _copy(XBAR, tmp_path / "s.yaml", (old, new))
    err = _refused(capsys, ["validate", str(scn)])
    assert err == f"error: {scn}:{_line(scn, new.split(':')[0] + ':')}, {path}: {words}"


def test_bare_bandwidth_given_with_set_is_refused(capsys):
    err = _refused(capsys, ["validate", str(XBAR), "--set", "platform.link.bandwidth=1.4"])
    assert err == (f"error: {XBAR} (--set platform.link.bandwidth=1.4), "
                   f"platform.link.bandwidth: a bandwidth needs its unit, {UNITS}; not the "
                   f"bare number 1.4")


def test_bandwidth_with_a_unit_given_with_set_is_read(capsys):
    assert main(["validate", str(XBAR), "--set", "platform.link.bandwidth=25 Gb/s"]) == 0


def test_the_programs_own_numbers_still_work(tmp_path, capsys):
    """Sampled values are set as floats (bytes/s) before the scenario is parsed; platforms
    built in Python and the unit parsers take plain SI numbers; a calibration profile (machine
    written) keeps reading bare numbers, as older ones may hold."""
    from clustersim.calibration.profile import load_profile
    from clustersim.catalog import builtin_catalog
    from clustersim.platform.describe import build_platform
    from clustersim.units import parse_bandwidth

    scn = _copy(XBAR, tmp_path / "s.yaml", ("run: {", "uncertain:\n  platform.link.bandwidth: "
                                                    "{uniform: [8 Gb/s, 12 Gb/s]}\nrun: {"))
    assert main(["validate", str(scn)]) == 0, capsys.readouterr().err
    plat = build_platform({"topology": "star", "hosts": 2, "device": "k80",
                           "link": {"bandwidth": 1.25e9, "latency": 1e-6}}, builtin_catalog())
    assert plat.num_devices == 2
    assert parse_bandwidth(1.4e9) == 1.4e9
    prof = tmp_path / "p.yaml"
    prof.write_text("format: clustersim-calibration/1\n"
                    "links: {localhost_shm: {bandwidth: 4000000000.0, latency: 2.0e-06}}\n")
    assert load_profile(prof).links["localhost_shm"]["bandwidth"] == 4e9
