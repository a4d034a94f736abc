"""The sink's tables: where each captured table lives in the lake, its schemas and its rows.

A captured table ``db.t`` has two tables in the lake, the replica and the change log, kept in a
table format (:class:`TableFormat`: Delta's ``<db>/<t>`` and ``<db>/<t>__changelog``,
Iceberg's ``<db>.<t>`` and ``<db>.<t>__changelog``); every schema announced for it is kept as
``_sparkcdc/schemas/<db>.<t>.<schema_id>.json`` under the sink path, so a change names the
schema it was decoded with and a restarted sink still finds it. :class:`Lake` creates and
evolves the tables as schema rows arrive (which DDL does what: the format's sink) and turns a
table's row images (JSON text, one schema version per row) into typed structs of the table's
current columns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.convert import arrow_schema, cast_struct, decode_images
from sparkcdc.core.errors import SinkError
from sparkcdc.core.event import (
    OP_CREATE,
    OP_DELETE,
    OP_READ,
    OP_UPDATE,
    TRANSACTION_TYPE,
    EnvelopeRow,
)
from sparkcdc.core.existing_rows import ExistingRows
from sparkcdc.core.images import TypedImages, fill_untyped, images_of
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.schema_policy import TABLE_KINDS, SchemaChange, SchemaPolicy, column_changes
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes.reshaping import Reshaper
from sparkcdc.sinks.storage import LakeStorage, as_storage


def changelog_schema(columns: Sequence[pa.Field], source: pa.DataType) -> pa.Schema:
    """op, before, after (structs of the table's columns), source (the source type's
    ``source`` struct), transaction."""
    row = pa.struct(list(columns))
    return pa.schema(
        [
            ("op", pa.string()),
            ("before", row),
            ("after", row),
            ("source", source),
            ("transaction", TRANSACTION_TYPE),
        ]
    )


class TableFormat(Protocol):
    """What :class:`Lake` asks of a table format: where a table's two tables are, their
    columns, and their creation or evolution to a schema's columns."""

    label: str  # the format's name in messages ("Delta")

    def replica(self, name: TableName) -> str:
        """The replica's location (a path, or a catalog's table identifier)."""

    def changelog(self, name: TableName) -> str:
        """The change log's location."""

    def evolve(
        self, name: TableName, columns: list[pa.Field], source: pa.DataType
    ) -> list[pa.Field]:
        """Create the replica and change log of ``name`` or add the ``columns`` they lack (the
        change log's ``source`` struct is ``source``); the replica's columns afterwards."""

    def stored_columns(self, name: TableName) -> list[pa.Field] | None:
        """The replica's columns as stored now; None if it has no replica yet."""

    def retype(self, name: TableName, fields: list[pa.Field]) -> list[pa.Field]:
        """Give the replica's columns named in ``fields`` those types, and the change log's
        ``before``/``after`` fields of those names the same, every value kept (ValueError
        naming a value the new type cannot hold); the replica's columns afterwards."""

    def drop_columns(self, name: TableName, names: list[str]) -> list[pa.Field]:
        """Remove the columns ``names`` from the replica (the change log keeps them); the
        replica's columns afterwards."""


