"""What a finished ``mpiexec`` run deserves: success, or a :class:`RealRunError` that names the
culprit and says only what the evidence on disk supports.

Split out of :mod:`realrun.launch` (which starts and stops the processes) because the verdict
is where wrong messages came from (QA 10):

* **A rank that never reported is not a success (H3).**  ``mpiexec`` exiting 0 proved
  nothing: a wrapper that starts no rank (``--mpiexec /bin/true``, a site script, a launcher
  the scheduler refuses) also exits 0, and the run was then measured from no trace at all (NaN
  metrics, exit 0).  Every rank's shell wrapper writes ``rank<r>.exit``; a run succeeds only
  when each of the ``np`` ranks wrote 0.
* **A timeout is not always a hang (M2, L2).**  With no state record from any rank the run was
  still starting up; when every live rank changed state within :data:`RECENT_SECONDS` the run
  was progressing and simply needed longer.  Neither gets a culprit, and a stack is mentioned
  only when the rank's ``.err`` log holds one (the launcher asks only ranks with a state
  record for theirs).
* **A signal is named as a signal (L1).**  ``Popen.returncode`` is ``-N`` for a process killed
  by signal N; "exited with code -9" read like an exit status.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Sequence
from pathlib import Path

from realrun.rankstate import RankState, blame_hang, read_states

__all__ = ["PROGRESSING", "RECENT_SECONDS", "STARTING", "RealRunError", "describe_status",
           "format_ranks", "iterations_started", "rank_log", "timeout_blame", "verdict"]

#: a rank whose state changed this recently at the timeout was not stuck
RECENT_SECONDS = 1.0
#: culprit texts without a rank: the run was still starting / still progressing
STARTING = "starting"
PROGRESSING = "progressing"


class RealRunError(RuntimeError):
    """A real run that did not succeed.

    ``kind``: ``failed`` (a rank exited non-zero or was killed), ``timeout`` (the run exceeded
    its time limit; ``rank`` is the most likely culprit, ``None`` when nothing was stuck),
    ``launch`` (mpiexec itself failed, or started ranks that never reported).  ``log`` is the
    culprit's stderr log (or mpiexec's own log when no rank is known).
    """

    def __init__(self, message: str, *, kind: str, rank: int | None, log: Path | None,
                 reason: str, exit_code: int | None = None, log_dir: Path | None = None,
                 run_id: str = "", strays: list[str] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.rank = rank
        self.log = log
        self.reason = reason
        self.exit_code = exit_code
        self.log_dir = log_dir
        self.run_id = run_id  # REALRUN_RUN_ID of the run's processes (all gone by now)
        self.strays = strays or []  # processes that outlived mpiexec and had to be killed


def rank_log(log_dir: str | Path, rank: int, stream: str = "err") -> Path:
    """Path of a rank's ``out``/``err`` log or its ``exit`` status file."""
    return Path(log_dir) / f"rank{rank}.{stream}"


def describe_status(code: int) -> str:
    """A wait status in words: a shell's ``128+N`` and Popen's ``-N`` are signal N."""
    sig = code - 128 if code > 128 else -code if code < 0 else 0
    if sig:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "?"
        return f"was killed by signal {sig} ({name})"
    return f"exited with code {code}"


def _tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return ""
    return "\n".join("    " + ln for ln in text[-lines:])


