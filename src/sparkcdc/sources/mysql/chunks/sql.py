"""SQL text for the chunk queries of :mod:`sparkcdc.sources.mysql.chunks.dialect`.

Two kinds of expressions are built here, both as plain SQL text without parameters (connectorx
takes none) and without backslashes (``NO_BACKSLASH_ESCAPES`` cannot change their meaning):

- JSON text of column values, built by the server, byte for byte what the binlog decoder
  (:mod:`sparkcdc.sources.mysql.binlog.rowcode`) writes for the same value, following the table in
  :mod:`sparkcdc.core.schema`. FLOAT is the exception: it is printed as the exact double of the
  float32 (``col + 0e0``), which reads back as the same float32 but is longer text than the
  decoder's shortest form; DOUBLE is the server's shortest round-trip text, which may be
  spelled differently from Python's (``1e16`` for ``1e+16``) but parses to the same double.
- The column expressions of typed chunk reads (:func:`value_typed`): the column itself where
  connectorx reads it exactly (with zero dates made NULL), else text. Wide DECIMALs, TIMESTAMP
  and TIME are the text that the JSON value quotes (:func:`value_text`, shared by both), so a
  typed read casts the very string the row-image decoder parses.
- Typed literals of chunk key values (their row-image JSON encoding parsed into Python): the
  literal hook of the keyset SQL written once in :mod:`sparkcdc.sources.keyset_sql`. Strings
  become ``CONVERT(_utf8mb4 X'..' USING cs) COLLATE coll`` so the server compares them with the
  column's collation. NULL sorts before every value, as in ``ORDER BY``.
"""

from __future__ import annotations

import base64
import calendar
import re
from collections.abc import Sequence
from json import dumps
from json.encoder import encode_basestring
from typing import Any

from sparkcdc.core.chunk import KeyColumn
from sparkcdc.core.errors import SourceError
from sparkcdc.core.schema import Column
from sparkcdc.sources import keyset_sql
from sparkcdc.sources.keyset_sql import KeyRange, KeysetSyntax
from sparkcdc.sources.mysql.schema.column_types import BINARY_TYPES, INTEGER_TYPES, STRING_TYPES

_SAFE = re.compile(r"[ -~]*")
_NAME = re.compile(r"\w+")  # a character set name
_DECIMAL = re.compile(r"-?\d+(\.\d+)?")
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_DATETIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}")
_TIME = re.compile(r"-?\d{2,3}:\d\d:\d\d\.\d{6}")
_TIMESTAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{6})Z")
# JSON_QUOTE escapes control characters with upper-case hex (\u001F), Python with lower-case;
# strings holding any are escaped by REPLACE instead, backslash first, exactly as Python does
_ESCAPES = [("\\", "\\\\"), ('"', '\\"')] + [
    (chr(i), encode_basestring(chr(i))[1:-1]) for i in range(32)
]
_CONTROL = "_utf8mb4 X'" + b"[\\x00-\\x1f]".hex() + "'"  # the regex [\x00-\x1f]
_DATETIME_FORMAT = "'%Y-%m-%dT%H:%i:%s.%f'"
_EPOCH = "TIMESTAMP'1970-01-01 00:00:00'"
_ZERO_NULL = frozenset({"date", "datetime", "timestamp"})  # zero dates are JSON null
DATE_TYPES = frozenset({"date", "datetime"})  # read natively: connectorx refuses zero dates
Col = tuple[str, str, str | None, bool]  # name, data type, charset, nullable
CHUNK_KEY_TYPES = frozenset(
    {*INTEGER_TYPES, "year", "bit", "decimal", "char", "varchar", "binary", "varbinary"}
    | {"date", "datetime", "timestamp", "time"}
)


def ident(name: str) -> str:
    """A backtick-quoted identifier."""
    return "`" + name.replace("`", "``") + "`"


def text(value: str) -> str:
    """A utf8mb4 string literal (hex when it holds anything but plain printable ASCII)."""
    if _SAFE.fullmatch(value) and "'" not in value and "\\" not in value:
        return f"'{value}'"
    return f"_utf8mb4 X'{value.encode().hex()}'"


def _utf8(col: str, charset: str | None) -> str:
    """The string column in utf8mb4 (converted by the server unless it is in utf8mb4)."""
    return col if charset == "utf8mb4" else f"CONVERT({col} USING utf8mb4)"


