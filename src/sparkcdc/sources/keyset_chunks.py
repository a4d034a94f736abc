"""The keyset queries of a chunk dialect, written once: Debezium's keyset chunking (seed 000)
as Flink CDC 2.x's incremental snapshot cuts a table with it (seed 003).

A table is cut along its chunk key with keyset queries (``WHERE key >= lo ORDER BY key LIMIT 1
OFFSET n``), chunks are counted with a ``LIMIT``-ed subquery, and chunk bounds are located by
a cross join of literals (:mod:`.keyset_sql`): every comparison of keys is the database's, in
its columns' collations. A source's dialect specialises :class:`KeysetChunks` with how it names
tables and columns, builds its conditions, reads key values and runs a query.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Self, TypeVar

import pyarrow as pa

from sparkcdc.core.chunk import KeyColumn, KeyValue
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.dialect import locate_in_batches
from sparkcdc.sources.keyset_sql import KeyRange

T = TypeVar("T")
Keys = Sequence[KeyColumn]
KeyBound = KeyValue | None  # a chunk bound: None is open
KeyWork = Callable[[list[KeyColumn]], T]  # a query over the key columns named as given
Row = tuple[object, ...]


class KeysetChunks(ABC):
    """The shared part of a :class:`~sparkcdc.snapshot.dialect.SnapshotDialect` (a context
    manager): ``key_range``, ``key_after``, ``count_between``, ``locate``, and ``read_chunk``
    as a :class:`~.keyset_sql.KeyRange`."""

    # -- what a source supplies ------------------------------------------------------------

    @abstractmethod
    def _table(self, db: str, table: str) -> str:
        """The table's quoted name."""

    @abstractmethod
    def _key_select(self, keys: Sequence[KeyColumn]) -> str:
        """The select list that :meth:`_key_values` reads key values from."""

    @abstractmethod
    def _key_values(self, select: str, keys: Sequence[KeyColumn]) -> list[KeyValue]:
        """The key values of the rows of ``select`` (in their row-image JSON encoding)."""

    @abstractmethod
    def _order(self, keys: Sequence[KeyColumn], desc: bool = False) -> str:
        """The ``ORDER BY`` list of the key."""

    @abstractmethod
    def _condition(self, db: str, table: str, keys: Sequence[KeyColumn], span: KeyRange) -> str:
        """``span`` of ``db.table`` as a WHERE condition."""

    @abstractmethod
    def _read_chunk(
        self, schema: TableSchema, keys: Sequence[KeyColumn], span: KeyRange, typed: bool
    ) -> pa.Table:
        """:meth:`read_chunk` of ``span``."""

    @abstractmethod
    def _rows(self, sql: str) -> list[Row]:
        """The rows of one query over the tables."""

    @abstractmethod
    def _locate_rows(
        self, keys: Sequence[KeyColumn], values: Sequence[KeyValue], bounds: Sequence[KeyValue]
    ) -> Iterable[tuple[object, object]]:
        """(index into ``values``, how many ``bounds`` are ``<=`` it) rows of one query."""

    def _with_keys(self, db: str, table: str, keys: Keys, work: KeyWork[T], check: bool) -> T:
        """``work`` over the key columns as the table names them now: here, as given (a
        dialect reading a table under older names renames them; ``check``: the names must
        still hold after the query)."""
        return work(list(keys))

    @abstractmethod
    def close(self) -> None: ...

    # -- SnapshotDialect -------------------------------------------------------------------

    def key_range(
        self, db: str, table: str, keys: Sequence[KeyColumn]
    ) -> tuple[KeyValue, KeyValue] | None:
        """The first and last key in key order (two ``ORDER BY .. LIMIT 1`` queries)."""

        def read(named: list[KeyColumn]) -> tuple[KeyValue, KeyValue] | None:
            select = f"SELECT {self._key_select(named)} FROM {self._table(db, table)} ORDER BY "
            first = self._key_values(select + self._order(named) + " LIMIT 1", named)
            last = self._key_values(select + self._order(named, desc=True) + " LIMIT 1", named)
            return (first[0], last[0]) if first and last else None

        return self._with_keys(db, table, keys, read, True)

    def key_after(
        self, db: str, table: str, keys: Keys, lo: KeyBound, offset: int, upto: KeyBound = None
    ) -> KeyBound:
        """``WHERE key >= lo [AND key <= upto] ORDER BY key LIMIT 1 OFFSET offset``."""

        def read(named: list[KeyColumn]) -> KeyValue | None:
            found = self._key_values(
                f"SELECT {self._key_select(named)} FROM {self._table(db, table)}"
                f" WHERE {self._condition(db, table, named, KeyRange(lo, None, upto))}"
                f" ORDER BY {self._order(named)} LIMIT 1 OFFSET {int(offset)}",
                named,
            )
            return found[0] if found else None

        return self._with_keys(db, table, keys, read, False)

    def count_between(
        self, db: str, table: str, keys: Keys, lo: KeyBound, hi: KeyBound, limit: int
    ) -> int:
        """``COUNT(*)`` over a ``LIMIT``-ed subquery, so a huge range stops at ``limit``."""

        def count(named: list[KeyColumn]) -> int:
            condition = self._condition(db, table, named, KeyRange(lo, hi))
            rows = self._rows(
                f"SELECT COUNT(*) FROM (SELECT 1 FROM {self._table(db, table)}"
                f" WHERE {condition} LIMIT {int(limit)}) AS c"
            )
            return int(str(rows[0][0]))

        return self._with_keys(db, table, keys, count, False)

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
        """The rows of ``lo <= key < hi`` (and ``key <= upto``, and ``where``): the source's
        chunk read of that :class:`~.keyset_sql.KeyRange`."""
        return self._read_chunk(schema, keys, KeyRange(lo, hi, upto, where), typed)

    def locate(
        self,
        keys: Sequence[KeyColumn],
        values: Sequence[KeyValue],
        bounds: Sequence[KeyValue],
    ) -> list[int]:
        """Cross joins of value and bound literals, LOCATE_BATCH of each per query."""
        return locate_in_batches(values, bounds, lambda vs, bs: self._locate_rows(keys, vs, bs))

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