class Lake:
    """The captured tables under one sink path (see the module docstring), kept in ``tables``."""

    def __init__(
        self, lake: str | LakeStorage, tables: TableFormat, policy: SchemaPolicy | None = None
    ) -> None:
        self.storage = as_storage(lake)
        self.path = self.storage.uri
        self.tables = tables
        self.policy = policy or SchemaPolicy()  # pipeline.schema_changes
        self.reshaper = Reshaper(tables, self.policy)
        self.source: pa.DataType = pa.struct([])  # the stream's ``source`` struct (per batch)
        self._schemas: dict[str, TableSchema] = {}  # schema_id -> schema
        self._columns: dict[TableName, list[pa.Field]] = {}

    def replica(self, name: TableName) -> str:
        return self.tables.replica(name)

    def changelog(self, name: TableName) -> str:
        return self.tables.changelog(name)

    def stored_columns(self, name: TableName) -> list[pa.Field] | None:
        return self.tables.stored_columns(name)

    def _schema_file(self, db: str, table: str, schema_id: str) -> str:
        return self.storage.join("_sparkcdc", "schemas", f"{TableName(db, table)}.{schema_id}.json")

    def announce(self, row: EnvelopeRow, index: int, resets: dict[TableName, int]) -> None:
        """A schema row (the ``index``-th of the batch): keep its schema, create or evolve the
        table's Delta tables; a TRUNCATE or DROP is noted in ``resets``."""
        name = TableName(row["db"], row["table"])
        change = _change(row)
        table_kind = TABLE_KINDS.get(str(change.get("kind")))
        if table_kind is not None:
            changed = [SchemaChange(table_kind, what=row.get("ddl") or "")]
            self.reshaper.refuse(str(name), changed, row.get("ddl") or "")
        if _empties_table(row) and self.policy.of(table_kind or "drop_table") != "ignore":
            resets[name] = index
        text = row.get("schema")
        if not text:
            return
        schema = TableSchema.from_json(json.loads(text))
        schema_id = row.get("schema_id") or schema.schema_id()
        self._schemas[schema_id] = schema
        self._save_schema(schema, schema_id)
        changes: list[SchemaChange] = []
        old = row.get("before")
        if change.get("kind") in ("alter", "unknown") and old:
            before = TableSchema.from_json(json.loads(old))
            changes = column_changes(before, schema, ExistingRows.of_change(change))
            self.reshaper.refuse(str(name), changes, row.get("ddl") or "")
        self._reshape(schema.table_name, schema, changes)

    def _reshape(self, name: TableName, schema: TableSchema, changes: list[SchemaChange]) -> None:
        """The replica's columns made what ``pipeline.schema_changes`` says for ``changes``
        (:mod:`.reshaping`): retyped and added now, dropped at the batch's end."""
        stored = self.tables.stored_columns(name)
        if stored is None:
            self._evolve(name, schema)
            return
        self._evolve_to(name, self.reshaper.columns(name, stored, schema, changes))

    def drop_pending(self) -> None:
        """Drop the columns the micro-batch's schema changes took from the replicas (after the
        effects read them and the changes are written)."""
        self._columns.update(self.reshaper.drop_pending())

    def read_with(self, row: EnvelopeRow) -> None:
        """A chunk of an incremental snapshot (a ``k`` row) read with the catalog's schema it
        names: kept and the Delta tables evolved to it when the stream never announced it (the
        catalog describes a column as the DDL tracker did not)."""
        try:
            ref = json.loads(row.get("after") or "null")
        except ValueError:
            return
        schema_id = row.get("schema_id") or ""
        if not isinstance(ref, dict) or not ref.get("schema") or schema_id in self._schemas:
            return
        name = TableName(row["db"], row["table"])
        if self.storage.exists(self._schema_file(name[0], name[1], schema_id)):
            return
        schema = TableSchema.from_json(ref["schema"])
        self._schemas[schema_id] = schema
        self._save_schema(schema, schema_id)
        self._reshape(name, schema, [])

    def _save_schema(self, schema: TableSchema, schema_id: str) -> None:
        target = self._schema_file(schema.db, schema.table, schema_id)
        if not self.storage.exists(target):
            self.storage.write_text(target, json.dumps(schema.to_json(), indent=1, sort_keys=True))

    def schema(self, name: TableName, schema_id: str) -> TableSchema:
        """The schema ``schema_id`` of ``name`` (from the ones announced, else from its file)."""
        found = self._schemas.get(schema_id)
        if found is None:
            path = self._schema_file(name[0], name[1], schema_id)
            try:
                text = self.storage.read_text(path)
                if text is None:
                    raise ValueError(f"{path} is missing")
                found = TableSchema.from_json(json.loads(text))
            except (OSError, ValueError) as exc:
                raise SinkError(
                    f"changes to {name} name schema {schema_id}, which was never "
                    f"announced in {self.storage.join('_sparkcdc', 'schemas')}; restart the "
                    "pipeline with a fresh checkpoint.",
                    table=str(name),
                ) from exc
            self._schemas[schema_id] = found
        return found

    def key_of(self, name: TableName) -> tuple[str, ...]:
        """The key of ``name`` in a schema announced for it (here, else in its files); () if
        none is known."""
        found = [s for s in self._schemas.values() if s.table_name == name]
        if not found:
            folder = self.storage.join("_sparkcdc", "schemas")
            prefix = f"{name}."
            ids = [n[len(prefix) : -len(".json")] for n in self.storage.names(folder)
                   if n.startswith(prefix) and n.endswith(".json")]  # fmt: skip
            found = [self.schema(name, i) for i in ids[-1:]]
        return found[-1].key if found else ()

    def _evolve(self, name: TableName, schema: TableSchema) -> list[pa.Field]:
        return self._evolve_to(name, list(arrow_schema(schema)))

    def _evolve_to(self, name: TableName, wanted: list[pa.Field]) -> list[pa.Field]:
        try:
            columns = self.tables.evolve(name, wanted, self.source)
        except Exception as exc:
            raise SinkError(
                f"could not create or evolve the {self.tables.label} tables of {name}: {exc}",
                table=str(name),
            ) from exc
        self._columns[name] = columns
        return columns

    def columns(self, name: TableName, schema: TableSchema) -> list[pa.Field]:
        """The replica's columns (created from ``schema`` if it has no tables yet)."""
        if name not in self._columns:
            stored = self.tables.stored_columns(name)
            if stored is None:
                return self._evolve(name, schema)
            self._columns[name] = stored
        return self._columns[name]

    def images(
        self,
        name: TableName,
        rows: pa.Table,
        schema_ids: list[str],
        columns: list[pa.Field],
        typed: Sequence[TypedImages] = (),
    ) -> tuple[pa.StructArray, pa.StructArray]:
        """The before and after images of ``rows`` (one table's, in log order) as typed structs
        of ``columns``: from ``typed`` where they hold a row's images (found by its position),
        else decoded from its JSON images with the schema it names."""
        mine = [t for t in typed if (t.db, t.table) == name]
        if not mine:
            return self._json_images(name, rows, schema_ids, columns)
        positions = rows.column("source").combine_chunks().field("position")
        try:
            index, before, after = images_of(positions, mine, columns)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise _misfit(name, exc, self.tables.label) from exc
        missing = pc.is_null(index)
        if not pc.any(missing).as_py():
            return before.take(index), after.take(index)
        rest = rows.filter(missing)
        decoded = self._json_images(name, rest, rest.column("schema_id").to_pylist(), columns)
        return fill_untyped(index, (before, after), decoded)

    def _json_images(
        self, name: TableName, rows: pa.Table, schema_ids: list[str], columns: list[pa.Field]
    ) -> tuple[pa.StructArray, pa.StructArray]:
        _check_images(name, rows)
        images = []
        for side in ("before", "after"):
            values = rows.column(side).combine_chunks()
            parts, order = [], []
            for schema_id in dict.fromkeys(schema_ids):
                mask = pc.equal(rows.column("schema_id"), schema_id)
                decoded = decode_images(
                    values.filter(mask.combine_chunks()), self.schema(name, schema_id)
                )
                try:
                    parts.append(cast_struct(decoded, columns))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise _misfit(name, exc, self.tables.label) from exc
                order.append(pc.indices_nonzero(mask))
            if len(parts) == 1:
                images.append(parts[0])
                continue
            merged = pa.concat_arrays(parts)
            where = pa.concat_arrays([o.cast(pa.int64()) for o in order])
            images.append(merged.take(pc.sort_indices(where)))
        return images[0], images[1]


