"""The replica's side of a verify: its rows in the source's column types, cut into the
source's chunks.

The replica is read whole at its latest version, its columns in the Arrow types of the source's
columns, or, for a column retyped at the source (the replica keeps the type it was created
with), in a type that holds both sides' values exactly, to which the source's chunks are cast
too: a ``decimal(10,3)`` replica column and a ``decimal(10,1)`` source column are compared as
``decimal(10,3)``, ``int32`` and ``int64`` as ``int64``. A column the replica lacks, or holds in
a type whose values cannot be compared with the source's, is a
:class:`~sparkcdc.core.errors.SinkError` naming it. Each row is given the index of the chunk its
key falls in: by bisecting the chunk bounds in NumPy for a single integer key, else through
:class:`~sparkcdc.snapshot.keyorder.KeyOrder`, which asks the database for strings, binary and
temporal keys, so collations place replica rows exactly where the source's chunk reads put
them.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Sequence
from decimal import Decimal

import numpy as np
import pyarrow as pa

from sparkcdc.core.chunk import KeyColumn, KeyValue
from sparkcdc.core.convert import arrow_schema, decimal_shape
from sparkcdc.core.errors import SinkError
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.snapshot.keyorder import KeyOrder


def read_replica(table: pa.Table | None, schema: TableSchema, path: str) -> pa.Table:
    """The replica's rows ``table`` (None: it was never written; at ``path``) in ``schema``'s
    columns, each in the type its values are compared in (:func:`compare_type`): the source's
    where the replica holds that type, else one that holds both sides' values exactly."""
    target = arrow_schema(schema)
    if table is None:
        return target.empty_table()
    by_lower = {n.lower(): n for n in table.column_names}
    columns, fields = [], []
    for f in target:
        found = by_lower.get(f.name.lower())
        if found is None:
            raise SinkError(
                f"the replica of {schema.name} at {path} has no column {f.name}, which the "
                "source has; the pipeline adds columns as it reads their DDL, so let it run "
                "past the change (or snapshot the table again)."
            )
        held = table.column(found)
        kind = compare_type(f.type, held.type) or f.type
        try:
            columns.append(held.cast(kind))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SinkError(
                f"the replica column {schema.name}.{f.name} is {held.type} and the source's is "
                f"now {f.type}; the replica keeps the type the column was created with, and "
                f"its values cannot be compared with the source's ({exc}). Snapshot the table "
                "into a new replica to change the column's type."
            ) from exc
        fields.append(pa.field(f.name, kind))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def in_types(chunk: pa.Table, target: pa.Schema) -> pa.Table:
    """A typed chunk of the source in the types of ``target`` (the replica's compare types:
    a source type widened so it holds the replica's values too)."""
    if chunk.schema.equals(target):
        return chunk
    return pa.Table.from_arrays([chunk.column(f.name).cast(f.type) for f in target], schema=target)


def compare_type(source: pa.DataType, replica: pa.DataType) -> pa.DataType | None:
    """A type that holds every value of both ``source`` and ``replica`` exactly (a column
    retyped at the source keeps its Delta type): the wider integer, a decimal with the more
    integer digits and the larger scale, float64; None when there is none such."""
    if source == replica:
        return source
    if pa.types.is_signed_integer(source) and pa.types.is_signed_integer(replica):
        return max(source, replica, key=lambda t: t.bit_width)
    ours, theirs = decimal_shape(source), decimal_shape(replica)
    if ours is not None and theirs is not None:
        digits, scale = max(ours[0], theirs[0]), max(ours[1], theirs[1])
        return pa.decimal128(digits + scale, scale) if digits + scale <= 38 else None
    floats = (pa.float32(), pa.float64())
    if source in floats and replica in floats:
        return pa.float64()
    for kinds, plain in ((_STRINGS, pa.string()), (_BINARIES, pa.binary())):
        if any(k(source) for k in kinds) and any(k(replica) for k in kinds):
            return plain
    return None


_STRINGS = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
_BINARIES = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view)


def chunk_indexes(
    replica: pa.Table,
    keys: Sequence[KeyColumn],
    bounds: Sequence[KeyValue],
    dialect: SnapshotDialect,
) -> np.ndarray:
    """For each replica row, the index of the chunk its chunk key falls in (``bounds``: the
    ascending upper bounds of every chunk but the last)."""
    if replica.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    if len(keys) == 1 and keys[0].integer and all(-(2**63) <= b[0] < 2**63 for b in bounds):
        values = replica.column(keys[0].name).to_numpy()
        edges = np.array([b[0] for b in bounds], dtype=np.int64)
        placed: np.ndarray = np.searchsorted(edges, values, side="right").astype(np.int64)
        return placed
    values = key_values(replica, keys)
    return np.array(KeyOrder(keys, dialect).locate(values, bounds), dtype=np.int64)


def key_values(table: pa.Table, keys: Sequence[KeyColumn]) -> list[KeyValue]:
    """The chunk keys of ``table``'s rows in the row-image encoding that chunk bounds use."""
    columns = [[_encoded(v) for v in table.column(k.name).to_pylist()] for k in keys]
    return list(zip(*columns, strict=True))


def _encoded(value: object) -> object:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return value


def group_rows(replica: pa.Table, indexes: np.ndarray, count: int) -> list[pa.Table]:
    """``replica``'s rows split into ``count`` tables by chunk index."""
    order = np.argsort(indexes, kind="stable")
    ordered = replica.take(pa.array(order)) if replica.num_rows else replica
    edges = np.searchsorted(indexes[order], np.arange(count + 1), side="left")
    return [ordered.slice(int(a), int(b - a)) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def without_key_text(chunk: pa.Table) -> pa.Table:
    """A typed chunk of the source without its leading ``key`` JSON column."""
    return chunk.drop_columns(["key"]) if "key" in chunk.column_names else chunk
