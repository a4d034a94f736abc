"""A table's attributes as ``pg_attribute`` holds them now: what the replication stream cannot
say about a schema change (:mod:`..stream.existing` judges with it).

=================  ==========================================================================
attnum             a column's number for its whole life: a rename keeps it, a dropped column
                   keeps its number (``attisdropped``), an added one takes the next
version            the row's ``xmin``: every ALTER of the column writes a new row version
missing            ``attmissingval`` (PostgreSQL 11+, ``atthasmissing``): the value every row
                   older than the column reads, when ADD COLUMN evaluated a non-volatile
                   default once instead of rewriting the table
storage            the ``relfilenode`` of the table (of each partition of a partitioned one):
                   a rewrite (a volatile default, a type change that converts, VACUUM FULL,
                   CLUSTER, TRUNCATE) gives the table new files and clears ``missing``
=================  ==========================================================================

Generated columns are left out, as pgoutput leaves them out of its messages. The missing value is
the type's text output (the session's settings are the stream's: :mod:`.connect`); for a
partitioned table each partition keeps its own, and the partitions must agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sparkcdc.core.json_value import JSONObject
from sparkcdc.sources.postgres.pgoutput.literals import parse_array
from sparkcdc.sources.postgres.server.connect import Row

_ATTRIBUTES_SQL = (  # one round trip: the table's files, then a row per attribute
    "SELECT c.relkind, c.relfilenode::text, a.attnum, a.attname, a.atttypid, a.atttypmod,"
    " a.attisdropped, a.attnotnull, a.xmin::text, {missing}, coalesce(t.typdelim, ',')"
    " FROM pg_class c LEFT JOIN pg_attribute a"
    " ON a.attrelid = c.oid AND a.attnum > 0 {generated}"
    " LEFT JOIN pg_type t ON t.oid = a.atttypid"
    " WHERE c.oid = %s ORDER BY a.attnum"
)
_MISSING = "CASE WHEN a.atthasmissing THEN a.attmissingval::text END"  # PostgreSQL 11+
_PARTITIONS_SQL = (  # PostgreSQL 12+; a partitioned table is captured from 13 on
    "SELECT string_agg(c.oid::text || ':' || c.relfilenode::text, ',' ORDER BY c.oid)"
    " FROM pg_partition_tree(%s) p JOIN pg_class c ON c.oid = p.relid"
)
_PARTITION_MISSING_SQL = (
    "SELECT a.attname, {missing}, coalesce(t.typdelim, ',')"
    " FROM pg_partition_tree(%s) p JOIN pg_class c ON c.oid = p.relid AND c.relkind = 'r'"
    " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
    " LEFT JOIN pg_type t ON t.oid = a.atttypid"
)


@dataclass(frozen=True)
class Attribute:
    """One column of a table as ``pg_attribute`` holds it (module docstring). ``missing`` is
    the text of the value older rows read (None: null); ``unsure`` says the partitions of a
    partitioned table disagree about it."""

    attnum: int
    name: str
    type_oid: int
    typmod: int
    dropped: bool = False
    not_null: bool = False
    version: str = ""
    missing: str | None = None
    unsure: bool = False

    @property
    def type(self) -> tuple[int, int]:
        return self.type_oid, self.typmod

    def to_json(self) -> list[Any]:
        return [self.attnum, self.name, self.type_oid, self.typmod, self.dropped,
                self.not_null, self.version, self.missing, self.unsure]  # fmt: skip

    @classmethod
    def from_json(cls, value: list[Any]) -> Attribute:
        attnum, name, oid, typmod, dropped, not_null, version, missing, unsure = value
        return cls(int(attnum), str(name), int(oid), int(typmod), bool(dropped),
                   bool(not_null), str(version), missing, bool(unsure))  # fmt: skip


@dataclass(frozen=True)
class TableAttributes:
    """A table's columns (dropped ones included, generated ones not) in attnum order, and the
    files its rows are in (module docstring)."""

    storage: str
    attributes: tuple[Attribute, ...]

    def by_attnum(self, attnum: int) -> Attribute | None:
        for a in self.attributes:
            if a.attnum == attnum:
                return a
        return None

    def live(self) -> list[Attribute]:
        return [a for a in self.attributes if not a.dropped]

    def last(self) -> int:
        return max((a.attnum for a in self.attributes), default=0)

    def to_json(self) -> JSONObject:
        return {"storage": self.storage, "attributes": [a.to_json() for a in self.attributes]}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> TableAttributes:
        return cls(
            str(value["storage"]), tuple(Attribute.from_json(a) for a in value["attributes"])
        )


class CatalogReads(Protocol):
    """Where :func:`read_attributes` queries: a :class:`~.connect.Session` (the catalog now), or
    one whose queries run in a pinned snapshot (the catalog then)."""

    @property
    def server_version(self) -> int: ...

    def query(self, sql: str, args: Sequence[object] | None = None) -> list[Row]: ...


def read_attributes(session: CatalogReads, oid: int) -> TableAttributes | None:
    """Relation ``oid``'s attributes now (None: no such table any more)."""
    version = session.server_version
    missing = _MISSING if version >= 110000 else "NULL"
    generated = "AND a.attgenerated = ''" if version >= 120000 else ""
    rows = session.query(_ATTRIBUTES_SQL.format(missing=missing, generated=generated), (oid,))
    if not rows:
        return None
    kind, storage = str(rows[0][0]), str(rows[0][1])
    attributes = [
        Attribute(int(num), str(name), int(oid_), int(typmod), bool(dropped), bool(not_null),
                  str(xmin), *_one_value(text, str(delim)))
        for _, _, num, name, oid_, typmod, dropped, not_null, xmin, text, delim in rows
        if num is not None  # a table of no columns: its one row, of its files only
    ]  # fmt: skip
    if kind == "p":
        storage = str(session.query(_PARTITIONS_SQL, (oid,))[0][0] or "")
        attributes = _partitions_missing(session, oid, attributes, missing)
    return TableAttributes(storage, tuple(attributes))


def _partitions_missing(
    session: CatalogReads, oid: int, attributes: list[Attribute], missing: str
) -> list[Attribute]:
    """A partitioned table keeps no rows: each column's missing value is its partitions' one,
    unsure where they disagree."""
    seen: dict[str, set[tuple[str | None, bool]]] = {}
    for name, text, delim in session.query(_PARTITION_MISSING_SQL.format(missing=missing), (oid,)):
        seen.setdefault(str(name), set()).add(_one_value(text, str(delim)))
    out = []
    for a in attributes:
        values = seen.get(a.name, {(None, False)})
        value, unsure = next(iter(values)) if len(values) == 1 else (None, True)
        out.append(Attribute(a.attnum, a.name, a.type_oid, a.typmod, a.dropped, a.not_null,
                             a.version, value, unsure))  # fmt: skip
    return out


def _one_value(text: object, delimiter: str) -> tuple[str | None, bool]:
    """The one element of ``attmissingval`` (an array of the column's type, as text), and
    whether it could not be read as one."""
    if text is None:
        return None, False
    try:
        items = parse_array(str(text), delimiter)
    except ValueError:
        return None, True
    if len(items) != 1 or isinstance(items[0], list):
        return None, True
    return items[0], False
