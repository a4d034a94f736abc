"""Cutting one transaction's change events into store items, with Canal's resume counter.

Canal's event store hands out a transaction larger than its memory in pieces and remembers how
much of it was delivered; here every piece (:class:`~sparkcdc.core.logitem.LogItem`) carries that
counter in its ``after`` offset::

    txn starting at S   rows  1 .. n                     (n captured rows, item_rows = k)
    inner items         after = S with skip = k, S with skip = 2k, …
    last item           after = the boundary after the transaction's commit (skip = 0)

An item is cut only when one more row arrives for a full builder, so the last item of a
transaction always holds rows and inner offsets always leave rows to come. A reader resumed at
``S`` with ``skip = s`` re-reads the transaction from its start and drops its first ``s``
captured rows; ``total_order`` / ``data_collection_order`` count the dropped rows too, so a
resumed transaction carries the same orders as an uninterrupted one.

Small transactions are coalesced: a committed transaction's rows join the *pending* item, which
the reader puts (:meth:`TransactionCutter.flush`) when no more of the log is buffered, when it
is full or old; its ``after`` is the boundary after its last transaction and its ``boundaries``
list the ones inside. A transaction that does not fit the pending item's remaining room is cut
alone, as above: the pending item is put before its first inner item or before it joins, so the
split points of a transaction do not depend on what came before it.

Written once for every source: a log reader tells it where each transaction starts and ends and
hands it the changes of each log record (:class:`~sparkcdc.core.envelope.EnvelopeBuilder`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from sparkcdc.core.envelope import EnvelopeBuilder, OwnValues
from sparkcdc.core.event import LogChange, OffsetType, SchemaRow
from sparkcdc.core.images import ColumnarRows
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import Offset
from sparkcdc.core.offset_events import schema_batch
from sparkcdc.core.schema import TableSchema


class TransactionCutter:
    """Collects the captured rows of the open transaction and puts items of <= item_rows;
    committed transactions wait in the pending item until :meth:`flush`.

    One builder holds both: the pending item's rows (``committed``), then the open
    transaction's; a transaction that outgrows the item's room splits the pending item off."""

    def __init__(
        self,
        item_rows: int,
        put: Callable[[LogItem], None],
        offsets: OffsetType,
        database: str | None = None,
    ) -> None:
        if item_rows < 1:
            raise ValueError("item_rows must be at least 1.")
        self.item_rows = item_rows
        self.put = put
        self.offsets = offsets
        self.database = database  # for sources whose tables are named by schema and table
        self.builder = self._new_builder()
        self.open = False
        self.start: Offset | None = None  # where the open transaction starts (skip 0)
        self.transaction = ""  # its id
        self.ts_ms = 0
        self.skip = 0
        self.seen = 0  # captured rows of this transaction so far, dropped ones included
        self._per_table: dict[tuple[str, str], int] = {}
        # the pending item: the builder's first ``committed`` rows, not put yet
        self.committed = 0
        self.pending_after: Offset | None = None
        self.pending_since = 0.0  # time.monotonic() when its first transaction joined
        self._bounds: list[tuple[int, Offset]] = []

    def _new_builder(self) -> EnvelopeBuilder:
        return EnvelopeBuilder(self.offsets, self.database)

    @property
    def pending(self) -> EnvelopeBuilder | None:
        """The builder while it holds committed transactions' rows (None: nothing pending)."""
        return self.builder if self.committed else None

    def begin(self, start: Offset, transaction: str, ts_ms: int, skip: int = 0) -> None:
        """A transaction ``transaction`` committed at ``ts_ms`` starts at ``start``; drop its
        first ``skip`` rows."""
        if len(self.builder) > self.committed:  # an open transaction that never ended
            self.builder.split(self.committed)
        self.open = True
        self.start, self.transaction, self.ts_ms = start, transaction, ts_ms
        self.skip, self.seen = skip, 0
        self._per_table.clear()

    def reset(self) -> None:
        """Forget the open transaction and the pending item (the stream is read again)."""
        self.open = False
        self.builder = self._new_builder()
        self.committed = 0
        self.pending_after = None
        self._bounds = []

    def inner_offset(self) -> Offset:
        """The offset after the open transaction's rows so far."""
        assert self.start is not None
        return self.start.with_skip(self.seen)

    def add(
        self,
        db: str,
        table: str,
        schema_id: str,
        position: str,
        own: OwnValues,
        changes: Sequence[LogChange] | ColumnarRows,
        images: TableSchema | None = None,
    ) -> None:
        """The captured changes of one log record at ``position`` (its own ``source`` fields
        ``own``), appended in bulk: one :meth:`EnvelopeBuilder.extend` per record (or per part
        of it that goes into one item); ``images``: the schema of their typed row images."""
        n = len(changes)
        key = (db, table)
        first, table_first = self.seen, self._per_table.get(key, 0)
        self.seen = first + n
        self._per_table[key] = table_first + n
        i = self.skip - first if self.skip > first else 0  # rows delivered before a resume
        item_rows, builder = self.item_rows, self.builder
        while i < n:
            size = len(builder)
            if self.committed and size + n - i > item_rows:  # the pending item goes first
                self.flush()
                builder = self.builder
                size = len(builder)
            if size >= item_rows:  # full, and one more row is here: cut an inner item
                assert self.start is not None
                self._put(builder, self.start.with_skip(first + i))
                builder = self.builder = self._new_builder()
                size = 0
            j = min(n, i + item_rows - size)
            builder.record(
                changes if i == 0 and j == n else changes[i:j],
                images,
                (j - i, db, table, schema_id, None, None, self.ts_ms, False, self.transaction,
                 position, i, first + i + 1, table_first + i + 1, own),
            )  # fmt: skip
            i = j

    def add_ddl(
        self,
        ddl: str,
        tables: list[SchemaRow],
        position: str,
        own: OwnValues,
        after: Offset,
        open_transaction: bool,
    ) -> None:
        """A schema change in the log record at ``position``: pending rows go first, then one
        DDL item (rows from :func:`~sparkcdc.core.offset_events.schema_batch`) ending at
        ``after``; ``open_transaction`` when the transaction goes on after it."""
        self.flush_pending()
        batch = schema_batch(
            tables, self.offsets, position=position, own=own, ts_ms=self.ts_ms, ddl=ddl,
            transaction=self.transaction, database=self.database,
        )  # fmt: skip
        self.put(LogItem(after, batch, is_ddl=True, open_transaction=open_transaction))

    def flush_pending(self) -> None:
        """Put the pending item, then the open transaction's rows collected so far as an inner
        item (before a DDL in the transaction)."""
        self.flush()
        if len(self.builder):
            self._put(self.builder, self.inner_offset())
            self.builder = self._new_builder()

    def flush(self) -> None:
        """Put the pending item, if any (the open transaction's rows stay)."""
        committed, after = self.committed, self.pending_after
        if not committed or after is None:
            return
        bounds = self._bounds
        if bounds and bounds[-1][1] is after:
            bounds.pop()
        self._bounds = []
        builder = self.builder
        rest = builder.split(committed) if len(builder) > committed else None
        self._put(builder, after, tuple(bounds))
        # cleared only once the item is in the store: the log reader's ``passed`` relies on it
        self.builder = rest or self._new_builder()
        self.committed, self.pending_after = 0, None

    def _put(
        self,
        builder: EnvelopeBuilder,
        after: Offset,
        boundaries: tuple[tuple[int, Offset], ...] = (),
    ) -> None:
        batch = builder.build()
        images = builder.typed_images(batch)
        nbytes = batch.get_total_buffer_size() + sum(i.nbytes for i in images)
        self.put(
            LogItem(after=after, batch=batch, boundaries=boundaries, nbytes=nbytes, images=images)
        )

    def commit(self, boundary: Offset) -> bool:
        """The transaction ended at ``boundary``: its rows join the pending item (which
        :meth:`add` put first if they did not fit). True if the pending item now ends at
        ``boundary``."""
        self.open = False
        return self.advance(boundary)

    def advance(self, boundary: Offset) -> bool:
        """The log reached ``boundary`` with the open transaction's rows (if any) complete;
        True if the pending item now ends there (False: nothing pending, no rows)."""
        size = len(self.builder)
        if size > self.committed:
            if not self.committed:
                self.pending_since = time.monotonic()
            self.committed = size
            self._bounds.append((size, boundary))
        elif not self.committed:
            return False
        self.pending_after = boundary
        return True
