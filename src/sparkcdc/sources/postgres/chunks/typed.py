"""Typed chunks: COPY's text values as the table's columns in their Delta types.

Each column is :func:`~sparkcdc.sources.postgres.pgoutput.values.convert` of its texts, the
log reader's own exact conversion, fixed up to the column's Delta type by
:func:`~sparkcdc.core.convert.fix_column`. The contract is equality with what
:func:`~sparkcdc.core.convert.decode_images` makes of the row images, and that reads a date or
timestamp back from its JSON text: the values not written the plain way (:func:`.images.unusual`:
BC, years past 9999, infinities) take the value ``fix_column`` gives their JSON text (null
where Arrow cannot read the year), so both agree value for value.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.convert import fix_column
from sparkcdc.core.errors import SourceError
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.snapshot.correct import typed_chunk_schema
from sparkcdc.sources.postgres.chunks.images import unusual
from sparkcdc.sources.postgres.pgoutput.values import convert, json_value


def typed_column(texts: pa.Array, column: Column, target: pa.DataType) -> pa.Array:
    """One column's text values in its Delta type ``target``."""
    strings = pc.cast(texts, pa.string())
    values = convert(strings, column.data_type, column.logical)
    if column.logical in ("date", "timestamp", "timestamp_ntz"):
        odd = unusual(strings, None if column.logical == "date" else values)
        if pc.any(odd).as_py():
            images = [
                str(json_value(t, column.data_type, column.logical))
                for t in strings.filter(odd).to_pylist()
            ]
            read = fix_column(column, pa.array(images, pa.string()), target)
            values = pc.replace_with_mask(values, odd, read)
    return values if values.type == target else fix_column(column, values, target)


def typed_table(schema: TableSchema, texts: Sequence[pa.Array], key: pa.Array) -> pa.Table:
    """A typed chunk (:func:`~sparkcdc.snapshot.correct.typed_chunk_schema`): the ``key`` JSON
    text, then every column of ``schema`` from its texts."""
    out = typed_chunk_schema(schema)
    if len(texts) != len(schema.columns):
        raise SourceError(f"a typed chunk of {schema.name} has {len(texts)} columns")
    arrays = [key]
    for i, (column, values) in enumerate(zip(schema.columns, texts, strict=True)):
        arrays.append(typed_column(values, column, out.field(i + 1).type))
    return pa.Table.from_arrays(arrays, schema=out)
