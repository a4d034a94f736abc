"""Python values as the bytes of a MySQL 8 row image (``Field::pack`` of each type).

=====================  ==========================================================================
integers               1/2/3/4/8 bytes little-endian, two's complement or unsigned
FLOAT, DOUBLE          IEEE 754 little-endian, 4 and 8 bytes
DECIMAL(p,s)           MySQL's binary decimal: big-endian groups of nine digits (4 bytes), the
                       leading/trailing partial groups in 1-4 bytes, first bit flipped, negative
                       values inverted
BIT(n)                 (n+7)/8 bytes big-endian
YEAR                   1 byte, year - 1900 (0 for 0000)
DATE                   3 bytes little-endian: day + month*32 + year*512
TIME2(fsp)             3 bytes big-endian int part + 0x800000, then 0-3 fraction bytes (fsp 5-6:
                       6 bytes, the packed value + 0x800000000000)
DATETIME2(fsp)         5 bytes big-endian (packed ymd<<17|hms) + 0x8000000000, then 0-3 bytes
TIMESTAMP2(fsp)        4 bytes big-endian seconds since the epoch, then 0-3 bytes
CHAR, BINARY           1 or 2 length bytes (more than 255 bytes in the column), trailing pad
                       (spaces; zero bytes for BINARY) stripped
VARCHAR, VARBINARY     1 or 2 length bytes (max byte length > 255), the bytes
TEXT, BLOB, JSON, GEO  1-4 length bytes (the pack length), the bytes; JSON in binary JSON
ENUM, SET              the 1-based index / the member bitmask in the pack length
=====================  ==========================================================================
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from tests.cases.mysql8 import columns as c
from tests.cases.mysql8.json_binary import document

DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_INT_FMT = {(1, False): "<b", (1, True): "<B", (2, False): "<h", (2, True): "<H",
            (4, False): "<i", (4, True): "<I", (8, False): "<q", (8, True): "<Q"}  # fmt: skip
_CODECS = {"utf8mb4": "utf-8", "utf8mb3": "utf-8", "latin1": "latin-1", "ascii": "ascii"}
_MOMENT = re.compile(
    r"^(-)?(?:(\d{4})-(\d{2})-(\d{2}))?[ T]?(?:(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?$"
)
Encoder = Callable[[Any], bytes]


class JsonValue:
    """A JSON column value given as a Python object (``JsonValue(None)`` is JSON null; a bare
    None in a row is SQL NULL)."""

    def __init__(self, value: Any) -> None:
        self.value = value


def decimal_bin(value: Any, precision: int, scale: int) -> bytes:
    """A DECIMAL(precision, scale) value in MySQL's binary form (``decimal2bin``)."""
    d = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    negative = d < 0
    text = format(abs(d).quantize(Decimal(1).scaleb(-scale)), "f")
    whole, _, frac = text.partition(".")
    intg = precision - scale
    whole = whole.lstrip("0")
    if len(whole) > intg:
        raise ValueError(f"{value} does not fit DECIMAL({precision},{scale})")
    whole, frac = whole.rjust(intg, "0"), frac.ljust(scale, "0")
    intg0, intg0x = divmod(intg, 9)
    frac0, frac0x = divmod(scale, 9)
    out = bytearray()
    if intg0x:
        out += int(whole[:intg0x]).to_bytes(DIG2BYTES[intg0x], "big")
    for i in range(intg0):
        out += int(whole[intg0x + 9 * i : intg0x + 9 * i + 9]).to_bytes(4, "big")
    for i in range(frac0):
        out += int(frac[9 * i : 9 * i + 9]).to_bytes(4, "big")
    if frac0x:
        out += int(frac[9 * frac0 :]).to_bytes(DIG2BYTES[frac0x], "big")
    if negative:
        out = bytearray(b ^ 0xFF for b in out)
    out[0] ^= 0x80
    return bytes(out)


def moment(value: Any) -> tuple[bool, int, int, int, int, int, int, int]:
    """(negative, year, month, day, hour, minute, second, microsecond) of a date/time value:
    a datetime, date, time, timedelta or text such as ``0000-00-00`` or ``-838:59:59.5``."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        v = value
        return False, v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond
    if isinstance(value, dt.date):
        return False, value.year, value.month, value.day, 0, 0, 0, 0
    if isinstance(value, dt.time):
        v = value
        return False, 0, 0, 0, v.hour, v.minute, v.second, v.microsecond
    if isinstance(value, dt.timedelta):
        micros = abs(value) // dt.timedelta(microseconds=1)
        secs, us = divmod(micros, 1_000_000)
        return value < dt.timedelta(0), 0, 0, 0, secs // 3600, secs // 60 % 60, secs % 60, us
    m = _MOMENT.match(str(value).strip())
    if not m:
        raise ValueError(f"not a date or time: {value!r}")
    sign, y, mo, d, h, mi, s, frac = m.groups()
    nums = [int(x or 0) for x in (y, mo, d, h, mi, s)]
    return bool(sign), *nums, int((frac or "0").ljust(6, "0"))  # type: ignore[return-value]


def _c_div(a: int, b: int) -> int:
    """C's integer division (towards zero)."""
    q = abs(a) // b
    return -q if a < 0 else q


def _frac(packed_frac: int, fsp: int, width_for: dict[int, int]) -> bytes:
    n = width_for[fsp]
    if n == 0:
        return b""
    div = {1: 10000, 2: 100, 3: 1}[n]
    return (_c_div(packed_frac, div) & ((1 << (8 * n)) - 1)).to_bytes(n, "big")


