"""Errors of a sweep, located where the user can fix them.

An error found while parsing one point's scenario is about a value the user wrote in one of
two places: the scenario (an axis value, its line or ``--set`` item), or another file the
point's scenario read - the platform file an axis named (``platform.file: [a.yaml,
b.yaml]``).  The second must be reported as ``run`` and ``validate`` report a bad platform
file named by the scenario itself: at that file's own line and field; the sweep point and
the axis that named the file are said after it.  Reported at the axis's line instead, the
message named neither the file nor the line of the bad field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clustersim.errors import InputError, format_path
from clustersim.explore.reach import axis_target, point_sets

if TYPE_CHECKING:
    from clustersim.explore.points import Point, Study

__all__ = ["locate", "point_error"]

#: the axes that name a platform file: a file's error is blamed on the one that chose it
_PLATFORM_FILE = (("platform",), ("platform", "file"))


def locate(study: Study, exc: InputError) -> InputError:
    """``exc`` with the study's file and the line (or ``--set`` item) of the deepest part of
    its path that the study knows: the axis or constraint at fault, not just 'sweep'."""
    path = exc.path
    for n in range(len(path), 0, -1):
        got = study.where.get(format_path(path[:n]))
        if got is not None:
            line, origin = got
            return exc.located(file=study.file, line=line, origin=origin)
    return exc.located(file=study.file)


def point_error(study: Study, point: Point, exc: InputError) -> InputError:
    """A point's parse error, located at the axis whose value it is about (its line, or
    its ``--set`` item), the point's values named too; an error inside another file the
    point read (its platform file) stays at that file's line, and says which point and axis
    brought the file in."""
    fields = "{" + ", ".join(f"{k}={v!r}" for k, v in point_sets(study, point)) + "}"
    if exc.file is not None and exc.file != study.file:
        return _in_other_file(study, point, exc, fields)
    where = f"{format_path(exc.path)}: " if exc.path else ""
    return locate(study, InputError(f"at the sweep point {fields}: {where}{exc.message}",
                                    path=_blamed(study, point, exc.path)))


def _blamed(study: Study, point: Point, bad_path: tuple, file: bool = False
            ) -> tuple[str, ...]:
    """The path ``sweep.axes.NAME`` of the point's axis behind an error at ``bad_path``
    (``sweep.axes`` where none is): the axis whose field is, or holds, the bad one; with
    ``file``, first the axis that chose the platform file."""
    case = study.cases[point.case]
    targets = [(k, tuple(str(p) for p in axis_target(case, k, point.sets) or ()))
               for k, _ in point.sets]
    if file:
        for k, target in targets:
            if target in _PLATFORM_FILE:
                return ("sweep", "axes", k)
    bad = tuple(str(p) for p in bad_path)
    for k, target in targets:
        n = min(len(target), len(bad))
        if target and target[:n] == bad[:n]:
            return ("sweep", "axes", k)
    if bad[:1] == ("compare",):  # a compare case's title clashing with the main algorithm's
        for k, target in targets:  # (scenario.consistency.check_labels): the axis that
            if target[:1] == ("algorithm",):  # changed the main one's title
                return ("sweep", "axes", k)
    return ("sweep", "axes")


def _in_other_file(study: Study, point: Point, exc: InputError, fields: str
                   ) -> InputError:
    """An error in a file the point's scenario read: at that file's line, then the point,
    and the axis (its line or ``--set`` item in the scenario) that led to the file."""
    from clustersim.scenario.platform_file import named_by

    note = named_by(study.file)
    platform = bool(note) and exc.message.endswith(note)
    message = exc.message[:-len(note)] if platform else exc.message
    axis = locate(study, InputError("", path=_blamed(study, point, exc.path, platform)))
    at = (f"{axis.file} ({axis.origin})" if axis.origin
          else f"{axis.file}:{axis.line}" if axis.line else str(axis.file))
    named = (f"the axis {axis.path[-1]} at {at}" if len(axis.path) > 2
             else f"the axes at {at}")
    what = "platform file" if platform else "a file read"
    return InputError(f"{message} ({what} of the sweep point {fields}; {named})",
                      file=exc.file, path=exc.path, line=exc.line, origin=exc.origin)
