"""Table schemas as every source describes them: columns in order, their types, the key.

A :class:`TableSchema` is what a source knows about a captured table at one point of its log:
its columns in ordinal order (a binlog's rows carry values by position, not name) and the
columns that identify a row. ``db`` and ``table`` are the table's two-part name: MySQL's
database and table, PostgreSQL's schema and table.

Each :class:`Column` is described the way the source's catalog describes it (Debezium's
``Column``: the source's own type name and attributes), plus the neutral logical type the source
maps it to (:mod:`sparkcdc.core.types`), which is all that code past the source looks at.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sparkcdc.core import types
from sparkcdc.core.json_value import JSONObject
from sparkcdc.core.table_name import TableName


@dataclass(frozen=True)
class Column:
    """One column: its name, the source's description of its type, and its logical type.

    ``data_type`` is the source's lower-case base type name (MySQL ``int``, ``varchar``,
    ``decimal`` …); ``length`` is the declared length (characters for strings, bytes for
    binary, bits for BIT); ``fsp`` the fractional seconds digits; ``values`` the members of an
    ENUM or SET in declaration order. ``logical`` is the neutral type the source maps the column
    to (:mod:`sparkcdc.core.types`), empty for a type the source does not map; sources build
    their columns with their own type mapping.
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
    logical: str = field(default="", kw_only=True)

    def spark_type(self) -> str:
        """The Spark SQL type (DDL text) of the column's logical type."""
        if not self.logical:
            raise ValueError(
                f"column {self.name!r} has type {self.data_type!r}, which sparkcdc does not map yet"
            )
        return types.spark_type(self.logical)


@dataclass(frozen=True)
class TableSchema:
    """A captured table at one point of the log: ordered columns and primary key."""

    db: str
    table: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    key_columns: tuple[str, ...] = field(default=())
    # a schema as the capture rules leave it (core/capture.py): its id, derived from the
    # source schema's id and the rules (empty: the schema as the source has it)
    captured_id: str = ""

    @property
    def table_name(self) -> TableName:
        return TableName(self.db, self.table)

    @property
    def name(self) -> str:
        """The table's name in its text form (:mod:`sparkcdc.core.table_name`)."""
        return str(self.table_name)

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
        """A short stable hash that changes whenever columns, types or the key change (a
        captured schema's: :attr:`captured_id`)."""
        if self.captured_id:
            return self.captured_id
        digest = hashlib.sha1(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()
        return digest[:16]

    def with_columns(self, columns: tuple[Column, ...]) -> TableSchema:
        names = {c.name.lower() for c in columns}
        key = tuple(k for k in self.primary_key if k.lower() in names)
        return replace(self, columns=columns, primary_key=key)

    def renamed(self, db: str, table: str) -> TableSchema:
        return replace(self, db=db, table=table)

    def to_json(self) -> JSONObject:
        return {
            "db": self.db,
            "table": self.table,
            "columns": [
                {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(c).items()}
                for c in self.columns
            ],
            "primary_key": list(self.primary_key),
            "key_columns": list(self.key_columns),
            **({"captured_id": self.captured_id} if self.captured_id else {}),
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
            captured_id=str(value.get("captured_id", "")),
        )
