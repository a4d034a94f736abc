"""The snapshot dialect of PostgreSQL: the chunk queries of Flink CDC 2.x's incremental
snapshot (seed 003) over Debezium's keyset chunking (seed 000).

A table is cut along its chunk key with keyset queries (``WHERE (k1, k2) >= (a, b) ORDER BY
k1, k2 LIMIT 1 OFFSET n``), each chunk is read with ``WHERE lo <= key < hi``, and every
comparison of keys is made by the server, in the columns' collations (:mod:`.sql`). Key order
is PostgreSQL's own: ascending, NULL after every value.

Chunks are read with ``COPY (SELECT ...) TO STDOUT`` as CSV (:mod:`.copy`): each value in the
text form pgoutput sends it in, parsed by ``pyarrow.csv`` into text columns. From those, the
``key`` and ``after`` JSON is made column by column in Arrow (:mod:`.images`), byte for byte
the log reader's row images; a typed read converts each column with the log reader's own
conversion (:mod:`.typed`). The small queries (key bounds, counts) go through the same one
connection, which also gives the watermarks (:mod:`.visibility` for the low one).

With a ``pin`` (a snapshot exported by a replication slot's creation, :mod:`.export`) every
read sees the database as of that snapshot, and both watermarks are the slot's consistent point:
the chunks need no window; without, each statement sees the latest committed data. A chunk of a
table whose columns the pin's token names is read as the pin saw them, whatever DDL was made
since (:mod:`.columns_now`). An incremental snapshot's chunks of a table the log reader describes
otherwise than the catalog does now are read in the reader's schema (:mod:`.stream_view`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import pyarrow as pa

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.chunk import KeyColumn, KeyValue
from sparkcdc.core.errors import ConfigError, SourceError
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.snapshot.correct import CHUNK_SCHEMA
from sparkcdc.sources.keyset_chunks import KeysetChunks
from sparkcdc.sources.keyset_sql import KeyRange
from sparkcdc.sources.port import SnapshotPin
from sparkcdc.sources.postgres.chunks import sql as q
from sparkcdc.sources.postgres.chunks.columns_now import PinnedTables, Select
from sparkcdc.sources.postgres.chunks.copy import ChunkSession, text_columns
from sparkcdc.sources.postgres.chunks.images import array_text, fragments, object_text
from sparkcdc.sources.postgres.chunks.keys import TableColumn, chunk_key_columns, table_columns
from sparkcdc.sources.postgres.chunks.pin_token import PinToken
from sparkcdc.sources.postgres.chunks.typed import typed_table
from sparkcdc.sources.postgres.chunks.visibility import visible_lsn
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.server.connect import Row
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.wire.lsn import parse_lsn

EXACT_COUNT_LIMIT = 1_000_000  # tables estimated at fewer rows (or never analysed) are counted
_ESTIMATE_SQL = (
    "SELECT c.reltuples, c.relpages, pg_relation_size(c.oid) / current_setting('block_size')::int"
    " FROM pg_class c WHERE c.relkind = 'r'"
    " AND (c.oid = %s::regclass OR c.oid IN (SELECT relid FROM pg_partition_tree(%s::regclass)))"
)
_INSERT_SQL = "SELECT pg_current_wal_insert_lsn()::text"


class PostgresChunks(KeysetChunks):
    """:class:`sparkcdc.snapshot.dialect.SnapshotDialect` for PostgreSQL (a context manager):
    one connection to ``source``'s database, reading in the exported snapshot of ``pin`` if
    given. Tables are named by schema (``db``) and table."""

    def __init__(self, source: SourceConfig, pin: SnapshotPin | None = None) -> None:
        self.source = source
        database = PostgresSettings.of(source).database
        token = None if pin is None else PinToken.parse(pin.token)
        self.session = ChunkSession(source, database, None if token is None else token.snapshot)
        self.pinned_at = None if pin is None else LsnOffset.of(pin.point)
        self.pinned: PinnedTables | None = None
        if token is not None and self.pinned_at is not None:
            self.pinned = PinnedTables(source, self.session, token, self.pinned_at)
        self._tables: dict[tuple[str, str], list[TableColumn]] = {}

    # -- plumbing --------------------------------------------------------------------------

    def _table(self, db: str, table: str) -> str:
        return self.session.qualified(db, table)

    def _cols(self, keys: Sequence[KeyColumn]) -> list[str]:
        return [self.session.ident(k.name) for k in keys]

    def _nullable(self, db: str, table: str, keys: Sequence[KeyColumn]) -> bool:
        """Whether a key column may hold NULL (the catalog's word, kept per table)."""
        if (db, table) not in self._tables:
            self._tables[(db, table)] = table_columns(self.session, db, table)
        not_null = {c.column.name for c in self._tables[(db, table)] if c.not_null}
        return any(k.name not in not_null for k in keys)

    def _condition(self, db: str, table: str, keys: Sequence[KeyColumn], span: KeyRange) -> str:
        where = span.where
        if where and (refusal := q.condition_refusal(where)):
            raise ConfigError(
                f"The condition {where!r} for {TableName(db, table)} is refused: {refusal}."
            )
        nulls = self._nullable(db, table, keys)
        return q.range_condition(self._cols(keys), keys, nulls, span)

    def _order(self, keys: Sequence[KeyColumn], desc: bool = False) -> str:
        return ", ".join(c + (" DESC" if desc else "") for c in self._cols(keys))

    def _key_select(self, keys: Sequence[KeyColumn]) -> str:
        return ", ".join(self._cols(keys))

    def _rows(self, sql: str) -> list[Row]:
        return self.session.rows(sql)

    def _locate_rows(
        self, keys: Sequence[KeyColumn], values: Sequence[KeyValue], bounds: Sequence[KeyValue]
    ) -> list[Row]:
        return self.session.query(q.locate_query(keys, values, bounds))

    def _key_values(self, select: str, keys: Sequence[KeyColumn]) -> list[KeyValue]:
        """The key values of ``select``'s rows (the key columns, in order), made by the same
        JSON encoding as the chunks' keys and parsed."""
        texts = text_columns(self.session.copy(select), len(keys))
        columns = [Column(k.name, k.data_type, logical=k.logical) for k in keys]
        made = array_text([fragments(t, c) for t, c in zip(texts, columns, strict=True)])
        return [tuple(json.loads(text)) for text in made.to_pylist()]

    # -- SnapshotDialect -------------------------------------------------------------------

    def key_columns(self, db: str, table: str, names: Sequence[str]) -> list[KeyColumn]:
        return chunk_key_columns(self.session, db, table, names)

    def row_count(self, db: str, table: str) -> int:
        """The planner's estimate (``reltuples`` scaled to the table's size now, summed over
        partitions), or an exact ``count(*)`` of at most EXACT_COUNT_LIMIT rows when the
        estimate is below that or missing (a table never vacuumed nor analysed)."""
        name = self._table(db, table)
        estimate, known = 0.0, True
        for tuples, pages, size in self.session.query(_ESTIMATE_SQL, (name, name)):
            if tuples < 0 or (pages == 0 and size > 0):
                known = False
            elif pages > 0:
                estimate += float(tuples) / float(pages) * float(size)
        if known and estimate >= EXACT_COUNT_LIMIT:
            return round(estimate)
        counted = self.session.rows(
            f"SELECT count(*) FROM (SELECT 1 FROM {name} LIMIT {EXACT_COUNT_LIMIT}) AS c"
        )
        return max(int(counted[0][0]), round(estimate))

    def _read_chunk(
        self, schema: TableSchema, keys: Sequence[KeyColumn], span: KeyRange, typed: bool
    ) -> pa.Table:
        """One COPY of the table's columns in ``span``. Without ``typed``: :data:`CHUNK_SCHEMA`,
        the JSON text of :mod:`.images`. With ``typed``: the ``key`` text and the typed
        columns of :func:`.typed.typed_table`."""
        db, table = schema.db, schema.table
        names = schema.column_names()

        def select(exprs: list[str], keys_now: dict[str, str]) -> str:
            named = [replace(k, name=keys_now.get(k.name, k.name)) for k in keys]
            condition = self._condition(db, table, named, span)
            return f"SELECT {', '.join(exprs)} FROM {self._table(db, table)} WHERE {condition}"

        data = self._chunk_data(schema, select)
        try:
            texts = text_columns(data, len(names))
        except pa.ArrowInvalid as exc:
            raise SourceError(f"a chunk of {schema.name} could not be parsed ({exc})") from exc
        key_names = schema.key or tuple(k.name for k in keys)
        at = [names.index(schema.column(n).name) for n in key_names]
        key = array_text([fragments(texts[i], schema.columns[i]) for i in at])
        if typed:
            return typed_table(schema, texts, key)
        parts = [fragments(t, c) for t, c in zip(texts, schema.columns, strict=True)]
        after = object_text(names, parts, len(key))
        return pa.Table.from_arrays([key, after], schema=CHUNK_SCHEMA)

    def _chunk_data(self, schema: TableSchema, select: Select) -> pa.Buffer:
        """COPY's CSV of ``select`` over ``schema``'s columns: as the pin saw them, with one;
        else by their names."""
        if self.pinned is not None:
            return self.pinned.read(schema, select)
        return self.session.copy(select([self.session.ident(c.name) for c in schema.columns], {}))

    def check_condition(self, db: str, table: str, where: str) -> str | None:
        """Why ``where`` cannot filter ``db.table`` (the server's words, from EXPLAIN), or None."""
        refusal = q.condition_refusal(where)
        if refusal is not None:
            return refusal
        try:
            self.session.query(f"EXPLAIN SELECT 1 FROM {self._table(db, table)} WHERE ({where})")
        except SourceError as exc:
            return str(exc.fields.get("detail") or exc)
        return None

    def read_point(self) -> LsnOffset | None:
        """Where the last chunk read saw its table: the pin's point, or a later pin of the
        table's own once it was rewritten since (:mod:`.columns_now`); None without a pin."""
        return None if self.pinned is None else self.pinned.last_point

    def watermark(self) -> LsnOffset:
        """``pg_current_wal_insert_lsn()``: past the commit record of every transaction
        committed so far (the pinned point, with a pin)."""
        if self.pinned_at is not None:
            return self.pinned_at
        return LsnOffset(parse_lsn(str(self.session.query(_INSERT_SQL)[0][0])))

    def low_watermark(self) -> LsnOffset:
        """The insert position, once every transaction committed before it is visible
        (:func:`.visibility.visible_lsn`; the pinned point, with a pin)."""
        if self.pinned_at is not None:
            return self.pinned_at
        return LsnOffset(visible_lsn(self.session))

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        if self.pinned is not None:
            self.pinned.close()
        self.session.close()
