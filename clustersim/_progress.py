"""Context managers that yield an ``advance(n=1)`` callable: bound to a rich progress bar
(a terminal), or printing a plain line now and then (:class:`ProgressLines`: a batch job's
log)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any


class ProgressAdvance:
    """A rich ``Progress`` bar over ``total`` steps, started on entry and stopped on exit; the
    ``advance(n=1)`` it yields moves the bar (for a terminal; see :class:`ProgressLines`)."""

    def __init__(self, progress: Any, total: int) -> None:
        self.progress = progress
        self.total = total

    def __enter__(self) -> Callable[[int], None]:
        self.progress.start()
        task = self.progress.add_task("", total=self.total)
        return lambda n=1: self.progress.advance(task, n)

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


class ProgressLines:
    """One line every ``every`` seconds - points done, share, rate, time left - on a stream
    that is not a terminal.

    Why: a sweep under ``mpiexec`` or in a batch job writes its stderr to a pipe or a file,
    where a progress bar is not drawn; such a log showed nothing until the summary, hours
    later.  Lines, not a bar: a log is read afterwards, and a line every half minute keeps
    it short."""

    def __init__(self, total: int, what: str, every: float = 30.0,
                 stream: IO[str] | None = None) -> None:
        self.total, self.what, self.every = total, what, every
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self.t0 = self.last = 0.0

    def _line(self) -> None:
        took = time.monotonic() - self.t0
        rate = self.done / took if took > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        eta = "" if left != left else f", about {left:,.0f} s left"
        print(f"{self.what}: {self.done:,}/{self.total:,} points "
              f"({100 * self.done / self.total:.0f}%), {rate:,.1f} points/s{eta}",
              file=self.stream, flush=True)

    def __enter__(self) -> Callable[[int], None]:
        self.t0 = self.last = time.monotonic()

        def advance(n: int = 1) -> None:
            self.done += n
            now = time.monotonic()
            if now - self.last >= self.every and self.done < self.total:
                self.last = now
                self._line()

        return advance

    def __exit__(self, *exc: object) -> None:
        return None
