"""Test helper: find processes a real run left behind (a /proc scan by the run's log dir)."""

from __future__ import annotations

import os
from pathlib import Path

from realrun.rankstate import LOG_DIR_VAR


def no_strays(where: Path) -> None:
    """No live process of a run whose logs are under ``where`` survived."""
    want = f"{LOG_DIR_VAR}={Path(where).resolve()}".encode()
    left = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X") and any(e.startswith(want) for e in env):
            left.append(int(name))
    assert left == [], f"stray processes: {left}"
