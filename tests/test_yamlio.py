"""The YAML loader keeps line numbers and turns syntax errors into InputError."""

import pytest

from clustersim.errors import InputError, did_you_mean, format_path
from clustersim.scenario.yamlio import line_of, load_yaml


def test_lines_of_nested_keys(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("a: 1\nb:\n  c: 2\n  d:\n    - x\n    - {e: 3}\n")
    raw = load_yaml(f)
    assert raw == {"a": 1, "b": {"c": 2, "d": ["x", {"e": 3}]}}
    assert line_of(raw, ("a",)) == 1
    assert line_of(raw, ("b", "c")) == 3
    assert line_of(raw, ("b", "d", 1)) == 6
    assert line_of(raw, ("b", "d", 1, "e")) == 6
    assert line_of(raw, ("b", "missing")) == 2


def test_syntax_error_names_file_and_line(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("a: 1\nb: [1, 2\nc: 3\n")
    with pytest.raises(InputError) as ei:
        load_yaml(f)
    assert ei.value.file == str(f)
    assert ei.value.line is not None and ei.value.line >= 2
    assert "YAML syntax error" in str(ei.value)


def test_duplicate_key_is_an_error(tmp_path):
    f = tmp_path / "dup.yaml"
    f.write_text("a: 1\na: 2\n")
    with pytest.raises(InputError, match="duplicate key 'a'") as ei:
        load_yaml(f)
    assert ei.value.line == 2


def test_missing_file():
    with pytest.raises(InputError, match="not found"):
        load_yaml("/nonexistent/x.yaml")


def test_error_formatting():
    e = InputError("must be positive", file="c.yaml", path=("platform", "links", 3, "bw"),
                   line=41)
    assert str(e) == "c.yaml:41, platform.links[3].bw: must be positive"
    assert format_path(("a", 0, "b")) == "a[0].b"
    assert "k80" in did_you_mean("k8O", ["k80", "v100", "a100"])
    assert did_you_mean("zzzzzz", ["k80"]) == ""
