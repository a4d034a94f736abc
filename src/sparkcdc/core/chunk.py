"""Chunks of a table's key space and the splits that read them (Flink CDC 2.x, seed 003).

A table is cut along its chunk key (the primary key, or ``chunk_key_columns`` for a table
without one) into ranges ``lo <= key < hi``; the first range has no lower bound, the last no
upper bound, so together they cover every key, including keys written while the snapshot runs.
A :class:`Split` is the unit of work: one chunk of one table, read by one Spark task.

Key values are held in their row-image JSON encoding parsed back into Python (see
:mod:`sparkcdc.core.schema`): integers as ``int``, DECIMAL as exact digit strings, strings as
``str``, BINARY as base64 text, DATE/DATETIME as ISO text. The same encoding appears in the
``key`` column of every change event, so bounds, chunk rows and log events compare as equals.
Ordering keys is the database's business (collations); see :mod:`sparkcdc.snapshot.keyorder`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict, cast

from sparkcdc.core import types
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.table_name import TableName

KeyValue = tuple[Any, ...]


class KeyColumnJSON(TypedDict):
    """A :class:`KeyColumn` as JSON (attributes left out when None or false)."""

    name: str
    data_type: str
    unsigned: NotRequired[bool]
    precision: NotRequired[int]
    scale: NotRequired[int]
    charset: NotRequired[str]
    collation: NotRequired[str]
    logical: NotRequired[str]


class SplitJSON(TypedDict):
    """A :class:`Split` as JSON: bounds as lists of key values (None: unbounded)."""

    table: str
    index: int
    lo: list[Any] | None
    hi: list[Any] | None


def refuse_array_key(name: str, logical: str, table: str = "") -> None:
    """ConfigError when the key column ``name`` is an array: arrays have no order to cut a
    table's key space by, nor a key text the changes of one row share."""
    if types.is_array(logical):
        where = f" of {table}" if table else ""
        raise ConfigError(
            f"column {name!r}{where} is an array ({logical}), which cannot be a key column "
            "(of snapshot chunks, or of the replica's MERGE); key the table by columns of "
            "other types (source.key_columns, source.snapshot.chunk_key_columns).",
            key="source.snapshot.chunk_key_columns",
        )


@dataclass(frozen=True)
class KeyColumn:
    """One chunk key column: its logical type, and what the database needs to compare values
    of it (its own type name and attributes, as the source describes them)."""

    name: str
    data_type: str
    unsigned: bool = False
    precision: int | None = None
    scale: int | None = None
    charset: str | None = None
    collation: str | None = None
    logical: str = field(default="", kw_only=True)

    def __post_init__(self) -> None:
        refuse_array_key(self.name, self.logical)

    @property
    def numeric(self) -> bool:
        """Ordered the same way in Python (int or exact decimal) as in the database."""
        return types.is_exact_number(self.logical)

    @property
    def integer(self) -> bool:
        return types.is_integer(self.logical)

    def to_json(self) -> KeyColumnJSON:
        return cast(
            KeyColumnJSON, {k: v for k, v in self.__dict__.items() if v not in (None, False)}
        )

    @classmethod
    def from_json(cls, value: KeyColumnJSON) -> KeyColumn:
        return cls(**value)


@dataclass(frozen=True)
class Split:
    """Chunk ``index`` of ``table`` (a :class:`TableName`'s text form): keys
    ``lo <= key < hi``; None is unbounded."""

    table: str
    index: int
    lo: KeyValue | None
    hi: KeyValue | None

    @property
    def split_id(self) -> str:
        return f"{self.table}:{self.index}"

    @property
    def db_table(self) -> TableName:
        return TableName.parse(self.table)

    def to_json(self) -> SplitJSON:
        return {
            "table": self.table,
            "index": self.index,
            "lo": None if self.lo is None else list(self.lo),
            "hi": None if self.hi is None else list(self.hi),
        }

    @classmethod
    def from_json(cls, value: SplitJSON) -> Split:
        lo, hi = value.get("lo"), value.get("hi")
        return cls(
            str(value["table"]),
            int(value["index"]),
            None if lo is None else tuple(lo),
            None if hi is None else tuple(hi),
        )

    def __str__(self) -> str:
        lo = "-inf" if self.lo is None else ",".join(map(str, self.lo))
        hi = "+inf" if self.hi is None else ",".join(map(str, self.hi))
        return f"{self.split_id} [{lo} .. {hi})"
