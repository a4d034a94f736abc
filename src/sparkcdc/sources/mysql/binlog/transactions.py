"""Where transactions open and end in the binlog, and the statements between them: the
transaction half of the log reader's event loop (:mod:`.dispatch` routes the events here).

A MariaDB GTID event opens a transaction at its own position, the last boundary before it; XID,
or a COMMIT/ROLLBACK query, ends it at the next event's position (a boundary, with the GTID
position after it). Its rows go to the cutter (:mod:`sparkcdc.store.cutter`), which puts them
when they fill an item or the stream pauses; a transaction without captured rows becomes a
progress marker. Other statements but BEGIN, XA and savepoints are DDL for the schema tracker;
those of captured tables become a DDL item.
"""

from __future__ import annotations

import logging
import time

from sparkcdc.core.errors import SourceError
from sparkcdc.core.logitem import LogItem
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog.dump import format_gtid_pos
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.state import SchemaState
from sparkcdc.store.cutter import TransactionCutter

log = logging.getLogger("sparkcdc.reader")

_IGNORED_QUERIES = ("BEGIN", "XA ", "SAVEPOINT", "ROLLBACK TO", "RELEASE SAVEPOINT")
COALESCE_SECONDS = 0.05  # the longest a committed transaction waits in the pending item


class TransactionEvents:
    """GTID, XID and QUERY events of one connection (the module docstring); a base of
    :class:`~.dispatch.BinlogDispatch`, which holds the state named here."""

    cutter: TransactionCutter
    schemas: SchemaState
    progress_interval: float
    _file: str
    _file_prefix: str
    _gtids: dict[int, tuple[int, int]]
    _gtid_text: str | None
    _resume: BinlogOffset | None
    _position: BinlogOffset | None
    _server_id: int
    _standalone: bool
    _pending_marker: BinlogOffset | None
    _last_put_at: float
    _last_ts_ms: int

    def _put(self, item: LogItem) -> None:
        raise NotImplementedError  # the log reader puts into its store

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
                cutter.transaction,
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
        here = self._position  # the boundary before, usually: the same offset
        place = (self._file, pos, before, 0)
        if here is None or (here.file, here.pos, here.gtid, here.skip) != place:
            here = BinlogOffset(self._file, pos, before)
        transaction = f"{domain}-{server_id}-{seq}"
        cutter.begin(here, transaction, ts * 1000, skip)
        if len(self._gtids) == 1:  # one replication domain: the position is this GTID
            self._gtid_text = transaction
        self._server_id = server_id
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
        if time.monotonic() - self._last_put_at >= self.progress_interval:
            self._put(LogItem(after=boundary))

    def _ddl(self, db: str, sql: str, pos: int, boundary: BinlogOffset | None) -> None:
        """Apply a statement to the tracked schemas; changes of captured tables become one DDL
        item (``boundary`` None: inside a multi-statement transaction, e.g. CREATE … SELECT)."""
        cutter = self.cutter
        if cutter.open and cutter.skip and cutter.seen <= cutter.skip:
            return  # met before the resume point: the schemas at that point include it
        after = boundary or cutter.inner_offset()
        assert isinstance(after, BinlogOffset)
        rows = self.schemas.apply(db, sql, after)
        if not rows:
            return
        if not cutter.open:  # a DDL outside any GTID group (a stream opened mid-group)
            cutter.transaction, cutter.ts_ms = "", self._last_ts_ms
        own = (self._server_id, self._file, pos, None, cutter.transaction)
        cutter.add_ddl(sql, rows, f"{self._file_prefix}{pos:010d}", own, after)
        if after.at_boundary:
            self._position = after
