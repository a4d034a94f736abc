"""Whether a column's type change keeps every value a row already holds, for every source.

A schema change that retypes a column rewrites its existing values at the source without a row
event. Where the new type holds every old value exactly, as the same row-image value, nothing
needs to happen to the replica; otherwise the values may have been rounded, truncated, padded or
converted and the table must be read again (:class:`~sparkcdc.core.existing_rows.ExistingRows`).
:func:`type_change` decides it from the old and new :class:`~sparkcdc.core.schema.Column`, by
the rules below; anything it does not know is a change (never a guess):

==============================  ===========================================================
old -> new                      values kept when
==============================  ===========================================================
integers (MySQL tinyint ..      the new range holds the old one (signedness, widths, BIT(n)
bigint, BIT; PostgreSQL int2 ..  as unsigned n-bit numbers)
int8)
integer -> decimal / float64    the decimal's integer digits hold it; float64: within 2**53
decimal -> decimal              neither the integer digits nor the scale shrink (an unbounded
                                PostgreSQL ``numeric`` holds any)
float32 -> float64              always (a FLOAT(M,D) only to a float without a scale)
strings                         the character set stays, or becomes a Unicode one; the new
                                capacity holds the longest old value (characters for CHAR /
                                VARCHAR, bytes for MySQL's TEXT sizes); MySQL CHAR -> VARCHAR
                                or TEXT (read without its padding) but not VARCHAR -> CHAR
                                (trailing spaces go); PostgreSQL ``bpchar`` only to itself
                                (padding follows the length)
ENUM / SET                      every old member stays (a SET's members keep their order:
                                its value lists them in declaration order); ENUM -> a string
                                type that holds its longest member
binary                          capacity in bytes; MySQL BINARY(n) pads with zero bytes, so
                                only to itself or to a VARBINARY / BLOB that holds n bytes
date, timestamp, time           the same kind, fractional digits not fewer
anything else                   only the same type with the same attributes
==============================  ===========================================================

The column's name and nullability are not its type: a rename is a copy and a column made NOT
NULL is the source's business (:mod:`sparkcdc.core.existing_rows`).
"""

from __future__ import annotations

from dataclasses import replace

from sparkcdc.core import types
from sparkcdc.core.schema import Column

_INT_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64,
             "int2": 16, "int4": 32, "int8": 64}  # fmt: skip
_COUNTED = {"char", "varchar"}  # capacity in characters (MySQL; PostgreSQL's varchar)
_BYTE_TEXT = {"tinytext", "text", "mediumtext", "longtext"}  # MySQL: capacity in bytes
_BINARY = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "bytea"}
_UNICODE = {"utf8mb4", "utf16", "utf16le", "utf32"}  # every character of every charset
_SINGLE = {"latin1", "latin2", "latin5", "latin7", "ascii", "cp1250", "cp1251", "cp1256",
           "cp1257", "cp850", "cp852", "cp866", "koi8r", "koi8u", "greek", "hebrew",
           "armscii8", "dec8", "hp8", "swe7", "keybcs2", "macce", "macroman", "geostd8",
           "tis620", "binary"}  # fmt: skip
_WIDTH = {"ucs2": 2, "utf16": 4, "utf16le": 4, "utf32": 4, "utf8mb3": 3, "utf8": 3,
          "big5": 2, "gbk": 2, "sjis": 2, "cp932": 2, "euckr": 2, "gb2312": 2, "ujis": 3,
          "eucjpms": 3}  # fmt: skip
_NARROWEST = {"ucs2": 2, "utf16": 2, "utf16le": 2, "utf32": 4}
_TEMPORAL = {"date", "timestamp", "timestamp_ntz"}
_FLOATS = {"float32": 32, "float64": 64}
UNBOUNDED = 1 << 62


def type_change(old: Column, new: Column) -> str | None:
    """None when ``new`` holds every value of ``old`` exactly (the module's table), else a
    phrase saying what the change may do (``"decimal(10,3) to decimal(10,1) may round,
    truncate or convert values"``)."""
    if _same_type(old, new) or _keeps(old, new):
        return None
    return f"{describe(old)} to {describe(new)} may round, truncate or convert values"


def value_preserving(old: Column, new: Column) -> bool:
    """Whether a column retyped from ``old`` to ``new`` keeps every value exactly."""
    return type_change(old, new) is None


def describe(col: Column) -> str:
    """The column's type as one short text: ``decimal(10,1)``, ``varchar(4) utf8mb4``."""
    params = [str(p) for p in (col.precision, col.scale) if p is not None]
    if not params and col.length is not None:
        params = [str(col.length)]
    if col.fsp:
        params = [str(col.fsp)]
    text = col.data_type + (f"({','.join(params)})" if params else "")
    if col.values:
        text += "(" + ",".join(repr(v) for v in col.values) + ")"
    if col.unsigned:
        text += " unsigned"
    return text + (f" {col.charset}" if col.charset else "")


