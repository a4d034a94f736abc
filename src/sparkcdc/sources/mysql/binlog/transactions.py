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

from sparkcdc.core.errors import SourceError
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import Offset
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog.gtid import GtidSet, format_mariadb_gtid
from sparkcdc.sources.mysql.binlog.serialized import parse_tagged_gtid
from sparkcdc.sources.mysql.binlog.statement_changes import UNKNOWN, changed_table, changes_rows
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.state import SchemaState
from sparkcdc.store.cutter import TransactionCutter

log = logging.getLogger("sparkcdc.reader")

_IGNORED_QUERIES = ("BEGIN", "XA ", "SAVEPOINT", "ROLLBACK TO", "RELEASE SAVEPOINT")
_ANONYMOUS, _TAGGED = ev.MYSQL_ANONYMOUS_GTID, ev.MYSQL_GTID_TAGGED
_unpack_gtid = ev.unpack_mysql_gtid
_DELIVERED = 1 << 62  # skip every row: the transaction is in the GTID set already


class TransactionEvents:
    """GTID, XID and QUERY events of one connection (the module docstring); a base of
    :class:`~.dispatch.BinlogDispatch`, which holds the state named here."""

    cutter: TransactionCutter
    schemas: SchemaState
    _file: str
    _file_prefix: str
    _gtids: dict[int, tuple[int, int]]
    _gtid_set: GtidSet
    _gtid_text: str | None
    _mysql: bool
    _sids: dict[bytes, str]
    _trailer: int
    _resume: BinlogOffset | None
    _position: Offset | None
    _server_id: int
    _standalone: bool
    _bare_begin: bool
    _last_ts_ms: int

    def _put(self, item: LogItem) -> None:
        raise NotImplementedError  # LogThread's

    def _gtid_position(self) -> str:
        """The GTID position of everything before the open transaction, as text."""
        text = self._gtid_text
        if text is None:
            gtids = self._gtid_set.text() if self._mysql else format_mariadb_gtid(self._gtids)
            text = self._gtid_text = gtids
        return text

    def _boundary(self, next_pos: int) -> BinlogOffset:
        return BinlogOffset(self._file, next_pos, self._gtid_position())

    def _begin(self, data: bytes, start: int, server_id: int, pos: int, ts: int) -> None:
        """A MariaDB GTID event (post-header at ``start``, ``server_id`` from its header)."""
        seq, domain, flags = ev.unpack_gtid(data, start)
        self._mysql = False
        before = self._gtid_position()
        self._gtids[domain] = (server_id, seq)
        self._gtid_text = None
        transaction = f"{domain}-{server_id}-{seq}"
        self._open(transaction, before, server_id, pos, ts)
        if len(self._gtids) == 1:  # one replication domain: the position is this GTID
            self._gtid_text = transaction
        self._standalone = bool(flags & ev.FL_STANDALONE)

    def _begin_mysql(
        self, data: bytes, start: int, etype: int, server_id: int, pos: int, ts: int
    ) -> None:
        """A MySQL GTID, tagged GTID or anonymous GTID event: standalone until its QUERY
        ``BEGIN``."""
        if not self._mysql:
            self._mysql, self._gtid_text = True, None
        before = self._gtid_text
        if before is None:
            before = self._gtid_position()
        delivered = False
        if etype == _ANONYMOUS:
            transaction = ""  # gtid_mode OFF: the transaction has no id
        else:
            tag = ""
            if etype == _TAGGED:
                sid_bytes, gno, tag = self._tagged(data, start, pos)
            else:
                _, sid_bytes, gno = _unpack_gtid(data, start)
            sid = self._sids.get(sid_bytes)
            if sid is None:
                sid = self._sids[sid_bytes] = str(uuidlib.UUID(bytes=bytes(sid_bytes)))
            if tag:
                sid = f"{sid}:{tag}"
            transaction = f"{sid}:{gno}"
            added = self._gtid_set.add_new(sid, gno)
            if added is None:
                delivered = True
            else:
                self._gtid_text = added
        self._open(transaction, before, server_id, pos, ts, delivered)
        self._standalone = True

    def _tagged(self, data: bytes, start: int, pos: int) -> tuple[bytes, int, str]:
        """(source uuid bytes, transaction number, tag) of a GTID_TAGGED_LOG_EVENT at ``pos``."""
        try:
            found = parse_tagged_gtid(data, start, len(data) - self._trailer)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SourceError(
                f"the tagged GTID event (type {_TAGGED}) at {self._file}:{pos} cannot be read "
                f"({exc}); the stream stops here rather than misplace the transaction it opens.",
                event_type=_TAGGED,
                file=self._file,
                pos=pos,
            ) from None
        return found.sid, found.gno, found.tag

    def _open(
        self, transaction: str, before: str, server_id: int, pos: int, ts: int,
        delivered: bool = False,
    ) -> None:  # fmt: skip
        """Transaction ``transaction`` opens at ``pos`` after GTID position ``before``; the one
        a resume offset names drops its first ``skip`` rows, one ``delivered`` all of them."""
        cutter = self.cutter
        if cutter.open and cutter.seen:
            log.warning(
                "the transaction %s ended without a commit event; its %d changes are "
                "dropped (XA transactions are not supported)",
                cutter.transaction,
                cutter.seen,
            )
        skip, resume = _DELIVERED if delivered else 0, self._resume
        if resume is not None:
            if (self._file, pos) != (resume.file, resume.pos):
                raise SourceError(
                    f"the transaction to resume at {resume} is not where the offset says "
                    f"(found one at {self._file}:{pos}); restart from a boundary offset."
                )
            skip, self._resume = resume.skip, None
        here = self._position  # the boundary before, usually: the same offset
        place = (self._file, pos, before, 0)
        if (
            not isinstance(here, BinlogOffset)
            or (here.file, here.pos, here.gtid, here.skip) != place
        ):
            here = BinlogOffset(self._file, pos, before)
        cutter.begin(here, transaction, ts * 1000, skip)
        self._server_id = server_id
        self._bare_begin = False

    def _query(self, query: ev.Query, pos: int, next_pos: int) -> None:
        """COMMIT/ROLLBACK end a transaction; other statements but BEGIN/XA/SAVEPOINT are DDL."""
        sql = query.sql.strip()
        head = sql[:20].upper()
        boundary = self._boundary(next_pos)
        if head.startswith("BEGIN"):
            self._standalone = False
            self._bare_begin = not self.cutter.open
        elif head.startswith(("COMMIT", "ROLLBACK")) and not head.startswith("ROLLBACK TO"):
            self._end_txn(boundary)
        elif changes_rows(sql):
            self._statement_change(query.db, sql, pos)
        elif not head.startswith(_IGNORED_QUERIES):
            in_group = self.cutter.open and not self._standalone
            self._ddl(query.db, sql, pos, None if in_group else boundary)
            if self.cutter.open and self._standalone:
                self._end_txn(boundary)

    def _statement_change(self, db: str, sql: str, pos: int) -> None:
        """A row change written as a statement (:mod:`.statement_changes`) at ``pos``: it stops
        the stream unless it changes a table outside the capture."""
        name = changed_table(sql, db)
        if name != UNKNOWN and not self.schemas.captured(*name):
            return
        what = f"a change of {name[0]}.{name[1]}" if name != UNKNOWN else "a change"
        text = " ".join(sql.split())
        raise SourceError(
            f"the binlog holds {what} written as a statement at {self._file}:{pos} "
            f"(`{text[:80]}{'…' if len(text) > 80 else ''}`), whose rows it does not carry: "
            "that session ran with binlog_format STATEMENT or MIXED. The stream stops here rather "
            "than lose them; set binlog_format=ROW on the server and for every session, then "
            "take a new snapshot (startup: initial).",
            event_type=ev.QUERY,
            file=self._file,
            pos=pos,
        )

    def _end_txn(self, boundary: BinlogOffset) -> None:
        raise NotImplementedError  # LogThread's

    def _ddl(self, db: str, sql: str, pos: int, boundary: BinlogOffset | None) -> None:
        """Apply a statement to the tracked schemas; changes of captured tables become one DDL
        item (``boundary`` None: inside a multi-statement transaction, e.g. CREATE … SELECT)."""
        cutter = self.cutter
        if cutter.open and cutter.skip and cutter.seen <= cutter.skip:
            return  # met before the resume point: the schemas at that point include it
        after = boundary or cutter.inner_offset()
        assert isinstance(after, BinlogOffset)
        rows = self.schemas.apply(db, sql, after, self._mysql)
        if not rows:
            return
        if not cutter.open:  # a DDL outside any GTID group (a stream opened mid-group)
            cutter.transaction, cutter.ts_ms = "", self._last_ts_ms
        own = (self._server_id, self._file, pos, None, cutter.transaction)
        cutter.add_ddl(sql, rows, f"{self._file_prefix}{pos:010d}", own, after)
        if after.at_boundary:
            self._position = after
