"""A context manager that yields an ``advance(n=1)`` callable bound to a rich progress bar."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ProgressAdvance:
    def __init__(self, progress: Any, total: int) -> None:
        self.progress = progress
        self.total = total

    def __enter__(self) -> Callable[[int], None]:
        self.progress.start()
        task = self.progress.add_task("", total=self.total)
        return lambda n=1: self.progress.advance(task, n)

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()