def _same_type(old: Column, new: Column) -> bool:
    return replace(old, name=new.name, nullable=new.nullable) == new


def _keeps(old: Column, new: Column) -> bool:
    a, b = old.logical, new.logical
    if not a or not b or types.is_array(a) or types.is_array(b):
        return False
    if _int_range(old) is not None:
        return _number_holds(old, new)
    if a in _FLOATS and b in _FLOATS:  # a FLOAT(M,D) keeps its rounded values
        return _FLOATS[b] >= _FLOATS[a] and new.scale is None
    if _decimal_shape(old) is not None:
        return _decimal_holds(old, new)
    if old.data_type == new.data_type and (a in _TEMPORAL or old.data_type == "time"):
        return a == b and new.fsp >= old.fsp
    if a == "string" and b == "string":
        return _string_holds(old, new)
    if a == "binary" and b == "binary":
        return _binary_holds(old, new)
    return False


# ---------------------------------------------------------------- numbers
def _int_range(col: Column) -> tuple[int, int] | None:
    """The values of an integer column (None: not a plain integer type)."""
    if col.data_type == "bit":
        return 0, (1 << (col.length or 1)) - 1
    bits = _INT_BITS.get(col.data_type)
    if bits is None:
        return None
    if col.unsigned:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _decimal_shape(col: Column) -> tuple[int, int] | None:
    """(integer digits, scale) of a decimal column; (UNBOUNDED, UNBOUNDED) for PostgreSQL's
    ``numeric`` without a typmod; None for any other."""
    if col.data_type not in ("decimal", "numeric"):
        return None
    if col.precision is None:
        return (UNBOUNDED, UNBOUNDED) if col.data_type == "numeric" else None
    scale = col.scale or 0
    return col.precision - scale, scale


def _number_holds(old: Column, new: Column) -> bool:
    lo, hi = _int_range(old) or (0, 0)
    target = _int_range(new)
    if target is not None:
        return target[0] <= lo and hi <= target[1]
    shape = _decimal_shape(new)
    if shape is not None:
        return len(str(max(-lo, hi))) <= shape[0]
    if new.logical == "float64" and new.scale is None:
        return lo >= -(1 << 53) and hi <= 1 << 53
    return False


def _decimal_holds(old: Column, new: Column) -> bool:
    have, want = _decimal_shape(old), _decimal_shape(new)
    if have is None or want is None:
        return False
    return want[0] >= have[0] and want[1] >= have[1]


# ---------------------------------------------------------------- strings
def _charset(col: Column) -> str:
    return {"utf8": "utf8mb3"}.get((col.charset or "").lower(), (col.charset or "").lower())


def _string_holds(old: Column, new: Column) -> bool:
    cs_old, cs_new = _charset(old), _charset(new)
    if cs_old != cs_new and not (cs_new in _UNICODE and cs_old not in ("", "binary")):
        return False
    kinds = (old.data_type, new.data_type)
    if "bpchar" in kinds or "json" in kinds:
        return _same_type(old, replace(new, charset=old.charset))
    if old.data_type in ("enum", "set"):
        return _members_kept(old, new)
    if new.data_type in ("enum", "set") or (new.data_type == "char" != old.data_type):
        return False  # VARCHAR/TEXT -> CHAR loses trailing spaces
    chars = _longest(old)
    return chars is not None and _fits(new, chars)


def _members_kept(old: Column, new: Column) -> bool:
    if new.data_type == old.data_type:
        if old.data_type == "set":
            return new.values[: len(old.values)] == old.values
        return set(old.values) <= set(new.values)
    if old.data_type == "set" or new.data_type == "char":
        return False
    return _fits(new, max((len(v) for v in old.values), default=0))


def _longest(col: Column) -> int | None:
    """The most characters a value of ``col`` holds (UNBOUNDED for PostgreSQL's text)."""
    if col.data_type in _COUNTED:
        return UNBOUNDED if col.length is None else col.length
    if col.data_type in _BYTE_TEXT and col.length is not None:
        return col.length // _NARROWEST.get(_charset(col), 1)
    if col.data_type == "text":
        return UNBOUNDED
    return None


def _fits(new: Column, chars: int) -> bool:
    """Whether ``new`` holds ``chars`` characters of any kind."""
    if new.data_type in _COUNTED:
        return new.length is None or chars <= new.length
    if new.data_type in _BYTE_TEXT and new.length is not None:
        cs = _charset(new)
        width = 1 if cs in _SINGLE else _WIDTH.get(cs, 4)
        return chars < UNBOUNDED and chars * width <= new.length
    return new.data_type == "text" and new.length is None


def _binary_holds(old: Column, new: Column) -> bool:
    if "bytea" in (old.data_type, new.data_type) or new.data_type == "binary":
        return _same_type(old, new)
    if old.data_type not in _BINARY or new.data_type not in _BINARY:
        return False
    return old.length is not None and new.length is not None and old.length <= new.length
