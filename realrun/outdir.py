"""The ``--out`` folder of a real run: checked before any process starts, and cleared of an
earlier run's outputs before the launch.

Why a module of its own: both halves decide what a user finds in the folder afterwards.

* **Checked first** (:func:`check_out_dir`).  ``mkdir`` on a path that is an existing file, a
  folder that cannot be created, a name over 255 characters or a symbolic link loop raised
  ``FileExistsError``/``PermissionError``/``OSError`` from inside ``run_scenario`` - a
  traceback, exit 1 (QA 10 H4).  Probing the folder the way it will be used (creating and
  removing a directory where it goes) turns each into one :class:`InputError`, exit 2, before
  ``mpiexec`` starts.
* **Cleared before the launch** (:func:`clear_previous`).  The default ``out/realrun`` is
  shared by every run; a run that fails or is stopped writes no ``metrics.json`` /
  ``trace.chrome.json``, so the previous run's stayed beside the new partial traces and read
  as this run's numbers (QA 10 H2).  Everything a run writes is removed first, so the folder
  only ever holds one run; the traces this run measures are never touched afterwards.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

from clustersim.errors import InputError
from clustersim.report.output import path_problem

__all__ = ["OUTPUTS", "check_out_dir", "clear_previous"]

#: what a run leaves in its folder (globs), every one of them rewritten by the next run
OUTPUTS = ("metrics.json", "trace.chrome.json", "trace.rank*.jsonl", "math.rank*.*",
           "grad_norms.csv", "logs/rank*.*", "logs/mpiexec.log")

def _why(exc: OSError) -> str:
    """The shared wording of a path problem (:func:`clustersim.report.output.path_problem`),
    and for ``mkdir`` on an existing file what that means for a folder."""
    if exc.errno == errno.EEXIST:
        return "it exists and is not a directory"
    return path_problem(exc)


def check_out_dir(path: str | os.PathLike[str], flag: str = "--out") -> None:
    """Raise :class:`InputError` (exit 2) unless a run can write its folder ``path``.

    Nothing is left behind: the folder is not created here (the run creates it), only a
    probe directory inside its nearest existing ancestor, removed at once.
    """
    raw = str(path)
    if raw.strip() == "":
        raise InputError(f"cannot write {flag} {raw!r}: an empty folder name")
    p = Path(raw)
    try:
        if p.is_dir():
            base = p
        else:
            if os.path.lexists(p):
                os.stat(p)  # a loop or a dangling link raises here with its own errno
                raise InputError(f"cannot write {flag} {raw!r}: it is a file, not a folder")
            base = p.parent
            while not base.is_dir():
                if os.path.lexists(base):
                    os.stat(base)
                    raise InputError(f"cannot write {flag} {raw!r}: {str(base)!r} is a file, "
                                     f"not a folder")
                if base == base.parent:
                    break
                base = base.parent
            # every missing part must be a valid name: mkdir of the deepest one would say
            os.stat(base)
            for part in p.relative_to(base).parts:
                if len(os.fsencode(part)) > 255:
                    raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), part)
        probe = tempfile.mkdtemp(prefix=".realrun-probe.", dir=base)
        shutil.rmtree(probe, ignore_errors=True)
    except OSError as exc:
        raise InputError(f"cannot write {flag} {raw!r}: {_why(exc)}") from None
    except RuntimeError as exc:  # Path.resolve on a loop, on some Pythons
        raise InputError(f"cannot write {flag} {raw!r}: {exc}") from None


def clear_previous(out: Path) -> None:
    """Remove every output an earlier run left in ``out`` (:data:`OUTPUTS`), so that after
    this run - finished, failed or stopped - the folder holds this run's files only."""
    for pattern in OUTPUTS:
        for old in out.glob(pattern):
            if old.is_file() or old.is_symlink():
                old.unlink(missing_ok=True)
