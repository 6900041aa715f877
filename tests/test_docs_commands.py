"""Every command shown in README.md and docs/*.md (fenced ``bash`` blocks) runs and succeeds.

Commands run in order, one shell each, in a temporary copy of the repository (so what they
write - out.json, profile.yaml, runs/ - stays out of the checkout), with this interpreter's
``bin`` first on PATH.  Skipped, with the reason: lines with a placeholder (``<...>``, which the
docs use for "your own file") and the install lines (``pip install``: tests/test_packaging.py
installs the package for real).  Commands that take long are marked ``slow``, those that
start MPI ranks ``mpi``; a command that reads what a slow one wrote carries its marks.  A
command under ``timeout`` is one the docs say ends that way: exit 124 is its success.  An
``explore`` command serves on a port the system picks (``--port 0``) instead of the one shown, so
that two suites on one machine do not both want 8050.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

PLACEHOLDER = re.compile(r"<[^<>\s]+>")
MPI = re.compile(r"mpiexec|--real\b|bench_realrun")
SLOW = re.compile(r"mpiexec|--real\b|calibrate|bench/|whatif|knl_4253|fabrics_")


def _commands(path: Path) -> list[str]:
    """Commands of the fenced bash blocks of one file (continuation lines joined)."""
    out = []
    for block in re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", path.read_text(), re.M | re.S):
        text = re.sub(r"\\\n\s*", " ", block)
        for line in text.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                out.append(line.strip())
    return out


def _cases() -> list:
    cases = []
    writes: dict[str, list] = {}  # file a command writes -> that command's marks
    for doc in DOCS:
        for k, cmd in enumerate(_commands(doc)):
            marks = []
            if MPI.search(cmd):
                marks.append(pytest.mark.mpi)
            if SLOW.search(cmd):
                marks.append(pytest.mark.slow)
            for f, m in writes.items():
                if f in cmd.split("#")[0].split():
                    marks += [x for x in m if x not in marks]
            for f in re.findall(r"--out\s+(\S+)", cmd):
                writes[f] = marks
            reason = None
            if PLACEHOLDER.search(cmd.split("#")[0]):
                reason = "a placeholder for the reader's own file"
            elif "pip install" in cmd:
                reason = "installs the package: tests/test_packaging.py does that for real"
            if reason:
                marks.append(pytest.mark.skip(reason=reason))
            cases.append(pytest.param(cmd, marks=marks, id=f"{doc.name}:{k}:{cmd[:50]}"))
    return cases


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("docs") / "repo"
    shutil.copytree(ROOT, d, ignore=shutil.ignore_patterns(
        ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
        ".ruff_cache", ".hypothesis", "out", "runs", "realrun-out"))
    return d


def test_the_docs_show_commands():
    cmds = [c for doc in DOCS for c in _commands(doc)]
    assert len(cmds) > 20
    assert any("knl_4253" in c for c in cmds)


def _any_port(cmd: str) -> str:
    """``cmd`` with an ``explore`` serving on any free port (``--port 0``)."""
    if "clustersim explore" not in cmd:
        return cmd
    cmd = re.sub(r"--port\s+\d+", "--port 0", cmd)
    if "--port" not in cmd.split("#")[0]:
        cmd = cmd.replace("clustersim explore", "clustersim explore --port 0", 1)
    return cmd


def test_explore_commands_serve_on_any_port():
    assert _any_port("timeout 9 clustersim explore a.yaml  # --port") == (
        "timeout 9 clustersim explore --port 0 a.yaml  # --port")
    assert _any_port("clustersim explore b.yaml --port 8051") == "clustersim explore b.yaml --port 0"
    assert _any_port("clustersim sweep c.yaml --port 1") == "clustersim sweep c.yaml --port 1"


@pytest.mark.parametrize("cmd", _cases())
def test_documented_command_runs(cmd: str, workdir: Path):
    cmd = _any_port(cmd)
    env = dict(os.environ, PYTHONPATH=str(workdir), CLUSTERSIM_JOBS="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    r = subprocess.run(["bash", "-c", cmd], cwd=workdir, env=env, capture_output=True,
                       text=True, timeout=900)
    ok = (0, 124) if cmd.startswith("timeout ") else (0,)
    assert r.returncode in ok, f"{cmd}\nexit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    assert "Traceback" not in r.stderr
