"""Array columns on the Spark side: a typed table stream's declared schema (``array<...>``
from :func:`~sparkcdc.core.types.spark_type`) is the type Spark gives the Arrow lists the
stream delivers, and ``from_json`` with a schema's DDL reads the JSON images' arrays."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.core.convert import cast_struct, decode_images
from sparkcdc.core.images import struct_maker
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.spark.stream.table_stream import TableStream

pytestmark = pytest.mark.spark

SCHEMA = TableSchema(
    "pg",
    "arr",
    (
        Column("id", "int4", logical="int32"),
        Column("amounts", "_numeric", logical="array<decimal(12,2)>"),
        Column("tags", "_text", logical="array<string>"),
        Column("small", "_int2", logical="array<int16>"),
        Column("raw", "_bytea", logical="array<binary>"),
    ),
    ("id",),
)
IMAGES = [
    {"id": 1, "amounts": ["1.50", None], "tags": ["a"], "small": [1, -2], "raw": ["AAE="]},
    {"id": 2, "amounts": [], "tags": None, "small": [None], "raw": []},
]
EXPECTED = [
    {"id": 1, "amounts": [Decimal("1.50"), None], "tags": ["a"], "small": [1, -2],
     "raw": [bytearray(b"\x00\x01")]},
    {"id": 2, "amounts": [], "tags": None, "small": [None], "raw": []},
]  # fmt: skip


def test_spark_types_typed_arrays_as_the_stream_declares_them(spark: Any) -> None:
    declared = spark.createDataFrame([], TableStream(SCHEMA, BinlogOffset).ddl()).schema
    after = declared["after"].dataType
    assert [f.dataType.simpleString() for f in after.fields] == [
        "int", "array<decimal(12,2)>", "array<string>", "array<smallint>", "array<binary>"
    ]  # fmt: skip
    texts = pa.array([json.dumps(i) for i in IMAGES])
    typed = cast_struct(decode_images(texts, SCHEMA), struct_maker(SCHEMA).fields)
    frame = spark.createDataFrame(pa.Table.from_struct_array(typed))
    assert frame.schema == after
    assert [r.asDict(recursive=True) for r in frame.orderBy("id").collect()] == EXPECTED


def test_from_json_with_the_schema_ddl_reads_the_json_arrays(spark: Any) -> None:
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(json.dumps(i),) for i in IMAGES], "image string")
    parsed = frame.select(F.from_json("image", SCHEMA.spark_ddl()).alias("row")).select("row.*")
    rows = [r.asDict(recursive=True) for r in parsed.orderBy("id").collect()]
    assert rows == EXPECTED
