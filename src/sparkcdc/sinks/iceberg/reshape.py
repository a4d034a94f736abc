"""Columns of an Iceberg table retyped or dropped, every value kept.

A source's ``ALTER TABLE … MODIFY`` may widen a column (``int`` to ``bigint``) before values the
old type cannot hold arrive; a schema-change policy may drop a column the source dropped.
:func:`retyped` stages the change of a table's columns (or of a change log's ``before`` and
``after`` struct fields) to given types:

- Iceberg's type promotions (int to long, float to double, a decimal's precision up, its scale
  kept) are schema evolution: one metadata commit, no data file written (readers promote the
  stored values). pyiceberg's own check lets a decimal's scale change through: a scale change
  never takes this way.
- any other change (date to timestamp, int to decimal or string, a decimal's scale, a narrowing)
  rewrites the table in one transaction: the column deleted and added again under its name at
  its position (a new field id: no older file is read as the new type), and every row cast and
  written again by an overwrite (its snapshots marked ``sparkcdc.reshape``). A value that does
  not come back the same when cast back to its old type does not fit: ValueError, nothing
  committed. The rows stream to the overwrite as record batches, one data file read at a time:
  memory holds about a data file's rows, never the table's. pyiceberg resolves the names of a
  move in the schema the update started from, i.e. to the field it deletes, so a second schema
  update in the same transaction moves the new field into place.

Neither way touches the table's properties, which carry the batch marks
(:func:`~sparkcdc.sinks.iceberg.tables.committed`). A table that has the types already, or lacks
the columns to drop, gets no commit at all.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.catalog import Catalog
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow
from pyiceberg.schema import Schema
from pyiceberg.table import Table, Transaction
from pyiceberg.table.update.schema import UpdateSchema
from pyiceberg.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StructType,
)

RESHAPE_KEY = "sparkcdc.reshape"  # in the summary of a rewrite's snapshots

Path = tuple[str, ...]  # a top-level column (one name) or a struct column's field (two)
TOP: tuple[Path, ...] = ((),)
ROW_IMAGES: tuple[Path, ...] = (("before",), ("after",))  # a change log's row structs


@dataclass(frozen=True)
class Retype:
    """One field of a table and the type it is to have."""

    path: Path
    old: IcebergType
    new: IcebergType
    position: int  # in its struct
    required: bool

    @property
    def promoted(self) -> bool:
        """Whether Iceberg reads the old type's values as the new type (no rewrite)."""
        old, new = self.old, self.new
        if isinstance(old, DecimalType) and isinstance(new, DecimalType):
            return new.scale == old.scale and new.precision > old.precision
        return (isinstance(old, IntegerType) and isinstance(new, LongType)) or (
            isinstance(old, FloatType) and isinstance(new, DoubleType)
        )


def retyped(
    table: Table, fields: Sequence[pa.Field], parents: Sequence[Path] = TOP
) -> Transaction | None:
    """The transaction (not committed) giving the fields of ``parents`` (the table itself: ``()``)
    named in ``fields`` those fields' types (module docstring); None if they have them already or
    the table lacks them. ValueError: a value does not fit its new type."""
    retypes = _retypes(table, fields, parents)
    if not retypes:
        return None
    tx = table.transaction()
    if all(r.promoted for r in retypes):
        with tx.update_schema() as update:
            for r in retypes:
                update.update_column(r.path, field_type=r.new)
        return tx
    replaced = [r for r in retypes if not r.promoted]
    # every data file is written again in this transaction: a required column added has values
    with tx.update_schema(allow_incompatible_changes=True) as update:
        for r in retypes:
            if r.promoted:
                update.update_column(r.path, field_type=r.new)
            else:
                update.delete_column(r.path).add_column(r.path, r.new, required=r.required)
    with tx.update_schema() as update:  # the names now name the added fields
        for r in replaced:
            _place(update, table, r)
    if table.current_snapshot() is not None:
        target = tx.table_metadata.schema().as_arrow()
        batches = _cast_rows(table, target, replaced)
        with warnings.catch_warnings():  # a table without rows has no file to delete
            warnings.filterwarnings("ignore", "Delete operation did not match")
            tx.overwrite(
                pa.RecordBatchReader.from_batches(target, batches),
                snapshot_properties={RESHAPE_KEY: "retype"},
            )
    return tx


