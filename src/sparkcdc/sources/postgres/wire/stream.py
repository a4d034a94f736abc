"""The CopyBoth stream of a logical replication connection (PostgreSQL docs, "Streaming
Replication Protocol": START_REPLICATION's XLogData, Primary keepalive message and Standby
status update), read for speed.

:meth:`ReplicationStream.batches` yields lists of XLogData messages, all those a socket read
brought in whole, so a consumer handles many per Python-level iteration. Each item is the
CopyData body as the server sent it, one ``bytes`` object and no tuple, no parsed integers::

    b"w" | walStart Int64 | walEnd Int64 | sendTime Int64 | payload (a pgoutput message)

so ``item[XLOG_HEADER]`` is the payload's first byte (``B``, ``R``, ``I``, ``U``, ``D``,
``C``, ...) and ``item[XLOG_HEADER:]`` the payload; :func:`xlog_start` and :func:`unpack_xlog`
read the header. For logical decoding walStart and walEnd are both the LSN of the change.

Keepalives are answered inside: the server's WAL end is kept (:attr:`server_wal_end`), and a
keepalive that asks for a reply is answered at once with a Standby status update whose write,
flush and apply positions are all the position the consumer confirmed (:meth:`confirm`), never
more. A status update also goes out every ``status_interval`` seconds (asking for a reply when
the server has been silent, so a dead link shows), also from :meth:`send_status` when the
consumer is busy, so ``wal_sender_timeout`` never ends the session.

Inside TLS the connection's socket is a :class:`~.tls.TlsSocket`: a read without waiting
decrypts the whole records it holds before it reads the socket, so the socket is polled only
once such a read found nothing, as in clear text.
"""

from __future__ import annotations

import math
import select
import socket
import struct
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from sparkcdc.core.errors import ConnectionFailed
from sparkcdc.sources.postgres.wire import messages as m

if TYPE_CHECKING:
    from sparkcdc.sources.postgres.wire.connection import PgConnection

XLOG_HEADER = 25  # b"w", walStart, walEnd, sendTime: where the payload starts in an item
_EPOCH_2000 = 946684800.0  # PostgreSQL's timestamps count from 2000-01-01 UTC
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_KEEPALIVE = struct.Struct(">QqB")  # walEnd, sendTime, replyRequested
_STATUS = struct.Struct(">cIcQQQqB")  # CopyData('r', write, flush, apply, clock, reply)
_XLOG = struct.Struct(">QQ")


def xlog_start(item: bytes) -> int:
    """An item's walStart: the LSN of its change."""
    start: int = _U64.unpack_from(item, 1)[0]
    return start


def unpack_xlog(item: bytes) -> tuple[int, int, bytes]:
    """An item as (walStart, walEnd, payload)."""
    start, end = _XLOG.unpack_from(item, 1)
    return start, end, item[XLOG_HEADER:]


