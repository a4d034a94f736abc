"""The columns a PostgreSQL table's snapshot is cut along, as the catalog describes them.

A :class:`KeyColumn` here holds what the chunk queries need to compare values of the column:
``data_type`` is the SQL name a key literal is cast to (the built-in base type's name, a domain
resolved to it, else ``format_type``'s name of the enum or extension type), ``collation`` the
column's collation as SQL writes it (``pg_catalog."en-US-x-icu"``), ``precision``/``scale``
those of a numeric, ``logical`` the logical type of :mod:`..pgoutput.types`. Types that cannot
order chunks (no b-tree order, or values whose text does not read back as the same value:
json, xml, geometric types, money, bit strings, arrays) are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from sparkcdc.core.chunk import KeyColumn
from sparkcdc.core.errors import ConfigError, SourceError
from sparkcdc.core.schema import Column
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.postgres.pgoutput.types import (
    CATALOG_SQL,
    TYPES,
    PgType,
    array_element,
    column,
)
from sparkcdc.sources.postgres.server.connect import Session

T = TypeVar("T")
Missing = Callable[[str], Exception]  # the error for a name that is not there

_COLUMNS_SQL = (
    "SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull,"
    " format_type(a.atttypid, a.atttypmod), CASE WHEN a.attcollation <> 0"
    " THEN quote_ident(cn.nspname) || '.' || quote_ident(co.collname) END"
    " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
    " JOIN pg_namespace n ON n.oid = c.relnamespace"
    " LEFT JOIN pg_collation co ON co.oid = a.attcollation"
    " LEFT JOIN pg_namespace cn ON cn.oid = co.collnamespace"
    " WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p')"
    " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
)  # fmt: skip
REFUSED = frozenset(
    {"json", "xml", "point", "line", "lseg", "box", "path", "polygon", "circle", "money"}
    | {"bit", "varbit"}
)
_BUILT_IN = frozenset(name for name, _, _ in TYPES.values())


@dataclass(frozen=True)
class TableColumn:
    """One column of a table as the chunk key needs it: its :class:`Column` (typname and
    logical type), whether it is NOT NULL, and its SQL type and collation names."""

    column: Column
    not_null: bool
    sql_type: str
    collation: str | None

    def key(self) -> KeyColumn:
        c = self.column
        base = c.data_type
        data_type = ('"char"' if base == "char" else base) if base in _BUILT_IN else self.sql_type
        return KeyColumn(
            c.name,
            data_type,
            precision=c.precision,
            scale=c.scale,
            collation=self.collation,
            logical=c.logical,
        )


def table_columns(session: Session, db: str, table: str) -> list[TableColumn]:
    """The table's columns in order (SourceError if there is no such table)."""
    rows = session.query(_COLUMNS_SQL, (db, table))
    if not rows:
        raise SourceError(
            f"Table {TableName(db, table)} does not exist on {session.address} (or user "
            f"'{session.user}' may not see it); check source.tables and the grants.",
            db=db,
            table=table,
        )
    wanted = sorted({int(r[1]) for r in rows})
    found = session.query(CATALOG_SQL, (wanted,))
    described = {int(r[0]): PgType(int(r[0]), str(r[1]), str(r[2]), str(r[3]),
                                   int(r[4]), int(r[5]), int(r[6])) for r in found}  # fmt: skip
    return [
        TableColumn(
            column(str(name), int(oid), int(typmod), described.get, nullable=not notnull),
            bool(notnull),
            str(sql_type),
            None if collation is None else str(collation),
        )
        for name, oid, typmod, notnull, sql_type, collation in rows
    ]


def as_spelled(
    items: Sequence[T], name_of: Callable[[T], str], names: Sequence[str], missing: Missing
) -> list[T]:
    """The item of each of ``names``: the one spelled so, else the one named so apart from
    case (SQL folds an unquoted name to lower case); ``missing(name)`` is raised for none."""
    by_name = {name_of(i).lower(): i for i in items} | {name_of(i): i for i in items}
    found = [by_name.get(n) or by_name.get(n.lower()) for n in names]
    for name, item in zip(names, found, strict=True):
        if item is None:
            raise missing(name)
    return [item for item in found if item is not None]


def chunk_key_columns(
    session: Session, db: str, table: str, names: Sequence[str]
) -> list[KeyColumn]:
    """The named columns (the table's spelling first, then case-insensitively) as chunk key
    columns; ConfigError for a missing column or one whose type cannot order chunks."""
    columns = table_columns(session, db, table)

    def missing(name: str) -> ConfigError:
        return ConfigError(
            f"{TableName(db, table)} has no column {name} to cut its snapshot chunks along; list "
            "columns of the table in source.snapshot.chunk_key_columns "
            f"({', '.join(c.column.name for c in columns)}).",
            key="source.snapshot.chunk_key_columns",
        )

    keys = []
    for found in as_spelled(columns, lambda c: c.column.name, names, missing):
        c = found.column
        if not c.logical or array_element(c.logical) or c.data_type in REFUSED:
            raise ConfigError(
                f"Column {c.name} of {TableName(db, table)} has type {found.sql_type}, which "
                "cannot cut "
                "a table into snapshot chunks; name columns of integer, numeric, text, uuid, "
                "bytea or date/time type in source.snapshot.chunk_key_columns.",
                key="source.snapshot.chunk_key_columns",
            )
        keys.append(found.key())
    return keys
