"""The captured tables as the stream describes them: the catalog's schemas at the start (the
schema history's on a restart, :mod:`.history`), then each pgoutput Relation message.

pgoutput sends a Relation message before a table's first change on a connection and again before
its first change after any invalidation of its definition; it describes the columns as decoding
saw them at that point of the log (the historic catalog): names, type OIDs and typmods. Comparing
it with the schema in force tells ADD, DROP and RENAME COLUMN and type changes apart (typmods
too: numeric(10,3) to numeric(10,1), varchar(10) to varchar(4)) without a DDL statement; the
catalog, read then, tells what each did to the rows the table already holds (:mod:`.existing`).
A change becomes an ``op = 's'`` row of kind ``alter`` (``ddl`` a one-line description), as the
binlog's ALTER TABLE does, its change JSON carrying ``existing``
(:class:`~sparkcdc.core.existing_rows.ExistingRows`).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from sparkcdc.core.errors import SourceError
from sparkcdc.core.event import SchemaRow
from sparkcdc.core.existing_rows import ExistingRows
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.core.types import is_integer
from sparkcdc.sources.postgres.pgoutput.messages import Relation
from sparkcdc.sources.postgres.pgoutput.types import PgType, Resolver, column, relation_columns
from sparkcdc.sources.postgres.server.attributes import TableAttributes
from sparkcdc.sources.postgres.stream.existing import (
    Baseline,
    Judgement,
    PgTypes,
    TableState,
    by_name,
    judge,
)


class RelationCatalog(Protocol):
    """What the stream asks the catalog about a table a Relation message describes
    (:class:`~..server.catalog.PostgresCatalog`)."""

    def attributes(self, oid: int) -> TableAttributes | None: ...

    def table_oid(self, db: str, table: str) -> int | None: ...

    def resolve(self, oid: int) -> PgType | None: ...

    def is_partition(self, oid: int) -> bool: ...


def first_baseline(catalog: RelationCatalog, schema: TableSchema) -> Baseline | None:
    """The catalog's baseline of a table whose schema it just described (None: gone)."""
    oid = catalog.table_oid(schema.db, schema.table)
    attributes = None if oid is None else catalog.attributes(oid)
    if attributes is None:
        return None
    columns = [
        column(a.name, a.type_oid, a.typmod, catalog.resolve, nullable=not a.not_null)
        for a in attributes.live()
    ]
    return Baseline.first(schema, attributes, columns)


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


@dataclass(frozen=True)
class RelationChange:
    """What a Relation message changed: the ``s`` row (None: neither the schema nor its rows),
    what changed (short phrases), and the table's new state when it differs (schema or
    baseline: the schema history keeps it)."""

    name: TableName
    row: SchemaRow | None
    notes: tuple[str, ...] = ()
    existing: ExistingRows = ExistingRows()
    state: TableState | None = None


def schema_row(
    old: TableSchema | None, new: TableSchema, kind: str, existing: ExistingRows | None = None
) -> SchemaRow:
    """The ``op = 's'`` row of ``new`` (replacing ``old``) with the change ``kind`` and what it
    did to the rows the table holds (``existing``)."""
    body: dict[str, object] = {"kind": kind}
    if existing:
        body["existing"] = existing.to_json()
    change = json.dumps(body, separators=(",", ":"))
    return (
        new.db, new.table, _json(new), _json(old), change, new.schema_id()
    )  # fmt: skip


def _json(schema: TableSchema | None) -> str | None:
    return None if schema is None else json.dumps(schema.to_json(), separators=(",", ":"))


