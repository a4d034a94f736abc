"""What a PostgreSQL server says about itself: readiness for change data capture, the tables a
pipeline captures, their schemas, the end of the WAL, and signal-table writes (the port's
:class:`~sparkcdc.sources.port.Catalog`).

One ordinary connection (:mod:`.connect`) to ``source.database`` answers every question; the
replication stream is read elsewhere, and the publication and slot are managed by
:mod:`.publication`. Tables are named ``schema.table``; a partitioned table is captured as one
table (its partitions are not listed: the publication sends their changes under the root).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Self

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConfigError, SourceError, TableWithoutKey
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.snapshot.signals import SIGNAL_TABLE_DDL
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.pgoutput.types import (
    ARRAY_ELEMENTS,
    CATALOG_SQL,
    TYPES,
    PgType,
    column,
)
from sparkcdc.sources.postgres.server.attributes import TableAttributes, read_attributes
from sparkcdc.sources.postgres.server.connect import Session, connect
from sparkcdc.sources.postgres.server.publication import plan_publication, slot_state
from sparkcdc.sources.postgres.server.readiness import check_access, check_identity, check_server
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.wire.lsn import format_lsn, parse_lsn
from sparkcdc.sources.sql_catalog import Grantee, ListedTable, SqlCatalog

log = logging.getLogger("sparkcdc.source")

# ordinary and partitioned tables outside the system schemas (user schemas may not start with
# pg_); from PostgreSQL 13 a partitioned table stands for its partitions, before it the
# partitions are the tables (a publication could not hold a partitioned table)
_TABLES_SQL = (
    "SELECT n.nspname, c.relname, c.relpersistence"
    " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE c.relkind IN ('r', 'p') AND {partitions}"
    " AND n.nspname <> 'information_schema' AND left(n.nspname, 3) <> 'pg_'"
)
_UNLOGGED = "which logical decoding cannot capture (unlogged or temporary)"
_RELATION_SQL = (
    "SELECT c.oid, c.relreplident FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p')"
)
# pgoutput sends no generated column (before PostgreSQL 18), so the schema has none either
_COLUMNS_SQL = (
    "SELECT attname, atttypid, atttypmod, attnotnull FROM pg_attribute"
    " WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped {generated} ORDER BY attnum"
)
_KEYS_SQL = (
    "SELECT i.indisprimary, i.indisreplident, a.attname FROM pg_index i"
    " CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, pos)"
    " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum"
    " WHERE i.indrelid = %s AND (i.indisprimary OR i.indisreplident) ORDER BY k.pos"
)
_LOG_END_SQL = "SELECT pg_current_wal_insert_lsn()::text"
_EXISTS_SQL = (
    "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = %s AND c.relname = %s"
)


class PostgresCatalog(SqlCatalog):
    """A catalog connection to one database of a PostgreSQL server (a context manager), or
    ``session`` (one reading in a snapshot: :mod:`..chunks.pin_view`). ``slot`` is the
    pipeline's replication slot (default: ``source.slot`` if set): when known,
    :meth:`check_ready` also checks that a slot is free should it still have to be created,
    or that the existing one can serve the pipeline."""

    @classmethod
    def of(cls, source: SourceConfig, slot: str | None = None) -> Self:
        return cls(source, slot)

    def __init__(
        self, source: SourceConfig, slot: str | None = None, session: Session | None = None
    ) -> None:
        self.source = source
        settings = PostgresSettings.of(source)
        self.database = settings.database
        self.slot = slot if slot is not None else settings.slot
        self.publication = settings.names()[1]
        self.session: Session = session or connect(source, self.database)
        self._matched: list[TableName] = []
        self._types: dict[int, PgType | None] = {}

    @property
    def address(self) -> str:
        return self.session.address

    @property
    def user(self) -> str:
        return self.source.user

    # -- readiness ---------------------------------------------------------------------------

    def check_ready(self, namespaces: Iterable[str] = ()) -> None:
        """Raise unless the server is set up for logical decoding and the user may replicate;
        with ``namespaces`` (schemas), also unless the user may read them and the tables of
        them the last :meth:`match_tables` found, PostgreSQL can publish those tables'
        updates and deletes, and the publication publishes them or the user may make it so
        (:mod:`.readiness`, :func:`~.publication.plan_publication`). Changes nothing."""
        check_server(self.session, self.slot)
        schemas = sorted(set(namespaces))
        if not schemas:
            return
        tables = [t for t in self._matched if t[0] in schemas]
        check_access(self.session, schemas, tables)
        check_identity(self.session, tables, self.source.row_keys)
        plan = plan_publication(self.session, self.publication, tables, self.user)
        if plan.statement is not None:
            log.info(
                "publication %s in database '%s' on %s %s; the run does that with: %s",
                plan.name, self.database, self.address,
                "does not exist yet" if plan.creates else "lacks tables the pipeline captures",
                plan.statement,
            )  # fmt: skip

    # -- tables and schemas ------------------------------------------------------------------

    def match_tables(
        self, patterns: Sequence[str], each: bool = False, exclude: Sequence[str] = ()
    ) -> list[TableName]:
        """The tables of ``source.database`` whose ``schema.table`` fully matches one of the
        regular expressions (unlogged tables, which logical decoding never sees, are left out
        with a warning); NoTablesMatched, naming the database, if none does, or with ``each``
        if one of them matches none."""
        self._matched = super().match_tables(patterns, each, exclude)
        return list(self._matched)

    def _listed_tables(self) -> Iterable[ListedTable]:
        partitions = "NOT c.relispartition" if self._version >= 130000 else "c.relkind = 'r'"
        rows = self.session.query(_TABLES_SQL.format(partitions=partitions))
        return [
            ListedTable(TableName(str(s), str(t)), None if persistence == "p" else _UNLOGGED)
            for s, t, persistence in rows
        ]

    def _no_match(self) -> tuple[str, str]:
        return (
            f"in database '{self.database}' on {self.address}",
            "tables are looked for in source.database only (postgres when it is not set), "
            "so set it to the database that holds them, or fix the patterns (regular "
            "expressions over schema.table, e.g. 'public\\..*') or create the tables",
        )

    def load_schema(self, db: str, table: str, key_columns: Sequence[str] = ()) -> TableSchema:
        """The table's columns in attnum order (types mapped by :mod:`..pgoutput.types`), its
        primary key in key order and, without one, ``key_columns`` or else the columns of its
        replica identity index."""
        rows = self.session.query(_RELATION_SQL, (db, table))
        if not rows:
            raise SourceError(
                f"Table {TableName(db, table)} does not exist on {self.address}; check "
                "source.tables.",
                db=db,
                table=table,
            )
        oid, identity = int(rows[0][0]), str(rows[0][1])
        generated = "AND attgenerated = ''" if self._version >= 120000 else ""
        found = self.session.query(_COLUMNS_SQL.format(generated=generated), (oid,))
        self._resolve_all(int(r[1]) for r in found)
        columns = tuple(
            column(str(name), int(type_oid), int(typmod), self._resolve, nullable=not notnull)
            for name, type_oid, typmod, notnull in found
        )
        index_rows = self.session.query(_KEYS_SQL, (oid,))
        primary_key = tuple(str(name) for primary, _, name in index_rows if primary)
        identity_key = tuple(str(name) for _, replident, name in index_rows if replident)
        keys = self._key_columns(db, table, columns, key_columns)
        if not primary_key and not keys and identity == "i":
            keys = identity_key
        if not primary_key and not keys:
            full = "" if identity == "f" else (
                f" and, so that its updates and deletes reach the log, run ALTER TABLE "
                f"{self.session.qualified(db, table)} REPLICA IDENTITY FULL"
            )  # fmt: skip
            raise TableWithoutKey(
                f"Table {TableName(db, table)} on {self.address} has no primary key; name the "
                "columns that identify a row with source.key_columns: "
                f'{{"{TableName(db, table)}": [col, ...]}}'
                f"{full}.",
                db=db,
                table=table,
            )
        return TableSchema(db, table, columns, primary_key=primary_key, key_columns=keys)

    def _key_columns(
        self, db: str, table: str, columns: tuple[Column, ...], wanted: Sequence[str]
    ) -> tuple[str, ...]:
        """``wanted`` as the table spells its columns (ConfigError naming unknown ones)."""
        names = {c.name: c.name for c in columns} | {c.name.lower(): c.name for c in columns}
        unknown = [k for k in wanted if k not in names and k.lower() not in names]
        if unknown:
            raise ConfigError(
                f"source.key_columns: {TableName(db, table)} has no column "
                f"{', '.join(unknown)}; list "
                f"columns of the table ({', '.join(c.name for c in columns)}).",
                key="source.key_columns",
            )
        return tuple(names.get(k) or names[k.lower()] for k in wanted)

    def table_oid(self, db: str, table: str) -> int | None:
        """The OID of table ``db.table`` (None: no such table)."""
        rows = self.session.query(_RELATION_SQL, (db, table))
        return int(rows[0][0]) if rows else None

    def is_partition(self, oid: int) -> bool:
        """Whether relation ``oid`` is a partition of a partitioned table."""
        rows = self.session.query("SELECT relispartition FROM pg_class WHERE oid = %s", (oid,))
        return bool(rows and rows[0][0])

    def attributes(self, oid: int) -> TableAttributes | None:
        """Relation ``oid``'s attributes now (:mod:`.attributes`; None: no such table)."""
        return read_attributes(self.session, oid)

    def resolve(self, oid: int) -> PgType | None:
        """A type that is not built in, from ``pg_type`` (kept for the connection's life)."""
        return self._resolve(oid)

    def _resolve(self, oid: int) -> PgType | None:
        """A type that is not built in, from ``pg_type`` (kept for the connection's life)."""
        if oid not in self._types:
            self._resolve_all([oid])
        return self._types.get(oid)

    def _resolve_all(self, oids: Iterable[int]) -> None:
        wanted = sorted(
            {o for o in oids if o not in TYPES and o not in ARRAY_ELEMENTS} - self._types.keys()
        )
        if wanted:
            rows = self.session.query(CATALOG_SQL, (wanted,))
            found = {int(r[0]): PgType(int(r[0]), str(r[1]), str(r[2]), str(r[3]),
                                       int(r[4]), int(r[5]), int(r[6])) for r in rows}  # fmt: skip
            self._types.update({o: found.get(o) for o in wanted})

    @property
    def _version(self) -> int:
        return self.session.server_version

    # -- the log -----------------------------------------------------------------------------

    def log_end(self) -> LsnOffset:
        """The end of the WAL now: every transaction committed before this call has its commit
        record ending at or before it.

        ``pg_current_wal_insert_lsn()`` is where the next WAL record will be inserted. A
        commit's record is inserted before the commit returns, so its end is at or before this
        position. The write and flush positions (``pg_current_wal_lsn()``,
        ``pg_current_wal_flush_lsn()``) can lag behind it: with ``synchronous_commit = off`` a
        commit returns before its record is written, and a watermark taken there would end
        before a transaction that is already visible. (On a standby, which has no insert
        position, this raises.)
        """
        return LsnOffset(parse_lsn(str(self.session.query(_LOG_END_SQL)[0][0])))

    def oldest_position(self) -> str:
        state = None if self.slot is None else slot_state(self.session, self.slot)
        if state is None or state.confirmed_flush_lsn is None:
            return f"none (the server has no replication slot {self.slot})"
        return (
            f"{format_lsn(state.confirmed_flush_lsn)} (the confirmed position of slot {self.slot})"
        )

    # -- signals -----------------------------------------------------------------------------

    def check_signal_table(self, table: str) -> None:
        """Raise ConfigError (with its CREATE TABLE) unless the signal table
        ``schema.table`` exists."""
        schema, name = TableName.parse(table)
        if not self.session.query(_EXISTS_SQL, (schema, name)):
            raise ConfigError(
                f"The signal table {table} does not exist in database '{self.database}' on "
                f"{self.address}; create it with "
                f"{SIGNAL_TABLE_DDL.format(name=self.session.qualified(schema, name))} and "
                f"grant user '{self.user}' INSERT on it.",
                key="source.signal_table",
            )

    def _quote_table(self, schema: str, table: str) -> str:
        return self.session.qualified(schema, table)

    def _execute(self, sql: str, args: tuple[object, ...]) -> None:
        self.session.query(sql, args)

    def _grantee(self) -> Grantee:
        return Grantee(self.user, f"'{self.user}'", self.session.ident(self.user))

    # -- lifecycle ---------------------------------------------------------------------------

    def reopen(self) -> None:
        """A new connection in place of the session's (the server may have ended it)."""
        self.session.reopen()

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
