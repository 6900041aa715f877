"""An actor's mailbox: messages matched by (source, tag) with MPI wildcards, in O(1).

Why not a list scanned front to back: a master or parameter server with thousands of workers
holds thousands of pending messages (one "ready" request per worker), and every ``Recv`` for a
particular worker scanned all of them - quadratic in the worker count, and the hot spot of
any 4,000-worker asynchronous simulation.  Here every message is filed under queues in arrival
order - its (source, tag), its tag, its source, and "all" - so the earliest message that
matches any ``Recv(src, tag)`` pattern, wildcards included, is the head of one queue.  A
message taken through one queue stays in the others until it reaches their head and is
skipped there (lazy deletion), so each message is handled a constant number of times.

Each kind of queue is built on first use (from the pending messages, in arrival order) and
kept up to date from then on: most mailboxes are only ever asked one kind of question (a
worker's ``Recv(src=master, tag=...)``, a server's ``Recv(tag=PUSH)``), and every message would
otherwise pay for all four.  Matching semantics are MPI's and the engine's: the earliest
arrived message that matches; messages of one sender arrive in the order sent.
"""

from __future__ import annotations

from collections import deque

from clustersim.algorithms.ops import ANY, Message

__all__ = ["Mailbox"]


class Mailbox:
    """Pending messages of one actor (see the module docstring)."""

    __slots__ = ("_live", "_next", "_by_key", "_by_tag", "_by_src", "_all")

    def __init__(self) -> None:
        self._live: dict[int, Message] = {}
        self._next = 0
        # each built on first use
        self._by_key: dict[tuple[int, int], deque[int]] | None = None
        self._by_tag: dict[int, deque[int]] | None = None
        self._by_src: dict[int, deque[int]] | None = None
        self._all: deque[int] | None = None

    def __len__(self) -> int:
        return len(self._live)

    def put(self, msg: Message) -> None:
        """File an arrived message."""
        seq = self._next
        self._next = seq + 1
        live = self._live
        live[seq] = msg
        index = self._by_key
        if index is not None:  # _file(index, (msg.src, msg.tag), seq, live), inline: hot
            key = (msg.src, msg.tag)
            q = index.get(key)
            if q is None:
                index[key] = deque((seq,))
            else:
                while q and q[0] not in live:
                    q.popleft()
                q.append(seq)
        if self._by_tag is not None:
            _file(self._by_tag, msg.tag, seq, live)
        if self._by_src is not None:
            _file(self._by_src, msg.src, seq, live)
        if self._all is not None:
            q = self._all
            while q and q[0] not in live:
                q.popleft()
            q.append(seq)

    def take(self, src: int = ANY, tag: int = ANY) -> Message | None:
        """Remove and return the earliest message matching ``src``/``tag``, or ``None``."""
        if src != ANY:
            if tag != ANY:
                index = self._by_key
                if index is None:
                    index = self._by_key = _index(self._live, lambda m: (m.src, m.tag))
                q = index.get((src, tag))
            else:
                index = self._by_src
                if index is None:
                    index = self._by_src = _index(self._live, lambda m: m.src)
                q = index.get(src)
        elif tag != ANY:
            index = self._by_tag
            if index is None:
                index = self._by_tag = _index(self._live, lambda m: m.tag)
            q = index.get(tag)
        else:
            if self._all is None:
                self._all = deque(self._live)
            q = self._all
        if not q:
            return None
        live = self._live
        while q:
            msg = live.pop(q.popleft(), None)
            if msg is not None:
                return msg
        return None


def _index(live: dict[int, Message], key) -> dict:
    """A new index of the pending messages by ``key(message)``, in arrival order."""
    index: dict = {}
    for seq, m in live.items():
        _file(index, key(m), seq, live)
    return index


def _file(index: dict, key, seq: int, live: dict[int, Message]) -> None:
    """Append ``seq`` to ``index[key]``, first dropping entries taken through another queue."""
    q = index.get(key)
    if q is None:
        index[key] = deque((seq,))
        return
    while q and q[0] not in live:
        q.popleft()
    q.append(seq)
