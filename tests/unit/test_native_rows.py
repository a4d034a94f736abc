"""The compiled row decoder is built by the set-up, so the tests exercise it (its output is held
to the Python decoder's in tests/integration/test_decoder.py)."""

from __future__ import annotations

import pytest

from sparkcdc.core.images import ColumnarRows, StructMaker
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.binlog import native
from sparkcdc.sources.mysql.binlog import tablemap as tm
from sparkcdc.sources.mysql.binlog.rows import RowsDecoder
from sparkcdc.sources.mysql.schema.column_types import column


def test_the_compiled_decoder_is_built() -> None:
    assert native._rowdecode is not None, "scripts/setup.sh compiles _rowdecode.c"


def test_a_truncated_image_is_an_error_not_a_crash() -> None:
    if not native.available():
        pytest.skip("not built")
    schema = TableSchema(
        "d", "t", (column("id", "bigint", nullable=False), column("v", "varchar", length=9)),
        primary_key=("id",),
    )  # fmt: skip
    types = (tm.T_LONGLONG, tm.T_VARCHAR)
    table_map = tm.TableMap(1, "d", "t", types, (0, 36), (False, True))
    decoder = RowsDecoder(table_map, schema, typed=True)
    row = bytes([0]) + (7).to_bytes(8, "little") + bytes([3]) + b"abc"
    event = bytes(8) + bytes([2, 0b11]) + row  # WRITE_ROWS v1: ids, 2 columns, both present
    rows = decoder.decode(23, event, 0, len(event))
    assert isinstance(rows, ColumnarRows) and (len(rows), rows.op, rows.keys) == (1, "c", ["[7]"])
    before, after = rows.structs(StructMaker(schema).fields)
    assert before.to_pylist() == [None] and after.to_pylist() == [{"id": 7, "v": "abc"}]
    with pytest.raises(Exception, match="does not match its table map"):
        decoder.decode(23, event[:-2], 0, len(event) - 2)


@pytest.mark.parametrize(
    ("value", "unsigned", "key"),
    [(-7, False, "[-7]"), (-(2**63), False, f"[{-(2**63)}]"), (2**64 - 1, True, f"[{2**64 - 1}]")],
)
def test_integer_keys_are_their_digits(value: int, unsigned: bool, key: str) -> None:
    if not native.available():
        pytest.skip("not built")
    schema = TableSchema(
        "d", "t", (column("id", "bigint", nullable=False, unsigned=unsigned),), primary_key=("id",)
    )
    decoder = RowsDecoder(tm.TableMap(2, "d", "t", (tm.T_LONGLONG,), (0,), (False,)), schema, True)
    row = bytes([0]) + value.to_bytes(8, "little", signed=not unsigned)
    event = bytes(8) + bytes([1, 1]) + row
    rows = decoder.decode(23, event, 0, len(event))
    assert isinstance(rows, ColumnarRows) and rows.keys == [key]
    assert rows.structs(StructMaker(schema).fields)[1].to_pylist() == [{"id": value}]
