"""Files written whole or not at all, and what is wrong with a path - in words.

Why a core module: the scenario loader names a path's problem (a name too long, a link loop)
and a calibration profile is written whole, and neither may import the report layer above
it (audit J H1); :mod:`clustersim.report.output` (the commands' output checks) re-exports
these.

"Nothing half-written": :func:`write_outputs` writes every file to a temporary sibling and
renames it into place only when all of them are complete; if any step fails, files already
renamed are put back as they were (a hard-linked backup of a file being replaced) and
directories it created are removed - so a command leaves either all its outputs or none.
New files get the mode the umask says (``0o666 & ~umask``, like ``open()``), a replaced file
keeps its mode; ``tempfile.mkstemp`` would make every output 0600.  A symbolic link is
followed (its target is replaced, the link stays); an existing file that is not a regular
file (``/dev/stdout``, a FIFO) is written in place, since renaming over it would replace the
device node itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["atomic_write", "path_problem", "unwritable", "write_outputs"]


#: what the file system says, in words that tell the user what to change
_PATH_ERRNOS = {
    errno.ENAMETOOLONG: "the name is too long (at most 255 characters for each part of the "
                        "path, 4096 in all)",
    errno.ELOOP: "it is a symbolic link loop (the link leads back to itself)",
    errno.ENOTDIR: "a part of the path is a file, not a directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "the file system is read-only",
}


def path_problem(exc: BaseException) -> str:
    """What is wrong with a path, from the error that looking at it raised.

    ``Path.is_dir()``/``exists()`` raise on a name too long (ENAMETOOLONG) and ``resolve()``
    raises ``RuntimeError`` on a symbolic link loop; both had reached the user as a traceback
    (QA 10 H4).  Shared by the output checks and the YAML loader."""
    if isinstance(exc, RuntimeError) and "loop" in str(exc).lower():
        return _PATH_ERRNOS[errno.ELOOP]
    if isinstance(exc, OSError):
        if exc.errno in _PATH_ERRNOS:
            return _PATH_ERRNOS[exc.errno]
        return exc.strerror or str(exc)
    return str(exc)


def _target(path: str | Path) -> Path:
    p = Path(path)
    if _is_stream(p):
        # written in place by the name given: resolved, /dev/stdout into a pipe became
        # /proc/PID/fd/pipe:[N], a path that does not exist, and "cannot create files in
        # '/proc/PID/fd'" (audit E M1)
        return p
    return p.resolve() if p.is_symlink() else p


def _missing_dirs(parent: Path) -> tuple[Path, list[Path]]:
    """The nearest existing ancestor of ``parent`` and the directories below it to create."""
    todo: list[Path] = []
    d = parent
    while not d.exists() and d != d.parent:
        todo.append(d)
        d = d.parent
    return d, todo[::-1]


def _is_stream(p: Path) -> bool:
    """A device, FIFO, pipe or socket (``/dev/null`` may be read and written by one command)."""
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def unwritable(p: Path) -> str | None:
    """Why no file can be written at ``p`` (None: one can), found by creating (and removing)
    a temporary file or directory where it will go; nothing is left behind."""
    if p.is_dir():
        return "it is a directory; give a file name"
    if p.exists() and not p.is_file():
        # a device or FIFO: written in place
        return None if os.access(p, os.W_OK) else "it is not writable"
    if os.path.lexists(p) and not p.exists():  # a link whose target cannot be reached
        return _broken_link(p)
    base, todo = _missing_dirs(p.parent)
    if not base.is_dir():
        return f"{str(base)!r} is not a directory"
    for d in todo:  # "missing", yet there: a link loop or a dangling link (mkdir would fail)
        if os.path.lexists(d):
            return _broken_link(d)
    try:
        if todo:  # can the first missing directory be made?
            probe = base / f".{todo[0].name}.{secrets.token_hex(4)}.probe"
            probe.mkdir()
            probe.rmdir()
        else:
            probe = base / f".{p.name}.{secrets.token_hex(4)}.probe"
            os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            probe.unlink()
    except OSError as exc:
        where = todo[0] if todo else base
        what = "cannot create directory" if todo else "cannot create files in"
        return f"{what} {str(where)!r} ({exc.strerror or exc})"
    return None


def _broken_link(p: Path) -> str:
    """Why the link ``p`` cannot be followed: a loop, or a target that does not exist (had
    been FileExistsError from mkdir, a traceback: QA 10 H4)."""
    try:
        os.stat(p)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            return f"{str(p)!r}: {path_problem(exc)}"
    return f"{str(p)!r} is a symbolic link to something that does not exist"


def _stage(path: Path, data: bytes, made: list[Path]) -> Path:
    """Write ``data`` to a new temporary sibling of ``path`` (mode from the umask or the file
    it replaces) and return its path; directories created on the way are added to ``made``."""
    _, todo = _missing_dirs(path.parent)
    for d in todo:
        d.mkdir()
        made.append(d)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)  # the kernel applies umask
    try:
        with os.fdopen(fd, "wb") as fh:
            if path.is_file():
                os.fchmod(fh.fileno(), stat.S_IMODE(path.stat().st_mode))
            fh.write(data)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:
            # a write to a full disk names no file: it was reported as "cannot write the
            # standard output" (and exit 1) for a named output (QA 16c)
            exc.filename = str(path)
        raise
    return tmp


Text = str | bytes


def write_outputs(files: Sequence[tuple[str | Path | None, Text | Callable[[], Text]]]
                  ) -> None:
    """Write every ``(path, text)`` or none of them (see the module docstring).

    A pair whose path is ``None`` (an option not given) is skipped; ``text`` may be a
    function, called only for the paths given (a trace's JSON is not built for nothing).
    """
    made: list[Path] = []
    staged: list[tuple[Path, Path]] = []  # (temporary, final)
    direct: list[tuple[Path, bytes]] = []
    done: list[tuple[Path, Path | None]] = []  # (final, backup of what it replaced)
    try:
        for raw, content in files:
            if not raw:
                continue
            text = content() if callable(content) else content
            data = text.encode("utf-8") if isinstance(text, str) else text
            p = _target(raw)
            if p.exists() and not p.is_file() and not p.is_dir():
                direct.append((p, data))
            else:
                staged.append((_stage(p, data, made), p))
        for tmp, final in staged:
            backup = None
            if final.is_file():
                backup = final.parent / f".{final.name}.{secrets.token_hex(6)}.bak"
                os.link(final, backup)
            done.append((final, backup))
            os.replace(tmp, final)
        for p, data in direct:
            try:
                with p.open("wb") as fh:
                    fh.write(data)
            except OSError as exc:  # the write and close of a device carry no file name:
                if exc.filename is None:  # it was "cannot write the standard output" (M9)
                    exc.filename = str(p)
                raise
    except BaseException:
        for final, backup in reversed(done):  # put back what was there
            try:
                if backup is not None:
                    os.replace(backup, final)
                else:  # it did not exist before
                    final.unlink(missing_ok=True)
            except OSError:
                pass
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        for d in reversed(made):
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    for _, backup in done:
        if backup is not None:
            backup.unlink(missing_ok=True)


def atomic_write(path: str | Path, text: str | bytes) -> None:
    """One file, written whole or not at all."""
    write_outputs([(path, text)])