_NEEDS_AFTER = pa.array([OP_CREATE, OP_UPDATE, OP_READ])
_NEEDS_BEFORE = pa.array([OP_DELETE])


def _check_images(name: TableName, rows: pa.Table) -> None:
    """Every change has the images its op needs, as JSON text here (typed images are found
    before): one missing would be written as a row of nulls. An update may lack its before
    image: PostgreSQL logs none unless the key changed or the table's replica identity is
    FULL."""
    op = rows.column("op")
    lacking = pc.or_(
        pc.and_(pc.is_in(op, _NEEDS_AFTER), pc.is_null(rows.column("after"))),
        pc.and_(pc.is_in(op, _NEEDS_BEFORE), pc.is_null(rows.column("before"))),
    )
    count = pc.sum(pc.cast(lacking, pa.int64())).as_py() or 0
    if count:
        raise SinkError(
            f"{count} changes to {name} in this micro-batch have neither JSON nor "
            "typed row images (the batch's image files are incomplete); the micro-batch stops "
            "before writing them: restart the pipeline and it is read again from the log",
            table=str(name),
        )


def _misfit(name: TableName, exc: Exception, label: str) -> SinkError:
    return SinkError(
        f"a change to {name} does not fit the {label} replica's column types ({exc}); "
        "pipeline.schema_changes decides them: alter_column_type: lenient or evolve widens a "
        "column with the source's type.",
        table=str(name),
    )


def _change(row: EnvelopeRow) -> dict[str, object]:
    """The schema row's change JSON (``after``), {} if none."""
    try:
        change = json.loads(row.get("after") or "null")
    except ValueError:
        return {}
    return change if isinstance(change, dict) else {}


def _empties_table(row: EnvelopeRow) -> bool:
    """TRUNCATE TABLE, DROP TABLE or DROP DATABASE (by the change's kind, else the statement)."""
    ddl = row.get("ddl") or ""
    if _RENAME.match(ddl):
        return False  # the old name's tables stay as they were
    change = _change(row)
    if "kind" in change:
        return change["kind"] in ("truncate", "drop")
    return bool(_EMPTYING.match(ddl))


_EMPTYING = re.compile(r"\s*(TRUNCATE|DROP\s+(TABLE|DATABASE|SCHEMA))\b", re.IGNORECASE)
_RENAME = re.compile(r"\s*(RENAME\s+TABLE|ALTER\s+TABLE\s+.*\bRENAME\b)", re.IGNORECASE | re.DOTALL)
