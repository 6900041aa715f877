"""The command line's argument parser: usage errors as input errors.

Why a module of its own: every subcommand's parser is one of these (``parser_class``), and
the rules for what a usage error says - exit 2, one line naming the command's own help -
are the same for all of them.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence

from clustersim.errors import InputError

__all__ = ["Parser", "profile_file"]


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as input errors (exit 2, one message)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        m = re.match(r"argument (--[\w-]+)(?:/\S+)?: expected one argument$", message)
        if m:  # `--bandwidth -1,1`: argparse reads the value as an option (QA 19 L6)
            message += f" (a value that starts with '-' goes after '=': {m[1]}=-1)"
        raise InputError(f"{self.prog}: {message} (see '{self.prog} --help')")

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        """A subcommand refuses what it does not know itself, so that the message names its
        own help: argparse hands a subcommand's leftovers up to the top parser, whose
        refusal named 'clustersim --help' (audit L7: ``list scenarios --wide``)."""
        ns, extras = super().parse_known_args(args, namespace)
        if extras and " " in self.prog:  # 'clustersim list': a subcommand's parser
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns, extras


def profile_file(text: str) -> str:
    """``--calibration FILE`` (an argparse ``type``): refuses an empty name.  Why: ``predict
    --calibration "$PROFILE"`` with the variable unset predicted uncalibrated, exit 0 - every
    other path option already refused an empty name (audit E M2)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty file name; give a calibration profile "
                                         "(YAML) or leave the option out")
    return text