class CapturedTables:
    """Relation OIDs to the captured tables' schemas (module docstring). ``patterns`` are
    ``source.tables``: a table the stream names that matches them but is not captured (a
    table renamed to such a name, one added to the publication since the start) stops the
    stream, as does a captured table renamed, rather than its rows being passed over. With a
    ``catalog``, each table's :class:`~.existing.Baseline` (``baselines``) follows it, and its
    columns' types (``types``, each Relation message's). :meth:`state` may be called from
    another thread."""

    def __init__(
        self,
        schemas: Mapping[TableName, TableSchema],
        patterns: Sequence[str] = (),
        exclude: Sequence[str] = (),
        catalog: RelationCatalog | None = None,
        baselines: Mapping[TableName, Baseline | None] | None = None,
        types: Mapping[TableName, PgTypes | None] | None = None,
    ) -> None:
        self.by_name = {name: Captured.of(s) for name, s in schemas.items()}
        self.by_oid: dict[int, Captured | None] = {}  # None: a table not captured
        self.patterns = [re.compile(p) for p in patterns]
        self.exclude = [re.compile(p) for p in exclude]
        self.catalog = catalog
        self.baselines: dict[TableName, Baseline | None] = dict(baselines or {})
        self.types: dict[TableName, PgTypes | None] = dict(types or {})
        self._lock = threading.Lock()  # a table's schema, baseline and types change together

    def _matches(self, name: str) -> bool:
        """Whether ``source.tables`` takes ``name`` and ``source.tables_exclude`` leaves it."""
        return any(p.fullmatch(name) for p in self.patterns) and not any(
            p.fullmatch(name) for p in self.exclude
        )

    def state(self, name: TableName) -> TableState | None:
        """Table ``name``'s schema in force, baseline and types (None: not captured)."""
        with self._lock:
            found = self.by_name.get(name)
            if found is None:
                return None
            return TableState(found.schema, self.baselines.get(name), self.types.get(name))

    def get(self, oid: int) -> Captured | None:
        """The captured table of relation ``oid`` (None: not captured)."""
        if oid not in self.by_oid:
            raise SourceError(
                f"the replication stream sent a change of relation {oid} before describing "
                "it, which pgoutput never does; the stream stops rather than guess the table."
            )
        return self.by_oid[oid]

    def relation(self, message: Relation, resolve: Resolver | None) -> RelationChange | None:
        """Take a Relation message (``resolve``: the types it names); what it changed of a
        captured table (None: not captured)."""
        with self._lock:
            return self._relation(message, resolve)

    def _relation(self, message: Relation, resolve: Resolver | None) -> RelationChange | None:
        key = TableName(message.namespace, message.name)
        name = str(key)
        found = self.by_name.get(key)
        before = self.by_oid.get(message.oid)
        if before is not None and before is not found:
            raise SourceError(
                f"the captured table {before.schema.name} was renamed to {name} in the log; "
                "sparkcdc cannot carry its replica over yet, so start the pipeline afresh "
                "(startup: initial) with source.tables naming the new table."
            )
        if found is None:
            if self._matches(name) and not self._partition(message):
                raise SourceError(
                    f"{name} matches source.tables but was not captured when the stream "
                    "started (created, renamed or published since); restart the pipeline to "
                    "capture it from then on."
                )
            self.by_oid[message.oid] = None
            return None
        old = found.schema
        key = old.table_name
        judgement = self._judge(key, old, message, resolve)
        baseline, types = self.baselines.get(key), self.types.get(key)
        self.baselines[key] = judgement.baseline
        self.types[key] = sent = tuple((c.type_oid, c.typmod) for c in message.columns)
        moved = judgement.baseline != baseline or sent != types
        if judgement.columns == old.columns and not judgement.existing:
            self.by_oid[message.oid] = found
            state = TableState(old, judgement.baseline, sent) if moved else None
            return RelationChange(key, None, judgement.notes, state=state)
        new = _keyed(old, judgement.columns, judgement.existing)
        captured = Captured.of(new)
        self.by_name[key] = self.by_oid[message.oid] = captured
        row = schema_row(old, new, "alter", judgement.existing)
        state = TableState(new, judgement.baseline, sent)
        return RelationChange(key, row, judgement.notes, judgement.existing, state)

    def _partition(self, message: Relation) -> bool:
        """Whether the relation is a partition: pgoutput describes a partition after its
        root, whose name its changes are published under (captured as the root's)."""
        return self.catalog is not None and self.catalog.is_partition(message.oid)

    def _judge(
        self, key: TableName, old: TableSchema, message: Relation, resolve: Resolver | None
    ) -> Judgement:
        built = relation_columns(message, resolve)
        if self.catalog is None:
            return Judgement(by_name(old, built), ExistingRows(), None)
        now = self.catalog.attributes(message.oid)
        return judge(old, self.baselines.get(key), message.columns, built, now)


def _keyed(old: TableSchema, columns: tuple[Column, ...], existing: ExistingRows) -> TableSchema:
    """``old`` with ``columns``, its key columns renamed as they were (``existing.copy``); a
    key column that left the table stops the stream."""
    renamed = {was: now for now, was in existing.copy.items()}
    names = {c.name for c in columns}
    key = tuple(renamed.get(k, k) for k in old.key)
    missing = [k for k, now in zip(old.key, key, strict=True) if now not in names]
    if missing:
        raise SourceError(
            f"the key column(s) {', '.join(missing)} of {old.name} left the table in the "
            "log; a table's key cannot change while it is captured, so start the pipeline "
            "afresh (startup: initial)."
        )
    return replace(
        old,
        columns=columns,
        primary_key=tuple(renamed.get(k, k) for k in old.primary_key),
        key_columns=tuple(renamed.get(k, k) for k in old.key_columns),
    )
