"""The log reader: one replication connection in a daemon thread, putting log items into the
event store (Canal's parser -> sink -> store, in one loop; the events themselves are
:mod:`.dispatch`'s).

The first item announces every captured table's schema at the start offset (``op='s'``,
``after`` = start); a start given as a GTID position only (``file == ""``) is first resolved to
its file/pos (:func:`~sparkcdc.sources.mysql.server.startup.resolve_gtid`). Transactions touching
no captured table become progress markers (``batch`` None), at most one per
``progress_interval`` or when the stream goes idle, so offsets and lag advance without flooding
the store.

Consecutive transactions are coalesced into one item while more of the log is already received
(the next event is buffered, or the socket has data), the item has room (``item_rows``) and its
first transaction joined less than ``COALESCE_SECONDS`` ago; the item goes out before the reader
would wait for the server. A transaction too big for the item's room is cut alone, a DDL item
always goes out alone, and while an item is pending, transactions on other tables move its
``after`` instead of becoming progress markers.

With ``source.heartbeat`` (not in a bounded read) the reader beats once per interval while it
waits for the server (:mod:`sparkcdc.sources.heartbeat`): the action query
(:mod:`~sparkcdc.sources.mysql.server.heartbeat`), then the end of the last event read as a
progress marker when no transaction is open and it lies past the last boundary (a new binlog
file's header events end no transaction), and the server's heartbeat period is at most the
interval.

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
import time
from collections.abc import Iterator

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConnectionFailed, SourceError
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import Offset
from sparkcdc.core.offset_events import own_values, schema_batch
from sparkcdc.sources.log_thread import LogThread
from sparkcdc.sources.mysql.binlog.dispatch import BinlogDispatch
from sparkcdc.sources.mysql.binlog.dump import open_dump
from sparkcdc.sources.mysql.binlog.protocol import ReplicationConnection
from sparkcdc.sources.mysql.binlog.state import BinlogState
from sparkcdc.sources.mysql.binlog.transactions import ReaderCalls
from sparkcdc.sources.mysql.offset import BinlogOffset, file_sequence
from sparkcdc.sources.mysql.schema.history import SchemaHistory
from sparkcdc.sources.mysql.schema.state import SchemaState
from sparkcdc.sources.mysql.server.heartbeat import ActionQuery
from sparkcdc.sources.mysql.server.startup import resolve_gtid
from sparkcdc.sources.mysql.settings import MySQLSettings
from sparkcdc.sources.port import ChangeFilter
from sparkcdc.store.cutter import TransactionCutter
from sparkcdc.store.ring import EventStore

log = logging.getLogger("sparkcdc.reader")

# server errors on the stream that mean "this connection ended", not "this cannot work"
_LOST = frozenset({1053, 1077, 1152, 1158, 1159, 1160, 1161, 1317, 1927, 2013})


class LogReader(LogThread):
    """Streams the binlog from ``start`` into ``store`` (see the module docstring); the events
    of each connection are a :class:`~.dispatch.BinlogDispatch`'s, on the reader's
    :class:`~.state.BinlogState`."""

    def __init__(
        self,
        source: SourceConfig,
        start: BinlogOffset,
        store: EventStore,
        history: SchemaHistory,
        item_rows: int = 2048,
        server_id: int | None = None,
        *,
        reconnect_timeout: float | None = None,
        heartbeat: float = 1.0,
        progress_interval: float = 0.2,
        stop_at: BinlogOffset | None = None,
        change_filter: ChangeFilter | None = None,
        typed: bool = False,
    ) -> None:
        LogThread.__init__(
            self, f"{source.host}:{source.port}", store,
            reconnect_timeout=(
                source.reconnect_timeout if reconnect_timeout is None else reconnect_timeout
            ),
            progress_interval=progress_interval,
            heartbeat=source.heartbeat if stop_at is None else None, capture=source.capture,
        )  # fmt: skip
        self.source = source
        self.start_offset = start
        self.history = history
        self.server_id = server_id or MySQLSettings.of(source).server_id
        if self.beats.enabled:  # the server's heartbeats come at least once an interval
            heartbeat = min(heartbeat, self.beats.interval)
        self.heartbeat = heartbeat
        self._action = ActionQuery(source)
        self.stop_at = stop_at
        self.change_filter = change_filter
        self.typed = typed
        self.json_table = source.signal_table  # its rows are read as JSON (signals)
        self.cutter = TransactionCutter(item_rows, self._put, BinlogOffset)
        self.schemas = SchemaState(source, history)
        self.state = BinlogState()
        self._conn: ReplicationConnection | None = None

    def passed(self, offset: Offset) -> bool:
        """Whether every transaction ending at or before ``offset`` (a log end read from the
        server, e.g. a high watermark) was read and put into the store."""
        state = self.state
        if not state.file or state.fd is None:
            return False
        if (file_sequence(state.file), state.read_pos) < offset.position_key:
            return False
        return self.cutter.pending is None and not self.cutter.open

    def ack(self, offset: Offset) -> None:
        """Nothing to do: a binlog keeps no position of its readers (the server purges by its
        own retention settings)."""

    # ------------------------------------------------------------------ LogThread
    def _prepare(self) -> BinlogOffset:
        start = self.start_offset
        if not start.file:  # a GTID position: find its file/pos once, then stream by file
            start = resolve_gtid(self.source, start.gtid)
        self._record_position(start)
        self._announce(start)
        return start

    def _interrupt(self) -> None:
        """The blocking socket is shut down under the thread."""
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _finish(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._action.close()
        close = getattr(self.change_filter, "close", None)
        if close is not None:
            close()  # the hand-off filter's catalog connection, if it opened one

    def _retryable(self, exc: SourceError) -> bool:
        return isinstance(exc, ConnectionFailed) or exc.fields.get("code") in _LOST

    def _rewind(self, resume: Offset) -> None:
        super()._rewind(resume)
        assert isinstance(resume, BinlogOffset)
        self.schemas.rewind(resume)

    def _data_waiting(self) -> bool:
        conn = self._conn
        return conn is not None and conn.data_waiting()

    def _beat(self) -> None:
        """The action query, then the end of the last event read as a progress marker, when no
        transaction is open or pending and it lies past the last boundary."""
        self._action.run()
        cutter, state = self.cutter, self.state
        if cutter.open or cutter.pending is not None or not state.file or state.fd is None:
            return
        here = state.boundary(state.read_pos)
        last = self.last_boundary
        if last is None or here > last:
            self._record_position(here)
            self._put(LogItem(after=here))

    def _announce(self, start: BinlogOffset) -> None:
        """The first item: one ``op='s'`` row per captured table with its schema at start."""
        rows = self.schemas.load(start)
        if rows:
            batch = schema_batch(
                rows, BinlogOffset, position=start.position(), own=own_values(BinlogOffset, start),
                ts_ms=int(time.time() * 1000),
            )  # fmt: skip
            self._put(LogItem(after=start, batch=batch, is_ddl=True))

    def _stream(self, resume: Offset) -> None:
        """One connection: every event of the dump from ``resume``."""
        assert isinstance(resume, BinlogOffset)
        conn, stream = open_dump(
            self.source, self.server_id, resume.file, resume.pos, heartbeat=self.heartbeat,
            idle=self._idle,
        )  # fmt: skip
        self._conn = conn
        self.follow(resume, stream)

    def follow(self, resume: BinlogOffset, stream: Iterator[list[bytes]]) -> None:
        """Dispatch every event of ``stream``, a dump from ``resume`` in lists of events, with
        a dispatcher of its own; the thread's figures move once per list."""
        state = self.state
        state.restart(resume)
        self.cutter.reset()
        calls = ReaderCalls(
            self._end_txn, self._record_position, lambda: self.last_boundary,
            self._flush_waiting, self._handoff_passed,
        )  # fmt: skip
        dispatch = BinlogDispatch(
            state, self.cutter, self.schemas, calls, stop_at=self.stop_at,
            change_filter=self.change_filter, typed=self.typed, json_table=self.json_table,
        )  # fmt: skip
        first = True
        for events in stream:
            self._check_stopped()
            if first:
                self._on_connected(resume)
                first = False
            self._count_events(len(events))
            try:
                dispatch.dispatch(events)
            finally:
                self._record_event_time(state.ts_ms)

    def _handoff_passed(self) -> None:
        """The stream is past the snapshot's hand-off: its filter no longer applies."""
        self.change_filter = None

    def _on_connected(self, resume: BinlogOffset) -> None:
        """The dump's first events arrived."""
        self._mark_connected()
        where = f"{self.source.host}:{self.source.port}"
        gtid = f" (gtid {resume.gtid})" if resume.gtid else ""
        position = {"position": str(resume)}
        if resume.skip:
            log.info(
                "connected to %s, resuming the transaction at %s:%s%s after its first %d changes",
                where, resume.file, resume.pos, gtid, resume.skip, extra=position,
            )  # fmt: skip
        else:
            log.info(
                "connected to %s, streaming from %s:%s%s", where, resume.file, resume.pos, gtid,
                extra=position,
            )  # fmt: skip
