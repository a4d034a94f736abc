"""A change whose after image marks TOASTed values the log left out
(:data:`~sparkcdc.core.images.UNCHANGED_KEY`) stops a typed stream of one table with a sentence:
it has no replica to fill them from, and a null in their place would be a lie."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from sparkcdc.core.errors import SourceError
from sparkcdc.core.event import OP_UPDATE
from sparkcdc.core.images import UNCHANGED_KEY, UNCHANGED_PREFIX
from sparkcdc.core.offset_events import snapshot_batch
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.spark.stream.table_stream import TableStream

SCHEMA = TableSchema(
    "public",
    "doc",
    (Column("id", "int4", logical="int32"), Column("body", "text", logical="string")),
    ("id",),
)


def test_a_marked_image_stops_a_typed_table_stream() -> None:
    marked = json.dumps({UNCHANGED_KEY: ["body"], "id": 1}, separators=(",", ":"))
    assert marked.startswith(UNCHANGED_PREFIX)
    plain = json.dumps({"id": 2, "body": "x"})
    batch = snapshot_batch(
        pa.array(["[2]", "[1]"]), pa.array([plain, marked]), "public", "doc",
        SCHEMA.schema_id(), LsnOffset(100), 0, OP_UPDATE,
    )  # fmt: skip
    stream = TableStream(SCHEMA, LsnOffset)
    assert stream.rows(batch.slice(0, 1)).num_rows == 1
    with pytest.raises(SourceError, match="public.doc .* REPLICA IDENTITY FULL"):
        stream.rows(batch)
