"""``--mpi`` under a plain ``mpiexec -n N python -m clustersim sweep`` (no ``-m
mpi4py.futures``): every rank ran the whole sweep, each with a pool of its own, all writing
the same ``--out`` (exit 0).  Now every rank refuses at once (exit 2), rank 0 with the
command to use, and nothing is written; under ``-m mpi4py.futures`` rank 0 still drives and
the other ranks serve."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_sweep_executors import SMALL

pytest.importorskip("mpi4py")
pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parent.parent


def _mpiexec(tmp_path: Path, *middle: str, out: Path) -> subprocess.CompletedProcess:
    mpiexec = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or "mpiexec"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPIR_CVAR_POLLS_BEFORE_YIELD": "1",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    (tmp_path / "s.yaml").write_text(SMALL)
    cmd = [mpiexec, "-n", "2", sys.executable, *middle, "-m", "clustersim", "sweep",
           str(tmp_path / "s.yaml"), "--mpi", "-q", "--out", str(out)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, start_new_session=True)


def test_plain_mpiexec_is_refused_on_every_rank(tmp_path: Path) -> None:
    out = tmp_path / "o"
    proc = _mpiexec(tmp_path, out=out)
    assert proc.returncode == 2, proc.stderr[-2000:]
    # once, from rank 0: every rank exits 2, but N copies of the message would bury it
    assert proc.stderr.count("--mpi: mpiexec started 2 copies of this command without "
                             "mpi4py.futures") == 1
    assert proc.stderr.count("mpiexec -n N python -m mpi4py.futures -m clustersim sweep") == 1
    assert "Traceback" not in proc.stderr and proc.stdout == "" and not out.exists()


def test_under_mpi4py_futures_rank_0_drives(tmp_path: Path) -> None:
    out = tmp_path / "o"
    proc = _mpiexec(tmp_path, "-m", "mpi4py.futures", out=out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (out / "sweep.csv").read_text().count("\n") == 5  # the header and 4 points
