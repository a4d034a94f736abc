"""The log reader: one replication connection in a daemon thread, putting log items into the
event store (Canal's parser -> sink -> store, in one loop).

Per event of the binlog dump::

    ROTATE / FORMAT_DESCRIPTION    current file, checksum and post-header sizes
    GTID                           a transaction opens at (file, pos of this event); its
                                   timestamp is the transaction's commit time (MariaDB)
    TABLE_MAP                      remembered per table id; decoders cached per (id, schema_id)
    WRITE/UPDATE/DELETE_ROWS       captured tables only -> envelope rows, cut into items of
                                   <= item_rows rows (:mod:`.transaction`, the resume counter)
    XID / QUERY COMMIT             the boundary: the pending item's ``after``, or a progress marker
    QUERY (other)                  DDL -> SchemaTracker; changes of captured tables are recorded
                                   in the schema history and put as a DDL item (``op='s'``)
    HEARTBEAT                      the stream is idle: a pending item or marker goes out

The first item announces every captured table's schema at the start offset (``op='s'``,
``after`` = start); a start given as a GTID position only (``file == ""``) is first resolved to
its file/pos (:func:`~.startup.resolve_gtid`). Transactions touching no captured table become
progress markers (``batch`` None), at most one per ``progress_interval`` or when the stream goes
idle, so offsets and lag advance without flooding the store.

Consecutive transactions are coalesced into one item while more of the log is already received
(the next event is buffered, or the socket has data), the item has room (``item_rows``) and its
first transaction joined less than ``COALESCE_SECONDS`` ago; the item goes out before the reader
would wait for the server. A transaction too big for the item's room is cut alone as above, a
DDL item always goes out alone, and while an item is pending, transactions on other tables move
its ``after`` instead of becoming progress markers.

Offsets put into the store are boundaries or (transaction start, skip). When the connection
breaks the reader reconnects with exponential backoff (0.5 s doubling to 30 s, giving up after
``reconnect_timeout``) and resumes at the ``after`` of the last item put, re-reading a split
transaction and dropping the rows already put. Errors retrying cannot fix (purged binlog,
missing privilege, binlog not ready) close the store with the error at once.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConnectionFailed, SourceError, StoreClosed
from sparkcdc.core.event import Change
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import BinlogOffset, file_sequence
from sparkcdc.sources.mysql import events as ev
from sparkcdc.sources.mysql.protocol import ReplicationConnection
from sparkcdc.sources.mysql.schema_history import SchemaHistory
from sparkcdc.sources.mysql.schema_state import SchemaState
from sparkcdc.sources.mysql.startup import resolve_gtid
from sparkcdc.sources.mysql.stream import format_gtid_pos, open_dump, parse_gtid_pos
from sparkcdc.sources.mysql.tablemap import TableMap
from sparkcdc.sources.mysql.transaction import TransactionCutter, schema_batch
from sparkcdc.store.ring import EventStore

log = logging.getLogger("sparkcdc.reader")

_ARTIFICIAL = 0x20
# server errors on the stream that mean "this connection ended", not "this cannot work"
_LOST = frozenset({1053, 1077, 1152, 1158, 1159, 1160, 1161, 1317, 1927, 2013})
_IGNORED_QUERIES = ("BEGIN", "XA ", "SAVEPOINT", "ROLLBACK TO", "RELEASE SAVEPOINT")
COALESCE_SECONDS = 0.05  # the longest a committed transaction waits in the pending item


@dataclass(frozen=True)
class ReaderStats:
    events: int
    rows: int
    position: BinlogOffset | None
    last_event_ts_ms: int
    connected: bool
    reconnects: int


class _Stopped(Exception):
    """stop() was called; unwinds the reader thread."""


class _ReachedStop(Exception):
    """The stream reached ``stop_at``: a bounded read (a snapshot window) is complete."""


ChangeFilter = Callable[[str, str, str, int, list[Change]], list[Change]]
"""(db, table, file, pos of the rows event, changes) -> the changes to keep."""


class LogReader:
    """Streams the binlog from ``start`` into ``store`` (see the module docstring)."""

    def __init__(
        self,
        source: SourceConfig,
        start: BinlogOffset,
        store: EventStore,
        history: SchemaHistory,
        item_rows: int = 2048,
        server_id: int | None = None,
        *,
        reconnect_timeout: float = 300.0,
        heartbeat: float = 1.0,
        progress_interval: float = 0.2,
        stop_at: BinlogOffset | None = None,
        change_filter: ChangeFilter | None = None,
    ) -> None:
        self.source = source
        self.start_offset = start
        self.store = store
        self.history = history
        self.server_id = server_id or source.server_id
        self.reconnect_timeout = reconnect_timeout
        self.heartbeat = heartbeat
        self.progress_interval = progress_interval
        self.stop_at = stop_at
        self.change_filter = change_filter
        self.cutter = TransactionCutter(item_rows, self._put, self.server_id)
        self.schemas = SchemaState(source, history)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn: ReplicationConnection | None = None
        self._error: BaseException | None = None
        self._events = self._rows = self._reconnects = self._events_since_connect = 0
        self._last_ts_ms = 0
        self._connected = False
        self._position: BinlogOffset | None = None
        self._last_put: BinlogOffset | None = None
        self._last_put_at = 0.0
        self._pending_marker: BinlogOffset | None = None
        # per connection: current file, format description, GTID position, pending resume
        self._file = ""
        self._fd: ev.FormatDescription | None = None
        self._standalone = False
        self._gtids: dict[int, tuple[int, int]] = {}
        self._gtid_text: str | None = None  # format_gtid_pos(self._gtids), once per change
        self._resume: BinlogOffset | None = None
        self._read_pos = 0  # the end of the last event read, in ``self._file``
        # per format description: table id width per rows event type, checksum bytes, and the
        # table maps parsed already (MariaDB repeats the same TABLE_MAP in every transaction)
        self._id_lens: dict[int, int] = {}
        self._trailer = 0
        self._maps: dict[bytes, TableMap] = {}

    # ------------------------------------------------------------------ control
    def start(self) -> None:
        """Start streaming in a daemon thread."""
        if self._thread is not None:
            raise RuntimeError("this log reader was started already; create a new one.")
        self._thread = threading.Thread(target=self._run, name="sparkcdc-log-reader", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread promptly: the blocking socket is shut down under it."""
        self._stop.set()
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
            conn.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def error(self) -> BaseException | None:
        """The exception that stopped the reader (None while running or after stop())."""
        return self._error

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stats(self) -> ReaderStats:
        return ReaderStats(
            self._events,
            self._rows,
            self._position,
            self._last_ts_ms,
            self._connected,
            self._reconnects,
        )

    def passed(self, offset: BinlogOffset) -> bool:
        """Whether every transaction ending at or before ``offset`` (a log end read from the
        server, e.g. a high watermark) was read and put into the store."""
        if not self._file or self._fd is None:
            return False
        here = (file_sequence(self._file), self._read_pos)
        if here < (file_sequence(offset.file), offset.pos):
            return False
        return self.cutter.pending is None and not self.cutter.open

    # ------------------------------------------------------------------ thread
    def _run(self) -> None:
        try:
            start = self.start_offset
            if not start.file:  # a GTID position: find its file/pos once, then stream by file
                start = resolve_gtid(self.source, start.gtid)
            self._position = start
            self._announce(start)
            self._stream_with_retries(start)
        except _ReachedStop:
            self.cutter.flush()
            if self._pending_marker is not None:
                self._put(LogItem(after=self._pending_marker))
            self.store.close()
        except (_Stopped, StoreClosed):
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer through the store
            if not self._stop.is_set():
                self._error = exc
                log.error("log reader stopped: %s", exc)
                self.store.close(exc)
        finally:
            self._connected = False
            if self._conn is not None:
                self._conn.close()
            close = getattr(self.change_filter, "close", None)
            if close is not None:
                close()  # the hand-off filter's catalog connection, if it opened one

    def _put(self, item: LogItem) -> None:
        while not self.store.put(item, timeout=0.2):
            if self._stop.is_set():
                raise _Stopped
        self._last_put = item.after
        self._last_put_at = time.monotonic()
        self._pending_marker = None
        self._rows += item.rows if not item.is_ddl else 0

    def _announce(self, start: BinlogOffset) -> None:
        """The first item: one ``op='s'`` row per captured table with its schema at start."""
        rows = self.schemas.load(start)
        if rows:
            batch = schema_batch(
                self.server_id, start.file, start.pos, "", int(time.time() * 1000), None, rows
            )
            self._put(LogItem(after=start, batch=batch, is_ddl=True))

    def _stream_with_retries(self, start: BinlogOffset) -> None:
        resume, backoff, lost_at = start, 0.5, 0.0
        while True:
            try:
                self._stream(resume)
                raise ConnectionFailed("the server ended the binlog stream; it will be retried")
            except (ConnectionFailed, SourceError) as exc:
                if not isinstance(exc, ConnectionFailed) and exc.fields.get("code") not in _LOST:
                    raise
                if self._stop.is_set():
                    raise _Stopped from None
                self._connected = False
                if self._conn is not None:
                    self._conn.close()
                now = time.monotonic()
                if self._events_since_connect or not lost_at:
                    lost_at, backoff = now, 0.5
                if now - lost_at >= self.reconnect_timeout:
                    raise ConnectionFailed(
                        f"lost the replication connection to {self.source.host}:"
                        f"{self.source.port} and could not reconnect for "
                        f"{self.reconnect_timeout:g}s ({exc}); check the server and restart "
                        "the pipeline.",
                        host=self.source.host,
                        port=self.source.port,
                    ) from exc
                log.warning("connection lost (%s); reconnecting in %.1fs", exc, backoff)
                if self._stop.wait(backoff):
                    raise _Stopped from None
                backoff = min(backoff * 2, 30.0)
                self._reconnects += 1
                resume = self._last_put or start
                self._pending_marker = None
                self.schemas.rewind(resume)

    # ------------------------------------------------------------------ stream
    def _stream(self, resume: BinlogOffset) -> None:
        """One connection: dispatch every event of the dump (see the module docstring)."""
        self._events_since_connect = 0
        conn, stream = open_dump(
            self.source,
            self.server_id,
            resume.file,
            resume.pos,
            heartbeat=self.heartbeat,
            idle=self._idle,
        )
        self._conn = conn
        self._file, self._standalone = resume.file, False
        self._set_format(None)
        self._gtids = _gtid_state(resume.gtid)
        self._gtid_text = None
        self._resume = resume if resume.skip else None
        self.cutter.reset()
        stopped = self._stop.is_set
        stop_file, stop_pos = (self.stop_at.file, self.stop_at.pos) if self.stop_at else (None, 0)
        unpack_header = ev.unpack_header
        rows_events = ev.ROWS_EVENTS
        table_map, gtid_event, xid, query = ev.TABLE_MAP, ev.GTID, ev.XID, ev.QUERY
        before_format = (ev.ROTATE, ev.FORMAT_DESCRIPTION, ev.HEARTBEAT)
        for data in stream:
            if stopped():
                raise _Stopped
            if not self._events_since_connect:
                self._connected = True
                self._log_connected(resume)
            self._events_since_connect += 1
            self._events += 1
            ts, etype, server_id, size, next_pos, flags = unpack_header(data, 0)
            if next_pos and not flags & _ARTIFICIAL and etype != ev.HEARTBEAT:
                self._read_pos = next_pos
            if ts:
                self._last_ts_ms = ts * 1000
            fd: ev.FormatDescription | None = self._fd
            if fd is None and etype not in before_format:
                continue  # nothing but these comes before the format description
            # most frequent first: a single-row transaction is GTID, TABLE_MAP, rows, XID
            if etype == table_map:
                assert fd is not None
                self._table_map(data, fd)
            elif etype in rows_events:
                self._rows_event(etype, data, next_pos - size)
            elif etype == gtid_event:
                assert fd is not None
                self._begin(data, fd.header_len, server_id, next_pos - size, ts)
            elif etype == xid:
                self._end_txn(self._boundary(next_pos))
            elif etype == query:
                assert fd is not None
                self._query(ev.parse_query(data, fd), next_pos - size, next_pos)
            elif etype == ev.ROTATE:
                rotate_fd = None if flags & _ARTIFICIAL else fd
                self._file, self._read_pos = ev.parse_rotate(data, rotate_fd)
            elif etype == ev.FORMAT_DESCRIPTION:
                self._set_format(ev.parse_format_description(data))
            elif etype == ev.HEARTBEAT:
                self.cutter.flush()
                if self._pending_marker is not None:
                    self._put(LogItem(after=self._pending_marker))
            elif etype in ev.COMPRESSED_EVENTS:
                self._compressed(etype, data)
            if next_pos >= stop_pos and self._file == stop_file and etype != ev.ROTATE:
                raise _ReachedStop

    def _idle(self) -> None:
        """No complete event is buffered: put the pending item unless more data has arrived
        already and it is young enough to wait for it."""
        cutter = self.cutter
        if cutter.pending is None:
            return
        conn = self._conn
        if (
            conn is None
            or time.monotonic() - cutter.pending_since >= COALESCE_SECONDS
            or not conn.data_waiting()
        ):
            cutter.flush()

    def _set_format(self, fd: ev.FormatDescription | None) -> None:
        self._fd = fd
        self._maps.clear()
        if fd is not None:
            self._id_lens = {t: 4 if fd.post_header_len(t) == 6 else 6 for t in ev.ROWS_EVENTS}
            self._trailer = ev.CHECKSUM_LEN if fd.checksum else 0

    def _table_map(self, data: bytes, fd: ev.FormatDescription) -> None:
        """A TABLE_MAP event; one seen before (same bytes after the header) is not re-parsed."""
        body = data[fd.header_len : len(data) - self._trailer]
        tm = self._maps.get(body)
        if tm is None:
            if len(self._maps) >= 1024:
                self._maps.clear()
            tm = self._maps[body] = ev.parse_table_map(data, fd)
        self.schemas.table_map(tm)

    def _boundary(self, next_pos: int) -> BinlogOffset:
        text = self._gtid_text
        if text is None:
            text = self._gtid_text = format_gtid_pos(self._gtids)
        return BinlogOffset(self._file, next_pos, text)

    def _begin(self, data: bytes, start: int, server_id: int, pos: int, ts: int) -> None:
        """A GTID event (post-header at ``start``, ``server_id`` from its header) opens a
        transaction; the one a resume offset names drops its first ``skip`` rows."""
        seq, domain, flags = ev.unpack_gtid(data, start)
        cutter = self.cutter
        if cutter.open and cutter.seen:
            log.warning(
                "the transaction %s ended without a commit event; its %d changes are "
                "dropped (XA transactions are not supported)",
                cutter.gtid,
                cutter.seen,
            )
        before = self._gtid_text
        if before is None:
            before = format_gtid_pos(self._gtids)
        self._gtids[domain] = (server_id, seq)
        self._gtid_text = None
        skip, resume = 0, self._resume
        if resume is not None:
            if (self._file, pos) != (resume.file, resume.pos):
                raise SourceError(
                    f"the transaction to resume at {resume} is not where the offset says "
                    f"(found one at {self._file}:{pos}); restart from a boundary offset."
                )
            skip, self._resume = resume.skip, None
        cutter.begin(self._file, pos, before, f"{domain}-{server_id}-{seq}", ts * 1000, skip)
        self._standalone = bool(flags & ev.FL_STANDALONE)

    def _query(self, query: ev.Query, pos: int, next_pos: int) -> None:
        """COMMIT/ROLLBACK end a transaction; other statements but BEGIN/XA/SAVEPOINT are DDL."""
        sql = query.sql.strip()
        head = sql[:20].upper()
        boundary = self._boundary(next_pos)
        if head.startswith(("COMMIT", "ROLLBACK")) and not head.startswith("ROLLBACK TO"):
            self._end_txn(boundary)
        elif not head.startswith(_IGNORED_QUERIES):
            in_group = self.cutter.open and not self._standalone
            self._ddl(query.db, sql, pos, None if in_group else boundary)
            if self.cutter.open and self._standalone:
                self._end_txn(boundary)

    def _log_connected(self, resume: BinlogOffset) -> None:
        where = f"{self.source.host}:{self.source.port}"
        gtid = f" (gtid {resume.gtid})" if resume.gtid else ""
        if resume.skip:
            log.info(
                "connected to %s, resuming the transaction at %s:%s%s after its first %d changes",
                where,
                resume.file,
                resume.pos,
                gtid,
                resume.skip,
            )
        else:
            log.info(
                "connected to %s, streaming from %s:%s%s", where, resume.file, resume.pos, gtid
            )

    def _rows_event(self, etype: int, data: bytes, pos: int) -> None:
        assert self._fd is not None
        start = self._fd.header_len
        table_id = int.from_bytes(data[start : start + self._id_lens[etype]], "little")
        found = self.schemas.decoder(table_id)
        if found is None or not self.cutter.open:
            return
        tm, decoder, sid = found
        changes = decoder.decode(etype, data, start, len(data) - self._trailer)
        if self.change_filter is not None:
            changes = self.change_filter(tm.db, tm.table, self._file, pos, changes)
            if not changes:
                return
        self.cutter.add(tm.db, tm.table, sid, pos, changes)

    def _compressed(self, etype: int, data: bytes) -> None:
        """A MariaDB compressed event (``log_bin_compress``): harmless on tables not captured,
        refused on captured ones and for statements (which may be DDL) so nothing is missed."""
        assert self._fd is not None
        if etype != ev.QUERY_COMPRESSED:
            start = self._fd.header_len
            table_id = int.from_bytes(
                data[start : start + self._id_lens[ev.WRITE_ROWS_V1]], "little"
            )
            if self.schemas.decoder(table_id) is None:
                return
        raise ev.compressed_event_error(etype)

    def _end_txn(self, boundary: BinlogOffset) -> None:
        self._position = boundary
        cutter = self.cutter
        if cutter.commit(boundary) if cutter.open else cutter.advance(boundary):
            pending = cutter.pending
            assert pending is not None
            if (
                len(pending) >= cutter.item_rows
                or time.monotonic() - cutter.pending_since >= COALESCE_SECONDS
            ):
                cutter.flush()
            else:
                self._pending_marker = None  # the pending item carries this boundary
            return
        self._pending_marker = boundary
        if (
            self._pending_marker is not None
            and time.monotonic() - self._last_put_at >= self.progress_interval
        ):
            self._put(LogItem(after=self._pending_marker))

    def _ddl(self, db: str, sql: str, pos: int, boundary: BinlogOffset | None) -> None:
        """Apply a statement to the tracked schemas; changes of captured tables become one DDL
        item (``boundary`` None: inside a multi-statement transaction, e.g. CREATE … SELECT)."""
        cutter = self.cutter
        if cutter.open and cutter.skip and cutter.seen <= cutter.skip:
            return  # met before the resume point: the schemas at that point include it
        after = boundary or cutter.inner_offset()
        rows = self.schemas.apply(db, sql, after)
        if not rows:
            return
        if not cutter.open:  # a DDL outside any GTID group (a stream opened mid-group)
            cutter.file, cutter.gtid, cutter.ts_ms = after.file, "", self._last_ts_ms
        cutter.add_ddl(sql, rows, pos, after)
        if after.at_boundary:
            self._position = after


def _gtid_state(text: str) -> dict[int, tuple[int, int]]:
    try:
        return parse_gtid_pos(text)
    except ValueError:
        return {}