_FRAC_BYTES = {0: 0, 1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3}


def _trunc(us: int, fsp: int) -> int:
    step = 10 ** (6 - fsp)
    return us // step * step


def time2(value: Any, fsp: int) -> bytes:
    """TIME(fsp) as MySQL 8 stores it (``my_time_packed_to_binary``)."""
    neg, _, _, days, h, mi, s, us = moment(value)
    h += days * 24
    packed = ((h << 12 | mi << 6 | s) << 24) + _trunc(us, fsp)
    packed = -packed if neg else packed
    if fsp >= 5:
        return (packed + 0x800000000000).to_bytes(6, "big")
    head = (0x800000 + (packed >> 24)).to_bytes(3, "big")
    frac = abs(packed) % (1 << 24) * (-1 if packed < 0 else 1)
    return head + _frac(frac, fsp, _FRAC_BYTES)


def datetime2(value: Any, fsp: int) -> bytes:
    """DATETIME(fsp) as MySQL 8 stores it (``my_datetime_packed_to_binary``)."""
    _, y, mo, d, h, mi, s, us = moment(value)
    ymd = (y * 13 + mo) << 5 | d
    intpart = ymd << 17 | h << 12 | mi << 6 | s
    return (intpart + 0x8000000000).to_bytes(5, "big") + _frac(_trunc(us, fsp), fsp, _FRAC_BYTES)


def timestamp2(value: Any, fsp: int) -> bytes:
    """TIMESTAMP(fsp): seconds since the epoch (UTC) big-endian, then the fraction."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        secs, us = int(value), round((value - int(value)) * 1_000_000)
    else:
        _, y, mo, d, h, mi, s, us = moment(value)
        secs = 0 if y == 0 else calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    return secs.to_bytes(4, "big") + _frac(_trunc(us, fsp), fsp, _FRAC_BYTES)


def date3(value: Any) -> bytes:
    _, y, mo, d, *_ = moment(value)
    return (d + mo * 32 + y * 512).to_bytes(3, "little")


def _text(spec: c.TypeSpec, value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return str(value).encode(_CODECS.get(spec.charset or "", "utf-8"))


def _prefixed(width: int) -> Callable[[bytes], bytes]:
    return lambda raw: len(raw).to_bytes(width, "little") + raw


def encoder(spec: c.TypeSpec) -> Encoder:
    """The function turning a Python value of this column into its row-image bytes."""
    code = spec.code
    if code in (c.T_TINY, c.T_SHORT, c.T_LONG, c.T_LONGLONG):
        pack = struct.Struct(_INT_FMT[(spec.width, spec.unsigned)]).pack
        return lambda v: pack(int(v))
    if code == c.T_INT24:
        signed = not spec.unsigned
        return lambda v: int(v).to_bytes(3, "little", signed=signed)
    if code in (c.T_FLOAT, c.T_DOUBLE):
        fmt = struct.Struct("<f" if code == c.T_FLOAT else "<d").pack
        return lambda v: fmt(float(v))
    if code == c.T_NEWDECIMAL:
        return lambda v: decimal_bin(v, spec.length, spec.scale)
    if code == c.T_BIT:
        n = (spec.length + 7) // 8
        return lambda v: (bytes(v).rjust(n, b"\0") if isinstance(v, bytes) else
                          int(v).to_bytes(n, "big"))  # fmt: skip
    if code == c.T_YEAR:
        return lambda v: bytes([0 if int(v) == 0 else int(v) - 1900])
    if code == c.T_DATE:
        return date3
    if code == c.T_TIME2:
        return lambda v: time2(v, spec.scale)
    if code == c.T_DATETIME2:
        return lambda v: datetime2(v, spec.scale)
    if code == c.T_TIMESTAMP2:
        return lambda v: timestamp2(v, spec.scale)
    if spec.base in ("enum", "set"):
        return _member_encoder(spec)
    if code == c.T_STRING:  # CHAR and BINARY
        pad = b" " if spec.charset else b"\0"
        width = 2 if spec.max_bytes > 255 else 1
        return lambda v: _prefixed(width)(_text(spec, v).rstrip(pad))
    if code == c.T_VARCHAR:
        put = _prefixed(2 if spec.max_bytes > 255 else 1)
        return lambda v: put(_text(spec, v))
    if code in (c.T_BLOB, c.T_GEOMETRY):
        put = _prefixed(spec.width)
        return lambda v: put(_text(spec, v))
    if code == c.T_JSON:
        return lambda v: _prefixed(4)(
            document(v.value if isinstance(v, JsonValue) else v, mysql_order=True)
        )
    raise ValueError(f"no encoder for {spec.column_type}")


def _member_encoder(spec: c.TypeSpec) -> Encoder:
    index = {v.lower(): i for i, v in enumerate(spec.values)}
    width = spec.width
    if spec.base == "enum":

        def enum(v: Any) -> bytes:
            n = v if isinstance(v, int) else (0 if v == "" else index[str(v).lower()] + 1)
            return n.to_bytes(width, "little")

        return enum

    def members(v: Any) -> bytes:
        if isinstance(v, int):
            bits = v
        else:
            names = v.split(",") if isinstance(v, str) else list(v)
            bits = sum(1 << index[str(n).lower()] for n in names if n != "")
        return bits.to_bytes(width, "little")

    return members