def _has_text(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def format_ranks(ranks: Sequence[int]) -> str:
    """Ranks as a message names them: ``1,3`` (one formatter, so that the verdict and
    :mod:`realrun.coverage` word the same ranks the same way)."""
    return ",".join(map(str, ranks))


def timeout_blame(states: dict[int, RankState | None],
                  now: float | None = None) -> tuple[int | None, str]:
    """Who to blame when the time limit strikes: ``(None, STARTING)`` when no rank has a
    state record yet, ``(None, PROGRESSING)`` when every live rank moved on within
    :data:`RECENT_SECONDS`, else :func:`realrun.rankstate.blame_hang`'s rank and reason."""
    now = time.time() if now is None else now
    if states and all(s is None for s in states.values()):
        return None, STARTING
    live = [s for s in states.values() if s is not None and s.state != "done"]
    if (live and all(s is not None for s in states.values())
            and all(now - s.since < RECENT_SECONDS for s in live)):
        return None, PROGRESSING
    return blame_hang(states)


def iterations_started(log_dir: Path, np: int) -> int:
    """The most iterations any rank started, from the traces its ``rank<r>.trace`` note
    points at (0 when none can be read)."""
    best = 0
    for r in range(np):
        try:
            trace = Path(rank_log(log_dir, r, "trace").read_text().strip())
            with trace.open("rb") as f:
                best = max(best, sum(1 for ln in f if b'"label": "iteration"' in ln))
        except OSError:
            continue
    return best


def _rank_error(kind: str, rank: int, reason: str, log_dir: Path, exit_code: int | None,
                message: str | None = None) -> RealRunError:
    log = rank_log(log_dir, rank, "err")
    tail = _tail(log)
    msg = (message or f"rank {rank} {reason}; see its log {log}") + (
        f"\n  last lines of {log.name}:\n{tail}" if tail else "")
    return RealRunError(msg, kind=kind, rank=rank, log=log, reason=reason,
                        exit_code=exit_code, log_dir=log_dir)


def _timeout_error(logs: Path, np: int, culprit: tuple[int | None, str],
                   timeout: float) -> RealRunError:
    rank, why = culprit
    head = f"run timed out after {timeout:g} s"
    if rank is None:
        if why == STARTING:
            why = ("during start-up: no rank had started yet (MPI start-up and imports take "
                   "about a second); --timeout may be too short")
        elif why == PROGRESSING:
            why = (f"the run was still progressing ({iterations_started(logs, np)} "
                   f"iteration(s) started, every rank active within the last "
                   f"{RECENT_SECONDS:g} s: nothing was stuck); it needs a longer --timeout")
        return RealRunError(f"{head}: {why}; logs are in {logs}", kind="timeout", rank=None,
                            log=logs / "mpiexec.log", reason=f"timeout: {why}", log_dir=logs)
    log = rank_log(logs, rank, "err")
    where = f"its stack is in {log}" if _has_text(log) else f"logs are in {logs}"
    return RealRunError(f"{head}: rank {rank} {why}; {where}", kind="timeout", rank=rank,
                        log=log, reason=f"timeout: {why}", log_dir=logs)


def verdict(logs: Path, np: int, codes: dict[int, tuple[int, float]], timed_out: bool,
            culprit: tuple[int | None, str], rc: int, timeout: float,
            strays: list[str] | None = None) -> RealRunError | None:
    """The error a finished run deserves (``None`` for success), most specific first.

    A rank's own non-zero exit status beats everything; then a rank that recorded a Python
    failure and called ``MPI_Abort`` (hydra kills it before its wrapper can write a status);
    then the timeout with its blamed rank; then a non-zero ``mpiexec`` status; then ranks that
    never wrote an exit status although ``mpiexec`` exited 0.
    """
    failed = sorted((t, r, code) for r, (code, t) in codes.items() if code != 0)
    if failed and not timed_out:
        _, rank, code = failed[0]
        reason = describe_status(code)
        more = f" ({len(failed) - 1} more rank(s) failed after it)" if len(failed) > 1 else ""
        log = rank_log(logs, rank, "err")
        return _rank_error("failed", rank, reason, logs, code,
                           f"rank {rank} {reason}{more}; see its log {log}")
    if not timed_out:
        aborted = sorted((st.since, r, st.op) for r, st in read_states(logs, np).items()
                         if st is not None and st.state == "failed")
        if aborted:
            _, rank, why = aborted[0]
            return _rank_error("failed", rank, f"failed and aborted the job ({why})", logs, rc)
    if timed_out:
        return _timeout_error(logs, np, culprit, timeout)
    launcher_log = logs / "mpiexec.log"
    tail = _tail(launcher_log)
    if rc != 0:
        reason = f"mpiexec {describe_status(rc)} and no rank reported a failure"
        if strays:
            reason += f"; {len(strays)} process(es) of the run outlived it and were killed"
        return RealRunError(f"{reason}; see {launcher_log}" + (f"\n{tail}" if tail else ""),
                            kind="launch", rank=None, log=launcher_log, reason=reason,
                            exit_code=rc, log_dir=logs)
    silent = [r for r in range(np) if r not in codes]
    # a launcher that sets none of the rank variables the wrapper knows makes every rank
    # write rankx.exit: their statuses cannot be told apart, so absence proves nothing
    if silent and not (logs / "rankx.exit").exists():
        reason = (f"mpiexec exited 0 but rank(s) {format_ranks(silent)} of {np} never reported an "
                  f"exit status (never started, or not started by this mpiexec)")
        return RealRunError(f"{reason}; see {launcher_log}" + (f"\n{tail}" if tail else ""),
                            kind="launch", rank=None, log=launcher_log, reason=reason,
                            exit_code=rc, log_dir=logs)
    return None
