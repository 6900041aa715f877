"""The ``clustersim`` console script's entry point: the command, with Ctrl-C covered from the
first instruction.

Why a module of its own: the script imports its entry's module before calling it, and
:mod:`clustersim.cli` with its command modules takes ~0.1 s to import; a Ctrl-C in that
window raised ``KeyboardInterrupt`` out of the import - a traceback where every later
Ctrl-C prints "interrupted" (audit E H6).  This module imports nothing of the tool at its
top, so the window is Python's own start-up.
"""

from __future__ import annotations

import contextlib
import sys

__all__ = ["main"]


def main() -> int:
    """:func:`clustersim.cli.console_main`, or "interrupted" and 130 for a Ctrl-C that lands
    before it has set up its own handling."""
    try:
        from clustersim.cli import console_main

        return console_main()
    except KeyboardInterrupt:
        with contextlib.suppress(OSError):  # the terminal may be gone
            print("interrupted", file=sys.stderr)
        return 130
