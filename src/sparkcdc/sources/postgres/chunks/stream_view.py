"""An incremental snapshot's chunks of a table read in the log reader's schema of it, whatever
DDL of the table the log has not shown yet.

pgoutput describes a DDL in the Relation message before the table's next change, so to the log
reader a table altered and not changed since is what it was: a renamed column under its old
name, an added one absent, a retyped one of its old type. A window's rows join the replica at
the window's end in the schema the stream has then (a window whose log holds a DDL of its table
is read again), and when the Relation message comes later, its judgement (copy, fill,
resnapshot: :mod:`..stream.existing`) applies to them. So a chunk reads the table as the
stream's schema describes it, as if read before the DDL: each of the schema's columns found by
its ``attnum`` (:mod:`.view_token`), as a pinned snapshot's chunks find theirs
(:func:`.columns_now.selected`)::

    renamed      read under its name now, delivered under the stream's
    added        left out: the Relation message's fill gives the rows its value
    retyped      cast back to the stream's type: without a rewrite the stored values are
                 the old type's
    dropped      null: the Relation message drops it
    rewritten    the table's files changed since the reader last read the catalog while a
                 column changed (a volatile default, a converting type change): a retyped
                 column reads null, and the Relation message reads the table again

Where the reader's baseline does not say which attribute each column is (more DDL than the log
orders), a column is read by its name where the catalog describes it as the stream does, else as
null: the next Relation message reads the table again unless the catalog is then as the stream
describes it (:func:`..stream.existing.judge`).

The key queries name the key columns as the catalog does now. The catalog is read after each
COPY, and after the queries of a run's start (the key's types, its largest value); a change since
the names were read (a query refused for a column renamed since, or the catalog differs after
the query) runs the query again. The splitter's queries are only run again when refused: a bound
read from another column (a swap of names between the catalog read and the query) still cuts
the table into chunks that cover it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

import pyarrow as pa

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.chunk import KeyColumn
from sparkcdc.core.errors import SourceError
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.sources.keyset_chunks import Keys, KeyWork
from sparkcdc.sources.port import TableView
from sparkcdc.sources.postgres.chunks.columns_now import (
    ATTEMPTS,
    UNDEFINED_COLUMN,
    Select,
    rewritten,
    selected,
)
from sparkcdc.sources.postgres.chunks.copy import ChunkSession
from sparkcdc.sources.postgres.chunks.dialect import PostgresChunks
from sparkcdc.sources.postgres.chunks.keys import as_spelled, table_columns
from sparkcdc.sources.postgres.chunks.view_token import ViewToken
from sparkcdc.sources.postgres.server.attributes import TableAttributes, read_attributes

T = TypeVar("T")


class StreamedTable:
    """The columns of ``view``'s table as the catalog names them now (module docstring)."""

    def __init__(self, session: ChunkSession, view: TableView) -> None:
        self.session, self.schema = session, view.schema
        self.token = ViewToken.parse(view.token)
        self._oid: int | None = None
        self._now: TableAttributes | None = None
        self._types: dict[tuple[int, int], str] = {}

    def covers(self, db: str, table: str) -> bool:
        return (db, table) == (self.schema.db, self.schema.table)

    def now(self) -> TableAttributes:
        """The catalog as last read (read now if not yet)."""
        if self._now is None:
            self._now = self._read()
        return self._now

    def again(self, work: Callable[[], T | None], check: bool = True) -> T:
        """``work()`` until it names no column renamed since the catalog was read (it gives
        None then) and, with ``check``, the catalog is the same after it as before (the
        catalog read after it is the next one's)."""
        for _ in range(ATTEMPTS):
            before = self.now()
            result = work()
            if result is not None and not check:
                return result
            self._now = after = self._read()
            if result is not None and after == before:
                return result
        raise SourceError(
            f"the columns of {self.schema.name} changed during each of {ATTEMPTS} reads of "
            "one incremental snapshot chunk; run the pipeline again once the table's DDL is "
            "done.",
            table=self.schema.name,
        )

    def names(self) -> dict[str, str]:
        """The stream's name of each column still in the table -> its name now."""
        now = self.now()
        if not self.token.columns:
            live = {a.name for a in now.live()}
            return {c.name: c.name for c in self.schema.columns if c.name in live}
        return {c.name: a.name for c in self.token.columns
                if (a := now.by_attnum(c.attnum)) is not None and not a.dropped}  # fmt: skip

    def key_names(self, names: Sequence[str]) -> list[tuple[str, str]]:
        """(the stream's spelling, the name now) of each of the key columns ``names``."""
        now = self.names()

        def missing(name: str) -> SourceError:
            return SourceError(
                f"the key column {name} of {self.schema.name} is no longer in the table; a "
                "table's key cannot change while it is captured, so start the pipeline afresh "
                "(startup: initial).",
                table=self.schema.name,
            )

        return [(n, now[n]) for n in as_spelled(list(now), str, names, missing)]

    def select_list(self) -> list[str]:
        """The select-list expression of each of the stream's columns (module docstring)."""
        ident, now = self.session.ident, self.now()
        if self.token.columns:
            converted = rewritten(self.token.then, now)
            return selected(self.token.columns, now, ident, self._type_name, converted)
        described = {t.column.name: t.column for t in table_columns(
            self.session, self.schema.db, self.schema.table)}  # fmt: skip
        return [
            ident(c.name) if _same_type(described.get(c.name), c) else "NULL"
            for c in self.schema.columns
        ]

    def copy(self, select: Select) -> pa.Buffer | None:
        """COPY's CSV of ``select`` over the stream's columns (None: it named a column renamed
        since)."""
        keys = self.names()
        try:
            return self.session.copy(select(self.select_list(), keys))
        except SourceError as exc:
            if exc.fields.get("sqlstate") != UNDEFINED_COLUMN:
                raise
            return None

    def _read(self) -> TableAttributes:
        if self._oid is None:
            name = self.session.qualified(self.schema.db, self.schema.table)
            self._oid = int(self.session.query("SELECT %s::regclass::oid", (name,))[0][0])
        found = read_attributes(self.session, self._oid)
        if found is None:
            raise SourceError(
                f"{self.schema.name} was dropped while an incremental snapshot read it; take it "
                "out of source.tables, or create it again and start with a new checkpoint.",
                table=self.schema.name,
            )
        return found

    def _type_name(self, type_oid: int, typmod: int) -> str:
        if (type_oid, typmod) not in self._types:
            rows = self.session.query("SELECT format_type(%s, %s)", (type_oid, typmod))
            self._types[(type_oid, typmod)] = str(rows[0][0])
        return self._types[(type_oid, typmod)]


