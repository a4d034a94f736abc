"""Row images back to typed columns: the JSON parse runs in blocks, and a row image larger than
a block is still read whole, in order, exactly."""

from __future__ import annotations

import json

import pyarrow as pa

from sparkcdc.core.convert import BLOCK_BYTES, decode_images
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.schema.column_types import column

SCHEMA = TableSchema(
    "db",
    "t",
    (
        column("id", "bigint"),
        column("body", "longtext"),
        column("amount", "decimal", precision=30, scale=10),
    ),
    primary_key=("id",),
)


def image(i: int, body: str) -> str:
    return json.dumps({"id": i, "body": body, "amount": f"{i}.0000000001"}, ensure_ascii=False)


def test_many_blocks_and_a_row_bigger_than_a_block_keep_order_and_values() -> None:
    bodies = [f"row {i} ü" * 20 for i in range(60000)]
    bodies[31337] = "x" * (BLOCK_BYTES + 12345)  # alone larger than a parse block
    images = pa.array([image(i, b) if i % 1000 else None for i, b in enumerate(bodies)])
    decoded = decode_images(images, SCHEMA)
    assert len(decoded) == len(bodies)
    assert decoded.is_null().to_pylist() == [i % 1000 == 0 for i in range(len(bodies))]
    ids = decoded.field("id").to_pylist()
    assert ids == [None if i % 1000 == 0 else i for i in range(len(bodies))]
    assert decoded.field("body")[31337].as_py() == bodies[31337]
    assert str(decoded.field("amount")[59999].as_py()) == "59999.0000000001"


def test_a_boolean_column_reads_back_from_json_images_and_writes_them_again() -> None:
    from sparkcdc.core.images import json_values, struct_maker
    from sparkcdc.core.schema import Column

    flags = TableSchema(
        "db",
        "flags",
        (column("id", "bigint"), Column("on", "boolean", logical="boolean")),
        primary_key=("id",),
    )
    images = pa.array(['{"id": 1, "on": true}', None, '{"id": 3, "on": false}', '{"id": 4}'])
    decoded = decode_images(images, flags)
    assert decoded.field("on").type == pa.bool_()
    assert decoded.field("on").to_pylist() == [True, None, False, None]
    typed = struct_maker(flags)([(1, True), None, (3, False)])
    assert json_values(typed, ["id", "on"]) == [[1, True], None, [3, False]]
    assert Column("on", "boolean", logical="boolean").spark_type() == "boolean"
