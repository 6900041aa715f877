"""Start ``mpiexec``, watch it, and end every run cleanly - with a culprit when it fails.

Design (why it looks like this):

* **Per-rank logs and exit codes through a one-line shell wrapper.**  Each rank runs as
  ``sh -c WRAPPER realrun-rank python -m ...``: the shell finds its MPI rank in the variables
  every launcher sets (``PMI_RANK`` for MPICH/Intel MPI, ``OMPI_COMM_WORLD_RANK``/``PMIX_RANK``
  for Open MPI, ``SLURM_PROCID``), sends the rank's stdout/stderr to ``rank<r>.out/.err`` and,
  when the rank ends, writes its exit status to ``rank<r>.exit``.  This works with any
  ``mpiexec`` (hydra's ``-outfile-pattern`` would tie us to MPICH) and, unlike a Python-level
  ``atexit``, it also sees ``os._exit``, ``SIGKILL`` and segfaults.  A shell keeps every
  inherited file descriptor, which the PMI connection needs.
* **Who failed first.**  When one rank dies, hydra kills the rest (with their wrappers, so they
  leave no exit file); the earliest non-zero ``rank<r>.exit`` names the culprit.
* **Who hung.**  On a timeout, the ranks' state records (:mod:`realrun.rankstate`) tell which
  rank was *not* waiting in communication; each rank is asked (``SIGUSR1``, Python's
  ``faulthandler``) to dump its stack into its ``.err`` log before it is killed.
* **No stray processes.**  ``mpiexec`` runs in its own session; it is stopped with SIGTERM (hydra
  then cleans its ranks up), then SIGKILL; finally every process that carries this run's
  ``REALRUN_RUN_ID`` in its environment is killed (:mod:`realrun.proctree`) - hydra gives each
  rank its own session, so process groups alone would miss them.  A launcher killed with
  SIGKILL runs none of that; ``mpiexec`` then gets SIGTERM from the kernel
  (``PR_SET_PDEATHSIG``, :func:`realrun.proctree.die_with_parent`) and ends its ranks itself.
* **Verdicts** (:mod:`realrun.verdict`): success needs every rank's ``rank<r>.exit`` = 0, not
  just ``mpiexec``'s status; a timeout names a culprit only when something was stuck.
* Traces are written by the ranks and flushed per event, so whatever was measured before a
  failure is still on disk afterwards; the launcher never deletes anything.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from clustersim import _jobs
from clustersim._signals import as_interrupt, deferred
from clustersim.errors import InputError
from realrun.proctree import MARKER, die_with_parent, find_marked, kill_marked
from realrun.rankstate import LOG_DIR_VAR, WORLD_VAR, read_states
from realrun.runtime import trim_traces
from realrun.verdict import RealRunError, rank_log, timeout_blame, verdict
from realrun.verdict import describe_status as _describe_status  # noqa: F401  (tests use it)

__all__ = ["LaunchResult", "RealRunError", "check_rank_count", "launch", "find_mpiexec",
           "mpiexec_flavor", "rank_log"]

# One line, no newlines: passed through mpiexec's argv to every rank.
WRAPPER = (
    'r=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${SLURM_PROCID:-x}}}}; '
    '"$@" >"$REALRUN_LOG_DIR/rank$r.out" 2>"$REALRUN_LOG_DIR/rank$r.err"; rc=$?; '
    'echo $rc >"$REALRUN_LOG_DIR/rank$r.exit"; exit $rc'
)

POLL_SECONDS = 0.05
#: ranks per core allowed on one machine even with ``oversubscribe``: beyond this the ranks
#: spend their time being scheduled, not computing, and a few thousand processes can exhaust
#: the machine's memory and process table
OVERSUBSCRIBE_LIMIT = 8
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass
class LaunchResult:
    """A run that ended with every rank exiting 0."""

    returncode: int
    np: int
    log_dir: Path
    elapsed: float
    command: list[str]
    run_id: str
    strays: list[str] = field(default_factory=list)

    def log(self, rank: int, stream: str = "err") -> Path:
        return rank_log(self.log_dir, rank, stream)


def find_mpiexec(mpiexec: str | os.PathLike[str] | None = None) -> str:
    """The ``mpiexec`` to use: the one given, else the pip MPICH next to this Python, else PATH.

    The pip ``mpich`` wheel installs ``mpiexec`` into the environment's scripts directory, which
    need not be on PATH when the venv is not activated - so look there first.
    """
    if mpiexec is not None:
        path = shutil.which(str(mpiexec))
        if path is None:
            raise InputError(f"mpiexec {str(mpiexec)!r} not found or not executable",
                             path=("mpiexec",))
        return path
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        cand = Path(folder) / "mpiexec"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    path = shutil.which("mpiexec")
    if path is None:
        raise InputError("no mpiexec found: install the 'mpi' extra (pip install "
                         "'clustersim[mpi]') or give --mpiexec PATH", path=("mpiexec",))
    return path


def check_hostfile(hostfile: str | os.PathLike[str]) -> Path:
    """The hostfile, resolved, or :class:`InputError` naming what is wrong with it.

    Why a function of its own: ``run --real`` and ``calibrate --real`` call it (through
    :func:`check_rank_count`) before they clear the previous run's traces; checked only in
    :func:`launch` it came after them, so a typo in the path cost the last run's data
    (audit E H4), and a folder was said not to exist (M3)."""
    hf = Path(hostfile).resolve()
    if hf.is_dir():
        raise InputError(f"hostfile {str(hostfile)!r} is a directory, expected a file listing "
                         "the hosts (one per line)", path=("hostfile",))
    if not hf.is_file():
        raise InputError(f"hostfile {str(hostfile)!r} does not exist", path=("hostfile",))
    try:
        with hf.open("rb"):
            pass
    except OSError as exc:
        raise InputError(f"hostfile {str(hostfile)!r} cannot be read ({exc.strerror})",
                         path=("hostfile",)) from None
    return hf


def check_rank_count(np: int, *, hostfile: object = None, oversubscribe: bool = False,
                     cores: int | None = None, flag: str = "--oversubscribe") -> None:
    """Refuse to start more ranks on this machine than it has cores, unless asked to.

    Why: a scenario sized for a cluster (``knl_4253.yaml``: 4,253 ranks) would otherwise start
    every rank here - each spinning in MPI at 100% of a core - and measure only the
    oversubscription.  With ``oversubscribe`` up to :data:`OVERSUBSCRIBE_LIMIT` ranks per core
    are allowed; with a hostfile the ranks are spread over the hosts it lists and nothing here
    is checked.
    """
    if hostfile is not None:
        check_hostfile(hostfile)  # here too: callers check this before clearing any output
        return
    cores = cores or _jobs.usable_cores()
    if np <= cores:
        return
    limit = OVERSUBSCRIBE_LIMIT * cores
    if not oversubscribe:
        raise InputError(f"{np} MPI ranks but this machine has {cores} core(s): the ranks "
                         f"would share cores and measure oversubscription; use fewer ranks "
                         f"(--np/--workers), a --hostfile for a cluster, or {flag} to run up "
                         f"to {limit} ranks ({OVERSUBSCRIBE_LIMIT} per core) here anyway")
    if np > limit:
        raise InputError(f"{np} MPI ranks is more than {flag} allows on this machine: at "
                         f"most {limit} ({OVERSUBSCRIBE_LIMIT} per core, {cores} core(s)); use "
                         f"fewer ranks or a --hostfile")


@lru_cache(maxsize=8)
def mpiexec_flavor(mpiexec: str) -> str:
    """``hydra`` (MPICH, Intel MPI), ``openmpi`` or ``generic`` - decides a few flags."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=20, stdin=subprocess.DEVNULL)
        text = (out.stdout + out.stderr).lower()
    except (OSError, subprocess.TimeoutExpired):
        return "generic"
    if "hydra" in text or "intel(r) mpi" in text:
        return "hydra"
    if "open mpi" in text or "open-mpi" in text or "openrte" in text:
        return "openmpi"
    return "generic"


