"""Where transactions open and end in the binlog, and the statements between them: the
transaction half of the log reader's event loop (:mod:`.dispatch` routes the events here).

A GTID event opens a transaction at its own position, the last boundary before it: MariaDB's
(162), whose flags say whether BEGIN/COMMIT follow, or MySQL's (33, 42 for a tagged GTID
``uuid:tag:n``, or 34 without GTIDs), where a QUERY ``BEGIN`` follows unless the transaction is
one DDL statement. XID, or a COMMIT/ROLLBACK query, ends it at the next event's position (a
boundary, with the GTID position after it); so does a DDL statement that has no BEGIN before
it. A MySQL transaction already in the GTID set
(a stream opened by GTID set, then resumed by position) is read but not delivered again.

A transaction's rows go to the cutter (:mod:`sparkcdc.store.cutter`), which puts them when they
fill an item or the stream pauses; a transaction without captured rows becomes a progress
marker. A row change written as a statement (INSERT, UPDATE … in a QUERY event) of a captured
table stops the stream (:mod:`.statement_changes`). Other statements but BEGIN, XA and
savepoints are DDL for the schema tracker; those of captured tables become a DDL item.
"""

from __future__ import annotations

import logging
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass

from sparkcdc.core.errors import SourceError
from sparkcdc.core.offset import Offset
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog.serialized import parse_tagged_gtid
from sparkcdc.sources.mysql.binlog.state import BinlogState
from sparkcdc.sources.mysql.binlog.statement_changes import UNKNOWN, changed_table, changes_rows
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.state import SchemaState
from sparkcdc.store.cutter import TransactionCutter

log = logging.getLogger("sparkcdc.reader")

_IGNORED_QUERIES = ("BEGIN", "XA ", "SAVEPOINT", "ROLLBACK TO", "RELEASE SAVEPOINT")
_ANONYMOUS, _TAGGED = ev.MYSQL_ANONYMOUS_GTID, ev.MYSQL_GTID_TAGGED
_unpack_gtid = ev.unpack_mysql_gtid
_DELIVERED = 1 << 62  # skip every row: the transaction is in the GTID set already


@dataclass(frozen=True, slots=True)
class ReaderCalls:
    """What the event handlers of one dump call on their log reader
    (:class:`~sparkcdc.sources.log_thread.LogThread`'s methods, bound)."""

    end_txn: Callable[[Offset], None]  # a transaction ended at this boundary
    record_boundary: Callable[[Offset], None]  # a boundary read that ends no transaction
    last_boundary: Callable[[], Offset | None]
    flush: Callable[[], None]  # the stream is idle: the pending item or marker goes out
    handoff_passed: Callable[[], None]  # the snapshot's hand-off filter no longer applies


