"""A Delta replica's rows as a schema change left them at the source (the effects and the
batch's own rows: :mod:`sparkcdc.sinks.changes.effects`).

Here the first of the two places an effect reaches: the replica's rows as they were before the
micro-batch, by one ``UPDATE`` of the whole table (of the rows holding a NULL when the effects
are only ``nulls``: none in strict SQL mode) (:func:`apply_to_replica`) before the batch's
MERGE, committed with the transaction id ``<pipeline>/existing`` and the batch id, so a replay
after a crash skips it and a crash between it and the MERGE loses nothing (the MERGE has its own
id).

A null assignment of a column every data file's statistics show all null is left out (it would
rewrite the table for nothing).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction

from sparkcdc.core.errors import SinkError
from sparkcdc.sinks.changes.effects import TXN_SUFFIX, Const, Effect, IfNull, Ref, Value, compose
from sparkcdc.sinks.delta import commits


# ------------------------------------------------------------------ the replica's rows
def apply_to_replica(
    path: str, effects: Sequence[Effect], fields: list[pa.Field], app_id: str, batch_id: int
) -> bool:
    """Change the replica's rows by ``effects`` in one commit (module docstring, step 1);
    False if there was nothing to change or this batch did it before."""
    txn = app_id + TXN_SUFFIX
    table = commits.open_table(path)
    if table is None or commits.already_applied(path, txn, batch_id):
        return False
    assign = _needed(table, compose(effects))
    if not assign:
        return False
    types = {f.name: f.type for f in fields}
    updates = {_quote(name): _sql(v, types, types[name]) for name, v in assign.items()}
    only_nulls = all(isinstance(v, IfNull) and v.source == Ref(n) for n, v in assign.items())
    # NULLs made NOT NULL: only the files holding such a NULL are rewritten (none in strict mode)
    predicate = " OR ".join(f"{_quote(n)} IS NULL" for n in assign) if only_nulls else None
    table.update(
        updates=updates, predicate=predicate, commit_properties=CommitProperties(
            app_transactions=[Transaction(txn, batch_id)])
    )  # fmt: skip
    return True


def _needed(table: DeltaTable, assign: dict[str, Value]) -> dict[str, Value]:
    """``assign`` without null constants of columns every data file holds only nulls in."""
    files = pa.table(table.get_add_actions(flatten=True))
    if files.num_rows == 0:
        return {}
    names = set(files.column_names)
    out = {}
    for name, value in assign.items():
        column = f"null_count.{name}"
        if isinstance(value, Const) and value.value.null_count and column in names:
            nulls, count = files.column(column), files.column("num_records")
            if nulls.null_count == 0 and pc.all(pc.equal(nulls, count)).as_py():
                continue
        out[name] = value
    return out


def _sql(value: Value, types: dict[str, pa.DataType], target: pa.DataType) -> str:
    """``value`` as an SQL expression of the type ``target`` (of the column it is given to)."""
    if isinstance(value, IfNull):
        source = _sql(value.source, types, target)
        return f"coalesce({source}, {_literal(value.fallback.value)})"
    if isinstance(value, Const):
        return _literal(value.value)
    if types[value.column] == target:
        return _quote(value.column)
    return f"arrow_cast({_quote(value.column)}, '{_type_name(target)}')"


def _literal(value: pa.Array) -> str:
    """One typed value as an SQL expression of exactly its Arrow type (DataFusion's)."""
    kind, scalar = value.type, value[0]
    name = _type_name(kind)
    if not scalar.is_valid:
        return f"arrow_cast(NULL, '{name}')"
    if pa.types.is_boolean(kind):
        return "true" if scalar.as_py() else "false"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "'" + str(scalar.as_py()).replace("'", "''") + "'"
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return f"decode('{base64.b64encode(scalar.as_py()).decode('ascii')}', 'base64')"
    if pa.types.is_date32(kind):
        return f"arrow_cast(arrow_cast({value.cast(pa.int32())[0].as_py()}, 'Int32'), '{name}')"
    if pa.types.is_timestamp(kind):
        return f"arrow_cast(arrow_cast({value.cast(pa.int64())[0].as_py()}, 'Int64'), '{name}')"
    if pa.types.is_floating(kind):
        return f"arrow_cast('{float(scalar.as_py())!r}', '{name}')"
    if pa.types.is_integer(kind):
        return f"arrow_cast('{scalar.as_py()}', '{name}')"
    if pa.types.is_decimal(kind):
        return f"arrow_cast('{scalar.as_py():f}', '{name}')"  # digits, never 0E-8
    raise SinkError(f"a value of type {kind} cannot be given to existing rows (an array default)")


def _type_name(kind: pa.DataType) -> str:
    """The DataFusion name (``arrow_cast``'s) of a scalar Arrow type."""
    simple = {pa.int8(): "Int8", pa.int16(): "Int16", pa.int32(): "Int32", pa.int64(): "Int64",
              pa.float32(): "Float32", pa.float64(): "Float64", pa.bool_(): "Boolean",
              pa.string(): "Utf8", pa.binary(): "Binary", pa.date32(): "Date32"}  # fmt: skip
    if kind in simple:
        return simple[kind]
    if pa.types.is_decimal(kind):
        return f"Decimal128({kind.precision}, {kind.scale})"
    if pa.types.is_timestamp(kind):
        zone = f'Some("{kind.tz}")' if kind.tz else "None"
        return f"Timestamp(Microsecond, {zone})"
    raise SinkError(f"a value of type {kind} cannot be given to existing rows (an array default)")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
