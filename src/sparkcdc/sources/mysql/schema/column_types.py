"""One column-type vocabulary for the catalog and the DDL parser.

Both sides describe a column the way ``information_schema.COLUMNS`` does on the server after the
DDL ran: ``data_type`` is the base type the server stores (aliases such as ``INTEGER``,
``NUMERIC``, ``BOOL``, ``REAL``, ``SERIAL``, ``NCHAR`` or MariaDB's ``JSON`` resolved),
``length`` is characters for CHAR/VARCHAR, bytes for BINARY/VARBINARY, the fixed maximum for the
TEXT and BLOB sizes and bits for BIT; ``precision``/``scale`` are kept for DECIMAL and for FLOAT
and DOUBLE declared as ``(M,D)``; ``fsp`` for TIME, DATETIME and TIMESTAMP; ``charset`` for every
character type (None for binary and non-text types); ``values`` for ENUM and SET. Integer display
widths and ZEROFILL are presentation only and are dropped.

Every column is built here with the logical type its values take (:func:`logical_type`, the
source's type mapping onto :mod:`sparkcdc.core.types`), without loss:

======================  ==================  ==========================================
MySQL/MariaDB type      logical type        row-image JSON value
======================  ==================  ==========================================
TINYINT..BIGINT         int8/16/32/32/64    number (UNSIGNED widens to the next type)
BIGINT UNSIGNED         uint64              number
DECIMAL(p,s), p <= 38   decimal(p,s)        string, exact digits
DECIMAL(p,s), p > 38    string              string, exact digits
FLOAT, DOUBLE           float32, float64    number (shortest round-trip text)
BIT(n), n < 64          int64               number (the bits as an unsigned integer)
BIT(64)                 uint64              number (the bits as an unsigned integer)
YEAR                    int16               number
CHAR..LONGTEXT, JSON    string              string (decoded with the column charset)
ENUM, SET               string              string (SET members joined by ',')
BINARY..LONGBLOB        binary              string, base64 (trailing zero bytes kept)
DATE                    date                "YYYY-MM-DD" (zero dates become null)
DATETIME(fsp)           timestamp_ntz       "YYYY-MM-DDTHH:MM:SS.ffffff"
TIMESTAMP(fsp)          timestamp           "YYYY-MM-DDTHH:MM:SS.ffffffZ" (UTC)
TIME(fsp)               string              "[-]HH[H]:MM:SS.ffffff"
======================  ==================  ==========================================
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sparkcdc.core import types
from sparkcdc.core.chunk import KeyColumn
from sparkcdc.core.schema import Column, TableSchema

INTEGER_TYPES = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
STRING_TYPES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json"}
BINARY_TYPES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_SIGNED = {8: "int8", 16: "int16", 24: "int32", 32: "int32", 64: "int64"}
_UNSIGNED = {8: "int16", 16: "int32", 24: "int32", 32: "int64", 64: "uint64"}
_SIMPLE = {
    "float": "float32",
    "double": "float64",
    "year": "int16",
    "date": "date",
    "datetime": "timestamp_ntz",
    "timestamp": "timestamp",
    "time": "string",
    "enum": "string",
    "set": "string",
}

_SIZES = (255, 65535, 16777215, 4294967295)
TEXT_SIZES = tuple(zip(("tinytext", "text", "mediumtext", "longtext"), _SIZES, strict=True))
BLOB_SIZES = tuple(zip(("tinyblob", "blob", "mediumblob", "longblob"), _SIZES, strict=True))
FIXED_LENGTH = dict(TEXT_SIZES + BLOB_SIZES)
CHAR_TYPES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"}
TIME_TYPES = {"time", "datetime", "timestamp"}
INT_ALIASES = {
    "integer": "int",
    "int4": "int",
    "int1": "tinyint",
    "int2": "smallint",
    "int3": "mediumint",
    "middleint": "mediumint",
    "int8": "bigint",
    "bool": "tinyint",
    "boolean": "tinyint",
}
DECIMAL_ALIASES = {"dec", "numeric", "fixed", "decimal"}
# bytes per character, for choosing the TEXT size that holds TEXT(n)
_SINGLE_BYTE = (
    "latin1 latin2 latin5 latin7 ascii binary cp1250 cp1251 cp1256 cp1257 cp850 cp852 cp866 "
    "koi8r koi8u greek hebrew armscii8 dec8 hp8 swe7 keybcs2 macce macroman geostd8 tis620"
)
_MAXLEN = {
    **{name: 1 for name in _SINGLE_BYTE.split()},
    **{name: 2 for name in ("big5", "gbk", "sjis", "cp932", "euckr", "gb2312", "ucs2")},
    **{name: 3 for name in ("ujis", "eucjpms", "utf8mb3")},
}


def is_binary(col: Column) -> bool:
    """Whether the column's values are bytes, not text (a binary type or charset)."""
    return col.data_type in BINARY_TYPES or (col.charset or "").lower() == "binary"