def dropped(table: Table, names: Sequence[str]) -> bool:
    """Delete the columns ``names`` of ``table`` that it has (any case), one metadata commit;
    False if it has none of them."""
    have = {f.name.lower(): f.name for f in table.schema().fields}
    gone = sorted({have[n.lower()] for n in names if n.lower() in have})
    if not gone:
        return False
    with table.update_schema() as update:
        for name in gone:
            update.delete_column(name)
    return True


def _retypes(table: Table, fields: Sequence[pa.Field], parents: Sequence[Path]) -> list[Retype]:
    """The fields of ``parents`` named in ``fields`` (any case) whose type is another, in the
    table's order."""
    wanted = _iceberg_types(table, fields)
    found = []
    for parent in parents:
        for position, f in enumerate(_struct(table.schema(), parent).fields):
            new = wanted.get(f.name.lower())
            if new is not None and new != f.field_type:
                found.append(Retype((*parent, f.name), f.field_type, new, position, f.required))
    return found


def _iceberg_types(table: Table, fields: Sequence[pa.Field]) -> dict[str, IcebergType]:
    """The Iceberg type of each field (by its lower-case name), as the catalog makes a table's."""
    schema = Catalog._convert_schema_if_needed(pa.schema(list(fields)), table.format_version)
    for f in schema.fields:
        if not f.field_type.is_primitive:
            raise ValueError(
                f"column {f.name}: a retype gives a primitive type, not {f.field_type}"
            )
    return {f.name.lower(): f.field_type for f in schema.fields}


def _place(update: UpdateSchema, table: Table, r: Retype) -> None:
    """Move the added field of ``r`` to the position of the field it replaces."""
    if r.position == 0:
        update.move_first(r.path)
        return
    parent = r.path[:-1]
    before = _struct(table.schema(), parent).fields[r.position - 1]
    update.move_after(r.path, (*parent, before.name))


def _struct(schema: Schema, parent: Path) -> StructType:
    """The table's columns (``parent`` empty) or the fields of its struct column ``parent``."""
    found = schema.find_type(".".join(parent)) if parent else schema.as_struct()
    if not isinstance(found, StructType):
        raise ValueError(f"column {'.'.join(parent)} is not a struct")
    return found


def _cast_rows(table: Table, target: pa.Schema, replaced: list[Retype]) -> Iterator[pa.RecordBatch]:
    """The table's rows, batch by batch, cast to ``target`` (ValueError: a value of a replaced
    field does not fit its new type). One data file is read at a time: pyiceberg's own batch
    reader reads all of them at once in its threads, keeping what the writer has not taken."""
    read = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue())
    for task in table.scan().plan_files():
        for batch in read.to_record_batches([task]):
            for r in replaced:
                _check_fits(_values(batch, r.path), r, table)
            yield batch.cast(target)


def _check_fits(values: pa.Array, r: Retype, table: Table) -> None:
    """Raise ValueError unless every value comes back the same cast to the new type and back."""
    try:
        back = values.cast(schema_to_pyarrow(r.new)).cast(values.type)
    except pa.ArrowInvalid as error:
        raise _no_fit(r, table) from error
    changed = pc.not_equal(back, values)
    if pa.types.is_floating(values.type):
        changed = pc.and_(changed, pc.invert(pc.is_nan(values)))
    if pc.any(changed).as_py():
        raise _no_fit(r, table)


def _no_fit(r: Retype, table: Table) -> ValueError:
    column, where = ".".join(r.path), ".".join(table.name())
    return ValueError(
        f"column {column} of {where} holds a value that does not fit the new type {r.new}"
    )


def _values(batch: pa.RecordBatch, path: Path) -> pa.Array:
    values = batch.column(path[0])
    for name in path[1:]:
        values = pc.struct_field(values, name)
    return values
