"""The rows a replica held at a schema change, changed as the source changed them without a row
event (:class:`~sparkcdc.core.existing_rows.ExistingRows` in the ``s`` row's change JSON).

Every ``alter`` (or ``unknown``) schema row of a micro-batch is one :class:`Effect`, in log
order: its ``copy``, then its ``fill``, then its ``nulls``, each assignment reading the row as it
was before the schema change (one SQL ``UPDATE``'s semantics); a column new to the schema that
neither fills nor copies is null where the replica had the column already (an earlier column of
that name, dropped at the source, keeps its values in the replica).
The effects of one table reach two places; the second is written here, once for every table
format, the first by each format's sink (Delta: :mod:`sparkcdc.sinks.delta.existing`):

1. the replica's rows as they were before the micro-batch: one ``UPDATE`` of the whole table
   (of the rows holding a NULL when the effects are only ``nulls``: none in strict SQL mode)
   before the batch's MERGE, committed with the transaction id
   ``<pipeline>/existing`` and the batch id, so a replay after a crash skips it and a crash
   between it and the MERGE loses nothing (the MERGE has its own id). The effects compose: a
   fill then a rename of that column is one assignment of the constant to the new name.
2. the micro-batch's own changes made before the schema change (their after images, in the old
   schema): the same assignments on the typed images of the rows whose ``_pos`` comes before
   the schema row (:func:`apply_to_images`), so a row whose latest change precedes the DDL is
   merged as the DDL left it. Images after it carry the source's values already. The change
   log keeps the images as the log gave them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.convert import cast_struct, decode_images
from sparkcdc.core.errors import SinkError
from sparkcdc.core.event import EnvelopeRow
from sparkcdc.core.existing_rows import ExistingRows
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes.lake import Lake

TXN_SUFFIX = "/existing"  # the transaction id of a replica's rows changed by schema changes


@dataclass(frozen=True)
class Const:
    """A value of the replica column's type (one element; null for a null)."""

    value: pa.Array


@dataclass(frozen=True)
class Ref:
    """The value the row held in ``column`` before the schema change."""

    column: str


@dataclass(frozen=True)
class IfNull:
    """``source`` where it is not null, else ``fallback``."""

    source: Const | Ref | IfNull
    fallback: Const


Value = Const | Ref | IfNull


@dataclass(frozen=True)
class Effect:
    """One schema row's assignments (replica column -> value) to the table ``table``, at
    ``at`` in the micro-batch."""

    table: TableName
    at: int
    assign: dict[str, Value] = field(default_factory=dict)


def replica_columns(lake: Lake, name: TableName) -> set[str]:
    """The (lower-case) column names the replica of ``name`` has now (none: no replica)."""
    return {f.name.lower() for f in lake.stored_columns(name) or []}


def effect_of(row: EnvelopeRow, at: int, lake: Lake, had: set[str]) -> Effect | None:
    """The effect of the schema row ``row`` (the ``at``-th of its micro-batch, announced to
    ``lake``) on the table's replica, whose columns were ``had`` before the announcement; None
    for a change that leaves existing values alone."""
    change = _json(row.get("after"))
    text = row.get("schema")
    if change.get("kind") not in ("alter", "unknown") or not text:
        return None
    rows = ExistingRows.of_change(change)
    new = TableSchema.from_json(json.loads(text))
    name = TableName(row["db"], row["table"])
    # the replica's columns; one pipeline.schema_changes left out gets no assignment
    by_name = {f.name.lower(): f for f in lake.columns(name, new)}
    before = _json(row.get("before"))
    old_names = {c["name"].lower() for c in before.get("columns", [])}
    assign: dict[str, Value] = {}
    for c in new.columns:  # new to the schema: null, unless filled or copied below
        f = by_name.get(c.name.lower())
        if before and c.name.lower() not in old_names and c.name.lower() in had and f:
            assign[f.name] = Const(pa.nulls(1, f.type))
    for new_name, old_name in rows.copy.items():
        to, of = by_name.get(new_name.lower()), by_name.get(old_name.lower())
        if to is not None:
            assign[to.name] = Ref(of.name) if of is not None else Const(pa.nulls(1, to.type))
    given = {n: v for n, v in {**rows.fill, **rows.nulls}.items() if n.lower() in by_name}
    typed = _typed_values(given, new, {n: by_name[n.lower()] for n in given})
    for column in (c for c in rows.fill if c in given):
        assign[by_name[column.lower()].name] = typed[column]
    for column in (c for c in rows.nulls if c in given):
        f = by_name[column.lower()]
        assign[f.name] = IfNull(assign.get(f.name, Ref(f.name)), typed[column])
    return Effect(name, at, assign) if assign else None


def _typed_values(
    values: dict[str, Any], schema: TableSchema, fields: dict[str, pa.Field]
) -> dict[str, Const]:
    """Each JSON value of a column of ``schema`` as one value of its replica field's type."""
    if not values:
        return {}
    columns = tuple(schema.column(n) for n in values)
    try:
        named = {c.name: values[n] for c, n in zip(columns, values, strict=True)}
        image = pa.array([json.dumps(named)])
        decoded = decode_images(image, replace(schema, columns=columns))
        renamed = pa.StructArray.from_arrays(
            [decoded.field(i) for i in range(len(columns))], names=[fields[n].name for n in values]
        )
        typed = cast_struct(renamed, list(fields.values()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError, ValueError) as exc:
        raise SinkError(
            f"the values the schema change of {schema.name} gave existing rows ({values}) do not "
            f"fit its replica's columns ({exc})",
            table=schema.name,
        ) from exc
    return {n: Const(typed.field(i)) for i, n in enumerate(values)}


def compose(effects: Sequence[Effect]) -> dict[str, Value]:
    """The effects one after the other, as one assignment per column of the rows before them."""
    total: dict[str, Value] = {}

    def now(value: Value) -> Value:  # ``value`` in terms of the rows before every effect
        if isinstance(value, Ref):
            return total.get(value.column, value)
        if isinstance(value, IfNull):
            return IfNull(now(value.source), value.fallback)
        return value

    for effect in effects:
        total = {**total, **{name: now(v) for name, v in effect.assign.items()}}
    return {name: v for name, v in total.items() if v != Ref(name)}


def _json(text: Any) -> dict[str, Any]:
    try:
        found = json.loads(text or "null")
    except (TypeError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def apply_to_images(
    effects: Sequence[Effect], positions: pa.Array, after: pa.StructArray
) -> pa.StructArray:
    """``after`` (typed images of one table's changes at ``positions``) with each effect applied
    to the images before it (module docstring, step 2)."""
    fields = list(after.type)
    columns = {f.name: after.field(i) for i, f in enumerate(fields)}
    for effect in effects:
        before = pc.less(positions, effect.at)
        if not pc.any(before).as_py():
            continue
        changed = dict(columns)
        for name, value in effect.assign.items():
            computed = _array(value, columns, len(after), after.type.field(name).type)
            changed[name] = pc.if_else(before, computed, columns[name])
        columns = changed
    arrays = [columns[f.name] for f in fields]
    return pa.StructArray.from_arrays(arrays, fields=fields, mask=after.is_null())


def _array(value: Value, columns: dict[str, pa.Array], n: int, kind: pa.DataType) -> pa.Array:
    if isinstance(value, Const):
        return pa.repeat(value.value[0], n).cast(kind)
    if isinstance(value, Ref):
        return columns[value.column].cast(kind)
    source = _array(value.source, columns, n, kind)
    return pc.coalesce(source, pa.repeat(value.fallback.value[0], n).cast(kind))
