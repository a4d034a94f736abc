"""The Arrow types of a replica's columns as an Iceberg table holds them (pure pyarrow: the
snapshot's tasks import it without pyiceberg).

Iceberg has no integer narrower than 32 bits: pyiceberg makes ``int8`` and ``int16`` columns
``int``, and reads them back as ``int32``. The snapshot's tasks write their files in these types,
so the sink adds the files to the tables as they are. Every other type of
:func:`~sparkcdc.core.convert.arrow_schema` is Iceberg's as it is.
"""

from __future__ import annotations

import pyarrow as pa

from sparkcdc.core.convert import arrow_schema
from sparkcdc.core.schema import TableSchema


def iceberg_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_int8(t) or pa.types.is_int16(t):
        return pa.int32()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(iceberg_type(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, iceberg_type(f.type)) for f in t])
    return t


def iceberg_columns(schema: TableSchema) -> pa.Schema:
    """The replica's columns of ``schema`` in Iceberg's types."""
    return pa.schema([pa.field(f.name, iceberg_type(f.type)) for f in arrow_schema(schema)])
