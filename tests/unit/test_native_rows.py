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


def two_columns() -> tuple[TableSchema, RowsDecoder]:
    """A table of a BIGINT key and a VARCHAR(9), and its compiled decoder."""
    if not native.available():
        pytest.skip("not built")
    schema = TableSchema(
        "d", "t", (column("id", "bigint", nullable=False), column("v", "varchar", length=9)),
        primary_key=("id",),
    )  # fmt: skip
    types = (tm.T_LONGLONG, tm.T_VARCHAR)
    table_map = tm.TableMap(1, "d", "t", types, (0, 36), (False, True))
    return schema, RowsDecoder(table_map, schema, typed=True)


def test_a_truncated_image_is_an_error_not_a_crash() -> None:
    schema, decoder = two_columns()
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


def _packet(seq: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "little") + bytes([seq]) + payload


@pytest.mark.parametrize(
    "tail",
    [
        b"",  # the buffer ends between packets
        _packet(9, b"\x00" + bytes(40))[:20],  # a packet held in part
        _packet(9, b"\xff\x10\x04#HY000boom"),  # an error packet
        _packet(9, b"\xfe\x00\x00\x02\x00"),  # the end of the stream
        _packet(9, b""),  # an empty packet
    ],
)
def test_the_compiled_packet_splitter_matches_its_python_twin(tail: bytes) -> None:
    from sparkcdc.sources.mysql.binlog import _packets  # type: ignore[attr-defined]
    from sparkcdc.sources.mysql.binlog.packets import split_packets

    events = [bytes([i]) * (19 + i) for i in range(5)]
    head = b"junk"
    buf = bytearray(
        head + b"".join(_packet(4 + i, b"\x00" + e) for i, e in enumerate(events)) + tail
    )
    expected = (events, len(buf) - len(tail), 8)
    assert split_packets(buf, len(head), len(buf)) == expected
    assert _packets.split(buf, len(head), len(buf)) == expected
    assert _packets.split(buf, len(buf) - len(tail), len(buf)) == ([], len(buf) - len(tail), -1)
    with pytest.raises(ValueError):
        _packets.split(buf, 0, len(buf) + 1)


def test_a_builder_split_moves_the_later_rows_of_the_compiled_buffers() -> None:
    from sparkcdc.core.envelope import EnvelopeBuilder
    from sparkcdc.sources.mysql.offset import BinlogOffset

    schema, decoder = two_columns()
    builder = EnvelopeBuilder(BinlogOffset)
    for i in range(3):
        row = bytes([0]) + i.to_bytes(8, "little") + bytes([2]) + f"v{i}".encode()
        event = bytes(8) + bytes([2, 0b11]) + row + row
        rows = decoder.decode(23, event, 0, len(event))
        builder.extend(
            rows, "d", "t", "s1", position=f"0000000001:{i:010d}", index=0,
            own=(1, "f", i, None, ""), ts_ms=0, transaction="", total_order=1,
            data_collection_order=1, images=schema,
        )  # fmt: skip
    rest = builder.split(2)
    for part, ids in ((builder, [0, 0]), (rest, [1, 1, 2, 2])):
        (images,) = part.typed_images(part.build())
        assert [r["id"] for r in images.rows.column(2).to_pylist()] == ids


def test_a_rows_event_of_more_than_250_columns_is_decoded_whole() -> None:
    if not native.available():
        pytest.skip("not built")
    columns = tuple(column(f"c{i}", "tinyint") for i in range(300))
    schema = TableSchema("d", "wide", columns, primary_key=("c0",))
    table_map = tm.TableMap(1, "d", "wide", (tm.T_TINY,) * 300, (0,) * 300, (True,) * 300)
    decoder = RowsDecoder(table_map, schema, typed=True)
    bitmap = b"\xff" * 38  # 300 columns present (38 bytes), then 300 null bits: none null
    row = bytes(38) + bytes(range(256)) + bytes(range(44))
    header = bytes(8) + b"\x02\x00" + b"\xfc" + (300).to_bytes(2, "little") + bitmap
    event = header + row  # WRITE_ROWS v2 (empty extra data), a 3-byte column count
    rows = decoder.decode(30, event, 0, len(event))
    assert isinstance(rows, ColumnarRows) and rows.keys == ["[0]"]
    _, after = rows.structs(StructMaker(schema).fields)
    values = after.to_pylist()[0]
    assert [values[f"c{i}"] for i in (0, 1, 255, 256, 299)] == [0, 1, -1, 0, 43]
    with pytest.raises(Exception, match="does not match its table map"):
        decoder.decode(30, event[:10] + b"\xfc" + (299).to_bytes(2, "little") + event[13:], 0,
                       len(event))  # fmt: skip
