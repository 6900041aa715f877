"""The communication libraries a platform may declare (``library:``).

The names live here, below the collectives, because a platform description is parsed before
any collective exists and imports must flow one way (collectives -> platform): the selectors
in :mod:`clustersim.collectives.selection` read this list, the platform never imports them.
"""

from __future__ import annotations

from clustersim.errors import unknown_name

__all__ = ["LIBRARIES", "check_library"]

#: what ``library:`` accepts: each names a selector of :mod:`clustersim.collectives.selection`
LIBRARIES = ("mpich", "mpich-4", "mpich-3.3", "mpich-3.2", "openmpi", "openmpi-4.1", "openmpi-4.0",
             "nccl")


def check_library(name: object, path: tuple) -> str:
    """A platform's ``library:`` value, or an InputError naming the allowed ones."""
    if not isinstance(name, str) or name not in LIBRARIES:
        raise unknown_name("library", name, LIBRARIES, path=path)
    return name