def bytes_per_char(charset: str) -> int:
    """The most bytes one character takes in ``charset`` (4 for utf8mb4 and the unknown)."""
    return _MAXLEN.get(charset_name(charset), 4)


def charset_name(name: str) -> str:
    """The server's name for a character set (``utf8`` is ``utf8mb3``, ``ascii`` stays)."""
    name = name.lower()
    return {"utf8": "utf8mb3", "unicode": "ucs2"}.get(name, name)


def charset_of_collation(collation: str) -> str:
    return charset_name(collation.lower().split("_", 1)[0])


def parse_quoted_list(text: str) -> tuple[str, ...]:
    """The members of ``'a','b''c','d\\\\e'`` (an ENUM/SET list, with SQL quote escapes)."""
    values: list[str] = []
    i, n = 0, len(text)
    escapes = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "Z": "\x1a"}
    while i < n:
        quote = text[i]
        if quote not in "'\"":
            i += 1
            continue
        i += 1
        buf: list[str] = []
        while i < n:
            ch = text[i]
            if ch == "\\" and i + 1 < n:
                buf.append(escapes.get(text[i + 1], text[i + 1]))
                i += 2
            elif ch == quote and i + 1 < n and text[i + 1] == quote:
                buf.append(quote)
                i += 2
            elif ch == quote:
                i += 1
                break
            else:
                buf.append(ch)
                i += 1
        values.append("".join(buf))
    return tuple(values)


def logical_type(
    data_type: str,
    unsigned: bool = False,
    precision: int | None = None,
    scale: int | None = None,
    length: int | None = None,
) -> str:
    """The logical type of a MySQL/MariaDB column type (the table above); "" for a type
    sparkcdc does not map (the column's values are then refused where they are needed)."""
    t = data_type.lower()
    if t in INTEGER_TYPES:
        bits = INTEGER_TYPES[t]
        return _UNSIGNED[bits] if unsigned else _SIGNED[bits]
    if t == "decimal":
        digits = precision or 10
        if digits > types.MAX_DECIMAL_DIGITS:
            return "string"
        return types.decimal(digits, scale or 0)
    if t == "bit":
        return "uint64" if (length or 1) >= 64 else "int64"
    if t in STRING_TYPES:
        return "string"
    if t in BINARY_TYPES:
        return "binary"
    return _SIMPLE.get(t, "")


def column(name: str, data_type: str, **attrs: Any) -> Column:
    """A :class:`Column` of this source, its logical type mapped (:func:`logical_type`)."""
    built = Column(name, data_type, **attrs)
    return mapped(built)


def key_column(name: str, data_type: str, **attrs: Any) -> KeyColumn:
    """A chunk :class:`KeyColumn` of this source, its logical type mapped."""
    t = data_type.lower()
    logical = logical_type(t, attrs.get("unsigned", False), attrs.get("precision"),
                           attrs.get("scale"), attrs.pop("length", None))  # fmt: skip
    return KeyColumn(name, t, **attrs, logical=logical)


def mapped(col: Column) -> Column:
    """``col`` with the logical type of its MySQL type (after a change of its type)."""
    logical = logical_type(col.data_type, col.unsigned, col.precision, col.scale, col.length)
    return col if col.logical == logical else replace(col, logical=logical)


def mapped_schema(schema: TableSchema) -> TableSchema:
    """``schema`` with every column's logical type mapped (schemas recorded before columns
    carried their logical types lack them)."""
    columns = tuple(mapped(c) for c in schema.columns)
    return schema if columns == schema.columns else replace(schema, columns=columns)


