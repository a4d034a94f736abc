"""The PostgreSQL log reader: a logical replication stream with pgoutput into the event store.

One replication connection streams the slot from the start LSN (pgoutput: each transaction
after its commit, in commit order; on PostgreSQL 14+ a large one streamed while it runs and held
until its commit, :mod:`.streamed`). Begin opens a transaction in the
:class:`~sparkcdc.store.cutter.TransactionCutter` at its commit record's start (its offset,
:mod:`~sparkcdc.sources.postgres.offset`); consecutive row messages of one table and kind are
kept as texts (:class:`~.rows.TextRows`, :mod:`.row_texts`) and handed over as one log record,
whose position is the transaction's commit LSN and the index of its first change in the
transaction; Commit ends the transaction at its end LSN, the next boundary. Relation messages
keep the captured tables' schemas (:mod:`.tables`), judged against the catalog for what they did
to the rows a table holds (:mod:`.existing`, one catalog connection of the reader's own) and
kept in the schema history (:mod:`.history`), from which a restarted reader starts; TRUNCATE
empties a replica. A lost connection is a lost catalog connection too: a reconnect reopens it
before the stream goes on, and a catalog query that finds its connection gone (ConnectionFailed)
is retried as the stream's loss is.

The slot is acknowledged only through :meth:`PgLogReader.ack`, which the stream reader calls
after the Spark batch holding an offset committed; a new connection starts reporting that
acknowledged position, never the one it resumes from. While nothing captured is in flight, the
server's position from its keepalives becomes a progress marker, so an idle captured table lets
the server recycle its WAL once that marker's batch commits (and :mod:`.heartbeat` gives a
database where nothing is written WAL to follow).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import SourceError
from sparkcdc.core.event import SchemaRow
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import Offset, position_text
from sparkcdc.core.offset_events import own_values, schema_batch
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.decode_errors import decode_error
from sparkcdc.sources.log_thread import LogThread, Stopped
from sparkcdc.sources.port import ChangeFilter, TableView
from sparkcdc.sources.postgres.chunks.view_token import view_token
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.pgoutput import messages as pm
from sparkcdc.sources.postgres.pgoutput.types import PgType, type_message_resolver
from sparkcdc.sources.postgres.server.catalog import PostgresCatalog
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.stream.existing import Baseline, TableState
from sparkcdc.sources.postgres.stream.heartbeat import WalHeartbeat
from sparkcdc.sources.postgres.stream.history import RelationHistory
from sparkcdc.sources.postgres.stream.row_texts import json_changes, key_text, row_texts, stretches
from sparkcdc.sources.postgres.stream.rows import TextRows
from sparkcdc.sources.postgres.stream.streamed import CONTROL, StreamedTransactions
from sparkcdc.sources.postgres.stream.tables import (
    Captured,
    CapturedTables,
    RelationChange,
    schema_row,
)
from sparkcdc.sources.postgres.stream.transport import LogStream, OpenStream, open_wire_stream
from sparkcdc.sources.postgres.wire.lsn import format_lsn
from sparkcdc.sources.postgres.wire.stream import XLOG_HEADER, xlog_start
from sparkcdc.store.cutter import TransactionCutter
from sparkcdc.store.ring import EventStore

log = logging.getLogger("sparkcdc.reader")
READY_TIMEOUT = 60.0  # a table's view waits this long for the reader's start
SLOT_IN_USE = "55006"  # object_in_use: the slot is active for another walsender

_OPS = {pm.Insert: "c", pm.Update: "u", pm.Delete: "d"}


class PgLogReader(LogThread):
    """Streams slot ``slot`` of publication ``publication`` from ``start`` into ``store``
    (see the module docstring); ``schemas`` are the captured tables now and ``baselines``
    the catalog's description of them then (:func:`~.tables.first_baseline`), which the schema
    history's (file ``schema_history``, none if empty) replace for a restart at ``start``."""

    def __init__(
        self,
        source: SourceConfig,
        start: LsnOffset,
        store: EventStore,
        schemas: dict[TableName, TableSchema],
        *,
        slot: str,
        publication: str,
        item_rows: int = 2048,
        typed: bool = False,
        change_filter: ChangeFilter | None = None,
        heartbeat: float = 1.0,
        status_interval: float = 10.0,
        reconnect_timeout: float | None = None,
        progress_interval: float = 0.2,
        schema_history: str = "",
        baselines: Mapping[TableName, Baseline | None] | None = None,
        open_stream: OpenStream = open_wire_stream,
    ) -> None:
        super().__init__(
            f"{source.host}:{source.port}", store,
            reconnect_timeout=(
                source.reconnect_timeout if reconnect_timeout is None else reconnect_timeout
            ),
            progress_interval=progress_interval, heartbeat=source.heartbeat,
            capture=source.capture,
        )  # fmt: skip
        self.source, self.start_offset, self.schemas = source, start, schemas
        self.slot, self.publication, self.typed = slot, publication, typed
        self.change_filter = change_filter  # the snapshot's hand-off, until its end
        if self.beats.enabled:  # wait on the stream no longer than a heartbeat's interval
            heartbeat = min(heartbeat, self.beats.interval)
        self.heartbeat, self.status_interval = heartbeat, status_interval
        self.json_table = source.signal_table  # its rows are read as JSON (signals)
        database = PostgresSettings.of(source).database
        self.cutter = TransactionCutter(item_rows, self._put, LsnOffset, database)
        # with the catalog: _prepare
        self.tables = CapturedTables(schemas, source.tables, source.capture.excluded_tables)
        self.history = RelationHistory(schema_history) if schema_history else None
        self._catalog: PostgresCatalog | None = None
        self._catalog_stale = False  # a connection was lost since the catalog's was opened
        self._baselines = dict(baselines or {})
        self._open_stream = open_stream
        self._stream_now: LogStream | None = None
        self._acked = start.lsn  # what the last committed Spark batch covers
        self._boundary = start.lsn  # the end of the last transaction read
        self._resume: LsnOffset | None = None
        self._types: dict[int, pm.Type] = {}
        self._run_rows: TextRows | None = None  # the run of row messages being collected
        self._run_table: Captured | None = None
        self._run_first = self._index = 0
        self._prefix, self._xid, self._commit_lsn = "", 0, 0
        self._txn_at = start  # the offset of the open transaction's changes
        self._wal_beat = WalHeartbeat(source, database)
        self._streamed = StreamedTransactions()
        self._decoder = pm.Decoder()
        self._ready = threading.Event()  # the tables as of the start are known

    # ------------------------------------------------------------------ the port
    def passed(self, offset: Offset) -> bool:
        """Whether every transaction ending at or before ``offset`` was put into the store."""
        return (
            isinstance(offset, LsnOffset)
            and self._boundary >= offset.lsn
            and self.cutter.pending is None
            and not self.cutter.open
        )

    def ack(self, offset: Offset) -> None:
        """The Spark batch ending at ``offset`` committed: the slot may move there."""
        if isinstance(offset, LsnOffset) and offset.lsn > self._acked:
            self._acked = offset.lsn
            stream = self._stream_now
            if stream is not None:
                stream.confirm(offset.lsn)

    def table_view(self, name: str) -> TableView | None:
        """Table ``name`` in the schema in force where the reader has read to, with the
        attribute and stored type of each column (:mod:`..chunks.view_token`); None: not
        captured."""
        deadline = time.monotonic() + READY_TIMEOUT
        while not self._ready.wait(0.05):
            if self.error is not None:
                raise self.error
            if time.monotonic() > deadline:
                raise SourceError(
                    f"the log reader of slot {self.slot} did not start within "
                    f"{READY_TIMEOUT:.0f} s, so how it describes {name} is not known."
                )
        state = self.tables.state(TableName.parse(name))
        return None if state is None else TableView(state.schema, view_token(state).text())

    # ------------------------------------------------------------------ LogThread
    def _prepare(self) -> LsnOffset:
        start = self.start_offset
        self._catalog = catalog = PostgresCatalog.of(self.source)
        restored = self.history.states_at(start) if self.history is not None else {}
        states: dict[TableName, TableState] = {}
        for name, schema in sorted(self.schemas.items()):
            state = restored.get(name)
            if state is None:
                state = TableState(schema, self._baselines.get(name))
                if self.history is not None:
                    self.history.record(start, name, state)
            states[name] = state
        self.schemas = {name: state.schema for name, state in states.items()}
        self.tables = CapturedTables(
            self.schemas, self.source.tables, self.source.capture.excluded_tables, catalog,
            {name: state.baseline for name, state in states.items()},
            {name: state.column_types() for name, state in states.items()},
        )  # fmt: skip
        self._ready.set()
        rows = [schema_row(None, s, "announce") for _, s in sorted(self.schemas.items())]
        if rows:
            batch = schema_batch(
                rows, LsnOffset, position=start.position(), own=own_values(LsnOffset, start),
                ts_ms=0, database=self.cutter.database,
            )  # fmt: skip
            self._put(LogItem(after=start, batch=batch, is_ddl=True))
        self._record_position(start)
        return start

    def _interrupt(self) -> None:
        stream = self._stream_now
        if stream is not None:
            stream.close()

    def _finish(self) -> None:
        super()._finish()
        if self._catalog is not None:
            self._catalog.close()
        self._close_filter()
        self._wal_beat.close()
        self._streamed.close()

    def _data_waiting(self) -> bool:
        return False

    def _retryable(self, exc: SourceError) -> bool:
        """A lost connection; after one, also the slot still held for a moment by the old
        walsender (55006, "replication slot ... is active for PID ...") until it exits."""
        held = exc.fields.get("sqlstate") == SLOT_IN_USE and self._stream_now is not None
        return held or super()._retryable(exc)

    def _rewind(self, resume: Offset) -> None:
        super()._rewind(resume)
        self._catalog_stale = True  # the server, or the way to it, may have ended it too

    def _stream(self, resume: Offset) -> None:
        assert isinstance(resume, LsnOffset)
        stream = self._open_stream(
            self.source, self.slot, self.publication, resume.lsn, self._acked,
            self.status_interval,
        )  # fmt: skip
        self._stream_now = stream
        if self._catalog_stale and self._catalog is not None:
            self._catalog.reopen()  # ConnectionFailed: retried like the stream
            self._catalog_stale = False
        stream.send_status(force=True)  # the acknowledged position, at once
        self._resume, self._boundary = (resume if resume.skip else None), resume.lsn
        self.cutter.reset()
        # rows of the lost connection collected for the cutter: read again from ``resume``
        # (kept, a Relation message flushed them into the resumed transaction, whose resume
        # counter then dropped as many of its rows too few)
        self._run_rows = self._run_table = None
        self._streamed.reset()
        self._mark_connected()
        log.info(
            "connected to %s, streaming slot %s from %s", self.where, self.slot, resume,
            extra={"position": str(resume)},
        )  # fmt: skip
        self._decoder = pm.Decoder()
        try:
            for items in stream.batches(wait=self.heartbeat, idle=self._idle):
                self._check_stopped()
                if not items:
                    self._quiet(stream)
                    continue
                self._count_events(len(items))
                for item in items:
                    self.receive(item)
        except Stopped:
            self._goodbye(stream)
            raise

    def receive(self, item: bytes) -> None:
        """One XLogData item of the stream (:data:`XLOG_HEADER`, then a pgoutput message):
        held while a streamed transaction's block is open, else decoded and applied. Whatever
        fails stops the stream with the project's error naming the message's kind and LSN
        (:mod:`sparkcdc.sources.decode_errors`, :meth:`_place`); a lost connection stays
        ConnectionFailed, retried."""
        try:
            payload = item[XLOG_HEADER:]
            streamed = self._streamed
            if streamed.block is not None and payload[0] not in CONTROL:
                streamed.add(payload)  # held until the transaction commits
                return
            self._message(self._decoder(payload, xlog_start(item)))
        except Exception as exc:  # noqa: BLE001 - one sentence for any decoding failure
            lsn = self._place(item)
            name = pm.message_name(item[XLOG_HEADER:])
            where = f"LSN {format_lsn(lsn)}"
            error = decode_error(exc, name, where, pm.ADVICE, lsn=format_lsn(lsn))
            if error is None:
                raise
            raise error from exc

    def _place(self, item: bytes) -> int:
        """The LSN a sentence names ``item`` by: its walStart, else (walStart 0: what pgoutput
        writes as not the last message of a change, a Relation or Type message, or a Begin an
        Origin follows) its transaction's commit LSN, where the transaction's changes lie, or
        outside one the last boundary read."""
        start = xlog_start(item) if len(item) >= XLOG_HEADER else 0
        if start:
            return start
        return self._commit_lsn if self.cutter.open else self._boundary

    def _stop_grace(self) -> float:
        """stop() lets the thread tell the server the acknowledged position before it goes, if
        it can within a heartbeat or two."""
        return 2 * self.heartbeat + 1

    def _goodbye(self, stream: LogStream) -> None:
        """The last status update (the acknowledged position), then the end of the stream."""
        try:
            stream.send_status(force=True)
            stream.stop(timeout=2.0)
        except (OSError, SourceError) as exc:
            log.debug("the replication stream did not end cleanly: %s", exc)

    def _quiet(self, stream: LogStream) -> None:
        """No data for a heartbeat: the pending item goes out, the WAL's end is followed."""
        self.cutter.flush()
        self._follow_wal()

    def _idle(self) -> None:
        self._check_stopped()
        super()._idle()
        if not self.cutter.open:
            self._put_marker()  # other tables' transactions
        self._follow_wal()

    def _beat(self) -> None:
        """A logical message into the WAL, then the action query (:mod:`.heartbeat`)."""
        self._wal_beat.beat()

    def _follow_wal(self) -> None:
        """When nothing is open or pending, the server's position from its keepalives is a
        boundary (every transaction committed before it was sent): put as a progress marker,
        at most once a heartbeat."""
        stream = self._stream_now
        if stream is None or self.cutter.open or self.cutter.pending is not None:
            return
        end = stream.server_wal_end
        if end > self._boundary and self._since_last_put() >= self.heartbeat:
            self._boundary = end
            marker = LsnOffset(end)
            self._record_position(marker)
            self._put(LogItem(after=marker))

    # ------------------------------------------------------------------ messages
    def _message(self, message: pm.Message) -> None:
        if isinstance(message, (pm.Insert, pm.Update, pm.Delete)):
            self._row(message)
        elif isinstance(message, pm.Begin):
            self._begin(message)
        elif isinstance(message, pm.Commit):
            self._commit(message)
        elif isinstance(message, pm.Relation):
            self._relation(message)
        elif isinstance(message, pm.Truncate):
            self._truncate(message)
        elif isinstance(message, pm.Type):
            self._types[message.oid] = message
        elif isinstance(message, pm.StreamStart):
            self._streamed.start(message.xid)
        elif isinstance(message, pm.StreamStop):
            self._streamed.stop()
        elif isinstance(message, pm.StreamCommit):
            self._stream_commit(message)
        elif isinstance(message, pm.StreamAbort):
            self._streamed.abort(message.xid, message.subxid)
        elif not isinstance(message, (pm.Origin, pm.LogicalMessage)):
            raise SourceError(
                f"the replication stream of slot {self.slot} sent {type(message).__name__} "
                f"after {format_lsn(self._boundary)}, which this reader does not expect; the "
                "stream stops rather than guess."
            )

    def _begin(self, message: pm.Begin) -> None:
        skip = 0
        if self._resume is not None:  # the first transaction after a split one's start
            skip, self._resume = self._resume.skip, None
        self._xid, self._commit_lsn, self._index = message.xid, message.final_lsn, 0
        self._prefix = position_text(message.final_lsn >> 32, message.final_lsn & 0xFFFFFFFF)
        ts_ms = message.commit_time // 1000
        self._record_event_time(ts_ms)
        # the transaction's changes lie at its commit record's start: every transaction
        # before it is delivered, and a stream started there sends it first
        self._txn_at = at = LsnOffset(max(self._boundary, message.final_lsn))
        self.cutter.begin(at, str(message.xid), ts_ms, skip)

    def _stream_commit(self, message: pm.StreamCommit) -> None:
        """A streamed transaction committed: its messages, as one transaction at its commit."""
        xid, lsn, when = message.xid, message.commit_lsn, message.commit_time
        self._begin(pm.Begin(lsn, when, xid))
        for payload in self._streamed.commit(xid):
            self._message(pm.decode(payload, lsn=lsn))
        self._commit(pm.Commit(message.flags, lsn, message.end_lsn, when))

    def _commit(self, message: pm.Commit) -> None:
        self._flush_run()
        self._boundary = message.end_lsn
        self._end_txn(LsnOffset(message.end_lsn))

    def _relation(self, message: pm.Relation) -> None:
        self._flush_run()
        change = self.tables.relation(message, self._resolve)
        if change is None:
            return
        if change.row is not None:
            self._ddl([change.row], _ddl_text(change))
            _log_change(change)
        if change.state is not None and self.history is not None:
            inside = LsnOffset.of(self.cutter.inner_offset())
            self.history.record(inside.with_skip(inside.skip + 1), change.name, change.state)

    def _resolve(self, oid: int) -> PgType | None:
        """A type a Relation message names: from the catalog, else the stream's Type message."""
        found = None if self._catalog is None else self._catalog.resolve(oid)
        return found if found is not None else type_message_resolver(self._types)(oid)

    def _truncate(self, message: pm.Truncate) -> None:
        """One ``s`` event of kind ``truncate`` per captured table the message names (a
        TRUNCATE of several tables, or CASCADE, names each): the sink empties its replica and
        writes a ``t`` row to its change log."""
        self._flush_run()
        options = " CASCADE" * message.cascade + " RESTART IDENTITY" * message.restart_identity
        for oid in message.relations:
            found = self.tables.get(oid)
            if found is not None:
                row = schema_row(found.schema, found.schema, "truncate")
                self._ddl([row], f"TRUNCATE {found.schema.name}{options}")

    def _ddl(self, rows: list[SchemaRow], ddl: str) -> None:
        own = (self._commit_lsn, self._xid)
        position = f"{self._prefix}:{self._index:010d}"
        self._index += 1
        after = self.cutter.inner_offset()
        self.cutter.add_ddl(ddl, rows, position, own, after, open_transaction=True)

    # ------------------------------------------------------------------ rows
    def _row(self, message: pm.Insert | pm.Update | pm.Delete) -> None:
        found = self.tables.get(message.relation)
        if found is None:
            return
        op = _OPS[type(message)]
        if found is not self._run_table or self._run_rows is None or self._run_rows.op != op:
            self._flush_run()
            self._run_rows, self._run_table = TextRows(op, found.schema.columns), found
            self._run_first = self._index
        before, after = row_texts(message, found)
        image = after if after is not None else before
        assert image is not None
        key = key_text(image, found)
        self._run_rows.add(key, before, after)
        self._index += 1
        if len(self._run_rows) >= self.cutter.item_rows:
            self._flush_run()

    def _flush_run(self) -> None:
        """Hand the run of row messages collected to the cutter as one log record; with typed
        images, a stretch of changes holding values the log left out (:class:`~.rows.MarkedRow`)
        goes as a record of JSON images of its own, in order, and the rest stays typed."""
        rows, found = self._run_rows, self._run_table
        if rows is None or found is None or not len(rows):
            return
        self._run_rows = self._run_table = None
        schema = found.schema
        position = f"{self._prefix}:{self._run_first:010d}"
        own = (self._commit_lsn, self._xid)
        change_filter = self._handoff()
        if self.typed and change_filter is None and schema.name != self.json_table:
            for lo, hi, marked in stretches(len(rows), rows.marked()):
                part = rows if hi - lo == len(rows) else rows.part(lo, hi)
                at = f"{self._prefix}:{self._run_first + lo:010d}"
                args = (schema.db, schema.table, found.schema_id, at, own)
                if marked:
                    self.cutter.add(*args, json_changes(part, schema))
                else:
                    self.cutter.add(*args, part, schema)
            return
        changes = json_changes(rows, schema)
        if change_filter is not None:
            changes = change_filter(schema.db, schema.table, self._txn_at, changes)
            if not changes:
                return
        self.cutter.add(schema.db, schema.table, found.schema_id, position, own, changes)

    def _handoff(self) -> ChangeFilter | None:
        """The snapshot's hand-off filter while the open transaction lies before its end."""
        found = self.change_filter
        if found is not None and found.until is not None and self._txn_at < found.until:
            return found
        if found is not None:
            self._close_filter()
        return None

    def _close_filter(self) -> None:
        close = getattr(self.change_filter, "close", None)
        self.change_filter = None
        if close is not None:
            close()  # the hand-off filter's connection, if it opened one


def _ddl_text(change: RelationChange) -> str:
    """The ``ddl`` of a Relation's ``s`` row: what changed, as a SQL comment."""
    what = "; ".join(change.notes) or "columns changed"
    return f"-- {change.name}: {what} (a Relation message of the log)"


def _log_change(change: RelationChange) -> None:
    existing, name = change.existing, str(change.name)
    if existing.resnapshot:
        log.warning("schema change of %s: %s", name, existing.resnapshot)
    elif existing:
        log.info(
            "schema change of %s: %s; the rows it holds take %s", name, "; ".join(change.notes),
            json.dumps(existing.to_json(), ensure_ascii=False),
        )  # fmt: skip
