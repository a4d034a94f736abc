"""The unit the log reader puts into the store: a slice of decoded change events.

A transaction's events are cut into items of at most a few thousand rows; every item knows the
offset *after* it (:class:`~sparkcdc.core.offset.BinlogOffset`). At the last item of a transaction
that offset is a boundary (``skip == 0``: the next transaction's start); inside a transaction it
is the transaction's start with ``skip`` = rows of that transaction already delivered, so a
reader reopened there skips exactly those rows (the resume counter of Canal's event store).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from sparkcdc.core.offset import BinlogOffset


@dataclass(frozen=True, slots=True)
class LogItem:
    """Decoded change events (the envelope of :mod:`sparkcdc.core.event`) and the offset after.

    ``batch`` is None for a progress marker: no captured rows, only the offset moves forward
    (transactions on other tables, heartbeats). ``is_ddl`` marks a schema change, which the store
    hands out in a batch of its own.
    """

    after: BinlogOffset
    batch: pa.RecordBatch | None = None
    is_ddl: bool = False

    @property
    def rows(self) -> int:
        return 0 if self.batch is None else self.batch.num_rows

    @property
    def size(self) -> int:
        """Bytes accounted against the store's memory limit (at least 64 per item)."""
        return 64 + (0 if self.batch is None else self.batch.nbytes)

    @property
    def at_boundary(self) -> bool:
        return self.after.at_boundary