def _command(target: str, args: Sequence[str], np: int, mpiexec: str, hostfile: Path | None,
             python: str, extra: Sequence[str], forward: Sequence[str]) -> list[str]:
    flavor = mpiexec_flavor(mpiexec)
    cmd = [mpiexec, "-n", str(np)]
    if hostfile is not None:
        cmd += ["-f" if flavor == "hydra" else "--hostfile", str(hostfile)]
    if flavor == "openmpi":
        for var in forward:  # Open MPI forwards only what it is told to remote nodes
            cmd += ["-x", var]
        if hostfile is None and np > _jobs.usable_cores():
            cmd.append("--oversubscribe")
    cmd += list(extra)
    is_script = target.endswith(".py") or os.sep in target
    prog = [python, target] if is_script else [python, "-m", target]
    return [*cmd, "sh", "-c", WRAPPER, "realrun-rank", *prog, *map(str, args)]


def _exit_codes(log_dir: Path, np: int) -> dict[int, tuple[int, float]]:
    """rank -> (exit status, time written) for every rank whose wrapper has recorded one."""
    out: dict[int, tuple[int, float]] = {}
    for r in range(np):
        p = rank_log(log_dir, r, "exit")
        try:
            text = p.read_text().strip()
            mtime = p.stat().st_mtime_ns / 1e9
        except OSError:
            continue
        if text.lstrip("-").isdigit():
            out[r] = (int(text), mtime)
    return out


def _stop(proc: subprocess.Popen[bytes], run_id: str, grace: float) -> list[str]:
    """End mpiexec and everything it started; returns descriptions of processes killed late."""
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    killed = kill_marked(run_id)
    return [f"pid {p.pid} (rank {p.rank}): {p.cmdline[:120]}" for p in killed]


