"""The columns a MySQL/MariaDB table's snapshot is cut along: chunk key columns as the server
describes them (type, signedness, charset, collation), refused when they do not order
reliably."""

from __future__ import annotations

from collections.abc import Sequence

from sparkcdc.core.chunk import KeyColumn
from sparkcdc.core.errors import ConfigError, SourceError
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.mysql.chunks import sql as q
from sparkcdc.sources.mysql.schema.column_types import key_column
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog


def chunk_key_columns(
    catalog: MySQLCatalog, db: str, table: str, names: Sequence[str]
) -> list[KeyColumn]:
    """The named columns from ``information_schema.COLUMNS``; refuses missing columns and
    types that do not order reliably (FLOAT, DOUBLE, TEXT, BLOB, JSON, ENUM, SET)."""
    rows = catalog.query(
        "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE, "
        "CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
        (db, table),
    )
    if not rows:
        raise SourceError(
            f"Table {TableName(db, table)} does not exist on {catalog.address} (or "
            f"'{catalog.user}' may "
            "not see it); check source.tables and the grants.",
            db=db,
            table=table,
        )
    found = {str(r[0]).lower(): r for r in rows}
    keys = []
    for name in names:
        row = found.get(name.lower())
        if row is None:
            raise ConfigError(
                f"{TableName(db, table)} has no column {name} to cut its snapshot chunks "
                "along; list "
                "columns of the table in source.snapshot.chunk_key_columns "
                f"({', '.join(str(r[0]) for r in rows)}).",
                key="source.snapshot.chunk_key_columns",
            )
        keys.append(_key(db, table, *row))
    return keys


def _key(
    db: str, table: str, col: object, data_type: object, column_type: object,
    precision: object, scale: object, charset: object, collation: object,
) -> KeyColumn:  # fmt: skip
    t = str(data_type).lower()
    if t not in q.CHUNK_KEY_TYPES:
        raise ConfigError(
            f"Column {col} of {TableName(db, table)} has type {t}, which cannot cut a table into "
            "snapshot chunks; name columns of integer, DECIMAL, CHAR/VARCHAR, "
            "BINARY/VARBINARY or date/time type in source.snapshot.chunk_key_columns.",
            key="source.snapshot.chunk_key_columns",
        )
    digits = None if precision is None else int(str(precision))
    return key_column(
        str(col),
        t,
        unsigned=" unsigned" in str(column_type).lower(),
        precision=digits if t == "decimal" else None,
        scale=int(str(scale)) if t == "decimal" else None,
        length=digits if t == "bit" else None,
        charset=None if charset is None else str(charset),
        collation=None if collation is None else str(collation),
    )
