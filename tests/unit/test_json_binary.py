"""MySQL's binary JSON, encoded from its published layout (``tests.cases.mysql8.json_binary``),
read back as the JSON text MySQL prints: every node type, small and large containers, inlined
and referenced values, opaque DECIMAL and date-times, and damaged documents."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.sources.mysql.binlog import json_binary as jb
from sparkcdc.sources.mysql.binlog import tablemap as tm
from sparkcdc.sources.mysql.binlog.json_binary import BinaryJsonError, json_text
from tests.cases.mysql8.json_binary import U16, U32, Opaque, document

NESTED = {
    "name": "ü😀 " + "x" * 200,  # a string needing a two-byte length
    "n": [0, -1, 32767, -32768, 40000, -(2**31), 2**31 - 1, 2**40, -(2**63), 2**64 - 1],
    "u": [U16(65535), U32(4000000000)],
    "f": [2.5, -0.001, 1e300],
    "lit": [None, True, False],
    "deep": {"a": [{"b": {}}, [], [[None]]], "": "empty key"},
}


@pytest.mark.parametrize("large", [False, True], ids=["small", "large"])
def test_every_node_type_reads_back_as_mysql_prints_it(large: bool) -> None:
    text = json_text(document(NESTED, large))
    assert text == json.dumps(NESTED, ensure_ascii=False)  # ", " and ": " as MySQL prints
    assert json.loads(text) == NESTED


@pytest.mark.parametrize(
    "value,text",
    [(None, "null"), (True, "true"), (7, "7"), (U32(7), "7"), (-1.5, "-1.5"), ("é", '"é"'),
     ([], "[]"), ({}, "{}")],
)  # fmt: skip
def test_scalars_at_the_top(value: Any, text: str) -> None:
    assert json_text(document(value)) == text


def packed_datetime(y: int, mo: int, d: int, h: int, mi: int, s: int, us: int) -> bytes:
    ymd = (y * 13 + mo) << 5 | d
    return struct.pack("<q", ((ymd << 17 | h << 12 | mi << 6 | s) << 24) | us)


def test_opaque_decimals_and_date_times() -> None:
    negative = bytes(b ^ 0xFF for b in bytes([0x80, 0x00, 0x00, 0x00, 0x00, 0x01, 0x05]))
    values = [
        Opaque(tm.T_NEWDECIMAL, bytes([14, 2, 0x80, 0, 0, 0, 0, 0x7B, 0x2D])),
        Opaque(tm.T_NEWDECIMAL, bytes([14, 2]) + negative),
        Opaque(tm.T_DATE, packed_datetime(2024, 2, 29, 0, 0, 0, 0)),
        Opaque(tm.T_DATETIME, packed_datetime(1999, 12, 31, 23, 59, 58, 123456)),
        Opaque(tm.T_TIMESTAMP, packed_datetime(2038, 1, 19, 3, 14, 7, 0)),
        Opaque(tm.T_TIME, struct.pack("<q", -(((838 << 12 | 59 << 6 | 59) << 24) | 500000))),
        Opaque(tm.T_VARCHAR, b"\x01\x02"),
    ]
    assert json.loads(json_text(document(values))) == [
        123.45, -1.05, "2024-02-29", "1999-12-31 23:59:58.123456", "2038-01-19 03:14:07.000000",
        "-838:59:59.500000", "base64:type15:AQI=",
    ]  # fmt: skip
    assert json_text(document(values[:1])) == "[123.45]"


@given(st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=40)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=5),
    max_leaves=20,
), st.booleans())  # fmt: skip
def test_any_document_reads_back_to_its_value(value: Any, large: bool) -> None:
    assert json.loads(json_text(document(value, large))) == value


@pytest.mark.parametrize(
    "damaged",
    [bytes([jb.SMALL_ARRAY, 1, 0, 200, 0]), bytes([0x0E, 1]), bytes([jb.LITERAL, 9]),
     bytes([jb.STRING, 0x85]), document([1, 2, 3])[:-1] + b"", bytes([jb.INT64, 1, 2])],
)  # fmt: skip
def test_a_damaged_document_is_an_error(damaged: bytes) -> None:
    with pytest.raises(BinaryJsonError):
        json_text(damaged)


def test_a_rows_event_with_a_mysql_json_column_gives_its_text() -> None:
    from sparkcdc.core.schema import TableSchema
    from sparkcdc.sources.mysql.binlog.rows import RowsDecoder
    from sparkcdc.sources.mysql.binlog.tablemap import TableMap
    from sparkcdc.sources.mysql.schema.column_types import column

    schema = TableSchema("shop", "docs", (column("id", "int"), column("j", "json")), ("id",))
    table_map = TableMap(3, "shop", "docs", bytes([tm.T_LONG, tm.T_JSON]), (0, 4), (False, True))
    value = document({"a": [1, "ü"], "b": None})
    row = b"\x00" + struct.pack("<i", 1) + struct.pack("<I", len(value)) + value
    event = bytes(8) + bytes([2, 0b11]) + row  # WRITE_ROWS v1: ids, 2 columns, both present
    text = '{"a": [1, "ü"], "b": null}'
    plain = RowsDecoder(table_map, schema).decode(23, event, 0, len(event))
    assert plain == [("c", "[1]", None, json.dumps({"id": 1, "j": text}, ensure_ascii=False,
                                                    separators=(",", ":")))]  # fmt: skip
    typed = RowsDecoder(table_map, schema, typed=True).decode(23, event, 0, len(event))
    assert [tuple(c) for c in typed] == [("c", "[1]", None, (1, text))]
