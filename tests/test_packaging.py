"""A regular (non-editable) ``pip install .`` ships ``topologies/`` and ``scenarios/``.

The package is built and installed into a fresh virtual environment (no network: the
dependencies are reused from this interpreter's site-packages through a ``.pth`` line, the
build uses the setuptools at hand) from a copy of the repository, and the installed command is
run from an unrelated directory: a bare scenario name resolves to the shipped scenario, and a
user's scenario there names a shipped platform by its bare name.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # a build and an install: ~30-60 s on a shared machine


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 600):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{cmd}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str], Path]:
    tmp = tmp_path_factory.mktemp("pkg")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
        ".ruff_cache", ".hypothesis", "out", "runs", "realrun-out"))
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], tmp, dict(os.environ))
    py = venv / "bin" / "python"
    purelib = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   tmp, dict(os.environ)).stdout.strip()
    # reuse this interpreter's dependencies (simpy, numpy, rich, plotly, ...) without network;
    # plain path lines: the .pth files there (an editable clustersim) are not read
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    Path(purelib, "_clustersim_test_deps.pth").write_text("\n".join(deps) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    # the ordinary build: pip fetches setuptools for an isolated build, as for any user
    r = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "-q", str(src)], cwd=tmp,
                       env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0 and "satisfies the requirement setuptools" in r.stderr:
        pytest.skip("no package index reachable for the build's setuptools")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    return venv, env, elsewhere


def test_installed_package_is_not_the_checkout(installed):
    venv, env, elsewhere = installed
    r = _run([str(venv / "bin" / "python"), "-c",
              "import clustersim, pathlib; print(pathlib.Path(clustersim.__file__).parent)"],
             elsewhere, env)
    where = Path(r.stdout.strip())
    assert str(where).startswith(str(venv)), where
    shipped = where / "_shipped"
    for kind in ("topologies", "scenarios"):
        assert sorted(p.name for p in (shipped / kind).glob("*.yaml")) == \
            sorted(p.name for p in (ROOT / kind).glob("*.yaml"))


def test_bare_scenario_name_from_another_directory(installed):
    venv, env, elsewhere = installed
    exe = str(venv / "bin" / "clustersim")
    r = _run([exe, "validate", "knl_4253"], elsewhere, env)
    assert "ok: knl_4253" in r.stdout and "4352 devices" in r.stdout
    out = elsewhere / "b.json"
    _run([exe, "predict", "allreduce_crossbar16", "-q", "--set", "benchmark.ranks=[4]",
          "--set", "benchmark.algorithms=[ring]", "--json", str(out)], elsewhere, env)
    rows = json.loads(out.read_text())["rows"]
    assert {r["ranks"] for r in rows} == {4} and len(rows) > 10


def test_user_scenario_names_a_shipped_platform(installed):
    venv, env, elsewhere = installed
    f = elsewhere / "mine.yaml"
    f.write_text("name: mine\nplatform: crossbar16\n"
                 "benchmark: {op: allreduce, algorithms: [ring], ranks: [2], sizes: [1 MiB]}\n")
    r = _run([str(venv / "bin" / "clustersim"), "validate", str(f)], elsewhere, env)
    assert "ok: mine" in r.stdout
    r = subprocess.run([str(venv / "bin" / "clustersim"), "validate", "no_such_scenario"],
                       cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
