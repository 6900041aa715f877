"""The what-if factors (``whatif`` and ``explore``: ``--bandwidth``/``--latency``): how they
are read and how many a page may have.

Why a cap: every factor is a whole sweep of the scenario, and every factor is a button of
the page's panel and a tick of its bandwidth chart.  A page of 151 positions took 41 s and
wrote a 7 MB file whose panel was a wall of buttons, and from about 40 factors the chart's
tick labels ran into each other; :data:`MAX_FACTORS` keeps both readable at 800 px.
"""

from __future__ import annotations

import re

from clustersim.errors import InputError

__all__ = ["FACTOR_RANGE", "MAX_FACTORS", "parse_factors"]

#: the factors a what-if page or the explorer accepts: a thousandth to a thousand times the
#: scenario's own figure (beyond that the links are no longer links: 1e-300 gave throughputs
#: of 1e-297 samples/s, and ``inf`` a cell the page could not show)
FACTOR_RANGE = (1e-3, 1e3)
#: the most factors one axis (bandwidth or latency) may have, its 1x included
MAX_FACTORS = 12
#: a plain decimal number with an optional ``x``: no ``1_0`` (Python reads it as 10, a typo
#: of ``1,0`` became a 10x page), no hex, no ``nan``/``inf``
_NUMBER = re.compile(r"[-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|[0-9]+\.)[xX]?")


def parse_factors(text: str, what: str) -> list[float]:
    """``--bandwidth``/``--latency``: comma-separated factors, each a number with an optional
    ``x`` (``0.25,0.5x,2``, as the page writes them), within :data:`FACTOR_RANGE`, each once,
    at most :data:`MAX_FACTORS` with the 1x the page always has."""
    lo, hi = FACTOR_RANGE
    items = [x.strip() for x in str(text).split(",")]
    vals: list[float] = []
    for item in items:
        if not _NUMBER.fullmatch(item):
            raise InputError(f"--{what} takes comma-separated factors like 0.25,0.5,1,2,4 "
                             f"(each from {lo:g} to {hi:g}), not {text!r}")
        v = float(item.rstrip("xX"))
        if not lo <= v <= hi:  # a sign is read, so that -1 is said to be out of range
            where = f", in {text!r}" if len(items) > 1 else ""
            raise InputError(f"--{what}: the factor {item!r} is outside {lo:g} to {hi:g} "
                             f"(the scenario's own figure times that factor){where}")
        if v in vals:
            raise InputError(f"--{what}: the factor {item!r} is given twice in {text!r}; "
                             "each factor once")
        vals.append(v)
    shown = len({*vals, 1.0})  # the page always has the scenario's own 1x
    if shown > MAX_FACTORS:
        raise InputError(f"--{what}: {shown} factors with 1x, at most {MAX_FACTORS} (each is "
                         "a whole sweep of the scenario and a button of the page); for a "
                         "finer scan, sweep a field with 'clustersim sweep' "
                         "(docs/exploration.md)")
    return vals
