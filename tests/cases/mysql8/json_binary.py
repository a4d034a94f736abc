"""MySQL's binary JSON (``json_binary.h``), written from its published layout: the value of a JSON
column in a row image.

``document(value)`` is one type byte then the value; containers are small (uint16 counts, sizes
and offsets) unless ``large``; literals and int16/uint16 values are inlined in the value
entries, int32/uint32 too in large containers. With ``mysql_order`` the object keys are sorted
the way MySQL stores them (shorter keys first, then by bytes) and a container too big for the
small form is written large, as the server does; without it the keys keep their order (the
tests of the reader check it exactly).
"""

from __future__ import annotations

import struct
from typing import Any

SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY, LITERAL = range(5)
INT16, UINT16, INT32, UINT32, INT64, UINT64, DOUBLE, STRING = range(5, 13)
OPAQUE = 0x0F


class U16(int):
    """An integer to store as uint16."""


class U32(int):
    """An integer to store as uint32."""


class Opaque:
    """A MySQL field value of ``field_type`` in its own storage format (DECIMAL, DATE …)."""

    def __init__(self, field_type: int, raw: bytes) -> None:
        self.field_type, self.raw = field_type, raw


class _TooBig(Exception):
    """A small container cannot address its content."""


def varlen(n: int) -> bytes:
    """A variable-length length: 7 bits a byte, low bits first, high bit "more"."""
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def encode(value: Any, large: bool = False, mysql_order: bool = False) -> tuple[int, bytes]:
    """(type, value bytes) of ``value``; containers small unless ``large``."""
    if value is None or isinstance(value, bool):
        return LITERAL, bytes([{None: 0, True: 1, False: 2}[value]])
    if isinstance(value, U16):
        return UINT16, struct.pack("<H", value)
    if isinstance(value, U32):
        return UINT32, struct.pack("<I", value)
    if isinstance(value, int):
        widths = ((INT16, "<h", 15), (INT32, "<i", 31), (INT64, "<q", 63))
        for kind, fmt, bits in widths:
            if -(2**bits) <= value < 2**bits:
                return kind, struct.pack(fmt, value)
        return UINT64, struct.pack("<Q", value)
    if isinstance(value, float):
        return DOUBLE, struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode()
        return STRING, varlen(len(raw)) + raw
    if isinstance(value, Opaque):
        return OPAQUE, bytes([value.field_type]) + varlen(len(value.raw)) + value.raw
    if isinstance(value, dict):
        items = list(value.items())
        if mysql_order:
            items.sort(key=lambda kv: (len(kv[0].encode()), kv[0].encode()))
        kinds = (LARGE_OBJECT, SMALL_OBJECT)
        return _either(kinds, [(str(k), v) for k, v in items], True, large, mysql_order)
    kinds = (LARGE_ARRAY, SMALL_ARRAY)
    return _either(kinds, [(None, v) for v in value], False, large, mysql_order)


def _either(
    kinds: tuple[int, int], items: list[tuple[str | None, Any]], is_object: bool, large: bool,
    mysql_order: bool,
) -> tuple[int, bytes]:  # fmt: skip
    if large:
        return kinds[0], container(items, is_object, True, mysql_order)
    try:
        return kinds[1], container(items, is_object, False, mysql_order)
    except (_TooBig, struct.error):
        if not mysql_order:
            raise
        return kinds[0], container(items, is_object, True, mysql_order)


def container(
    items: list[tuple[str | None, Any]], is_object: bool, large: bool, mysql_order: bool = False
) -> bytes:
    """The body of an object or array: count, size, key entries, value entries, keys, values."""
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
        kind, payload = encode(value, large, mysql_order)
        inline = kind in (LITERAL, INT16, UINT16) or large and kind in (INT32, UINT32)
        if inline:
            value_entries += bytes([kind]) + payload.ljust(width, b"\0")
        else:
            value_entries += bytes([kind]) + struct.pack(word, at + len(values))
            values += payload
    body = key_entries + value_entries + keys + values
    if not large and 2 * width + len(body) > 0xFFFF:
        raise _TooBig
    return struct.pack(word + word[1], n, 2 * width + len(body)) + body


def document(value: Any, large: bool = False, mysql_order: bool = False) -> bytes:
    """A whole binary JSON document: the type byte, then the value."""
    kind, payload = encode(value, large, mysql_order)
    return bytes([kind]) + payload
