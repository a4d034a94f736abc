"""MySQL's binary JSON, encoded here from its published layout (MySQL's ``json_binary.h``), read
back as the JSON text MySQL prints: every node type, small and large containers, inlined and
referenced values, opaque DECIMAL and date-times, and damaged documents."""

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


class U16(int): ...


class U32(int): ...


class Opaque:
    def __init__(self, field_type: int, raw: bytes) -> None:
        self.field_type, self.raw = field_type, raw


def varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def encode(value: Any, large: bool = False) -> tuple[int, bytes]:
    """(type, value bytes) of ``value``; containers small unless ``large``."""
    if value is None or isinstance(value, bool):
        return jb.LITERAL, bytes([{None: 0, True: 1, False: 2}[value]])
    if isinstance(value, U16):
        return jb.UINT16, struct.pack("<H", value)
    if isinstance(value, U32):
        return jb.UINT32, struct.pack("<I", value)
    if isinstance(value, int):
        widths = ((jb.INT16, "<h", 15), (jb.INT32, "<i", 31), (jb.INT64, "<q", 63))
        for kind, fmt, bits in widths:
            if -(2**bits) <= value < 2**bits:
                return kind, struct.pack(fmt, value)
        return jb.UINT64, struct.pack("<Q", value)
    if isinstance(value, float):
        return jb.DOUBLE, struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode()
        return jb.STRING, varlen(len(raw)) + raw
    if isinstance(value, Opaque):
        return jb.OPAQUE, bytes([value.field_type]) + varlen(len(value.raw)) + value.raw
    if isinstance(value, dict):
        kind = jb.LARGE_OBJECT if large else jb.SMALL_OBJECT
        return kind, container(list(value.items()), True, large)
    kind = jb.LARGE_ARRAY if large else jb.SMALL_ARRAY
    return kind, container([(None, v) for v in value], False, large)


def container(items: list[tuple[str | None, Any]], is_object: bool, large: bool) -> bytes:
    width, word = (4, "<I") if large else (2, "<H")
    n = len(items)
    at = 2 * width + (n * (width + 2) if is_object else 0) + n * (1 + width)
    key_entries, keys = b"", b""
    for key, _ in items if is_object else ():
        raw = (key or "").encode()
        key_entries += struct.pack(word + "H", at + len(keys), len(raw))
        keys += raw
    at += len(keys)
    value_entries, values = b"", b""
    for _, value in items:
        kind, payload = encode(value, large)
        inline = (
            kind in (jb.LITERAL, jb.INT16, jb.UINT16) or large and kind in (jb.INT32, jb.UINT32)
        )
        if inline:
            value_entries += bytes([kind]) + payload.ljust(width, b"\0")
        else:
            value_entries += bytes([kind]) + struct.pack(word, at + len(values))
            values += payload
    body = key_entries + value_entries + keys + values
    return struct.pack(word + word[1], n, 2 * width + len(body)) + body


def document(value: Any, large: bool = False) -> bytes:
    kind, payload = encode(value, large)
    return bytes([kind]) + payload


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
