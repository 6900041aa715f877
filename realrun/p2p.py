"""Point-to-point messages of the algorithms (``Send``/``Recv``) over MPI, with a mailbox.

The simulator delivers a message into the receiver's mailbox as soon as it arrives, whether
or not the receiver is waiting for it, and a ``Recv`` takes the earliest matching message
(:mod:`clustersim.sim.mailbox`).  MPI has no such buffer for large messages: a rendezvous
send waits until the receiver posts a matching receive.  Two gossiping workers that send to
each other at once would deadlock on MPI where the simulator (and an algorithm's author)
sees no problem.  So this layer keeps the simulator's semantics on MPI:

* every rank keeps a :class:`~clustersim.sim.mailbox.Mailbox`;
* whenever a rank waits for its own point-to-point traffic (a blocking send, a receive, a
  ``Wait`` on a send), it *drains*: ``Iprobe(ANY_SOURCE, ANY_TAG)`` and, for every message
  found, ``Recv(source=status.source)`` into the mailbox - the classic parameter-server loop;
* a ``Recv(src, tag)`` first looks in the mailbox and otherwise blocks in
  ``Probe(ANY_SOURCE, ANY_TAG)`` (which also progresses the rank's pending sends), files what
  arrives, and looks again; ``Recv(poll=True)`` drains once and returns ``None`` when nothing
  matches.

Messages travel on a private duplicate of the world communicator, so nothing else (the
collectives, the schedule executor) can match them.  The payload is a real buffer of the
operation's ``nbytes``.  When an operation carries ``data`` (the proxy model's arrays) it is
put at the head of the payload and described by a 32-byte trailer, and the MPI tag says so
(``tag * 2 + 1``; ``tag * 2`` without data), so a receiver can rebuild the array whatever the
declared size: the message is ``max(nbytes, data + trailer)`` bytes long.
"""

from __future__ import annotations

import pickle
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from clustersim.algorithms.ops import ANY, Message
from clustersim.sim.mailbox import Mailbox

__all__ = ["PointToPoint", "Outgoing", "TRAILER"]

#: declared nbytes (float64), data length in bytes, kind (1 = ndarray, 2 = pickle), dtype
TRAILER = struct.Struct("<dqq8s")
_ARRAY, _PICKLE = 1, 2


@dataclass
class Outgoing:
    """A posted send: the MPI request and the buffer it must keep alive until done."""

    request: Any
    buffer: Any
    dst: int
    nbytes: float
    start: float
    done_at: float | None = None


