"""MySQL's binary JSON (the value of a JSON column in MySQL 5.7+ row images) as JSON text.

The format (MySQL's ``json_binary.h``; MariaDB stores JSON as text and never writes it)::

    doc      := type value
    type     := 0x00 small object | 0x01 large object | 0x02 small array | 0x03 large array
              | 0x04 literal | 0x05 int16 | 0x06 uint16 | 0x07 int32 | 0x08 uint32
              | 0x09 int64 | 0x0a uint64 | 0x0b double | 0x0c utf8mb4 string | 0x0f opaque
    object   := count size key-entry* value-entry* keys values      (small: uint16 fields,
    array    := count size value-entry* values                       large: uint32 fields)
    key-entry   := key-offset key-length(uint16)
    value-entry := type (offset | the value itself: literals and int16/uint16 always,
                   int32/uint32 in large containers)
    literal  := 0x00 null | 0x01 true | 0x02 false
    string   := length(variable: 7 bits a byte, high bit "more") utf8mb4 bytes
    opaque   := field type (uint8) length(variable) bytes

Offsets count from the container's first byte (its count). Numbers are little-endian. The text
is written as MySQL prints JSON (``", "`` and ``": "`` between items); opaque values of DECIMAL,
DATE, TIME, DATETIME and TIMESTAMP become the number or the quoted date-time, any other opaque
value MySQL's ``"base64:typeN:…"`` text.
"""

from __future__ import annotations

import base64
import json
import struct

from sparkcdc.sources.mysql.binlog import tablemap as tm
from sparkcdc.sources.mysql.binlog import values as vals

SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY, LITERAL = range(5)
INT16, UINT16, INT32, UINT32, INT64, UINT64, DOUBLE, STRING = range(5, 13)
OPAQUE = 0x0F
_SCALARS = {INT16: "<h", UINT16: "<H", INT32: "<i", UINT32: "<I", INT64: "<q", UINT64: "<Q"}
_LITERALS = {0: "null", 1: "true", 2: "false"}
MAX_DEPTH = 100  # MySQL's JSON_DOCUMENT_MAX_DEPTH: no server writes a deeper document


class BinaryJsonError(ValueError):
    """The bytes are not a binary JSON document."""


def json_text(data: bytes) -> str:
    """The JSON text of the binary JSON document ``data`` (an empty value is JSON null, as
    MySQL writes a NULL-less JSON column that holds nothing)."""
    if not data:
        return "null"
    try:
        return _value(data[0], data, 1, 0)
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise BinaryJsonError(f"a binary JSON value is cut short or damaged ({exc})") from exc


def _value(kind: int, data: bytes, p: int, depth: int) -> str:
    """The value of type ``kind`` stored at ``p``, ``depth`` containers deep."""
    if kind in (SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY):
        if depth >= MAX_DEPTH:
            raise BinaryJsonError(f"a binary JSON document nests deeper than {MAX_DEPTH}")
        return _container(kind, data, p, depth + 1)
    if kind == LITERAL:
        return _literal(data[p])
    if kind in _SCALARS:
        return str(struct.unpack_from(_SCALARS[kind], data, p)[0])
    if kind == DOUBLE:
        return repr(struct.unpack_from("<d", data, p)[0])
    if kind == STRING:
        n, p = read_length(data, p)
        return json.dumps(data[p : p + n].decode("utf-8"), ensure_ascii=False)
    if kind == OPAQUE:
        field_type = data[p]
        n, p = read_length(data, p + 1)
        return _opaque(field_type, data[p : p + n])
    raise BinaryJsonError(f"a binary JSON value has the unknown type 0x{kind:02x}")


def _container(kind: int, data: bytes, start: int, depth: int) -> str:
    is_object, entries = container_entries(kind, data, start)
    items = [_value(entry, data, at, depth) for _, entry, at in entries]
    if not is_object:
        return "[" + ", ".join(items) + "]"
    pairs = (
        f"{json.dumps(key, ensure_ascii=False)}: {v}"
        for (key, _, _), v in zip(entries, items, strict=True)
    )
    return "{" + ", ".join(pairs) + "}"


def is_inlined(entry: int, large: bool) -> bool:
    """Whether a value entry holds the value itself (literals and 16-bit integers always, 32-bit
    integers in large containers) rather than its offset."""
    return entry in (LITERAL, INT16, UINT16) or large and entry in (INT32, UINT32)


