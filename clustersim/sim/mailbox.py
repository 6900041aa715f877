"""An actor's mailbox: messages matched by (source, tag) with MPI wildcards, in O(1).

Why not a list scanned front to back: a master or parameter server with thousands of workers
holds thousands of pending messages (one "ready" request per worker), and every ``Recv`` for a
particular worker scanned all of them - quadratic in the worker count, and the hot spot of
any 4,000-worker asynchronous simulation.  Here every message is filed under four queues -
its (source, tag), its source, its tag and all - each in arrival order, so the earliest
message that matches any ``Recv(src, tag)`` pattern, wildcards included, is the head of one
queue.  A message taken through one queue stays in the other three until it reaches their
head and is skipped there (lazy deletion), so each message is handled a constant number of
times.  Matching semantics are MPI's and the engine's: the earliest arrived message that
matches; messages of one sender arrive in the order sent.
"""

from __future__ import annotations

from collections import deque

from clustersim.algorithms.ops import ANY, Message

__all__ = ["Mailbox"]


class Mailbox:
    """Pending messages of one actor (see the module docstring)."""

    __slots__ = ("_live", "_next", "_by_key", "_by_src", "_by_tag", "_all")

    def __init__(self) -> None:
        self._live: dict[int, Message] = {}
        self._next = 0
        self._by_key: dict[tuple[int, int], deque[int]] = {}
        self._by_src: dict[int, deque[int]] = {}
        self._by_tag: dict[int, deque[int]] = {}
        self._all: deque[int] = deque()

    def __len__(self) -> int:
        return len(self._live)

    def put(self, msg: Message) -> None:
        """File an arrived message."""
        seq = self._next
        self._next = seq + 1
        self._live[seq] = msg
        live = self._live
        for q in (self._queue(self._by_key, (msg.src, msg.tag)),
                  self._queue(self._by_src, msg.src),
                  self._queue(self._by_tag, msg.tag), self._all):
            while q and q[0] not in live:  # drop entries taken through another queue
                q.popleft()
            q.append(seq)

    def take(self, src: int = ANY, tag: int = ANY) -> Message | None:
        """Remove and return the earliest message matching ``src``/``tag``, or ``None``."""
        if src != ANY:
            q = self._by_key.get((src, tag)) if tag != ANY else self._by_src.get(src)
        elif tag != ANY:
            q = self._by_tag.get(tag)
        else:
            q = self._all
        if not q:
            return None
        live = self._live
        while q:
            seq = q.popleft()
            msg = live.pop(seq, None)
            if msg is not None:
                return msg
        return None

    @staticmethod
    def _queue(index: dict, key) -> deque[int]:
        q = index.get(key)
        if q is None:
            q = index[key] = deque()
        return q
