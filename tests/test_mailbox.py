"""The engine's mailbox matches exactly like a front-to-back scan of a list (MPI semantics)."""

from __future__ import annotations

import numpy as np
import pytest

from clustersim.algorithms.ops import ANY, Message
from clustersim.sim.mailbox import Mailbox


def _scan(box: list[Message], src: int, tag: int) -> Message | None:
    """The reference: earliest arrived message matching src/tag (ANY = wildcard)."""
    for k, m in enumerate(box):
        if (src == ANY or m.src == src) and (tag == ANY or m.tag == tag):
            return box.pop(k)
    return None


def test_wildcards_and_arrival_order():
    mb = Mailbox()
    msgs = [Message(s, t, float(i)) for i, (s, t) in enumerate([(1, 5), (2, 5), (1, 6), (2, 6)])]
    for m in msgs:
        mb.put(m)
    assert mb.take(2, 6) is msgs[3]
    assert mb.take(ANY, 6) is msgs[2]
    assert mb.take(2, ANY) is msgs[1]
    assert mb.take(3, ANY) is None and mb.take(ANY, 7) is None
    assert len(mb) == 1 and mb.take() is msgs[0] and mb.take() is None


@pytest.mark.parametrize("source_wildcards_from", [0, 2500])
def test_matches_a_linear_scan_on_random_traffic(source_wildcards_from):
    """Random puts and takes; source-only and match-all questions start at step
    ``source_wildcards_from`` (their queues are built lazily from what is pending then)."""
    rng = np.random.default_rng(3)
    mb, ref = Mailbox(), []
    for step in range(5000):
        if rng.random() < 0.55:
            m = Message(int(rng.integers(4)), int(rng.integers(3)), float(step))
            mb.put(m)
            ref.append(m)
        else:
            late = step < source_wildcards_from
            src = ANY if rng.random() < 0.3 else int(rng.integers(4))
            tag = ANY if rng.random() < 0.3 else int(rng.integers(3))
            if late and tag == ANY:
                tag = int(rng.integers(3))  # before the onset: (src, tag) or (ANY, tag) only
            assert mb.take(src, tag) is _scan(ref, src, tag)
        assert len(mb) == len(ref)