def _string_json(col: str, charset: str | None) -> str:
    s = _utf8(col, charset)
    slow = s
    for raw, escaped in _ESCAPES:
        slow = f"REPLACE({slow},{text(raw)},{text(escaped)})"
    return f"IF({s} REGEXP {_CONTROL},CONCAT('\"',{slow},'\"'),JSON_QUOTE({s}))"


def value_text(col: str, data_type: str) -> str | None:
    """For the types whose JSON value is text made by the server (DECIMAL, DATE, DATETIME,
    TIMESTAMP, TIME): an expression giving that text without its quotes, NULL where
    :func:`value_json` writes ``null`` (NULL, zero and partly-zero dates); None for other
    types. :func:`value_json` quotes exactly this expression."""
    t = data_type.lower()
    if t == "decimal":
        return f"CONCAT({col})"
    if t in ("date", "datetime"):
        fmt = "'%Y-%m-%d'" if t == "date" else _DATETIME_FORMAT
        return (
            f"IF(DAYOFMONTH({col}) AND MONTH({col}) AND YEAR({col}),DATE_FORMAT({col},{fmt}),NULL)"
        )
    if t == "timestamp":  # from the stored UTC seconds, whatever the session's time zone
        utc = f"{_EPOCH}+INTERVAL UNIX_TIMESTAMP({col}) SECOND"
        return f"IF(UNIX_TIMESTAMP({col}),CONCAT(DATE_FORMAT({utc},{_DATETIME_FORMAT}),'Z'),NULL)"
    if t == "time":
        return f"TIME_FORMAT({col},'%H:%i:%s.%f')"
    return None


def value_json(col: str, data_type: str, charset: str | None = None) -> str:
    """An expression giving the JSON text of column ``col`` (SQL), NULL for NULL; ``charset``
    is the column's (strings are converted to utf8mb4 unless they are in it)."""
    t = data_type.lower()
    bare = value_text(col, t)
    if bare is not None:
        quoted = f"CONCAT('\"',{bare},'\"')"
        return f"IFNULL({quoted},'null')" if t in _ZERO_NULL else quoted
    if t in INTEGER_TYPES or t == "double":
        return col
    if t in ("bit", "year"):
        return f"({col}+0)"
    if t == "float":
        return f"({col}+0e0)"
    if t in STRING_TYPES or t in ("enum", "set"):
        return _string_json(col, charset)
    if t in BINARY_TYPES:
        return f"CONCAT('\"',REPLACE(TO_BASE64({col}),{text(chr(10))},''),'\"')"
    raise SourceError(f"column {col} has type {data_type}, which sparkcdc cannot snapshot yet")


def value_typed(col: str, column: Column, zero_dates: bool = True) -> str:
    """The expression a typed chunk read selects for ``column`` (SQL ``col``): the column itself
    for integers, YEAR, FLOAT, DOUBLE, binary strings and DECIMAL(p,s) with s <= 10 and p - s
    <= 18 (read natively, exact), DATE and DATETIME with zero and partly-zero dates made NULL
    (read natively; without ``zero_dates`` the column itself, for a table known to hold none),
    ``col+0`` for BIT (an unsigned integer), the utf8mb4 text for character strings, JSON, ENUM
    and SET, and :func:`value_text` for wider DECIMALs, TIMESTAMP and TIME, which connectorx
    cannot read exactly (a DECIMAL of more than 28 digits fails, TIME may be outside a day)."""
    t = column.data_type.lower()
    if t in DATE_TYPES:
        if not zero_dates:
            return col
        return f"IF(DAYOFMONTH({col}) AND MONTH({col}) AND YEAR({col}),{col},NULL)"
    if t == "decimal" and native_decimal(column):
        return col
    bare = value_text(col, t)
    if bare is not None:
        return bare
    if t in INTEGER_TYPES or t in ("year", "float", "double") or t in BINARY_TYPES:
        return col
    if t == "bit":
        return f"({col}+0)"
    if t in STRING_TYPES or t in ("enum", "set"):
        return _utf8(col, column.charset)
    raise SourceError(
        f"column {col} has type {column.data_type}, which sparkcdc cannot snapshot yet"
    )


def native_decimal(column: Column) -> bool:
    """Whether connectorx reads the DECIMAL column exactly: it makes every value a 28-digit
    decimal with 10 digits after the point (``decimal128(38, 10)``)."""
    p, s = column.precision, column.scale
    return p is not None and s is not None and s <= 10 and p - s <= 18


