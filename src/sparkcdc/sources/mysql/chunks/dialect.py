"""The snapshot dialect of MySQL/MariaDB: the chunk queries of Flink CDC 2.x's incremental
snapshot (seed 003) over Debezium's keyset chunking (seed 000).

A table is cut along its chunk key with keyset queries (``WHERE key >= lo ORDER BY key LIMIT 1
OFFSET n``), each chunk is read with ``WHERE lo <= key < hi``, and every comparison of keys is
made by the server with the columns' collations. Chunks are read with connectorx into Arrow,
with the ``key`` and ``after`` JSON text built by the server in SQL (:mod:`.sql`), so no
Python object is made per value; the small queries go through a :class:`MySQLCatalog`
connection (pymysql), which also gives the watermark.

A typed read (``read_chunk(..., typed=True)``) skips the JSON of the row, the largest cost of a
snapshot: it selects one column per table column, each turned into its Delta type by
:func:`sparkcdc.core.convert.fix_column`, so that it equals what
:func:`~sparkcdc.core.convert.decode_images` makes of ``after``. Integers, YEAR, FLOAT, DOUBLE,
BIT (as ``col+0``, an unsigned integer), DECIMAL of at most 28 digits with at most 10 after the
point, DATE and DATETIME (zero and partly-zero dates made NULL by the server, as the JSON path
makes them ``null``) come natively and exactly over the binary protocol; character strings,
JSON, ENUM and SET as utf8mb4 text, binary strings as their bytes. Wider DECIMALs, TIMESTAMP and
TIME come as the server's text, the very text the JSON path quotes (:func:`.sql.value_text`),
because connectorx cannot read them exactly; the text is cast like the JSON string. The ``key``
text is the server's too, except for integer keys, whose text is made from the columns read
(:func:`.typed.integer_key`): native reads halve the server's work on a chunk.

Every statement runs with ``time_zone='+00:00'`` (``SET STATEMENT`` on MariaDB, a ``SET_VAR``
hint on MySQL) so that TIMESTAMP keys compare exactly; the TIMESTAMP text itself is computed
from the stored UTC seconds and does not depend on the time zone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import connectorx as cx
import pyarrow as pa

from sparkcdc.config.model import SourceConfig
from sparkcdc.config.secret import Secret
from sparkcdc.core.chunk import KeyColumn, KeyValue
from sparkcdc.core.errors import SourceError
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.snapshot.correct import CHUNK_SCHEMA
from sparkcdc.sources.keyset_chunks import KeysetChunks
from sparkcdc.sources.keyset_sql import KeyRange
from sparkcdc.sources.mysql.chunks import sql as q
from sparkcdc.sources.mysql.chunks.keys import chunk_key_columns
from sparkcdc.sources.mysql.chunks.typed import dated, integer_key, typed_table, year_zero
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.server.tls import connectorx_params

EXACT_COUNT_LIMIT = 10_000_000  # tables estimated larger than this are not counted exactly
_SETTINGS = "time_zone='+00:00', sql_mode=''"


class MySQLChunks(KeysetChunks):
    """:class:`sparkcdc.snapshot.dialect.SnapshotDialect` for MySQL/MariaDB (a context
    manager). Key values use the row-image JSON encoding of :mod:`sparkcdc.core.chunk`."""

    def __init__(self, source: SourceConfig) -> None:
        self.source = source
        self._zero_dates: set[str] = set()  # tables a chunk showed zero dates in
        self.catalog = MySQLCatalog.of(source)

    # -- plumbing --------------------------------------------------------------------------

    def _statement(self, sql: str) -> str:
        """``sql`` (a SELECT) run in UTC with an empty sql_mode, whatever the session says."""
        if self.catalog.is_mariadb:
            return f"SET STATEMENT {_SETTINGS} FOR {sql}"
        hints = " ".join(f"SET_VAR({s.strip()})" for s in _SETTINGS.split(","))
        return sql.replace("SELECT ", f"SELECT /*+ {hints} */ ", 1)

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        return self.catalog.query(self._statement(sql))

    def _url(self, db: str) -> str:
        """The connectorx URL; ``prefer_socket=false`` keeps it on TCP to host:port (the mysql
        crate would otherwise switch to the server's Unix socket when it is local, and log in
        as ``user@localhost``, possibly another account than the configured one)."""
        s = self.source
        host = f"[{s.host}]" if ":" in s.host else s.host
        tls = connectorx_params(s.tls, self.catalog.encrypted)
        return (
            f"mysql://{quote(s.user, safe='')}:{quote(s.password.reveal(), safe='')}@{host}:"
            f"{s.port}"
            f"/{quote(db, safe='')}?prefer_socket=false{tls}"
        )

    def _table(self, db: str, table: str) -> str:
        return TableName(db, table).sql(q.ident)

    def _key_select(self, keys: Sequence[KeyColumn]) -> str:
        """The key's JSON text, built by the same SQL as :meth:`read_chunk`'s."""
        return q.array_json([(k.name, k.data_type, k.charset, True) for k in keys])

    def _key_values(self, select: str, keys: Sequence[KeyColumn]) -> list[KeyValue]:
        return [tuple(json.loads(row[0])) for row in self._rows(select)]

    def _order(self, keys: Sequence[KeyColumn], desc: bool = False) -> str:
        return ", ".join(q.ident(k.name) + (" DESC" if desc else "") for k in keys)

    def _condition(self, db: str, table: str, keys: Sequence[KeyColumn], span: KeyRange) -> str:
        return q.range_condition(keys, span)

    def _locate_rows(
        self, keys: Sequence[KeyColumn], values: Sequence[KeyValue], bounds: Sequence[KeyValue]
    ) -> list[tuple[Any, ...]]:
        return self._rows(q.locate_query(keys, values, bounds))

    # -- SnapshotDialect -------------------------------------------------------------------

    def key_columns(self, db: str, table: str, names: Sequence[str]) -> list[KeyColumn]:
        return chunk_key_columns(self.catalog, db, table, names)

    def row_count(self, db: str, table: str) -> int:
        """Exact ``COUNT(*)``, unless the engine estimates more than EXACT_COUNT_LIMIT rows:
        then the estimate (``information_schema.TABLES.TABLE_ROWS``)."""
        est = self.catalog.query(
            "SELECT TABLE_ROWS FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (db, table),
        )
        if est and est[0][0] is not None and int(est[0][0]) > EXACT_COUNT_LIMIT:
            return int(est[0][0])
        return int(self._rows(f"SELECT COUNT(*) FROM {self._table(db, table)}")[0][0])

    def chunk_query(
        self,
        schema: TableSchema,
        keys: Sequence[KeyColumn],
        span: KeyRange,
        typed: bool = False,
        zero_dates: bool = True,
    ) -> str:
        """The SELECT of :meth:`read_chunk` of ``span``: columns ``key`` and ``after``, or
        with ``typed`` one expression per table column (:func:`.sql.value_typed`;
        ``zero_dates``: DATE and DATETIME guarded against them), after ``key`` unless the key
        is made from the integer key columns read (:func:`.typed.integer_key`)."""
        key_cols = _key_columns(schema, keys)
        key = f"{q.array_json([_col(c) for c in key_cols])} AS `key`"
        if typed:  # aliased by position: the names are restored from the schema
            values = ", ".join(
                f"{q.value_typed(q.ident(c.name), c, zero_dates)} AS `c{i}`"
                for i, c in enumerate(schema.columns)
            )
            columns = values if integer_key(key_cols) else f"{key}, {values}"
        else:
            columns = f"{key}, {q.object_json([_col(c) for c in schema.columns])} AS `after`"
        return self._statement(
            f"SELECT {columns} FROM {self._table(schema.db, schema.table)}"
            f" WHERE {self._condition(schema.db, schema.table, keys, span)}"
        )

    def _read_chunk(
        self, schema: TableSchema, keys: Sequence[KeyColumn], span: KeyRange, typed: bool
    ) -> pa.Table:
        """One connectorx query into Arrow. Without ``typed``: :data:`CHUNK_SCHEMA`, the JSON
        text made by the server. With ``typed``:
        :func:`~sparkcdc.snapshot.correct.typed_chunk_schema`, each column as read (natively
        or as text) fixed up to its Delta type by :func:`~sparkcdc.core.convert.fix_column`,
        so equal to what :func:`~sparkcdc.core.convert.decode_images` makes of the ``after``
        text.

        DATE and DATETIME are read as they are until a chunk of the table shows a zero date
        (connectorx refuses zero and partly-zero dates; year 0 is checked here): that chunk
        and the table's later ones are read with the server making them NULL, the guard that
        costs the server ~20% more CPU per chunk when it is always on."""
        guarded = not typed or schema.name in self._zero_dates or not dated(schema)
        sql = self.chunk_query(schema, keys, span, typed, zero_dates=guarded)
        table = self._fetch(schema, sql, refused_dates=not guarded)
        if table is not None and typed:
            table = typed_table(table, schema, _key_columns(schema, keys))
        if table is None or (not guarded and year_zero(table, schema)):
            self._zero_dates.add(schema.name)  # it holds zero dates: the server guards them
            return self._read_chunk(schema, keys, span, typed)
        if not typed:
            table = table.rename_columns(["key", "after"]).cast(CHUNK_SCHEMA)
            if table.column("after").null_count:
                raise SourceError(f"a chunk of {schema.name} has rows the JSON encoding missed")
        if table.column("key").null_count:
            raise SourceError(f"a chunk of {schema.name} has rows the JSON encoding missed")
        return table

    def _fetch(self, schema: TableSchema, sql: str, refused_dates: bool) -> pa.Table | None:
        """One connectorx query; None if ``refused_dates`` and it refused a zero date."""
        try:
            table: pa.Table = cx.read_sql(self._url(schema.db), sql, return_type="arrow")
            return table
        except BaseException as exc:  # connectorx's refusal of a value is a Rust panic
            refused = type(exc).__name__ == "PanicException" and "convert the value" in str(exc)
            if refused and refused_dates:
                return None
            if not isinstance(exc, Exception) and not refused:
                raise
            detail = _hide_password(str(exc), self.source.password)  # it is in the URL
            raise SourceError(
                f"Reading a chunk of {schema.name} from {self.catalog.address} failed "
                f"({detail.strip()}); check that the server is up and the table unchanged.",
                table=schema.name,
            ) from None  # not chained: the driver's own words may hold the URL

    def check_condition(self, db: str, table: str, where: str) -> str | None:
        """Why ``where`` cannot filter ``db.table`` (the server's words, from a query that
        reads no row), or None if it can."""
        try:
            self._rows(f"SELECT 1 FROM {self._table(db, table)} WHERE ({where}) LIMIT 0")
        except Exception as exc:  # the server's error says what is wrong with the condition
            detail = exc.fields.get("detail") if isinstance(exc, SourceError) else None
            return str(detail or exc)
        return None

    def read_point(self) -> None:
        """None: chunks are read between watermarks."""
        return None

    def watermark(self) -> BinlogOffset:
        """The catalog's current binlog offset (``SHOW MASTER STATUS`` and the GTID position)."""
        return self.catalog.current_offset()

    def low_watermark(self) -> BinlogOffset:
        """A position whose transactions are all visible to later reads (see
        :meth:`MySQLCatalog.visible_offset`)."""
        return self.catalog.visible_offset()

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        self.catalog.close()


def _col(c: Column) -> q.Col:
    return (c.name, c.data_type, c.charset, c.nullable)


def _key_columns(schema: TableSchema, keys: Sequence[KeyColumn]) -> list[Column]:
    """The columns of a chunk row's ``key``: the table's key, else its chunk key."""
    return [schema.column(n) for n in schema.key or tuple(k.name for k in keys)]


def _hide_password(text: str, password: Secret) -> str:
    """``text`` (connectorx's error, which may quote its URL) without the password, as given
    or as the URL writes it."""
    if password:
        clear = password.reveal()
        for form in {quote(clear, safe=""), clear}:
            text = text.replace(form, str(password))
    return text
