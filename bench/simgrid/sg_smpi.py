"""SimGrid's side of the comparison: build ``coll_bench.c`` with smpicc and run it under smpirun.

The configuration turns SMPI into a pure max-min flow model, the model clustersim implements:

* ``network/model:CM02`` with ``latency-factor`` and ``bandwidth-factor`` 1 and ``weight-S`` 0:
  no slow-start or size-dependent corrections (SMPI's default model has piecewise factors
  fitted on a real machine); ``TCP-gamma`` huge so that the TCP window bound
  ``gamma / (2 * route latency)`` never limits a flow; ``crosstraffic`` off (no 5 % reverse
  flow for acknowledgements).
* ``smpi/simulate-computation:no``: the application's own CPU time (and the reductions SMPI
  really performs) costs nothing; ``smpi/os``, ``or``, ``ois`` 0 (no per-message software
  overhead), ``smpi/wtime``, ``test``, ``iprobe`` 0 (no injected delays).
* ``smpi/auto-shared-malloc-thresh`` is *not* used: SMPI's collectives allocate their
  temporary buffers with ``new[]``, so memory grows as ranks x size; callers cap that.

What is left that clustersim does not model: SMPI adds a 16-byte envelope to every message
(``payload_size = size + 16`` in smpi_request.cpp), 12.8 ns per message at 10 Gb/s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sg_platforms import SgPlatform, hostfile, platform_xml

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "coll_bench.c"

CONFIG = (
    "network/model:CM02", "network/latency-factor:1", "network/bandwidth-factor:1",
    "network/weight-S:0", "network/TCP-gamma:1e20", "network/crosstraffic:0",
    "smpi/simulate-computation:no", "smpi/host-speed:1Pf",
    "smpi/os:0:0:0", "smpi/or:0:0:0", "smpi/ois:0:0:0",
    "smpi/wtime:0", "smpi/test:0", "smpi/iprobe:0", "smpi/privatization:no",
)

#: Extra settings per (op, algorithm): redbcast calls the *selected* reduce and bcast, which
#: by default are SMPI's flat ireduce and binomial bcast; pin both to binomial trees.  lr
#: calls redbcast when count < ranks.
_BINOMIAL = ("smpi/reduce:binomial", "smpi/bcast:binomial_tree")
EXTRA: dict[tuple[str, str], tuple[str, ...]] = {
    ("allreduce", "redbcast"): _BINOMIAL,
    ("allreduce", "lr"): _BINOMIAL,
}

SELECTORS = ("mpich", "ompi")
SMPI_OP = {"p2p": None, "allreduce": "allreduce", "reduce": "reduce", "bcast": "bcast",
           "allgather": "allgather", "alltoall": "alltoall"}


class SimGridMissing(RuntimeError):
    """smpicc/smpirun are not installed (``apt-get install libsimgrid-dev``)."""


def simgrid_version() -> str:
    out = subprocess.run(["smpirun", "-version"], capture_output=True, text=True, timeout=30)
    return (out.stdout + out.stderr).strip().splitlines()[0] if out.returncode == 0 else "?"


def build(workdir: Path, source: Path = SOURCE) -> Path:
    """Compile a benchmark (``source``: the collectives' by default) once per run (a few
    seconds); the executable is named after the source."""
    if not shutil.which("smpicc") or not shutil.which("smpirun"):
        raise SimGridMissing("smpicc/smpirun not found: apt-get install libsimgrid-dev")
    exe = workdir / source.stem
    subprocess.run(["smpicc", "-O2", "-o", str(exe), str(source)], check=True,
                   capture_output=True, text=True, timeout=120)
    return exe


#: ``rendezvous``: every send returns only once its message has arrived, so a rank that sends
#: twice sends one message after the other - clustersim's step semantics.  ``eager``: SMPI's
#: default, where sends below 64 KiB are detached (return at once), so a binomial root's
#: sends to all its children share its link at the same time.
PROTOCOLS = {"rendezvous": ("smpi/send-is-detached-thresh:0",), "eager": ()}


def algorithm_config(op: str, alg: str) -> tuple[str, ...]:
    """``--cfg`` items choosing the algorithm: a selector, or one named algorithm."""
    if op == "p2p":
        return ()
    if alg in SELECTORS:
        return (f"smpi/coll-selector:{alg}",)
    return (f"smpi/{SMPI_OP[op]}:{alg}", *EXTRA.get((op, alg), ()))


def run_case(exe: Path, plat: SgPlatform, op: str, alg: str, placement: list[int],
             sizes: Sequence[int], *, protocol: str = "rendezvous", reps: int = 2,
             timeout: float = 300) -> dict[int, float]:
    """SimGrid's time (s) per size for ``op``/``alg`` with rank i on host ``placement[i]``.

    Repetitions are checked to agree (SimGrid is deterministic; a difference would mean the
    start-alignment in coll_bench.c failed).  Past ``timeout`` seconds of wall time the sizes
    finished so far are returned (sizes run in the given order: pass them ascending);
    ``RuntimeError`` when smpirun fails.
    """
    with tempfile.TemporaryDirectory(prefix="sgbench") as tmp:
        tmpd = Path(tmp)
        (tmpd / "platform.xml").write_text(platform_xml(plat))
        (tmpd / "hosts").write_text(hostfile(placement))
        cfg = [f"--cfg={c}"
               for c in (*CONFIG, *PROTOCOLS[protocol], *algorithm_config(op, alg))]
        cmd = ["smpirun", "-np", str(len(placement)), "-platform", str(tmpd / "platform.xml"),
               "-hostfile", str(tmpd / "hosts"), *cfg, "--log=root.thresh:warning",
               str(exe), op, str(reps), *map(str, sizes)]
        env = dict(os.environ, TMPDIR=str(tmpd))
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                 env=env, cwd=tmpd)
        except subprocess.TimeoutExpired as exc:  # keep the sizes finished before it
            partial = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout
            return _parse(partial or "", op, alg)
    if out.returncode != 0:
        tail = (out.stdout + out.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"smpirun failed ({out.returncode}): " + " | ".join(tail))
    return _parse(out.stdout, op, alg)


def _parse(stdout: str, op: str, alg: str) -> dict[int, float]:
    """RESULT lines into {size: seconds}.  Repetitions may differ by float rounding (the
    start instant grows between them; SimGrid's event precision is 1e-9 s), not more."""
    times: dict[int, float] = {}
    for line in stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "RESULT":
            size, tmin, tmax = int(parts[2]), float(parts[4]), float(parts[5])
            if tmax - tmin > 1e-5 * tmax + 1e-9:
                raise RuntimeError(f"repetitions differ for {op}/{alg} size {size}: "
                                   f"{tmin} vs {tmax}")
            times[size] = tmin
    return times


def workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="sgbuild"))