class ReplicationStream:
    """A started logical replication stream (see :func:`.replication.start_logical`)."""

    def __init__(
        self,
        conn: PgConnection,
        slot: str,
        start_lsn: int,
        *,
        status_interval: float = 10.0,
        dead_after: float = 60.0,
        confirmed: int | None = None,
    ) -> None:
        self.conn = conn
        self.slot = slot
        self.status_interval = status_interval
        self.dead_after = dead_after
        self._reader = conn.reader
        # all before the start is done, unless the consumer says less is (a reconnect ahead of
        # what it has committed)
        self._confirmed = start_lsn if confirmed is None else min(confirmed, start_lsn)
        self._wal_end = start_lsn
        self._need = 5  # bytes the first unread message needs in the buffer
        self._reply_due = False
        self._error: m.ServerError | None = None
        self._ended = self._stopped = False
        now = time.monotonic()
        self._heard = now  # last bytes from the server
        self._pinged = 0.0  # last status update that asked for a reply
        self._next_status = now + status_interval

    @property
    def server_wal_end(self) -> int:
        """The server's WAL end as last reported (keepalives; XLogData: the change's LSN)."""
        return self._wal_end

    @property
    def confirmed(self) -> int:
        return self._confirmed

    def confirm(self, lsn: int) -> None:
        """Mark all changes before ``lsn`` as processed: the next status updates report it as
        written, flushed and applied, so the server may drop the WAL before it. Never goes
        back."""
        if lsn > self._confirmed:
            self._confirmed = lsn

    def send_status(self, force: bool = False) -> bool:
        """Send a Standby status update if one is due (``status_interval`` passed, or the
        server asked for a reply) or ``force``; whether one was sent."""
        now = time.monotonic()
        if force or self._reply_due or now >= self._next_status:
            self._status(now)
            return True
        return False

    def _status(self, now: float) -> None:
        """Standby status update: write = flush = apply = the confirmed LSN, the clock in
        microseconds since 2000-01-01, and a reply request when the server has been silent."""
        ping = now - self._heard >= self.status_interval
        clock = int((time.time() - _EPOCH_2000) * 1_000_000)
        lsn = self._confirmed
        self.conn.send(_STATUS.pack(b"d", 38, b"r", lsn, lsn, lsn, clock, ping))
        if ping and self._pinged <= self._heard:
            self._pinged = now
        self._next_status = now + self.status_interval
        self._reply_due = False

    def batches(
        self, wait: float | None = 1.0, idle: Callable[[], None] | None = None
    ) -> Iterator[list[bytes]]:
        """The XLogData items, in lists of those received whole per socket read. ``idle`` is
        called whenever nothing whole is buffered, before waiting on the socket; after
        ``wait`` seconds without data an empty list comes (None: wait on). Ends when the
        server ends the stream (CopyDone); an ErrorResponse raises its sparkcdc error."""
        recv = self._reader.recv
        poller = select.poll()
        poller.register(self.conn.sock, select.POLLIN)
        while True:
            items = self._split()
            now = time.monotonic()
            if self._reply_due or now >= self._next_status:
                self._status(now)
            if items:
                yield items
                continue
            if self._error is not None:
                raise self._failed()
            if self._ended or self._stopped:
                return
            try:
                recv(self._need, _DONTWAIT)
                self._heard = now
                continue
            except BlockingIOError:
                pass
            if idle is not None:
                idle()
            if not self._wait(poller, wait):
                yield []

    def _split(self) -> list[bytes]:
        """Take the whole messages buffered: XLogData items returned, keepalives and the rest
        handled (:meth:`_other`), up to the end, a partial message, an error or CopyDone."""
        if self._ended or self._stopped or self._error is not None:
            return []  # what follows (CommandComplete, ReadyForQuery) is for stop()/_failed()
        reader = self._reader
        s, end = reader.start, reader.end
        if end - s < 5:
            self._need = 5
            return []
        self._need = 1 + m.message_size(reader.buf, s, reader.where)
        if self._need > end - s:
            return []
        data = reader.view[s:end].tobytes()  # one copy, so each item is a plain slice
        items: list[bytes] = []
        append, unpack = items.append, _U32.unpack_from
        stop, p = len(data), 0
        while stop - p > 5:
            q = p + 1 + unpack(data, p + 1)[0]
            if q > stop or q < p + 5:
                if q < p + 5:
                    m.message_size(data, p, reader.where)  # raises: no message is that short
                break
            if data[p] == 100 and data[p + 5] == 119:  # CopyData holding XLogData
                append(data[p + 5 : q])
            elif not self._other(data, p, q):
                p = q
                break
            p = q
        if stop - p == 5 and unpack(data, p + 1)[0] == 4 and not self._ended and not self._error:
            self._other(data, p, stop)  # CopyDone (or an empty CopyData), last in the buffer
            p = stop
        reader.start = s + p
        if items:
            wal_end = _U64.unpack_from(items[-1], 9)[0]
            if wal_end > self._wal_end:
                self._wal_end = wal_end
        return items

    def _other(self, data: bytes, p: int, q: int) -> bool:
        """A message other than XLogData at ``data[p:q]``; whether to go on splitting."""
        kind = data[p]
        if kind == m.COPY_DATA:
            if q - p >= 5 + 1 + _KEEPALIVE.size and data[p + 5] == 107:  # Primary keepalive
                wal_end, _, reply = _KEEPALIVE.unpack_from(data, p + 6)
                if wal_end > self._wal_end:
                    self._wal_end = wal_end
                if reply:
                    self._reply_due = True
            return True
        if kind == m.COPY_DONE_TYPE:
            self._ended = True
            return False
        if kind == m.ERROR_RESPONSE:
            self._error = m.parse_error(data[p + 5 : q])
            return False
        return True  # NoticeResponse, ParameterStatus

    def _wait(self, poller: select.poll, wait: float | None) -> bool:
        """Wait up to ``wait`` seconds for bytes on the socket, sending status updates as they
        fall due; whether any came. Raises when a reply request went unanswered for
        ``dead_after`` seconds."""
        now = time.monotonic()
        deadline = math.inf if wait is None else now + wait
        while True:
            if self._pinged > self._heard and now - self._pinged > self.dead_after:
                raise ConnectionFailed(
                    f"{self.conn.where} stopped answering on the replication connection for "
                    f"{self.dead_after:g}s; it will be retried",
                    where=self.conn.where,
                )
            until = min(deadline, self._next_status)
            if self._pinged > self._heard:
                until = min(until, self._pinged + self.dead_after)
            timeout = until - now
            if poller.poll(max(0, math.ceil(timeout * 1000))):
                return True
            now = time.monotonic()
            if now >= self._next_status:
                self._status(now)
            if now >= deadline:
                return False

    def close(self) -> None:
        """Close the connection at once (no CopyDone: from another thread, to unblock)."""
        self.conn.close()

    def _failed(self) -> Exception:
        """The sparkcdc error for the ErrorResponse received, once the session is idle again."""
        error = self._error
        assert error is not None
        self._stopped = True
        if error.severity not in ("FATAL", "PANIC"):
            self._drain(5.0)
        return self.conn.error(error, slot=self.slot)

    def stop(self, timeout: float = 10.0) -> None:
        """End the stream: CopyDone, then read (and drop) what the server still sends up to
        ReadyForQuery, after which the connection takes commands again; a server silent for
        ``timeout`` seconds gets its connection closed."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self.conn.send(m.COPY_DONE)
        except ConnectionFailed:
            self.conn.close()
            return
        self._drain(timeout)

    def _drain(self, timeout: float) -> None:
        """Read up to ReadyForQuery (closing the connection if it does not come in time)."""
        sock = self.conn.sock
        deadline = time.monotonic() + timeout
        try:
            while True:
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                kind, body = self._reader.read()
                if kind == m.READY_FOR_QUERY:
                    self.conn.status = chr(body[0])
                    sock.settimeout(None)
                    return
        except (ConnectionFailed, OSError):
            self.conn.close()
