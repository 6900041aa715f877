"""Refusals and warnings of a calibration that its data cannot support.

Kept apart from :mod:`.pipeline` (which orders the fits) because these are judgements about
the *measurements*, each with its reason, not steps of a fit:

* :func:`check_pingpong` - ping-pong times that cannot give a link model are refused before
  anything is fitted.  A segment of the alpha-beta model has two unknowns (alpha, the time
  of an empty message, and beta, the time per byte), so it needs times at two or more
  distinct sizes.  With one size every ``alpha + beta * s = t`` is an exact fit; the
  optimiser returned ``beta ~ 0`` and ``alpha = t``, which the conversion turned into a link
  draining at 5e12 times its bandwidth and a hop latency of half the 1 MiB transfer - and
  predictions 31-62 % fast on communication (QA 12, F1).  The same goes for a segment that
  ``--breakpoints`` leaves with fewer than two sizes (one above every measured size used to
  be dropped without a word).
* :func:`fit_warnings` - a fit whose rms relative residual exceeds :data:`RMS_WARN` (100 %)
  is kept but said, loudly, in the output and in the profile's ``warnings:``.  Why not a
  refusal: its values are still the least-squares answer and the rest of the profile
  (compute, ping-pong) stands on other rows, which a refusal would throw away with a
  campaign that may have taken hours on a cluster; but a model that misses its own
  measurements by more than their size describes none of them, and nobody should find that
  out from a prediction.
* :func:`fit_verdict` - one closing warning naming every fit whose rms relative residual
  exceeds :data:`RMS_POOR` (25 %) but not :data:`RMS_WARN` (those have their own warning
  above, which says more).  Why 25 %: fits of an undisturbed machine land well below it
  (the recorded H200 session: ping-pong 0.5 and 8.5 %, compute 18 %; the 2-rank VM rows:
  2.5-6 % for the network, 16 % for compute), while a loaded 2-core machine gave 52-56 % for
  its ping-pong, collective and reduce fits (QA, calibrate --real --quick) and exited 0 with
  no word about it.  A model that misses its own measurements by a quarter predicts runs
  no better than that, whatever its intervals say; the usual cause is other jobs' load
  (or too few rounds to average it out), then a --platform or --link that does not name
  what the ranks ran on.  Still exit 0: a poor fit is no bad input, and the profile is the
  least-squares answer to what was measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from clustersim.errors import InputError

__all__ = ["check_pingpong", "fit_warnings", "fit_verdict", "size_note", "readable_sizes",
           "RMS_WARN", "RMS_POOR"]

#: a fit whose rms relative residual exceeds this is warned about (module docs)
RMS_WARN = 1.0
#: a fit whose rms relative residual exceeds this is named in the closing verdict (module docs)
RMS_POOR = 0.25

_HOW = ("measure more sizes: `clustersim calibrate --real` measures 50 sizes from 1 B to "
        "32 MiB (26 with --quick), `python -m realrun microbench --sizes 1,1KiB,64KiB,1MiB` "
        "the sizes you choose, or write bench: pingpong events at several sizes into the "
        "traces (docs/realrun.md, \"Microbenchmarks\")")


def _size(x: float) -> str:
    from clustersim.units import format_size

    return format_size(x)


def size_note(nbytes: float) -> str:
    """A size for the notes as the rest of the tool prints sizes (``4 MiB``), with the exact
    bytes after it where that reading is rounded (``90.5 KiB (92682 B)``): a breakpoint is
    a measured size that ``--breakpoints`` may be given again.  Why not ``{:g}``: it wrote
    ``1.67772e+07 B`` (QA)."""
    from clustersim.units import parse_size

    shown = _size(nbytes)
    return shown if parse_size(shown) == nbytes else f"{shown} ({nbytes:.0f} B)"


def readable_sizes(text: str) -> str:
    """``text`` (a refused segmentation of :func:`.alphabeta.fit_piecewise`, which keeps the
    exact bytes ``segment 16777216 .. 33554432 B``) with that span as sizes are printed
    (``segment 16 MiB .. 32 MiB``)."""
    import re

    return re.sub(r"segment (\d+) \.\. (\d+) B",
                  lambda m: f"segment {_size(float(m[1]))} .. {_size(float(m[2]))}", text)


def check_pingpong(sizes: Sequence[float], breakpoints: Sequence[float] | None,
                   measured: str = "measured") -> None:
    """Refuse (:class:`InputError`, exit 2) ping-pong sizes that leave a segment with fewer
    than two distinct sizes: one size in all, or a ``--breakpoints`` segment (module docs).
    ``measured`` says where the sizes come from (``calibrate --real`` checks its plan's
    before it measures)."""
    uniq = sorted(set(float(s) for s in sizes))
    if len(uniq) < 2:
        one = f"one distinct message size ({_size(uniq[0])})" if uniq else "no message size"
        raise InputError(
            f"ping-pong: times at {one} only cannot separate the link's latency "
            f"from its bandwidth: a segment has two unknowns (alpha, the time of an empty "
            f"message, and beta, the time per byte), so it needs times at 2 or more distinct "
            f"sizes (3 or more per segment for breakpoints to be detected); {_HOW}")
    if breakpoints is None:
        return
    given = sorted(float(b) for b in breakpoints if b > 0)
    edges = [0.0, *given, math.inf]
    span = f"{measured}: {len(uniq)} sizes, {_size(uniq[0])} .. {_size(uniq[-1])}"
    for lo, hi in zip(edges[:-1], edges[1:]):
        n = sum(lo <= s < hi for s in uniq)
        if n >= 2:
            continue
        if hi == math.inf:
            where = f"at or above {_size(lo)}"
        elif lo == 0.0:
            where = f"below {_size(hi)}"
        else:
            where = f"from {_size(lo)} to below {_size(hi)}"
        raise InputError(
            f"--breakpoints: {n} measured ping-pong size(s) {where} ({span}); a segment "
            f"needs at least 2 distinct sizes (two unknowns: its alpha and its time per "
            f"byte): give breakpoints inside the measured range, or {_HOW}",
            )


def fit_warnings(lines: Sequence[Any]) -> list[str]:
    """One warning per fit (bench) whose rms relative residual exceeds :data:`RMS_WARN`."""
    worst: dict[str, float] = {}
    for ln in lines:
        r = ln.rms_rel
        if r is not None and math.isfinite(r) and r > RMS_WARN:
            worst[ln.bench] = max(worst.get(ln.bench, 0.0), r)
    return [f"the {bench} fit misses its own measurements by {r:.0%} rms (more than "
            f"{RMS_WARN:.0%}): its parameters describe none of them - check that --platform "
            f"and --link name what the ranks ran on; if they do, the model does not describe "
            f"how this runtime runs these benchmarks (see the table of measured vs model)"
            for bench, r in sorted(worst.items())]


def _worst_by_fit(lines: Sequence[Any]) -> dict[str, float]:
    """The worst finite rms relative residual of each fit, by its name.

    Lines of one joint fit carry the same residual under different ``bench`` labels (the
    compute fit's "gemm", "memory" and "gemm+memory"): those are merged into one name
    ("gemm+memory") so that the verdict names each fit once."""
    parts_by_rms: dict[float, set[str]] = {}
    for ln in lines:
        r = ln.rms_rel
        if r is not None and math.isfinite(r):
            parts_by_rms.setdefault(r, set()).update(str(ln.bench).split("+"))
    worst: dict[str, float] = {}
    for r, parts in parts_by_rms.items():
        name = "+".join(sorted(parts))
        worst[name] = max(worst.get(name, 0.0), r)
    return worst


def fit_verdict(lines: Sequence[Any]) -> list[str]:
    """The closing warning (a list of one, or none) naming the fits whose rms relative
    residual exceeds :data:`RMS_POOR` and not :data:`RMS_WARN` (module docs), worst first,
    with what to do about it."""
    poor = sorted(((r, name) for name, r in _worst_by_fit(lines).items()
                   if RMS_POOR < r <= RMS_WARN), reverse=True)
    if not poor:
        return []
    names = [f"{name} ({r:.0%})" for r, name in poor]
    named = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    fits = "fit misses its" if len(poor) == 1 else "fits miss their"
    return [f"poor fit: the {named} {fits} own measurements by more than {RMS_POOR:.0%} rms: "
            f"predictions with this profile carry errors of that size - rerun on an idle "
            f"machine (other jobs' load is the usual cause), with more --rounds (--real) to "
            f"average the load out, and check that --platform and --link name what the ranks "
            f"ran on"]