def json_or_null(col: Col) -> str:
    name, data_type, charset, nullable = col
    expr = value_json(ident(name), data_type, charset)
    return f"IFNULL({expr},'null')" if nullable else expr


def object_json(columns: Sequence[Col]) -> str:
    """The JSON object ``{"name":value,...}`` of the columns, in order, with names escaped as
    the decoder escapes them (``json.dumps``)."""
    parts: list[str] = []
    for i, col in enumerate(columns):
        parts += [text(("{" if i == 0 else ",") + dumps(col[0]) + ":"), json_or_null(col)]
    return f"CONCAT({','.join(parts)},'}}')" if parts else "'{}'"


def array_json(columns: Sequence[Col]) -> str:
    """The JSON array ``[v1,v2]`` of the columns."""
    items = ",',',".join(json_or_null(c) for c in columns)
    return f"CONCAT('[',{items},']')"


def literal(key: KeyColumn, value: object, against_column: bool = True) -> str | None:
    """A typed SQL literal of one key value in its JSON encoding (None for a null value).

    A TIMESTAMP compared with the column is ``FROM_UNIXTIME`` of its UTC seconds (exact in the
    UTC statements of :mod:`.dialect`); between literals it is the UTC datetime itself.
    """
    t = key.data_type.lower()
    if value is None:
        return None
    if t in INTEGER_TYPES or t in ("bit", "year"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"key {key.name}: {value!r} is not an integer")
        return str(value)
    value = str(value)
    if t == "decimal":
        _check(_DECIMAL, key, value)  # a bare literal is an exact DECIMAL already
        if key.precision is None:
            return value
        return f"CAST({value} AS DECIMAL({key.precision},{key.scale or 0}))"
    if t in BINARY_TYPES:
        return f"CAST(X'{base64.b64decode(value, validate=True).hex()}' AS BINARY)"
    if t in ("date", "datetime", "time"):
        _check({"date": _DATE, "datetime": _DATETIME, "time": _TIME}[t], key, value)
        return f"CAST('{value}' AS {'DATE' if t == 'date' else t.upper() + '(6)'})"
    if t == "timestamp":
        m = _check(_TIMESTAMP, key, value)
        if not against_column:
            return f"CAST('{value[:-1]}' AS DATETIME(6))"
        seconds = calendar.timegm(tuple(int(g) for g in m.groups()[:6]) + (0, 0, 0))
        return f"FROM_UNIXTIME({seconds}.{m.group(7)})"
    if t in ("char", "varchar") and key.charset and _NAME.fullmatch(key.charset):
        coll = f" COLLATE {ident(key.collation)}" if key.collation else ""
        return f"CONVERT(_utf8mb4 X'{value.encode().hex()}' USING {key.charset}){coll}"
    raise ValueError(f"key {key.name} of type {key.data_type} cannot bound a chunk")


def _check(pattern: re.Pattern[str], key: KeyColumn, value: str) -> re.Match[str]:
    m = pattern.fullmatch(value)
    if m is None:
        raise ValueError(f"key {key.name}: {value!r} is not a {key.data_type} value")
    return m


def _located(keys: Sequence[KeyColumn], item: Sequence[Any]) -> list[str]:
    """The literals of one value for ``locate`` (between literals: no column to compare with)."""
    return [literal(k, v, False) or "NULL" for k, v in zip(keys, item, strict=True)]


KEYSET = KeysetSyntax(
    literal, nulls_first=True, true="1", false="0", same=lambda a, b: f"{a} <=> {b}"
)


def range_condition(keys: Sequence[KeyColumn], span: KeyRange) -> str:
    """``span`` as a WHERE condition: the shared keyset SQL
    (:func:`sparkcdc.sources.keyset_sql.range_condition`), NULL first."""
    return keyset_sql.range_condition(KEYSET, [ident(k.name) for k in keys], keys, span)


def locate_query(
    keys: Sequence[KeyColumn], values: Sequence[Sequence[Any]], bounds: Sequence[Sequence[Any]]
) -> str:
    """For each value (by index), how many bounds are ``<=`` it, compared by the server with
    the keys' collations (:func:`sparkcdc.sources.keyset_sql.locate_query`)."""
    located = [_located(keys, v) for v in values], [_located(keys, b) for b in bounds]
    return keyset_sql.locate_query(KEYSET, *located)
