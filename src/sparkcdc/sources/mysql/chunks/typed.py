"""Typed chunks: a chunk read as one Arrow column per table column, in its Delta type.

The connectorx result of :meth:`~.dialect.MySQLChunks.read_chunk` with ``typed`` (one column
per table column, the key text first unless it is made here from integer key columns) becomes
:func:`typed_chunk_schema`: each column fixed up to the type the sink writes
(:func:`~sparkcdc.core.convert.fix_column`), so equal to what
:func:`~sparkcdc.core.convert.decode_images` makes of the row images' text. DATE and DATETIME
are read as they are while a table shows no zero date (:func:`dated`, :func:`year_zero`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.convert import fix_column
from sparkcdc.core.errors import SourceError
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.snapshot.correct import typed_chunk_schema
from sparkcdc.sources.mysql.chunks.sql import DATE_TYPES
from sparkcdc.sources.mysql.schema.column_types import INTEGER_TYPES


def integer_key(columns: Sequence[Column]) -> bool:
    """Whether the key JSON text of a typed chunk is made here from the key columns read: for
    integers it is ``[1,2]``, the columns' decimal digits (``null`` for NULL), exactly as the
    log reader writes it; other keys are written by the server (:func:`.sql.array_json`)."""
    return all(c.data_type in INTEGER_TYPES for c in columns)


def dated(schema: TableSchema) -> bool:
    return any(c.data_type.lower() in DATE_TYPES for c in schema.columns)


def year_zero(table: pa.Table, schema: TableSchema) -> bool:
    """Whether a DATE or DATETIME column of a typed chunk read unguarded holds a date of year
    0, which the guard makes NULL like the row images (connectorx reads it as it is)."""
    for c in schema.columns:
        if c.data_type.lower() in DATE_TYPES:
            years = pc.year(table.column(c.name))
            if pc.any(pc.equal(years, 0)).as_py():
                return True
    return False


def typed_table(table: pa.Table, schema: TableSchema, key_cols: Sequence[Column]) -> pa.Table:
    """The connectorx result of a typed chunk query in :func:`typed_chunk_schema`."""
    out = typed_chunk_schema(schema)
    made = integer_key(key_cols)
    if table.num_columns != len(out) - made:
        raise SourceError(f"a typed chunk of {schema.name} has {table.num_columns} columns")
    read = table.columns[0 if made else 1 :]
    arrays = [_key_text(table, schema, key_cols) if made else table.column(0).cast(pa.string())]
    for i, column in enumerate(schema.columns):
        target = out.field(i + 1).type
        chunks = [_fix(column, chunk, target) for chunk in read[i].chunks]
        arrays.append(pa.chunked_array(chunks, type=target))
    return pa.Table.from_arrays(arrays, schema=out)


def _key_text(table: pa.Table, schema: TableSchema, key_cols: Sequence[Column]) -> pa.Array:
    """``[v1,v2]`` of the integer key columns as read (:func:`integer_key`)."""
    names = [c.name for c in schema.columns]
    parts = []
    for c in key_cols:
        values = table.column(names.index(c.name))
        if not pa.types.is_integer(values.type):
            raise SourceError(f"the key column {c.name} of {schema.name} was read as {values.type}")
        parts.append(pc.fill_null(pc.cast(values, pa.string()), "null"))
    inner = pc.binary_join_element_wise(*parts, ",") if len(parts) > 1 else parts[0]
    return pc.binary_join_element_wise("[", inner, "]", "")


def _fix(column: Column, values: pa.Array, target: pa.DataType) -> pa.Array:
    """One chunk of a column as connectorx read it, in the column's Delta type. BIT comes as
    whichever unsigned integer fits the server's display width: widened to uint64 first, then
    the same value as a long (BIT(n < 64), below 2**63) or a decimal (BIT(64))."""
    if column.data_type == "bit" and pa.types.is_integer(values.type):
        values = pc.cast(values, pa.uint64())
        if pa.types.is_integer(target):
            return values.view(target)
    return fix_column(column, values, target)
