"""What a snapshot needs from a database, and nothing else: the chunk dialect of the port.

Everything in :mod:`sparkcdc.snapshot` is written once against :class:`SnapshotDialect`; every
source implements it (:meth:`sparkcdc.sources.port.Source.chunks`; MySQL/MariaDB:
:class:`sparkcdc.sources.mysql.chunks.dialect.MySQLChunks`). Key values use the row-image JSON
encoding of :mod:`sparkcdc.core.chunk`; every comparison of keys happens in the database, so
collations decide the order, never Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Protocol, Self

import pyarrow as pa

from sparkcdc.core.chunk import KeyColumn, KeyValue
from sparkcdc.core.offset import Offset
from sparkcdc.core.schema import TableSchema

LOCATE_BATCH = 500  # values (and bounds) per locate query


def locate_in_batches(
    values: Sequence[KeyValue],
    bounds: Sequence[KeyValue],
    query: Callable[[Sequence[KeyValue], Sequence[KeyValue]], Iterable[tuple[object, object]]],
) -> list[int]:
    """:meth:`SnapshotDialect.locate` made of queries over LOCATE_BATCH values and bounds each:
    ``query(values, bounds)`` gives (index into its values, how many of its bounds are ``<=``
    that value) rows, whose counts add up per value."""
    counts = [0] * len(values)
    for v0 in range(0, len(values), LOCATE_BATCH):
        batch = values[v0 : v0 + LOCATE_BATCH]
        for b0 in range(0, len(bounds), LOCATE_BATCH):
            for i, n in query(batch, bounds[b0 : b0 + LOCATE_BATCH]):
                counts[v0 + int(str(i))] += int(str(n))
    return counts


class SnapshotDialect(Protocol):
    def key_columns(self, db: str, table: str, names: Sequence[str]) -> list[KeyColumn]:
        """The named columns with their types and collations (ConfigError if one is missing)."""

    def row_count(self, db: str, table: str) -> int:
        """The table's row count (may be the engine's estimate)."""

    def key_range(
        self, db: str, table: str, keys: Sequence[KeyColumn]
    ) -> tuple[KeyValue, KeyValue] | None:
        """The smallest and largest key, or None for an empty table."""

    def key_after(
        self,
        db: str,
        table: str,
        keys: Sequence[KeyColumn],
        lo: KeyValue | None,
        offset: int,
        upto: KeyValue | None = None,
    ) -> KeyValue | None:
        """The key ``offset`` rows past the first key ``>= lo`` in key order, counting only keys
        ``<= upto`` when given (None: fewer rows)."""

    def count_between(
        self,
        db: str,
        table: str,
        keys: Sequence[KeyColumn],
        lo: KeyValue | None,
        hi: KeyValue | None,
        limit: int,
    ) -> int:
        """Rows with ``lo <= key < hi``, counting no further than ``limit``."""

    def read_chunk(
        self,
        schema: TableSchema,
        keys: Sequence[KeyColumn],
        lo: KeyValue | None,
        hi: KeyValue | None,
        typed: bool = False,
        upto: KeyValue | None = None,
        where: str | None = None,
    ) -> pa.Table:
        """The rows with ``lo <= chunk key < hi`` (and ``<= upto``, and matching the SQL
        condition ``where``, when given): ``key`` (the JSON array of ``schema.key``,
        or of the chunk key when the table has none, as the log reader encodes it), then
        ``after`` (the JSON object of the row, byte for byte the log reader's), or with
        ``typed`` one column per table column in its Delta type (``arrow_type``), equal to
        what :func:`~sparkcdc.core.convert.decode_images` makes of ``after``."""

    def check_condition(self, db: str, table: str, where: str) -> str | None:
        """Why the SQL condition ``where`` cannot filter ``db.table``, or None if it can."""

    def locate(
        self,
        keys: Sequence[KeyColumn],
        values: Sequence[KeyValue],
        bounds: Sequence[KeyValue],
    ) -> list[int]:
        """For each value, how many of the ascending ``bounds`` are ``<=`` it (the database
        compares, with each column's collation)."""

    def read_point(self) -> Offset | None:
        """Where the last :meth:`read_chunk` saw the database exactly (a pinned view: the
        chunk is the table at that log position and needs no window), or None (it read the
        latest data between two watermarks)."""

    def watermark(self) -> Offset:
        """The current end of the log (a transaction boundary)."""

    def low_watermark(self) -> Offset:
        """A log position at or before :meth:`watermark` such that every transaction before it
        is visible to any read started afterwards (a transaction reaches the log before the
        storage engine makes it visible). Chunks are read after it, so it bounds their windows
        from below."""

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