class StreamedChunks(PostgresChunks):
    """:class:`~.dialect.PostgresChunks` reading the table of ``view`` in the view's schema
    (module docstring); other tables as the plain dialect does."""

    def __init__(self, source: SourceConfig, view: TableView) -> None:
        super().__init__(source)
        self.view = StreamedTable(self.session, view)

    def _named(self, db: str, table: str, keys: Sequence[KeyColumn]) -> list[KeyColumn]:
        pairs = self.view.key_names([k.name for k in keys])
        return [replace(k, name=now) for k, (_, now) in zip(keys, pairs, strict=True)]

    def _again(self, work: Callable[[], T], check: bool = True) -> T:
        """``work()`` with the key columns' names now (:meth:`StreamedTable.again`)."""

        def once() -> T | None:
            try:
                return work()
            except SourceError as exc:
                if exc.fields.get("sqlstate") != UNDEFINED_COLUMN:
                    raise
                return None

        return self.view.again(once, check)

    def key_columns(self, db: str, table: str, names: Sequence[str]) -> list[KeyColumn]:
        """The key columns under the stream's names, described as the catalog has them."""
        if not self.view.covers(db, table):
            return super().key_columns(db, table, names)

        def work() -> list[KeyColumn]:
            pairs = self.view.key_names(names)
            found = PostgresChunks.key_columns(self, db, table, [now for _, now in pairs])
            return [replace(k, name=name) for k, (name, _) in zip(found, pairs, strict=True)]

        return self._again(work)

    def _with_keys(self, db: str, table: str, keys: Keys, work: KeyWork[T], check: bool) -> T:
        """``work`` over the key columns under their names now, the view's table's queries
        run again as :meth:`StreamedTable.again` says (the splitter's only when refused)."""
        if not self.view.covers(db, table):
            return work(list(keys))
        return self._again(lambda: [work(self._named(db, table, keys))], check)[0]

    def _chunk_data(self, schema: TableSchema, select: Select) -> pa.Buffer:
        if not self.view.covers(schema.db, schema.table):
            return super()._chunk_data(schema, select)
        return self.view.again(lambda: self.view.copy(select))


def _same_type(now: Column | None, then: Column) -> bool:
    """Whether the catalog describes a column now as the stream does (name and nullability
    aside)."""
    return now is not None and replace(now, name="", nullable=True) == replace(
        then, name="", nullable=True
    )