class TransactionEvents:
    """GTID, XID and QUERY events of one connection (the module docstring), on the dump's
    :class:`~.state.BinlogState`, into ``cutter``, with the schemas in ``schemas``."""

    def __init__(
        self, state: BinlogState, cutter: TransactionCutter, schemas: SchemaState,
        calls: ReaderCalls,
    ) -> None:  # fmt: skip
        self.state, self.cutter, self.schemas, self.calls = state, cutter, schemas, calls

    def begin(self, data: bytes, start: int, server_id: int, pos: int, ts: int) -> None:
        """A MariaDB GTID event (post-header at ``start``, ``server_id`` from its header)."""
        state = self.state
        seq, domain, flags = ev.unpack_gtid(data, start)
        state.mysql = False
        before = state.gtid_position()
        state.gtids[domain] = (server_id, seq)
        state.gtid_text = None
        transaction = f"{domain}-{server_id}-{seq}"
        self._open(transaction, before, server_id, pos, ts)
        if len(state.gtids) == 1:  # one replication domain: the position is this GTID
            state.gtid_text = transaction
        state.standalone = bool(flags & ev.FL_STANDALONE)

    def begin_mysql(
        self, data: bytes, start: int, etype: int, server_id: int, pos: int, ts: int
    ) -> None:
        """A MySQL GTID, tagged GTID or anonymous GTID event: standalone until its QUERY
        ``BEGIN``."""
        state = self.state
        if not state.mysql:
            state.mysql, state.gtid_text = True, None
        before = state.gtid_text
        if before is None:
            before = state.gtid_position()
        delivered = False
        if etype == _ANONYMOUS:
            transaction = ""  # gtid_mode OFF: the transaction has no id
        else:
            tag = ""
            if etype == _TAGGED:
                sid_bytes, gno, tag = self._tagged(data, start, pos)
            else:
                _, sid_bytes, gno = _unpack_gtid(data, start)
            sid = state.sids.get(sid_bytes)
            if sid is None:
                sid = state.sids[sid_bytes] = str(uuidlib.UUID(bytes=bytes(sid_bytes)))
            if tag:
                sid = f"{sid}:{tag}"
            transaction = f"{sid}:{gno}"
            added = state.gtid_set.add_new(sid, gno)
            if added is None:
                delivered = True
            else:
                state.gtid_text = added
        self._open(transaction, before, server_id, pos, ts, delivered)
        state.standalone = True

    def _tagged(self, data: bytes, start: int, pos: int) -> tuple[bytes, int, str]:
        """(source uuid bytes, transaction number, tag) of a GTID_TAGGED_LOG_EVENT at ``pos``."""
        state = self.state
        try:
            found = parse_tagged_gtid(data, start, len(data) - state.trailer)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SourceError(
                f"the tagged GTID event (type {_TAGGED}) at {state.file}:{pos} cannot be read "
                f"({exc}); the stream stops here rather than misplace the transaction it opens.",
                event_type=_TAGGED,
                file=state.file,
                pos=pos,
            ) from None
        return found.sid, found.gno, found.tag

    def _open(
        self, transaction: str, before: str, server_id: int, pos: int, ts: int,
        delivered: bool = False,
    ) -> None:  # fmt: skip
        """Transaction ``transaction`` opens at ``pos`` after GTID position ``before``; the one
        a resume offset names drops its first ``skip`` rows, one ``delivered`` all of them."""
        state, cutter = self.state, self.cutter
        if cutter.open and cutter.seen:
            log.warning(
                "the transaction %s ended without a commit event; its %d changes are "
                "dropped (XA transactions are not supported)",
                cutter.transaction,
                cutter.seen,
            )
        skip, resume = _DELIVERED if delivered else 0, state.resume
        if resume is not None:
            if (state.file, pos) != (resume.file, resume.pos):
                raise SourceError(
                    f"the transaction to resume at {resume} is not where the offset says "
                    f"(found one at {state.file}:{pos}); restart from a boundary offset."
                )
            skip, state.resume = resume.skip, None
        here = self.calls.last_boundary()  # the boundary before, usually: the same offset
        place = (state.file, pos, before, 0)
        if (
            not isinstance(here, BinlogOffset)
            or (here.file, here.pos, here.gtid, here.skip) != place
        ):
            here = BinlogOffset(state.file, pos, before)
        cutter.begin(here, transaction, ts * 1000, skip)
        state.server_id = server_id
        state.bare_begin = False

    def query(self, query: ev.Query, pos: int, next_pos: int) -> None:
        """COMMIT/ROLLBACK end a transaction; other statements but BEGIN/XA/SAVEPOINT are DDL."""
        state = self.state
        sql = query.sql.strip()
        head = sql[:20].upper()
        boundary = state.boundary(next_pos)
        if head.startswith("BEGIN"):
            state.standalone = False
            state.bare_begin = not self.cutter.open
        elif head.startswith(("COMMIT", "ROLLBACK")) and not head.startswith("ROLLBACK TO"):
            self.calls.end_txn(boundary)
        elif changes_rows(sql):
            self._statement_change(query.db, sql, pos)
        elif not head.startswith(_IGNORED_QUERIES):
            in_group = self.cutter.open and not state.standalone
            self._ddl(query.db, sql, pos, None if in_group else boundary)
            if self.cutter.open and state.standalone:
                self.calls.end_txn(boundary)

    def _statement_change(self, db: str, sql: str, pos: int) -> None:
        """A row change written as a statement (:mod:`.statement_changes`) at ``pos``: it stops
        the stream unless it changes a table outside the capture."""
        state = self.state
        name = changed_table(sql, db)
        if name != UNKNOWN and not self.schemas.captured(*name):
            return
        what = f"a change of {TableName(*name)}" if name != UNKNOWN else "a change"
        text = " ".join(sql.split())
        raise SourceError(
            f"the binlog holds {what} written as a statement at {state.file}:{pos} "
            f"(`{text[:80]}{'…' if len(text) > 80 else ''}`), whose rows it does not carry: "
            "that session ran with binlog_format STATEMENT or MIXED. The stream stops here rather "
            "than lose them; set binlog_format=ROW on the server and for every session, then "
            "take a new snapshot (startup: initial).",
            event_type=ev.QUERY,
            file=state.file,
            pos=pos,
        )

    def _ddl(self, db: str, sql: str, pos: int, boundary: BinlogOffset | None) -> None:
        """Apply a statement to the tracked schemas; changes of captured tables become one DDL
        item (``boundary`` None: inside a multi-statement transaction, e.g. CREATE … SELECT)."""
        state, cutter = self.state, self.cutter
        if cutter.open and cutter.skip and cutter.seen <= cutter.skip:
            return  # met before the resume point: the schemas at that point include it
        after = boundary or cutter.inner_offset()
        assert isinstance(after, BinlogOffset)
        rows = self.schemas.apply(db, sql, after, state.mysql)
        if not rows:
            return
        if not cutter.open:  # a DDL outside any GTID group (a stream opened mid-group)
            cutter.transaction, cutter.ts_ms = "", state.ts_ms
        own = (state.server_id, state.file, pos, None, cutter.transaction)
        position = f"{state.file_prefix}{pos:010d}"
        cutter.add_ddl(sql, rows, position, own, after, open_transaction=boundary is None)
        if after.at_boundary:
            self.calls.record_boundary(after)
