"""Hostile and odd input ends in one clear error (exit 2, file, line, field), fast.

Each test is one defect found by hand or by tests/test_fuzz_inputs.py; the figures in the
names (8 alias levels, 300 brackets, 2**63) are the inputs that used to hang or crash.
"""

import time
from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.errors import InputError
from clustersim.scenario.yamlio import MAX_DEPTH, MAX_VALUES, load_yaml, load_yaml_text

ROOT = Path(__file__).resolve().parents[1]
XBAR = ROOT / "scenarios" / "allreduce_crossbar16.yaml"
FABRIC = ROOT / "scenarios" / "fabrics_resnet50.yaml"


def run(capsys, *argv):
    code = main(["validate", *map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, err.strip()


def alias_bomb(levels: int) -> str:
    """A scenario whose variants[].set nests ``levels`` aliases of 9 (9**levels values)."""
    lines = [XBAR.read_text(), "bomb0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"bomb{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]"
              for i in range(1, levels + 1)]
    lines.append(f"variants: [{{label: x, set: {{label: *a{levels}}}}}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("levels", [6, 8])
def test_alias_bomb_is_refused_fast_with_its_line(tmp_path, capsys, levels):
    f = tmp_path / "bomb.yaml"
    f.write_text(alias_bomb(levels))
    t0 = time.perf_counter()
    code, err = run(capsys, f)
    assert time.perf_counter() - t0 < 5
    assert code == 2 and len(err) < 1000, err
    assert f"{f}:" in err and f"{MAX_VALUES:,} values" in err


def test_alias_expansion_counts_exactly():
    # 9**5 = 59,049 values (+ the 9 lists of each level) stay under the bound and load
    text = "a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 5))
    raw = load_yaml_text(text)
    assert len(raw["a4"]) == 9 and raw["a4"][0][0][0] == raw["a1"]
    with pytest.raises(InputError, match="expands"):
        load_yaml_text(text + "a5: [" + ", ".join(["*a4"] * 9) + "]\n")


def test_deep_nesting_300_levels(tmp_path, capsys):
    f = tmp_path / "deep.yaml"
    f.write_text("label: " + "[" * 300 + "1" + "]" * 300 + "\n")
    code, err = run(capsys, f)
    assert code == 2 and f"{f}:1" in err and f"more than {MAX_DEPTH} levels" in err
    ok = "a: " + "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1) + "\n"
    assert load_yaml_text(ok)["a"] is not None


@pytest.mark.parametrize("text, words, line", [
    ("a: 1\n\tb: 2\n", ["tab"], 2),
    ("a: 1\nb: \x00\x01\x02\n", ["control character"], 2),
    ("", ["empty"], None),
    ("# only a comment\n\n", ["empty"], None),
    ("a: 1\nb: 2\na: 3\n", ["duplicate key 'a'"], 3),
    ("a: .nan\n", ["not finite"], 1),
    ("a: [1, -.inf]\n", ["not finite"], 1),
    ("a: 9223372036854775808\n", ["out of range"], 1),
    ("a: *nope\n", ["alias"], 1),
])
def test_odd_files(tmp_path, text, words, line):
    f = tmp_path / "odd.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as ei:
        load_yaml(f)
    assert ei.value.file == str(f) and ei.value.line == line, str(ei.value)
    for w in words:
        assert w in str(ei.value)


def test_bom_crlf_and_yaml12_numbers_are_read():
    raw = load_yaml_text("\ufeffa: 1e9\r\nb: 1_000\r\nc: 9223372036854775807\r\nd: 6.02E23\r\n")
    assert raw == {"a": 1e9, "b": 1000, "c": 2**63 - 1, "d": 6.02e23}
    assert isinstance(raw["a"], float)


def test_binary_file_and_non_utf8(tmp_path, capsys):
    f = tmp_path / "junk.yaml"
    f.write_bytes(b"name: x\n\xff\xfe\x00junk")
    code, err = run(capsys, f)
    assert code == 2 and f"{f}:2" in err and "UTF-8" in err


@pytest.mark.parametrize("value, words", [
    ("/", ["folder"]),
    ("/etc/passwd", ["no .yaml or .yml name: only YAML files are read"]),  # QA 19 L2
    ("/etc/hostname.txt", ["must be a YAML file"]),
    ("../../../../../../etc/hosts", ["only YAML files are read"]),
    ("nope", ["not found", "shipped"]),
    ("../scenarios/knl_4253.yaml", ["platform.topology", "knl_4253.yaml",
                                    "platform file of scenario"]),
])
def test_platform_paths(tmp_path, capsys, value, words):
    code, err = run(capsys, XBAR, "--set", f"platform={value}")
    assert code == 2, err
    for w in words:
        assert w in err, err
    assert "root:" not in err  # never a foreign file's contents


def test_platform_file_errors_have_file_line_field_and_scenario(tmp_path, capsys):
    topo = tmp_path / "t.yaml"
    topo.write_text("topology: star\nhosts: 4\ndevice: v100\nlink: eth10g\nnode: {nics: -3}\n")
    scn = tmp_path / "s.yaml"
    scn.write_text("platform: t\nbenchmark: {op: allreduce, ranks: [2], sizes: [4 B]}\n")
    code, err = run(capsys, scn)
    assert code == 2
    assert err.startswith(f"error: {topo}:5, platform.node.nics:"), err
    assert f"scenario {scn}" in err and ">= 0 and <= 64" in err


@pytest.mark.parametrize("scenario, setting, words", [
    (XBAR, "run.iterations=9223372036854775808", ["out of range"]),
    (XBAR, "run.iterations=1e9", ["run.iterations", "<= 1,000,000"]),
    (XBAR, "platform.hosts=1e12", ["platform.hosts", "<= 100,000"]),
    (FABRIC, "platform.node.sockets=1e12", ["platform.node.sockets", "<= 64"]),
    (FABRIC, "platform.node.nics=9223372036854775807", ["platform.node.nics", "<= 64"]),
    (FABRIC, "platform.oversubscription=1e308", ["platform.oversubscription", "1000"]),
    (FABRIC, "platform.node.devices=1025", ["platform.node.devices", "<= 1024"]),
    (FABRIC, "platform.hosts_per_leaf=10000", ["platform:", "131,072 devices"]),
    (XBAR, "platform.hosts=.inf", ["not finite"]),
    (XBAR, "network.efficiency=.nan", ["not finite"]),
    (XBAR, "run.seed=[1", ["YAML syntax error"]),
    (XBAR, "run.seed=-1", ["run.seed", ">= 0"]),
])
def test_huge_and_bad_values_from_set(capsys, scenario, setting, words):
    t0 = time.perf_counter()
    code, err = run(capsys, scenario, "--set", setting)
    assert time.perf_counter() - t0 < 10
    assert code == 2, err
    # the value came from the command line: the error says so instead of a file line
    assert f"{scenario} (--set {setting})" in err, err
    for w in words:
        assert w in err, err


def test_set_key_too_deep(capsys):
    code, err = run(capsys, XBAR, "--set", "a" + ".a" * 3000 + "=1")
    assert code == 2 and "at most 12 parts" in err and "--set a.a.a" in err, err


def test_set_accepts_yaml12_numbers(capsys):
    code, err = run(capsys, XBAR, "--set", "run.iterations=1e2")
    assert code == 0, err
    # and it is the integer 100, not a string or a float (audit J L3)
    from clustersim.scenario.schema import load_scenario

    assert load_scenario(XBAR, sets=["run.iterations=1e2"]).run.iterations == 100


def test_platform_too_large_in_total(capsys):
    code, err = run(capsys, FABRIC, "--set", "platform.hosts_per_leaf=100000")
    assert code == 2 and "131,072 devices" in err and "--set" in err, err


def test_hidden_layer_of_huge_width(tmp_path, capsys):
    from clustersim.workload.loader import model_from_dict

    with pytest.raises(InputError, match="<= 1e"):
        model_from_dict({"input": [4], "layers": [{"kind": "fc", "out": 10**400}]})
    with pytest.raises(InputError, match="finite"):
        model_from_dict({"params": "1e400", "fwd_flops": 1})


def test_explicit_node_host_string(tmp_path, capsys):
    scn = tmp_path / "s.yaml"
    scn.write_text(
        "platform:\n  topology: explicit\n  device: v100\n  link: eth10g\n"
        "  nodes:\n    - {name: a, host: 1 B}\n    - {name: sw}\n  links: [[a, sw]]\n"
        "benchmark: {op: allreduce, ranks: [1], sizes: [4 B]}\n")
    code, err = run(capsys, scn)
    assert code == 2 and f"{scn}:6, platform.nodes[0].host" in err, err
