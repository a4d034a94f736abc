"""The captured tables as the stream describes them: the catalog's schemas at the start, then
each pgoutput Relation message.

pgoutput sends a Relation message before a table's first change on a connection and again after
its columns change; it describes the columns as decoding saw them at that point of the log (the
historic catalog), so comparing it with the schema in force tells ADD COLUMN, DROP COLUMN and
type changes apart without a DDL statement. A change becomes an ``op = 's'`` row of kind
``alter`` (``ddl`` a one-line description), as the binlog's ALTER TABLE does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sparkcdc.core.errors import SourceError
from sparkcdc.core.event import SchemaRow
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.core.types import is_integer
from sparkcdc.sources.port import TableName
from sparkcdc.sources.postgres.pgoutput.messages import Relation
from sparkcdc.sources.postgres.pgoutput.types import Resolver, relation_columns


@dataclass(frozen=True)
class Captured:
    """A captured table's schema in force and where its key columns are in a row."""

    schema: TableSchema
    key_index: tuple[int, ...]
    schema_id: str
    integer_key: bool  # every key column an integer: its JSON is its text

    @classmethod
    def of(cls, schema: TableSchema) -> Captured:
        names = schema.column_names()
        index = tuple(names.index(k) for k in schema.key)
        integer = all(is_integer(schema.columns[i].logical) for i in index)
        return cls(schema, index, schema.schema_id(), integer)


def schema_row(old: TableSchema | None, new: TableSchema, kind: str) -> SchemaRow:
    """The ``op = 's'`` row of ``new`` (replacing ``old``) with the change ``kind``."""
    change = json.dumps({"kind": kind}, separators=(",", ":"))
    return (
        new.db, new.table, _json(new), _json(old), change, new.schema_id()
    )  # fmt: skip


def _json(schema: TableSchema | None) -> str | None:
    return None if schema is None else json.dumps(schema.to_json(), separators=(",", ":"))


class CapturedTables:
    """Relation OIDs to the captured tables' schemas (module docstring). ``patterns`` are
    ``source.tables``: a table the stream names that matches them but is not captured (a
    table renamed to such a name, one added to the publication since the start) stops the
    stream, as does a captured table renamed, rather than its rows being passed over."""

    def __init__(
        self, schemas: Mapping[TableName, TableSchema], patterns: Sequence[str] = ()
    ) -> None:
        self.by_name = {name: Captured.of(s) for name, s in schemas.items()}
        self.by_oid: dict[int, Captured | None] = {}  # None: a table not captured
        self.patterns = [re.compile(p) for p in patterns]

    def get(self, oid: int) -> Captured | None:
        """The captured table of relation ``oid`` (None: not captured)."""
        if oid not in self.by_oid:
            raise SourceError(
                f"the replication stream sent a change of relation {oid} before describing "
                "it, which pgoutput never does; the stream stops rather than guess the table."
            )
        return self.by_oid[oid]

    def relation(self, message: Relation, resolve: Resolver | None) -> SchemaRow | None:
        """Take a Relation message; the ``s`` row of its table's schema change, if any."""
        name = f"{message.namespace}.{message.name}"
        found = self.by_name.get((message.namespace, message.name))
        before = self.by_oid.get(message.oid)
        if before is not None and before is not found:
            raise SourceError(
                f"the captured table {before.schema.name} was renamed to {name} in the log; "
                "sparkcdc cannot carry its replica over yet, so start the pipeline afresh "
                "(startup: initial) with source.tables naming the new table."
            )
        if found is None:
            if any(p.fullmatch(name) for p in self.patterns):
                raise SourceError(
                    f"{name} matches source.tables but was not captured when the stream "
                    "started (created, renamed or published since); restart the pipeline to "
                    "capture it from then on."
                )
            self.by_oid[message.oid] = None
            return None
        old = found.schema
        columns = _merged(old, relation_columns(message, resolve))
        if [(c.name, c.logical) for c in columns] == [(c.name, c.logical) for c in old.columns]:
            self.by_oid[message.oid] = found
            return None
        new = old.with_columns(columns)
        missing = [k for k in old.key if k not in new.column_names()]
        if missing:
            raise SourceError(
                f"the key column(s) {', '.join(missing)} of {old.name} left the table in the "
                "log; a table's key cannot change while it is captured, so start the pipeline "
                "afresh (startup: initial)."
            )
        captured = Captured.of(new)
        self.by_name[(old.db, old.table)] = self.by_oid[message.oid] = captured
        return schema_row(old, new, "alter")


def _merged(old: TableSchema, columns: tuple[Column, ...]) -> tuple[Column, ...]:
    """The Relation's columns, keeping the catalog's description of those that did not change
    (nullability, lengths the Relation message does not carry) and of those whose type the
    stream alone cannot name (an enum, a domain over numeric: the stream's Type messages do
    not say), which are taken as unchanged."""
    before = {c.name: c for c in old.columns}
    kept = (
        before.get(c.name) if not c.logical or c.logical == _logical(before.get(c.name)) else None
        for c in columns
    )
    return tuple(k or c for k, c in zip(kept, columns, strict=True))


def _logical(column: Column | None) -> str | None:
    return None if column is None else column.logical