def _dump_stacks(log_dir: Path, np: int, run_id: str) -> None:
    """Ask every live Python rank to write its stack to its .err log (faulthandler)."""
    live = {p.pid for p in find_marked(run_id)}
    asked = False
    for st in read_states(log_dir, np).values():
        if st is not None and st.pid in live:
            try:
                os.kill(st.pid, signal.SIGUSR1)
                asked = True
            except OSError:
                pass
    if asked:
        time.sleep(0.3)


def launch(
    module_or_script: str,
    args: Sequence[str] = (),
    np: int = 2,
    *,
    timeout: float,
    log_dir: str | os.PathLike[str],
    mpiexec: str | os.PathLike[str] | None = None,
    hostfile: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    python: str | None = None,
    mpiexec_args: Sequence[str] = (),
    grace: float = 2.0,
) -> LaunchResult:
    """Run ``mpiexec -n np python -m module_or_script args`` and wait for it.

    ``module_or_script`` is a module name (run with ``-m``) or a path to a ``.py`` file.
    ``log_dir`` receives ``rank<r>.out/.err/.exit/.state`` and ``mpiexec.log``; with a hostfile
    it must be on a file system every host sees.  ``env`` adds variables to the ranks'
    environment; without a hostfile and unless set, the BLAS/OpenMP thread counts are set to
    ``cores // np`` per rank.  Raises :class:`RealRunError` when a rank fails or the run exceeds
    ``timeout`` seconds; in every case no process of the run is left behind.
    """
    if not isinstance(np, int) or np < 1:
        raise InputError(f"np must be a whole number >= 1, not {np!r}", path=("np",))
    if not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        # nan passed `nan <= 0` and never timed out (QA 10 M3)
        raise InputError(f"timeout must be a finite number of seconds > 0, not {timeout!r}",
                         path=("timeout",))
    exe = find_mpiexec(mpiexec)
    hf = None
    if hostfile is not None:
        hf = check_hostfile(hostfile)
    logs = Path(log_dir).resolve()
    logs.mkdir(parents=True, exist_ok=True)
    for r in range(np):  # stale files of an earlier run would confuse the blame
        for stream in ("out", "err", "exit", "state", "trace"):
            rank_log(logs, r, stream).unlink(missing_ok=True)

    run_id = uuid.uuid4().hex
    full_env = dict(os.environ)
    full_env.update(env or {})
    if hf is None and not any(v in full_env for v in THREAD_VARS):
        # one machine: share its cores among the ranks, or every rank's BLAS starts a thread
        # per core and the GEMM figures measure oversubscription
        per_rank = str(max(1, _jobs.usable_cores() // np))
        full_env.update({v: per_rank for v in THREAD_VARS})
    full_env.update({MARKER: run_id, LOG_DIR_VAR: str(logs), WORLD_VAR: str(np),
                     "PYTHONUNBUFFERED": "1"})
    forward = sorted({MARKER, LOG_DIR_VAR, WORLD_VAR, "PYTHONUNBUFFERED", *(env or {})})
    cmd = _command(module_or_script, args, np, exe, hf, python or sys.executable,
                   mpiexec_args, forward)

    start = time.monotonic()
    deadline = start + timeout
    timed_out = False
    culprit: tuple[int | None, str] = (None, "")
    proc: subprocess.Popen[bytes] | None = None
    # SIGTERM/SIGHUP raise like Ctrl-C, so the finally below stops mpiexec and its ranks
    # (they run in their own sessions: dying without it would orphan them)
    with as_interrupt():
        try:
            with (logs / "mpiexec.log").open("wb") as lf:
                # die_with_parent: a SIGKILLed launcher runs no finally; the kernel then
                # stops mpiexec (and hydra its ranks) instead (QA 10 H8)
                proc = subprocess.Popen(cmd, env=full_env, stdout=lf, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True,
                                        preexec_fn=die_with_parent())
            while proc.poll() is None:
                if any(code != 0 for code, _ in _exit_codes(logs, np).values()):
                    # a rank died: hydra normally ends the others by itself, give it a moment
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=grace)
                    break
                if time.monotonic() > deadline:
                    timed_out = True
                    culprit = timeout_blame(read_states(logs, np))
                    _dump_stacks(logs, np, run_id)
                    break
                time.sleep(POLL_SECONDS)
            codes = _exit_codes(logs, np)  # before _stop: killed wrappers must not muddy them
        finally:
            with deferred():  # a second signal must not abandon the cleanup half-way
                # a signal between fork and Popen's return leaves proc None: the marker
                # scan still finds mpiexec and everything it started
                strays = (_stop(proc, run_id, grace) if proc is not None
                          else [f"pid {p.pid}: {p.cmdline[:120]}" for p in kill_marked(run_id)])
                trim_traces(logs, np)
    elapsed = time.monotonic() - start
    rc = proc.returncode if proc is not None and proc.returncode is not None else -1

    err = verdict(logs, np, codes, timed_out, culprit, rc, timeout, strays)
    if err is not None:
        err.run_id, err.strays = run_id, strays
        raise err
    return LaunchResult(rc, np, logs, elapsed, cmd, run_id, strays)
