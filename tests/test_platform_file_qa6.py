"""QA 6a M5: an error in a platform file's ``node:`` field is reported at the platform
file's own line when the scenario overrides *another* field of ``node``.

scenarios/theano_mpi_alexnet.yaml names topologies/theano_mpi_k80.yaml and sets
``platform.node.intersocket`` itself; the overrides merge into the file's ``node`` key by key,
so ``node.sockets`` and ``node.pcie`` stay the file's values.  Before, the blame looked only at
the first key of the error's path (``node``, which the scenario gives), and the message sent
the user to the scenario's ``node:`` line, which holds neither value.  Each case runs the real
CLI entry point: one message, the file, its line and the field, exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _copies(tmp_path: Path, file_edit: tuple[str, str] | None = None,
            scenario_edit: tuple[str, str] | None = None) -> Path:
    """alex.yaml (theano_mpi_alexnet, its platform file named by path) beside a copy of
    theano_mpi_k80.yaml, each with one text replacement applied (asserted to apply)."""
    scn = (ROOT / "scenarios" / "theano_mpi_alexnet.yaml").read_text()
    scn = scn.replace("  file: theano_mpi_k80\n", "  file: theano_mpi_k80.yaml\n")
    topo = (ROOT / "topologies" / "theano_mpi_k80.yaml").read_text()
    assert "file: theano_mpi_k80.yaml" in scn and "\n    intersocket:" in scn
    for edit, text in ((file_edit, "topo"), (scenario_edit, "scn")):
        if edit is None:
            continue
        old, new = edit
        if text == "topo":
            assert topo.count(old) == 1
            topo = topo.replace(old, new)
        else:
            assert scn.count(old) == 1
            scn = scn.replace(old, new)
    (tmp_path / "theano_mpi_k80.yaml").write_text(topo)
    (tmp_path / "alex.yaml").write_text(scn)
    return tmp_path / "alex.yaml"


def _line(path: Path, start: str) -> int:
    """1-based number of the one line of ``path`` that starts with ``start``."""
    hits = [i for i, t in enumerate(path.read_text().splitlines(), 1) if t.startswith(start)]
    assert len(hits) == 1, hits
    return hits[0]


def _validate(capsys, scenario: Path, monkeypatch) -> tuple[int, str]:
    monkeypatch.chdir(scenario.parent)  # files are shown relative to the working directory
    code = main(["validate", scenario.name])
    out, err = capsys.readouterr()
    return code, err


@pytest.mark.parametrize(("old", "new", "field", "says"), [
    ("  sockets: 2\n", "  sockets: two\n", "sockets", "sockets must be an integer"),
    ("  pcie: pcie3x16\n", "  pcie: pcie3x8\n", "pcie", "unknown link class 'pcie3x8'"),
], ids=["sockets", "pcie"])
def test_a_node_field_of_the_file_is_reported_at_the_files_line(
        tmp_path: Path, capsys, monkeypatch, old: str, new: str, field: str, says: str) -> None:
    scn = _copies(tmp_path, file_edit=(old, new))
    line = _line(tmp_path / "theano_mpi_k80.yaml", new.rstrip("\n"))
    code, err = _validate(capsys, scn, monkeypatch)
    assert code == 2
    assert err.count("error:") == 1 and "Traceback" not in err
    assert err.startswith(f"error: theano_mpi_k80.yaml:{line}, platform.node.{field}: {says}")
    assert err.rstrip().endswith("(platform file of scenario alex.yaml)")
    # the scenario's node: line (the old, wrong place) is not named
    assert f"alex.yaml:{_line(scn, '  node:')}" not in err


def test_the_scenarios_own_node_override_is_still_reported_at_the_scenario(
        tmp_path: Path, capsys, monkeypatch) -> None:
    """The field the scenario gives (node.intersocket.bandwidth) stays the scenario's."""
    scn = _copies(tmp_path, scenario_edit=("bandwidth: 8.3 GB/s", "bandwidth: fast"))
    code, err = _validate(capsys, scn, monkeypatch)
    assert code == 2 and err.count("error:") == 1
    line = _line(scn, "    intersocket: {bandwidth: fast")
    assert err.startswith(f"error: alex.yaml:{line}, platform.node.intersocket.bandwidth: ")
    assert "platform file of scenario" not in err


def test_a_field_outside_node_is_still_the_files(tmp_path: Path, capsys, monkeypatch) -> None:
    scn = _copies(tmp_path, file_edit=("device: k80\n", "device: k81\n"))
    code, err = _validate(capsys, scn, monkeypatch)
    assert code == 2
    line = _line(tmp_path / "theano_mpi_k80.yaml", "device: k81")
    assert err.startswith(f"error: theano_mpi_k80.yaml:{line}, platform.device: ")
    assert err.rstrip().endswith("(platform file of scenario alex.yaml)")


def test_the_blame_walks_the_whole_path() -> None:
    """The rule on its own: a path the overrides hold down to its end, or to a value that
    replaced the file's (a list or scalar), is the scenario's; one that leaves them is the
    file's; the platform as a whole is the scenario's only when it gave something."""
    from clustersim.scenario.platform_file import _given_in_scenario

    over = {"node": {"intersocket": {"bandwidth": "8 GB/s"}}, "links": [{"bandwidth": 1}]}
    assert _given_in_scenario(over, ("node", "intersocket", "bandwidth"))
    assert _given_in_scenario(over, ("node", "intersocket"))
    assert not _given_in_scenario(over, ("node", "sockets"))
    assert not _given_in_scenario(over, ("node", "intersocket", "latency"))
    assert not _given_in_scenario(over, ("device",))
    assert _given_in_scenario(over, ("links", 0, "bandwidth"))  # a list replaces the file's
    assert _given_in_scenario(over, ())
    assert not _given_in_scenario({}, ())
