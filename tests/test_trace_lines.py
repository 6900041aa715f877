"""QA 19: a trace's lines are read whole or refused at their line - only a last line cut
short (a rank killed mid-write, or the NUL padding of a trace its rank never closed) is
skipped.  The reader used to stop at the first line that did not decode: a bad line 10 of
1,005 dropped the rest of that rank's trace and ``calibrate`` fitted what was left, exit 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clustersim.errors import InputError
from clustersim.trace import TraceEvent, TraceWriter, read_jsonl


def _trace(tmp_path: Path, n: int = 5) -> Path:
    path = tmp_path / "trace.rank0.jsonl"
    with TraceWriter(path, {"rank": 0}) as w:
        for i in range(n):
            w.write(TraceEvent(0, "worker", "compute", i * 1.0, i + 0.5, "f"))
    return path


def test_a_torn_last_line_is_skipped_and_everything_before_kept(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    full = read_jsonl(path)
    with path.open("a") as fh:
        fh.write('{"actor": 0, "role": "wor')  # killed mid-line
    assert read_jsonl(path) == full
    path.write_bytes(path.read_bytes() + b"\0" * 4096)  # an unclosed TraceFile's padding
    assert read_jsonl(path) == full and len(full[1]) == 5


def test_a_bad_line_in_the_middle_is_refused_at_its_line(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:3], "{oops", *lines[3:]]) + "\n")
    with pytest.raises(InputError) as exc:
        read_jsonl(path)
    assert f"{path}:4" in str(exc.value) and "not a JSON line" in str(exc.value)


def test_a_file_that_is_no_trace_says_so(tmp_path: Path) -> None:
    path = tmp_path / "trace.rank0.jsonl"
    path.write_text("name: a scenario\nplatform: x\n")
    with pytest.raises(InputError, match=r":1: not a JSON Lines trace"):
        read_jsonl(path)


@pytest.mark.parametrize("line, says", [
    ([1, 2], "a trace line is a JSON object"),
    ({"foo": 1}, "unknown field 'foo'"),
    ({"actor": 0}, "missing field 'role'"),
    ({"header": 5}, "'header' must be an object"),
])
def test_a_line_of_the_wrong_shape_names_its_line_and_the_fields(tmp_path: Path, line,
                                                                 says: str) -> None:
    path = _trace(tmp_path)
    with path.open("a") as fh:
        fh.write(json.dumps(line) + "\n")
    n = len(path.read_text().splitlines())
    with pytest.raises(InputError) as exc:
        read_jsonl(path)
    text = str(exc.value)
    assert f"{path}:{n}" in text and says in text and "__init__" not in text, text
