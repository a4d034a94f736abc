"""What each binlog event does to the stream: the log reader's event loop (one connection).

Per event of the binlog dump::

    ROTATE / FORMAT_DESCRIPTION    current file, checksum and post-header sizes
    GTID (MariaDB), GTID, tagged   a transaction opens at (file, pos of this event); its
    GTID or ANONYMOUS_GTID         timestamp is the transaction's commit time (MariaDB)
    (MySQL)
    PREVIOUS_GTIDS (MySQL)         the GTID set before the file (tagged sources too), joined
                                   to the position
    TABLE_MAP                      remembered per table id; decoders cached per (id, schema_id)
    WRITE/UPDATE/DELETE_ROWS       captured tables only -> envelope rows, cut into items of
                                   <= item_rows rows (:mod:`sparkcdc.store.cutter`)
    XID / QUERY COMMIT             the boundary: the pending item's ``after``, or a progress marker
    QUERY (other)                  DDL -> the schema tracker; changes of captured tables are
                                   recorded in the schema history and put as a DDL item
    HEARTBEAT (v1, v2)             the stream is idle: a pending item or marker goes out
    compressed QUERY / rows        inflated (:mod:`.compressed`), then as the events above
    TRANSACTION_PAYLOAD (MySQL)    inflated (:mod:`.payload`); its events as the ones above,
                                   at the payload's position and their index inside it
    PARTIAL_UPDATE_ROWS (MySQL)    JSON diffs applied to the before image (:mod:`.partial_json`),
                                   then as an UPDATE_ROWS event
    listed as skipped              nothing (:data:`~.event_kinds.SKIPPED`)
    any other type                 stops the stream with a sentence naming it and its position;
                                   so does a rows event whose table map never came

Each event is dispatched inside one boundary: whatever goes wrong decoding it (a truncated or
damaged event, its header's size not its length) stops the stream with the project's error
naming the event type and its ``file:pos`` (:mod:`sparkcdc.sources.decode_errors`).

:class:`BinlogDispatch` reads the events of one connection on the dump's
:class:`~.state.BinlogState` (the file, the format description, the GTID position); the log
reader (:class:`~.reader.LogReader`) owns the state, makes one dispatcher per connection and
gives it the few calls it makes back (:class:`~.transactions.ReaderCalls`).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Sequence
from dataclasses import replace
from typing import cast

from sparkcdc.core.errors import SourceError, SparkCDCError
from sparkcdc.core.event import Change, LogChange
from sparkcdc.core.images import ColumnarRows
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.decode_errors import decode_error
from sparkcdc.sources.log_thread import ReachedStop
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog.compressed import uncompressed
from sparkcdc.sources.mysql.binlog.event_kinds import SKIPPED, unknown_event_error
from sparkcdc.sources.mysql.binlog.event_names import ADVICE, event_name
from sparkcdc.sources.mysql.binlog.gtid import GtidSet
from sparkcdc.sources.mysql.binlog.partial_json import full_update_event
from sparkcdc.sources.mysql.binlog.payload import inner_events
from sparkcdc.sources.mysql.binlog.state import BinlogState
from sparkcdc.sources.mysql.binlog.transactions import ReaderCalls, TransactionEvents
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.state import SchemaState
from sparkcdc.sources.port import ChangeFilter
from sparkcdc.store.cutter import TransactionCutter

log = logging.getLogger("sparkcdc.reader")

ARTIFICIAL = 0x20  # LOG_EVENT_ARTIFICIAL_F: made up by the dump thread, not in the file


class BinlogDispatch:
    """The events of one binlog dump into the cutter (see the module docstring), on the dump's
    :class:`~.state.BinlogState`; GTID, XID and QUERY events are
    :class:`~.transactions.TransactionEvents`'. ``typed``: typed row images, except for
    ``json_table`` and while ``change_filter`` applies."""

    def __init__(
        self,
        state: BinlogState,
        cutter: TransactionCutter,
        schemas: SchemaState,
        calls: ReaderCalls,
        *,
        stop_at: BinlogOffset | None = None,
        change_filter: ChangeFilter | None = None,
        typed: bool = False,
        json_table: str | None = None,
    ) -> None:
        self.state, self.cutter, self.schemas, self.calls = state, cutter, schemas, calls
        self.transactions = TransactionEvents(state, cutter, schemas, calls)
        self.stop_at, self.change_filter = stop_at, change_filter
        self.typed, self.json_table = typed, json_table

    def dispatch(self, events: list[bytes]) -> None:
        """The events of one list, in order (the loop the stream's speed depends on)."""
        stop_file, stop_pos = (self.stop_at.file, self.stop_at.pos) if self.stop_at else (None, 0)
        unpack_header, rows_events = ev.unpack_header, ev.ROWS_EVENTS
        table_map, gtid_event, xid, query = ev.TABLE_MAP, ev.GTID, ev.XID, ev.QUERY
        mysql_gtids, heartbeats, artificial = ev.MYSQL_GTID_EVENTS, ev.HEARTBEATS, ARTIFICIAL
        before_format = (ev.ROTATE, ev.FORMAT_DESCRIPTION, *heartbeats)
        state, txns, end_txn = self.state, self.transactions, self.calls.end_txn
        following, data = iter(events), b""
        try:
            for data in following:
                ts, etype, server_id, size, next_pos, flags = unpack_header(data, 0)
                if size != len(data):
                    raise self._framing_error(size, len(data))
                if next_pos and not flags & artificial and etype not in heartbeats:
                    state.read_pos = next_pos
                if ts:
                    state.ts_ms = ts * 1000
                fd = state.fd
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
                    txns.begin(data, fd.header_len, server_id, next_pos - size, ts)
                elif etype == xid:
                    end_txn(state.boundary(next_pos))
                elif etype in mysql_gtids:
                    assert fd is not None
                    txns.begin_mysql(data, fd.header_len, etype, server_id, next_pos - size, ts)
                    if next_pos >= stop_pos and state.file == stop_file:
                        raise ReachedStop
                    # its QUERY BEGIN, in a DML transaction (no stop and no reconnect lands
                    # between the two; the next event moves the read position on)
                    follower = next(following, None)
                    if follower is not None:
                        if (
                            len(follower) > 4
                            and follower[4] == query
                            and follower.endswith(b"\0BEGIN", 0, len(follower) - state.trailer)
                        ):
                            state.standalone = False
                        else:  # not BEGIN: e.g. an atomic DDL (its errors name it)
                            data = follower
                            self.dispatch([follower])
                    continue
                elif etype == query:
                    assert fd is not None
                    if data.endswith(b"\0BEGIN", 0, len(data) - state.trailer):
                        state.standalone = False  # MySQL's, after its GTID event
                        state.bare_begin = not self.cutter.open  # no GTID event opened one
                    else:
                        txns.query(ev.parse_query(data, fd), next_pos - size, next_pos)
                else:
                    self._other_event(data, etype, next_pos - size, next_pos, flags)
                if next_pos >= stop_pos and state.file == stop_file and etype != ev.ROTATE:
                    raise ReachedStop
        except Exception as exc:  # noqa: BLE001 - one sentence for any decoding failure
            error = self._undecodable(exc, data)
            if error is None:
                raise
            raise error from exc

    def _framing_error(self, size: int, received: int) -> SourceError:
        """An event whose header says ``size`` bytes where its packet held ``received``."""
        return SourceError(
            f"its header says it is {size} bytes long but {received} bytes came; the binlog or "
            "the connection damaged it"
        )

    def _undecodable(self, exc: Exception, data: bytes) -> SparkCDCError | None:
        """The error for ``exc``, raised while the event ``data`` was dispatched (None: raise
        ``exc`` itself): it names the event's type and its place in the binlog
        (:mod:`sparkcdc.sources.decode_errors`)."""
        state = self.state
        pos = state.read_pos
        if len(data) >= ev.HEADER_LEN:
            header = ev.parse_header(data)
            size, next_pos = header.size, header.next_pos
            pos = next_pos - size if 0 < size <= next_pos else pos
        where = f"{state.file}:{pos}"
        return decode_error(exc, event_name(data), where, ADVICE, file=state.file, pos=pos)

    def _other_event(self, data: bytes, etype: int, pos: int, next_pos: int, flags: int) -> None:
        """ROTATE, FORMAT_DESCRIPTION, heartbeats, compressed events and PREVIOUS_GTIDS; the
        types in :data:`~.event_kinds.SKIPPED` are skipped, any other stops the stream."""
        state = self.state
        if etype == ev.ROTATE:
            file, read_pos = ev.parse_rotate(data, None if flags & ARTIFICIAL else state.fd)
            if not file:
                raise ValueError("it names no binlog file")
            state.set_file(file)
            state.read_pos = read_pos
        elif etype == ev.FORMAT_DESCRIPTION:
            state.set_format(ev.parse_format_description(data))
        elif etype in ev.HEARTBEATS:
            self.calls.flush()
        elif etype in ev.COMPRESSED_EVENTS:
            self._compressed(etype, data, pos, next_pos)
        elif etype == ev.TRANSACTION_PAYLOAD:
            self._payload(data, pos, next_pos)
        elif etype == ev.PARTIAL_UPDATE_ROWS:
            self._rows_event(etype, data, pos)
        elif etype == ev.MYSQL_PREVIOUS_GTIDS:
            self._previous_gtids(data, pos)
        elif etype not in SKIPPED:
            raise unknown_event_error(etype, state.file, pos)

    def _previous_gtids(self, data: bytes, pos: int) -> None:
        """MySQL's PREVIOUS_GTIDS at ``pos``: the GTID set before the file (tagged or not)."""
        state = self.state
        assert state.fd is not None
        try:
            found = GtidSet.decode(data, state.fd.header_len, len(data) - state.trailer)
        except (ValueError, struct.error) as exc:
            raise SourceError(
                f"the PREVIOUS_GTIDS event (type {ev.MYSQL_PREVIOUS_GTIDS}) at {state.file}:{pos} "
                f"cannot be read ({exc}); the stream stops here rather than guess the GTID set "
                "its offsets carry.",
                event_type=ev.MYSQL_PREVIOUS_GTIDS,
                file=state.file,
                pos=pos,
            ) from None
        state.gtid_set.update(found)
        state.gtid_text = None

    def _table_map(self, data: bytes, fd: ev.FormatDescription) -> None:
        """A TABLE_MAP event; one seen before (same bytes after the header) is not re-parsed."""
        state = self.state
        body = data[fd.header_len : len(data) - state.trailer]
        tm = state.maps.get(body)
        if tm is None:
            if len(state.maps) >= 1024:
                state.maps.clear()
            tm = state.maps[body] = ev.parse_table_map(data, fd)
        self.schemas.table_map(tm)

    def _rows_event(self, etype: int, data: bytes, pos: int, inner: str = "") -> None:
        """A rows event at ``pos`` (``inner``: its index inside a compressed transaction)."""
        state = self.state
        assert state.fd is not None
        start = state.fd.header_len
        table_id = int.from_bytes(data[start : start + state.id_lens[etype]], "little")
        change_filter = self.change_filter
        if change_filter is not None and (
            change_filter.until is None or BinlogOffset(state.file, pos) >= change_filter.until
        ):
            # past the hand-off (its end is a high watermark, a transaction boundary, so no
            # transaction read again after a reconnect starts before it): typed from here
            change_filter = self.change_filter = None
            self.calls.handoff_passed()
        found = self.schemas.decoder(table_id, self.typed and change_filter is None)
        if found is None:
            self._check_mapped(table_id, pos)
            return  # not a captured table
        tm, decoder, sid = found
        json_table = self.json_table
        if (
            json_table is not None
            and decoder.typed
            and json_table == str(TableName(tm.db, tm.table))
        ):
            found = self.schemas.decoder(table_id, False)
            assert found is not None
            tm, decoder, sid = found
        if not self.cutter.open:
            raise self._outside_transaction(str(TableName(tm.db, tm.table)), pos)
        end = len(data) - state.trailer
        if etype == ev.PARTIAL_UPDATE_ROWS:
            names = [c.name for c in decoder.schema.columns]
            where = decoder.where
            data = full_update_event(data, start, end, decoder.table_map, where, names)
            etype, end = ev.UPDATE_ROWS_V2, len(data)
        changes: Sequence[LogChange] | ColumnarRows
        changes = decoder.decode(etype, data, start, end)
        if change_filter is not None:
            at = BinlogOffset(state.file, pos)
            changes = change_filter(tm.db, tm.table, at, cast(list[Change], changes))
            if not changes:
                return
        cutter = self.cutter
        own = (state.server_id, state.file, pos, None, cutter.transaction)
        images = decoder.schema if decoder.typed else None
        position = f"{state.file_prefix}{pos:010d}{inner}"
        cutter.add(tm.db, tm.table, sid, position, own, changes, images)

    def _outside_transaction(self, table: str, pos: int) -> SourceError:
        """The sentence for rows of ``table`` at ``pos`` while no transaction is open: the
        stream started inside one, or the server opens transactions with a bare BEGIN."""
        state = self.state
        if state.bare_begin:
            version = state.fd.server_version if state.fd is not None else "unknown"
            return SourceError(
                f"the binlog holds changes of {table} at {state.file}:{pos} in a transaction "
                f"that no GTID event opens, which sparkcdc cannot place: the server ({version}) "
                "writes none, as MySQL before 5.7.6 does with gtid_mode OFF and MariaDB before "
                "10.0 always; upgrade the server, or set gtid_mode=ON on MySQL 5.6.",
                file=state.file,
                pos=pos,
            )
        return SourceError(
            f"the binlog holds changes of {table} at {state.file}:{pos} outside any "
            "transaction, which sparkcdc cannot place; start from a transaction boundary "
            "(startup: latest, or a GTID position).",
            file=state.file,
            pos=pos,
        )

    def _check_mapped(self, table_id: int, pos: int) -> None:
        """A rows event of ``table_id`` at ``pos`` came after that table id's TABLE_MAP."""
        state = self.state
        if not self.schemas.has_table_map(table_id):
            raise SourceError(
                f"the binlog holds a rows event at {state.file}:{pos} for table id {table_id}, "
                "which no TABLE_MAP event named; the stream stops here rather than skip rows "
                "of a table it cannot name.",
                file=state.file,
                pos=pos,
            )

    def _compressed(self, etype: int, data: bytes, pos: int, next_pos: int) -> None:
        """A MariaDB compressed event (``log_bin_compress``): dispatched as the event it
        compresses (:mod:`.compressed`)."""
        state, txns = self.state, self.transactions
        fd = state.fd
        assert fd is not None
        if etype != ev.QUERY_COMPRESSED:
            start = fd.header_len
            table_id = int.from_bytes(
                data[start : start + state.id_lens[ev.WRITE_ROWS_V1]], "little"
            )
            if self.schemas.decoder(table_id) is None:
                self._check_mapped(table_id, pos)
                return  # not a captured table: nothing to inflate
        etype, data = uncompressed(etype, data, fd)
        if etype == ev.QUERY:
            txns.query(ev.parse_query(data, fd), pos, next_pos)
        else:
            self._rows_event(etype, data, pos)

    def _payload(self, data: bytes, pos: int, next_pos: int) -> None:
        """A MySQL compressed transaction: its events, dispatched at the payload's position
        (the rows events' positions also carry their index inside it)."""
        state, txns, end_txn = self.state, self.transactions, self.calls.end_txn
        fd, trailer = state.fd, state.trailer
        assert fd is not None
        where = f"{state.file}:{pos}"
        events, crc = inner_events(data, fd.header_len, len(data) - trailer, where)
        state.fd, state.trailer = replace(fd, checksum=crc), ev.CHECKSUM_LEN if crc else 0
        try:
            for index, inner in enumerate(events):
                etype = inner[4]
                if etype == ev.TABLE_MAP:
                    self._table_map(inner, state.fd)
                elif etype in ev.ROWS_EVENTS or etype == ev.PARTIAL_UPDATE_ROWS:
                    self._rows_event(etype, inner, pos, f".{index:08d}")
                elif etype == ev.XID:
                    end_txn(state.boundary(next_pos))
                elif etype == ev.QUERY:
                    txns.query(ev.parse_query(inner, state.fd), pos, next_pos)
                elif etype not in SKIPPED:
                    raise unknown_event_error(etype, state.file, pos)
        finally:
            state.fd, state.trailer = fd, trailer