class PointToPoint:
    """One rank's messaging: ``isend``, ``recv`` (blocking or polling) and ``drain``.

    ``comm`` is the world communicator (actor rank = MPI rank); a duplicate is used.  ``now``
    is the rank's clock (seconds since the run's origin).
    """

    def __init__(self, comm: Any, now: Any, backend: Any = None) -> None:
        from mpi4py import MPI  # lazy: importing mpi4py.MPI initialises MPI

        self.MPI = MPI
        self.comm = comm.Dup()
        self.now = now
        self.mailbox = Mailbox()
        self._status = MPI.Status()
        self._zeros: dict[int, np.ndarray] = {}
        # GPU ranks whose MPI cannot read device memory stage every message through the
        # host, as a real GPU parameter server does: a device -> host copy of the message
        # before the send and host -> device after the receive (real copies of real sizes)
        self._stage = backend if backend is not None and not backend.direct_mpi else None
        self._dev: dict[int, Any] = {}
        self._host: dict[int, np.ndarray] = {}
        self._recv_bufs: dict[int, np.ndarray] = {}

    def _device(self, n: int) -> Any:
        dev = self._dev.get(n)
        if dev is None:
            # uint8, as the host payloads: CuPy copies only between equal dtypes
            dev = self._dev[n] = self._stage.xp.zeros(max(n, 1), dtype=np.uint8)[:n]
        return dev

    # -- sending --------------------------------------------------------------------------------
    def _payload(self, nbytes: float, data: Any) -> tuple[np.ndarray, int]:
        n = max(int(round(nbytes)), 0)
        if data is None:
            buf = self._zeros.get(n)
            if buf is None:  # payload content is irrelevant: one shared read-only buffer
                buf = self._zeros[n] = np.zeros(n, dtype=np.uint8)
            return buf, 0
        if isinstance(data, np.ndarray) and data.dtype.kind in "fiub" and data.ndim <= 1:
            raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
            kind, dtype = _ARRAY, data.dtype.str.encode()
        else:
            raw = np.frombuffer(pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL),
                                dtype=np.uint8)
            kind, dtype = _PICKLE, b""
        total = max(n, raw.size + TRAILER.size)
        buf = np.zeros(total, dtype=np.uint8)
        buf[: raw.size] = raw
        buf[total - TRAILER.size:] = np.frombuffer(
            TRAILER.pack(float(nbytes), raw.size, kind, dtype), dtype=np.uint8)
        return buf, 1

    def isend(self, dst: int, nbytes: float, tag: int, data: Any = None) -> Outgoing:
        """Post a send of ``nbytes`` (plus ``data``) to ``dst``; returns its handle."""
        buf, flag = self._payload(nbytes, data)
        start = self.now()
        if self._stage is not None:  # the message's bytes come off the device first
            n = max(int(round(nbytes)), 0)
            host = self._host.get(n)
            if host is None:  # a scratch copy: the payload keeps the proxy model's data
                host = self._host[n] = self._stage.host_empty(n, np.uint8)
            self._stage.stage_out(self._device(n), host)
        req = self.comm.Isend(buf, dest=dst, tag=tag * 2 + flag)
        return Outgoing(req, buf, dst, nbytes, start)

    def test(self, out: Outgoing) -> bool:
        """Has ``out`` completed?  Remembers when it was first seen complete."""
        if out.done_at is None and out.request.Test():
            out.done_at = self.now()
        return out.done_at is not None

    def wait_sends(self, outs: list[Outgoing]) -> None:
        """Block until every send in ``outs`` is done, filing incoming messages meanwhile."""
        while True:
            if all(self.test(o) for o in outs):
                return
            self.drain()

    # -- receiving ------------------------------------------------------------------------------
    def _take_arrived(self, status: Any) -> None:
        size = status.Get_count(self.MPI.BYTE)
        src, mtag = status.Get_source(), status.Get_tag()
        if mtag % 2:  # carries data, read back below: a buffer of its own
            buf = np.empty(size, dtype=np.uint8)
        else:  # timing only: one receive buffer per size, reused - a fresh one per message
            # pays its page faults inside the timed receive (pinned where it is staged)
            buf = self._recv_bufs.get(size)
            if buf is None:
                buf = self._recv_bufs[size] = (self._stage.host_empty(size, np.uint8)
                                               if self._stage is not None
                                               else np.empty(size, dtype=np.uint8))
        self.comm.Recv(buf, source=src, tag=mtag)
        if self._stage is not None:
            self._stage.stage_in(buf, self._device(size))
        tag, flag = divmod(mtag, 2)
        data = None
        nbytes = float(size)
        if flag:
            declared, length, kind, dtype = TRAILER.unpack(buf[size - TRAILER.size:].tobytes())
            nbytes = declared
            raw = buf[:length]
            if kind == _ARRAY:
                data = raw.view(np.dtype(dtype.rstrip(b"\0").decode())).copy()
            else:
                data = pickle.loads(raw.tobytes())  # noqa: S301 - our own ranks' payloads
        self.mailbox.put(Message(src, tag, nbytes, data, self.now()))

    def drain(self) -> int:
        """File every message that has already arrived; returns how many."""
        n = 0
        st = self._status
        while self.comm.Iprobe(source=self.MPI.ANY_SOURCE, tag=self.MPI.ANY_TAG, status=st):
            self._take_arrived(st)
            n += 1
        return n

    def recv(self, src: int = ANY, tag: int = ANY, poll: bool = False) -> Message | None:
        """The earliest message matching ``src``/``tag`` (``ANY`` = wildcard).

        Blocks until one arrives, or with ``poll`` returns ``None`` when none has.
        """
        box = self.mailbox
        msg = box.take(src, tag)
        if msg is not None:
            return msg
        if poll:
            self.drain()
            return box.take(src, tag)
        st = self._status
        while True:
            self.comm.Probe(source=self.MPI.ANY_SOURCE, tag=self.MPI.ANY_TAG, status=st)
            self._take_arrived(st)
            self.drain()
            msg = box.take(src, tag)
            if msg is not None:
                return msg

    def free(self) -> None:
        self.comm.Free()
