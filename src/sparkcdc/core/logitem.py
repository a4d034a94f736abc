"""The unit the log reader puts into the store: a slice of decoded change events.

A transaction's events are cut into items of at most a few thousand rows; every item knows the
offset *after* it (:class:`~sparkcdc.core.offset.Offset`). At the last item of a transaction
that offset is a boundary (``skip == 0``: the next transaction's start); inside a transaction it
is the transaction's start with ``skip`` = rows of that transaction already delivered, so a
reader reopened there skips exactly those rows (the resume counter of Canal's event store).

Consecutive small transactions may travel in one item (the log reader coalesces what is already
buffered); such an item lists the transaction boundaries inside it (``boundaries``), so a
consumer can cut it at any of them: which transactions share an item depends on timing and may
differ when the same stretch of the log is read again.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from sparkcdc.core.images import TypedImages
from sparkcdc.core.offset import Offset


@dataclass(frozen=True, slots=True)
class LogItem:
    """Decoded change events (the envelope of :mod:`sparkcdc.core.event`) and the offset after.

    ``batch`` is None for a progress marker: no captured rows, only the offset moves forward
    (transactions on other tables, heartbeats). ``is_ddl`` marks a schema change, which the store
    hands out in a batch of its own; ``open_transaction`` marks one met inside a transaction that
    goes on after it (PostgreSQL's Relation and Truncate messages, MySQL's CREATE … SELECT), which
    the store holds back until that transaction ends, so that no micro-batch ends between a
    transaction's schema change and its rows.

    ``boundaries`` are the transaction ends inside the item before ``after``, in log order, as
    ``(rows of the item before that boundary, offset of the boundary)``: empty when the item
    holds one transaction (or one part of one). ``nbytes`` is the batch's size if the producer
    knew it already (it is then not measured again).

    ``images`` are the typed row images of the batch's changes whose ``before``/``after`` text
    is null (:mod:`sparkcdc.core.images`), found by their ``source.position``; the parts of a
    sliced item keep them all.
    """

    after: Offset
    batch: pa.RecordBatch | None = None
    is_ddl: bool = False
    open_transaction: bool = False
    boundaries: tuple[tuple[int, Offset], ...] = ()
    nbytes: int | None = None
    images: tuple[TypedImages, ...] = ()

    @property
    def rows(self) -> int:
        return 0 if self.batch is None else self.batch.num_rows

    @property
    def size(self) -> int:
        """Bytes accounted against the store's memory limit (at least 64 per item)."""
        if self.nbytes is not None:
            return 64 + self.nbytes
        own = sum(i.nbytes for i in self.images)
        return 64 + own + (0 if self.batch is None else self.batch.nbytes)

    def rows_before(self, offset: Offset) -> int:
        """Rows of this item that come before the boundary ``offset`` (which must lie at or
        before ``after``): those up to the last of its ``boundaries`` not after ``offset``."""
        if offset >= self.after:
            return self.rows
        rows = 0
        for before, boundary in self.boundaries:
            if boundary > offset:
                break
            rows = before
        return rows

    @property
    def at_boundary(self) -> bool:
        return self.after.at_boundary
