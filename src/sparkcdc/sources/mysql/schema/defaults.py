"""The value a MySQL/MariaDB column gives rows that existed before it: its DEFAULT literal, or
the server's implicit default, as the row image's JSON value (:mod:`sparkcdc.core.types`).

``ALTER TABLE … ADD COLUMN`` gives every existing row the column's default without a row event;
so does a NOT NULL column added without one (the *implicit* default: ``0``, ``''``, the first
ENUM member …), and making a nullable column NOT NULL turns its NULLs into the implicit default
outside strict SQL mode (an ENUM's NULL then becomes ``''``, not a member). Each value is written
the way the binlog reader writes the same value of the column, so the replica's row equals the
one a row event would have given:

==================  ===============================================================
integers, YEAR      the literal's number, rounded half away from zero; BIT the
                    literal's bits as an unsigned number
DECIMAL(p,s)        its digits at scale ``s`` (``"2.50"``), rounded half away from zero
FLOAT, DOUBLE       the number (FLOAT(M,D): not computed)
strings             the literal's text (CHAR without trailing spaces); ENUM the member it
                    names, SET its members in declaration order
binary              the literal's bytes, BINARY(n) padded with zero bytes to n, base64
DATE, DATETIME      ``YYYY-MM-DD`` / ``YYYY-MM-DDTHH:MM:SS.ffffff``; zero dates null
TIME                ``[-]HH:MM:SS.ffffff``
==================  ===============================================================

What cannot be computed exactly raises :class:`NotExact` with the reason: an expression or a
function (``CURRENT_TIMESTAMP``, ``uuid()``), a TIMESTAMP literal (it is read in the session's
time zone, which the log does not say), MySQL's JSON, a literal the column cannot hold as
written (the server would round or convert it in ways not followed here).
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from sparkcdc.core.json_value import JSONValue
from sparkcdc.core.schema import Column
from sparkcdc.sources.mysql.binlog.values import python_codec
from sparkcdc.sources.mysql.ddl.statements import Default
from sparkcdc.sources.mysql.schema.column_types import (
    BINARY_TYPES,
    INTEGER_TYPES,
    STRING_TYPES,
    is_binary,
)

_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_DATETIME = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d*))?)?"
)
_TIME = re.compile(r"(-?)(\d{1,3}):(\d{1,2}):(\d{1,2})(?:\.(\d*))?")
_ZERO_DATE = ("0000-00-00", "00000000")


class NotExact(Exception):
    """The value the rows got is not computed here (the message: why, as a phrase)."""


def literal_value(col: Column, default: Default) -> JSONValue:
    """The JSON value rows get from ``col``'s DEFAULT ``default`` (NotExact: not computed)."""
    if default.kind == "null":
        return None
    if default.kind == "expression":
        raise NotExact(f"DEFAULT {default.text} gives each row a value the log does not hold")
    t = col.data_type
    if t in INTEGER_TYPES or t in ("bit", "year"):
        return _integer(col, default)
    if t == "decimal":
        return _decimal(col, _number_text(col, default))
    if t in ("float", "double"):
        if col.scale is not None:
            raise NotExact(f"{t}({col.precision},{col.scale}) rounds its DEFAULT")
        return float(Decimal(_number_text(col, default)))
    if t in ("enum", "set") and default.kind == "number" and default.text.isdigit():
        return _numbered(col, int(default.text))
    if t in ("enum", "set"):
        return _members(col, _text(col, default))
    if is_binary(col):
        return _binary(col, default)
    if t in STRING_TYPES and t != "json":
        return _string(col, _text(col, default))
    if t in ("date", "datetime"):
        return _date_time(col, _text(col, default))
    if t == "time":
        return _time(col, _text(col, default))
    raise NotExact(f"the DEFAULT of a {t} column is not computed from the DDL")


def implicit_value(col: Column, added: bool) -> JSONValue:
    """The implicit default rows get in a NOT NULL ``col`` without a DEFAULT: as a column
    ``added`` to them, else as the value their NULL became (NotExact: not computed)."""
    t = col.data_type
    if t in INTEGER_TYPES or t in ("bit", "year", "float", "double"):
        return 0.0 if t in ("float", "double") else 0
    if t == "decimal":
        return _decimal(col, "0")
    if t == "enum":
        return col.values[0] if added and col.values else ""
    if t == "binary":
        return _base64(bytes(col.length or 0))
    if t in BINARY_TYPES or (t in STRING_TYPES and t != "json") or t == "set":
        return "" if not is_binary(col) else _base64(b"")
    if t in ("date", "datetime"):
        return None  # the zero date, which the replica holds as null
    if t == "time":
        return "00:00:00.000000"
    raise NotExact(f"the implicit default of a NOT NULL {t} column depends on server settings")


# ---------------------------------------------------------------- numbers
def _number_text(col: Column, default: Default) -> str:
    if default.kind in ("number", "boolean"):
        return default.text
    if default.kind == "bits":
        return str(int.from_bytes(default.bits, "big"))
    text = default.text.strip()
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        return text
    raise NotExact(f"the DEFAULT {default.text!r} of {col.name} is converted by the server")


def _integer(col: Column, default: Default) -> int:
    if col.data_type == "bit" and default.kind not in ("number", "bits", "boolean"):
        raise NotExact(f"the DEFAULT {default.text!r} of BIT column {col.name} is converted")
    value = int(Decimal(_number_text(col, default)).to_integral_value(ROUND_HALF_UP))
    if col.data_type == "year":
        return _year(col, value, default.kind == "number")
    if col.data_type == "bit":
        bits = col.length or 1
        ok = 0 <= value < 1 << bits
    else:
        size = INTEGER_TYPES[col.data_type]
        lo, hi = (0, (1 << size) - 1) if col.unsigned else (-(1 << size - 1), (1 << size - 1) - 1)
        ok = lo <= value <= hi
    if not ok:
        raise NotExact(f"the DEFAULT {value} is out of the range of {col.name}")
    return value


