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
from collections.abc import Mapping
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
    """Relation OIDs to the captured tables' schemas (module docstring)."""

    def __init__(self, schemas: Mapping[TableName, TableSchema]) -> None:
        self.by_name = {name: Captured.of(s) for name, s in schemas.items()}
        self.by_oid: dict[int, Captured | None] = {}  # None: a table not captured

    def get(self, oid: int) -> Captured | None:
        return self.by_oid.get(oid)

    def relation(self, message: Relation, resolve: Resolver | None) -> SchemaRow | None:
        """Take a Relation message; the ``s`` row of its table's schema change, if any."""
        found = self.by_name.get((message.namespace, message.name))
        if found is None:
            self.by_oid[message.oid] = None
            return None
        columns = relation_columns(message, resolve)
        old = found.schema
        if [(c.name, c.logical) for c in columns] == [(c.name, c.logical) for c in old.columns]:
            self.by_oid[message.oid] = found
            return None
        new = old.with_columns(_merged(old, columns))
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
    (nullability, lengths the Relation message does not carry)."""
    before = {c.name: c for c in old.columns}
    return tuple(
        before[c.name] if c.name in before and before[c.name].logical == c.logical else c
        for c in columns
    )
