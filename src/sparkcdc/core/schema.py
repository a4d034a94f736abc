"""Table schemas and the lossless mapping of MySQL/MariaDB column types to Spark/Delta types.

A :class:`TableSchema` is what the log reader knows about a captured table at one point of the
log: its columns in ordinal order (binlog rows carry values by position, not name) and its primary
key. Schemas are tracked from the catalog at start and from DDL in the log afterwards.

Row images travel through Spark as JSON text (see :mod:`sparkcdc.core.event`); each column type
has one JSON encoding that Spark's ``from_json`` turns back into the typed value:

======================  ===================  =======================================
MySQL/MariaDB type      Spark/Delta type     JSON value
======================  ===================  =======================================
TINYINT..BIGINT         byte/short/int/long  number (unsigned widen to the next type)
BIGINT UNSIGNED         decimal(20,0)        number
DECIMAL(p,s), p <= 38   decimal(p,s)         string, exact digits
DECIMAL(p,s), p > 38    string               string, exact digits
FLOAT, DOUBLE           float, double        number (shortest round-trip text)
BIT(n), n < 64          long                 number (the bits as an unsigned integer)
BIT(64)                 decimal(20,0)        number (the bits as an unsigned integer)
YEAR                    short                number
CHAR..LONGTEXT, JSON    string               string (decoded with the column charset)
ENUM, SET               string               string (SET members joined by ',')
BINARY..LONGBLOB        binary               string, base64 (trailing zero bytes kept)
DATE                    date                 "YYYY-MM-DD" (zero dates become null)
DATETIME(fsp)           timestamp_ntz        "YYYY-MM-DDTHH:MM:SS.ffffff"
TIMESTAMP(fsp)          timestamp            "YYYY-MM-DDTHH:MM:SS.ffffffZ" (UTC)
TIME(fsp)               string               "[-]HH[H]:MM:SS.ffffff"
======================  ===================  =======================================
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

INTEGER_TYPES = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
_SIGNED_SPARK = {8: "tinyint", 16: "smallint", 24: "int", 32: "int", 64: "bigint"}
_UNSIGNED_SPARK = {8: "smallint", 16: "int", 24: "int", 32: "bigint", 64: "decimal(20,0)"}
STRING_TYPES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json"}
BINARY_TYPES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
MAX_SPARK_DECIMAL = 38


@dataclass(frozen=True)
class Column:
    """One column as the catalog describes it (``information_schema.COLUMNS`` vocabulary).

    ``data_type`` is the lower-case base type (``int``, ``varchar``, ``decimal``, ``enum`` …);
    ``length`` is the declared length (characters for strings, bytes for binary, bits for BIT);
    ``values`` holds the members of an ENUM or SET in declaration order.
    """

    name: str
    data_type: str
    unsigned: bool = False
    nullable: bool = True
    precision: int | None = None
    scale: int | None = None
    length: int | None = None
    fsp: int = 0
    charset: str | None = None
    values: tuple[str, ...] = ()

    def spark_type(self) -> str:
        """The Spark SQL type (DDL text) this column maps to without loss."""
        t = self.data_type
        if t in INTEGER_TYPES:
            bits = INTEGER_TYPES[t]
            return _UNSIGNED_SPARK[bits] if self.unsigned else _SIGNED_SPARK[bits]
        if t == "decimal":
            precision = self.precision or 10
            if precision > MAX_SPARK_DECIMAL:
                return "string"
            return f"decimal({precision},{self.scale or 0})"
        if t == "float":
            return "float"
        if t == "double":
            return "double"
        if t == "bit":
            return "decimal(20,0)" if (self.length or 1) >= 64 else "bigint"
        if t == "year":
            return "smallint"
        if t in STRING_TYPES or t in ("enum", "set", "time"):
            return "string"
        if t in BINARY_TYPES:
            return "binary"
        if t == "date":
            return "date"
        if t == "datetime":
            return "timestamp_ntz"
        if t == "timestamp":
            return "timestamp"
        raise ValueError(f"column {self.name!r} has type {t!r}, which sparkcdc does not map yet")


@dataclass(frozen=True)
class TableSchema:
    """A captured table at one point of the log: ordered columns and primary key."""

    db: str
    table: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    key_columns: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return f"{self.db}.{self.table}"

    @property
    def key(self) -> tuple[str, ...]:
        """The columns that identify a row: the primary key, else a configured key."""
        return self.primary_key or self.key_columns

    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name.lower() == name.lower():
                return c
        raise KeyError(f"{self.name} has no column {name!r}")

    def spark_ddl(self) -> str:
        """The row image as a Spark struct DDL (``a INT, b STRING``), for ``from_json``."""
        return ", ".join(f"`{c.name}` {c.spark_type()}" for c in self.columns)

    def schema_id(self) -> str:
        """A short stable hash that changes whenever columns, types or the key change."""
        digest = hashlib.sha1(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()
        return digest[:16]

    def with_columns(self, columns: tuple[Column, ...]) -> TableSchema:
        names = {c.name.lower() for c in columns}
        key = tuple(k for k in self.primary_key if k.lower() in names)
        return replace(self, columns=columns, primary_key=key)

    def renamed(self, db: str, table: str) -> TableSchema:
        return replace(self, db=db, table=table)

    def to_json(self) -> dict[str, Any]:
        return {
            "db": self.db,
            "table": self.table,
            "columns": [
                {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(c).items()}
                for c in self.columns
            ],
            "primary_key": list(self.primary_key),
            "key_columns": list(self.key_columns),
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> TableSchema:
        columns = tuple(
            Column(**{**c, "values": tuple(c.get("values", ()))}) for c in value["columns"]
        )
        return cls(
            db=value["db"],
            table=value["table"],
            columns=columns,
            primary_key=tuple(value.get("primary_key", ())),
            key_columns=tuple(value.get("key_columns", ())),
        )
