"""Cutting one transaction's change events into store items, with Canal's resume counter.

Canal's event store hands out a transaction larger than its memory in pieces and remembers how
much of it was delivered; here every piece (:class:`~sparkcdc.core.logitem.LogItem`) carries that
counter in its ``after`` offset::

    txn at (f, p)     rows  1 .. n                      (n captured rows, item_rows = k)
    inner items       after = (f, p, gtid before, skip = k), (f, p, …, skip = 2k), …
    last item         after = (file, pos after XID/COMMIT, gtid including the txn, skip = 0)

An item is cut only when one more row arrives for a full builder, so the last item of a
transaction always holds rows and inner offsets always leave rows to come. A reader resumed at
``(f, p, skip = s)`` re-reads the transaction from its GTID event and drops its first ``s``
captured rows; ``total_order`` / ``data_collection_order`` count the dropped rows too, so a
resumed transaction carries the same orders as an uninterrupted one.

Small transactions are coalesced: a committed transaction's rows join the *pending* item, which
the reader puts (:meth:`TransactionCutter.flush`) when no more of the log is buffered, when it
is full or old; its ``after`` is the boundary after its last transaction and its ``boundaries``
list the ones inside. A transaction that does not fit the pending item's remaining room is cut
alone, as above: the pending item is put before its first inner item or before it joins, so the
split points of a transaction do not depend on what came before it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence

import pyarrow as pa

from sparkcdc.core.event import OP_SCHEMA, EnvelopeBuilder
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import BinlogOffset

Change = tuple[str, str | None, str | None, str | None]
"""(op, key JSON, before JSON, after JSON), as the rows decoder returns them."""

SchemaRow = tuple[str, str, str | None, str | None, str, str]
"""(db, table, new schema JSON or None if dropped, previous schema JSON or None,
change JSON ``{"kind": kind, ...}``, schema_id)."""


def schema_batch(
    server_id: int,
    file: str,
    pos: int,
    gtid: str,
    ts_ms: int,
    ddl: str | None,
    tables: list[SchemaRow],
) -> pa.RecordBatch:
    """One ``op='s'`` envelope row per table: ``schema`` the new schema, ``before`` the old,
    ``after`` the change (see :mod:`sparkcdc.core.event`)."""
    builder = EnvelopeBuilder()
    for order, (db, table, schema_json, before_json, change, schema_id) in enumerate(tables, 1):
        builder.append(
            OP_SCHEMA,
            db,
            table,
            None,
            before_json,
            change,
            schema_id,
            server_id=server_id,
            file=file,
            pos=pos,
            row=order - 1,
            gtid=gtid,
            ts_ms=ts_ms,
            total_order=order,
            data_collection_order=1,
            ddl=ddl,
            schema=schema_json,
        )
    return builder.build()


class TransactionCutter:
    """Collects the captured rows of the open transaction and puts items of <= item_rows;
    committed transactions wait in the pending item until :meth:`flush`."""

    def __init__(self, item_rows: int, put: Callable[[LogItem], None], server_id: int) -> None:
        if item_rows < 1:
            raise ValueError("item_rows must be at least 1.")
        self.item_rows = item_rows
        self.put = put
        self.server_id = server_id
        self.builder = EnvelopeBuilder()
        self.open = False
        self.file = ""
        self.pos = 0
        self.gtid_before = ""
        self.gtid = ""
        self.ts_ms = 0
        self.skip = 0
        self.seen = 0  # captured rows of this transaction so far, dropped ones included
        self._per_table: Counter[tuple[str, str]] = Counter()
        # the pending item: committed transactions not put yet
        self.pending: EnvelopeBuilder | None = None
        self.pending_after: BinlogOffset | None = None
        self.pending_since = 0.0  # time.monotonic() when its first transaction joined
        self._bounds: list[tuple[int, BinlogOffset]] = []

    def begin(
        self, file: str, pos: int, gtid_before: str, gtid: str, ts_ms: int, skip: int = 0
    ) -> None:
        """A transaction starts at ``file:pos`` (its GTID event); drop its first ``skip`` rows."""
        if len(self.builder):
            self.builder = EnvelopeBuilder()
        self.open = True
        self.file, self.pos = file, pos
        self.gtid_before, self.gtid, self.ts_ms = gtid_before, gtid, ts_ms
        self.skip, self.seen = skip, 0
        self._per_table.clear()

    def reset(self) -> None:
        """Forget the open transaction and the pending item (the stream is read again)."""
        self.open = False
        self.builder = EnvelopeBuilder()
        self.pending = self.pending_after = None
        self._bounds = []

    def inner_offset(self) -> BinlogOffset:
        return BinlogOffset(self.file, self.pos, self.gtid_before, skip=self.seen)

    def add(self, db: str, table: str, schema_id: str, pos: int, changes: Sequence[Change]) -> None:
        """The captured changes of one rows event at ``pos`` (``source.row`` = index in it),
        appended in bulk: one :meth:`EnvelopeBuilder.extend` per rows event (or per part of it
        that goes into one item)."""
        n = len(changes)
        key = (db, table)
        first, table_first = self.seen, self._per_table[key]
        self.seen += n
        self._per_table[key] += n
        i = max(0, self.skip - first)  # rows delivered before a resume are dropped
        while i < n:
            room = self.item_rows - len(self.builder)
            if room <= 0:  # full, and one more row is here: cut an inner item
                self.flush()
                self._put(
                    self.builder, BinlogOffset(self.file, self.pos, self.gtid_before, first + i)
                )
                self.builder = EnvelopeBuilder()
                room = self.item_rows
            j = min(n, i + room)
            self.builder.extend(
                changes if i == 0 and j == n else changes[i:j],
                db,
                table,
                schema_id,
                server_id=self.server_id,
                file=self.file,
                pos=pos,
                row=i,
                gtid=self.gtid,
                ts_ms=self.ts_ms,
                total_order=first + i + 1,
                data_collection_order=table_first + i + 1,
            )
            i = j

    def add_ddl(self, ddl: str, tables: list[SchemaRow], pos: int, after: BinlogOffset) -> None:
        """A schema change inside the open transaction: pending rows go first, then one DDL
        item (rows from :func:`schema_batch`) ending at ``after``."""
        self.flush_pending()
        batch = schema_batch(self.server_id, self.file, pos, self.gtid, self.ts_ms, ddl, tables)
        self.put(LogItem(after=after, batch=batch, is_ddl=True))

    def flush_pending(self) -> None:
        """Put the pending item, then the open transaction's rows collected so far as an inner
        item (before a DDL in the transaction)."""
        self.flush()
        if len(self.builder):
            self._put(self.builder, self.inner_offset())
            self.builder = EnvelopeBuilder()

    def flush(self) -> None:
        """Put the pending item, if any."""
        pending, after = self.pending, self.pending_after
        if pending is None or after is None:
            return
        bounds = self._bounds
        if bounds and bounds[-1][1] is after:
            bounds.pop()
        self._bounds = []
        self._put(pending, after, tuple(bounds))
        # cleared only once the item is in the store: the log reader's ``passed`` relies on it
        self.pending = self.pending_after = None

    def _put(
        self,
        builder: EnvelopeBuilder,
        after: BinlogOffset,
        boundaries: tuple[tuple[int, BinlogOffset], ...] = (),
    ) -> None:
        batch = builder.build()
        nbytes = batch.get_total_buffer_size()
        self.put(LogItem(after=after, batch=batch, boundaries=boundaries, nbytes=nbytes))

    def commit(self, boundary: BinlogOffset) -> bool:
        """The transaction ended at ``boundary``: its rows join the pending item (put first if
        they do not fit in it). True if the pending item now ends at ``boundary``."""
        self.open = False
        return self.advance(boundary)

    def advance(self, boundary: BinlogOffset) -> bool:
        """The log reached ``boundary`` with the open transaction's rows (if any) complete;
        True if the pending item now ends there (False: nothing pending, no rows)."""
        rows = self.builder
        if len(rows):
            pending = self.pending
            if pending is not None and len(pending) + len(rows) > self.item_rows:
                self.flush()
                pending = None
            if pending is None:
                pending = self.pending = rows
                self.pending_since = time.monotonic()
            else:
                pending.absorb(rows)
            self.builder = EnvelopeBuilder()
            self._bounds.append((len(pending), boundary))
        elif self.pending is None:
            return False
        self.pending_after = boundary
        return True
