"""``clustersim sweep --mpi`` started without ``mpiexec`` (an MPICH singleton that spawns its
workers) must end like any command: exit 0, and the job script that ran it goes on.

The console script ends by ``os._exit`` (clustersim/_exit.py), which skips MPI_Finalize
(mpi4py runs it at the interpreter's end); the mpiexec the singleton had started then
killed the whole process group - the calling script with SIGKILL, so every later step of a
batch job was lost (QA, 2026-11-28).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_sweep_executors import SMALL


@pytest.mark.mpi
def test_a_singleton_mpi_sweep_leaves_its_job_script_running(tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    bindir = Path(sys.executable).parent
    script = bindir / "clustersim"
    if not script.exists() or not (shutil.which("mpiexec", path=str(bindir))
                                   or shutil.which("mpiexec")):
        pytest.skip("needs the clustersim console script and mpiexec")
    (tmp_path / "s.yaml").write_text(SMALL)
    job = tmp_path / "job.sh"
    job.write_text(f"""#!/bin/bash
cd {tmp_path}
{script} sweep s.yaml --mpi --out out -q --no-cache
echo "rc=$?" > after.log
""")
    job.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    env = {k: v for k, v in env.items() if not k.startswith(("PMI", "HYD", "OMPI"))}
    proc = subprocess.run([str(job)], env=env, capture_output=True, text=True, timeout=300,
                          start_new_session=True)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert (tmp_path / "after.log").read_text().strip() == "rc=0"
    assert (tmp_path / "out" / "sweep.csv").exists()