def column_from_catalog(
    name: Any,
    data_type: Any,
    column_type: Any,
    is_nullable: Any,
    precision: Any,
    scale: Any,
    max_length: Any,
    datetime_precision: Any,
    charset: Any,
) -> Column:
    """A :class:`Column` from one ``information_schema.COLUMNS`` row."""
    t = str(data_type).lower()
    ctype = str(column_type).lower()
    col: dict[str, Any] = {
        "name": str(name),
        "data_type": t,
        "nullable": str(is_nullable).upper() == "YES",
        "unsigned": " unsigned" in ctype,
        "charset": None if charset is None else str(charset),
    }
    if t == "decimal" or (t in ("float", "double") and "(" in ctype):
        col["precision"], col["scale"] = _int(precision), _int(scale)
    elif t == "bit":
        col["length"] = _int(precision)
    elif t in ("enum", "set"):
        col["values"] = parse_quoted_list(str(column_type)[len(t) + 1 : -1])
    elif max_length is not None:
        col["length"] = _int(max_length)
    if t in TIME_TYPES:
        col["fsp"] = _int(datetime_precision) or 0
    return mapped(Column(**col))


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


_TYPE_ALIASES = {
    "character": "char",
    "character varying": "varchar",
    "char varying": "varchar",
    "long": "mediumtext",
    "long varchar": "mediumtext",
    "long varbinary": "mediumblob",
    "double precision": "double",
    "real": "double",
    "json": "longtext",
}


def _base_type(type_name: str, charset: str | None) -> tuple[str, str | None]:
    """The server's own name for a declared type and alias (``national`` types: utf8mb3)."""
    t = " ".join(type_name.lower().split())
    if t.startswith("national ") or t in ("nchar", "nvarchar", "nchar varchar"):
        charset = charset or "utf8mb3"
        t = "varchar" if "varchar" in t or "varying" in t else "char"
    t = _TYPE_ALIASES.get(t, t)
    t = INT_ALIASES.get(t, t)
    return ("decimal" if t in DECIMAL_ALIASES else t), charset


def build_column(
    name: str,
    type_name: str,
    params: list[int],
    *,
    unsigned: bool = False,
    nullable: bool = True,
    charset: str | None = None,
    values: tuple[str, ...] = (),
    default_charset: str = "utf8mb4",
    native_json: bool = False,
) -> Column:
    """A :class:`Column` from a declared type (``type_name`` lower-case, aliases allowed, e.g.
    ``national varchar``), resolved the way the server resolves it: JSON is MySQL's own type
    with ``native_json``, MariaDB's alias of LONGTEXT without."""
    if native_json and type_name.lower() == "json":
        return mapped(Column(name=name, data_type="json", nullable=nullable))
    t, charset = _base_type(type_name, charset)
    cs = charset_name(charset or default_charset)
    if type_name.lower() == "json":
        cs = "utf8mb4"
    if cs == "binary" and t in CHAR_TYPES - {"enum", "set"}:
        t = {"char": "binary", "varchar": "varbinary"}.get(t, t.replace("text", "blob"))
    if t == "serial":
        t, unsigned, nullable = "bigint", True, False
    col: dict[str, Any] = {"name": name, "data_type": t, "unsigned": unsigned, "nullable": nullable}
    if t == "float" and params and len(params) == 1:
        t = col["data_type"] = "double" if params[0] > 24 else "float"
        params = []
    if t == "decimal":
        col["precision"] = params[0] if params else 10
        col["scale"] = params[1] if len(params) > 1 else 0
    elif t in ("float", "double") and len(params) == 2:
        col["precision"], col["scale"] = params
    elif t in ("bit", "char", "binary", "varchar", "varbinary"):
        col["length"] = params[0] if params else 1
    elif t in ("text", "blob") and params:
        per_char = 1 if t == "blob" else bytes_per_char(cs)
        sizes = BLOB_SIZES if t == "blob" else TEXT_SIZES
        fits = [s for s, cap in sizes if params[0] * per_char <= cap]
        t = col["data_type"] = fits[0] if fits else sizes[-1][0]
        col["length"] = FIXED_LENGTH[t]
    elif t in FIXED_LENGTH:
        col["length"] = FIXED_LENGTH[t]
    elif t in TIME_TYPES:
        col["fsp"] = params[0] if params else 0
    if t in ("enum", "set"):
        col["values"] = values
    if t in CHAR_TYPES:
        col["charset"] = cs
    return mapped(Column(**col))