def container_entries(
    kind: int, data: bytes, start: int
) -> tuple[bool, list[tuple[str | None, int, int]]]:
    """Whether the container of type ``kind`` at ``start`` is an object, and its members in
    order: (key or None, value type, position of the value). Inlined values sit in their value
    entry; the others at their offset from ``start``."""
    large = kind in (LARGE_OBJECT, LARGE_ARRAY)
    word, width = ("<I", 4) if large else ("<H", 2)
    count, size = struct.unpack_from(word + word[1], data, start)
    is_object = kind in (SMALL_OBJECT, LARGE_OBJECT)
    if start + size > len(data) or count * (1 + width + (width + 2) * is_object) > size:
        raise BinaryJsonError("a binary JSON container is longer than its value")
    p = start + 2 * width
    keys: list[str | None] = [None] * count
    if is_object:
        for i in range(count):
            offset, length = struct.unpack_from(word + "H", data, p)
            if offset + length > size:
                raise BinaryJsonError("a binary JSON object key lies outside its object")
            keys[i] = data[start + offset : start + offset + length].decode("utf-8")
            p += width + 2
    entries = []
    for key in keys:
        entry = data[p]
        at = p + 1 if is_inlined(entry, large) else start + struct.unpack_from(word, data, p + 1)[0]
        if at >= start + size:
            raise BinaryJsonError("a binary JSON value lies outside its container")
        entries.append((key, entry, at))
        p += 1 + width
    return is_object, entries


def _literal(code: int) -> str:
    text = _LITERALS.get(code)
    if text is None:
        raise BinaryJsonError(f"a binary JSON literal has the unknown code {code}")
    return text


def read_length(data: bytes, p: int) -> tuple[int, int]:
    """A variable-length length: 7 bits a byte, low bits first, high bit set on all but the
    last byte (at most 5 bytes)."""
    n = shift = 0
    for _ in range(5):
        byte = data[p]
        p += 1
        n |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return n, p
        shift += 7
    raise BinaryJsonError("a binary JSON length runs over five bytes")


def _opaque(field_type: int, raw: bytes) -> str:
    """An opaque value: a MySQL field of ``field_type`` in its own storage format."""
    if field_type == tm.T_NEWDECIMAL:
        return _decimal(raw[2:], raw[0], raw[1])
    if field_type in (tm.T_DATE, tm.T_DATETIME, tm.T_TIMESTAMP, tm.T_TIME) and len(raw) >= 8:
        packed = struct.unpack_from("<q", raw)[0]
        return '"' + _packed_temporal(field_type, packed) + '"'
    return json.dumps(f"base64:type{field_type}:{base64.b64encode(raw).decode('ascii')}")


def _decimal(raw: bytes, precision: int, scale: int) -> str:
    """A DECIMAL(precision, scale) in MySQL's binary form (big-endian groups of nine digits,
    the sign in the first bit, negatives inverted) as a JSON number."""
    layout = vals.DecimalLayout(precision, scale)
    b = bytearray(raw[: layout.size])
    negative = not b[0] & 0x80
    b[0] ^= 0x80
    if negative:
        b = bytearray(x ^ 0xFF for x in b)
    p, groups = 0, []
    widths = [(vals.DIG2BYTES[layout.int_lead], layout.int_lead)] if layout.int_lead else []
    widths += [(4, 9)] * (layout.int_full + layout.frac_full)
    if layout.frac_tail:
        widths.append((vals.DIG2BYTES[layout.frac_tail], layout.frac_tail))
    for size, digits in widths:
        groups.append(f"{int.from_bytes(b[p : p + size], 'big'):0{digits}d}")
        p += size
    text = "".join(groups)
    whole, frac = text[: len(text) - scale], text[len(text) - scale :]
    number = (whole.lstrip("0") or "0") + (f".{frac}" if scale else "")
    return "-" + number if negative else number


def _packed_temporal(field_type: int, packed: int) -> str:
    """MySQL's in-memory packed date-time (``TIME_to_longlong_*_packed``) as text."""
    sign, packed = ("-", -packed) if packed < 0 else ("", packed)
    micros, rest = packed % (1 << 24), packed >> 24
    if field_type == tm.T_TIME:
        hms = rest
        hour, minute, second = hms >> 12, hms >> 6 & 0x3F, hms & 0x3F
        return f"{sign}{hour:02d}:{minute:02d}:{second:02d}.{micros:06d}"
    ymd, hms = rest >> 17, rest & 0x1FFFF
    year_month, day = ymd >> 5, ymd & 0x1F
    year, month = divmod(year_month, 13)
    date = f"{year:04d}-{month:02d}-{day:02d}"
    if field_type == tm.T_DATE:
        return date
    hour, minute, second = hms >> 12, hms >> 6 & 0x3F, hms & 0x3F
    return f"{date} {hour:02d}:{minute:02d}:{second:02d}.{micros:06d}"