def _year(col: Column, value: int, numeric: bool) -> int:
    if value == 0 and numeric or 1901 <= value <= 2155:
        return value
    if numeric and 1 <= value <= 99:
        return value + (2000 if value < 70 else 1900)
    raise NotExact(f"the DEFAULT {value} of YEAR column {col.name} is converted by the server")


def _decimal(col: Column, text: str) -> str:
    scale, precision = col.scale or 0, col.precision or 10
    try:
        value = Decimal(text).quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP)
    except InvalidOperation as exc:
        raise NotExact(f"the DEFAULT {text} does not fit {col.name}") from exc
    if value.adjusted() >= precision - scale:
        raise NotExact(f"the DEFAULT {text} does not fit decimal({precision},{scale})")
    return f"{abs(value) if value.is_zero() else value:f}"


# ---------------------------------------------------------------- text and bytes
def _text(col: Column, default: Default) -> str:
    """A literal as the text it stores in a character column."""
    if default.kind in ("string", "number", "boolean"):
        return default.text
    codec, _ = python_codec(default.text or col.charset)
    try:
        return default.bits.decode(codec)
    except (UnicodeDecodeError, LookupError) as exc:
        raise NotExact(f"the DEFAULT of {col.name} is not text in its character set") from exc


def _string(col: Column, text: str) -> str:
    if col.data_type == "char":
        text = text.rstrip(" ")  # read back without the padding, as the binlog holds it
    codec, _ = python_codec(col.charset)
    try:
        text.encode(codec)
    except (UnicodeEncodeError, LookupError) as exc:
        raise NotExact(f"the DEFAULT of {col.name} has characters {col.charset} lacks") from exc
    if col.length is not None and col.data_type in ("char", "varchar") and len(text) > col.length:
        raise NotExact(f"the DEFAULT of {col.name} is longer than the column")
    return text


def _members(col: Column, text: str) -> str:
    """The ENUM member or SET members ``text`` names, as the column spells them."""
    wanted = [text] if col.data_type == "enum" else text.split(",") if text else []
    found = []
    for item in wanted:
        item = item.rstrip(" ")
        exact = [v for v in col.values if v == item]
        loose = [v for v in col.values if v.lower() == item.lower()]
        match = exact or (loose if len(loose) == 1 else [])
        if not match:
            raise NotExact(f"the DEFAULT {text!r} of {col.name} names no single member")
        found.append(match[0])
    if col.data_type == "enum":
        return found[0]
    return ",".join(v for v in col.values if v in found)


def _numbered(col: Column, number: int) -> str:
    """An ENUM member by its index (1-based; 0 is ``''``), SET members by their bits."""
    if col.data_type == "enum":
        if number > len(col.values):
            raise NotExact(f"the DEFAULT {number} of {col.name} names no member")
        return "" if number == 0 else col.values[number - 1]
    if number >> len(col.values):
        raise NotExact(f"the DEFAULT {number} of {col.name} names bits beyond its members")
    return ",".join(v for i, v in enumerate(col.values) if number >> i & 1)


def _binary(col: Column, default: Default) -> str:
    data = default.bits if default.kind == "bits" else default.text.encode()
    if col.length is not None and col.data_type in ("binary", "varbinary"):
        if len(data) > col.length:
            raise NotExact(f"the DEFAULT of {col.name} is longer than the column")
        if col.data_type == "binary":
            data = data.ljust(col.length, b"\0")
    return _base64(data)


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# ---------------------------------------------------------------- dates and times
def _date_time(col: Column, text: str) -> str | None:
    text = text.strip()
    if text.startswith(_ZERO_DATE):
        return None
    found = _DATETIME.fullmatch(text) if col.data_type == "datetime" else _DATE.fullmatch(text)
    if found is None:
        raise NotExact(f"the DEFAULT {text!r} of {col.name} is not a date written in full")
    parts = found.groups()
    try:
        day = dt.date(int(parts[0]), int(parts[1]), int(parts[2]))
    except ValueError:
        return None  # a partly-zero date: null, as the reader gives it
    if col.data_type == "date":
        return day.isoformat()
    clock = [int(p or 0) for p in parts[3:6]]
    fraction = parts[6] or ""
    if len(fraction) > col.fsp or clock[0] > 23 or clock[1] > 59 or clock[2] > 59:
        raise NotExact(f"the DEFAULT {text!r} of {col.name} is rounded by the server")
    return f"{day.isoformat()}T{clock[0]:02d}:{clock[1]:02d}:{clock[2]:02d}.{fraction:0<6}"


def _time(col: Column, text: str) -> str:
    found = _TIME.fullmatch(text.strip())
    if found is None:
        raise NotExact(f"the DEFAULT {text!r} of {col.name} is not a time written in full")
    sign, hours, minutes, seconds, fraction = found.groups()
    if int(minutes) > 59 or int(seconds) > 59 or len(fraction or "") > col.fsp:
        raise NotExact(f"the DEFAULT {text!r} of {col.name} is converted by the server")
    negative = sign and (int(hours) or int(minutes) or int(seconds) or int(fraction or 0))
    clock = f"{int(hours):02d}:{minutes:0>2}:{seconds:0>2}.{fraction or '':0<6}"
    return f"-{clock}" if negative else clock
