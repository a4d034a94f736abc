"""The token of a PostgreSQL pin: the exported snapshot's name, and the columns every chunk of
each table is read as.

A snapshot's chunks are read with the schemas the pin recorded (:mod:`.pin_view`), but a query
names columns as the catalog names them when it runs, which DDL made since may have changed. The
token carries each table's columns as the pin saw them, with what identifies a column for its
whole life (its ``attnum``) and its type then, so a chunk read after a rename, a type change or
a drop still reads the pinned columns (:mod:`.columns_now`). It travels to every Spark task in
the :class:`~sparkcdc.sources.port.SnapshotPin`; a token without columns is the snapshot's bare
name (a batch read's pin, :mod:`.holder`)::

    {"snapshot": "00000003-0000001B-1", "columns": {"public.t": [["id", 1, 23, -1], ...]}}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.postgres.stream.existing import Baseline


@dataclass(frozen=True)
class PinnedColumn:
    """A column of a table as the pin saw it: its name, ``attnum`` and type (OID, typmod)."""

    name: str
    attnum: int
    type_oid: int
    typmod: int


@dataclass(frozen=True)
class PinToken:
    """An exported snapshot's name and the pinned columns of each table (``db.table``)."""

    snapshot: str
    columns: Mapping[str, tuple[PinnedColumn, ...]] = field(default_factory=dict)

    def text(self) -> str:
        if not self.columns:
            return self.snapshot
        columns = {
            name: [[c.name, c.attnum, c.type_oid, c.typmod] for c in cols]
            for name, cols in sorted(self.columns.items())
        }
        return json.dumps({"snapshot": self.snapshot, "columns": columns}, separators=(",", ":"))

    @classmethod
    def parse(cls, text: str) -> PinToken:
        if not text.startswith("{"):
            return cls(text)
        doc = json.loads(text)
        columns = {
            str(name): tuple(PinnedColumn(str(n), int(a), int(o), int(m)) for n, a, o, m in cols)
            for name, cols in doc["columns"].items()
        }
        return cls(str(doc["snapshot"]), columns)


def pinned_columns(schema: TableSchema, baseline: Baseline | None) -> tuple[PinnedColumn, ...]:
    """``schema``'s columns with their attributes in ``baseline`` (none where the baseline does
    not say which attribute each column is: the chunks then name the columns as they are)."""
    if baseline is None or baseline.attnums is None:
        return ()
    out = []
    for col, attnum in zip(schema.columns, baseline.attnums, strict=True):
        attribute = baseline.attributes.by_attnum(attnum)
        if attribute is None:
            return ()
        out.append(PinnedColumn(col.name, attnum, attribute.type_oid, attribute.typmod))
    return tuple(out)
