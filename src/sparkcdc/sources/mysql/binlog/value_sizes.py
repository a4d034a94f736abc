"""The byte length of one column value in a rows event's row image, for every binlog type.

Walking a row image without decoding it (to copy it, or to find one column in it) needs each
present, non-NULL value's length. It follows from the table map's type code and metadata
(:class:`~sparkcdc.sources.mysql.binlog.tablemap.TableMap` documents how ``meta`` is packed)
and, for variable-length types, from the value's own length prefix. This is MySQL's
``calc_field_size`` (libbinlogevents ``binary_log_funcs.cpp``):

- fixed: TINY/YEAR 1, SHORT 2, INT24 3, LONG 4, LONGLONG 8, NULL 0, DATE/NEWDATE/TIME 3,
  TIMESTAMP 4, DATETIME 8; FLOAT, DOUBLE (and the old DECIMAL) take their metadata as size;
- TIME2 3, TIMESTAMP2 4, DATETIME2 5 bytes plus ``(fsp + 1) // 2`` fraction bytes;
- NEWDECIMAL: 4 bytes per nine digits plus 0–4 for the rest, integer and fraction parts apart;
- BIT: the whole bytes plus one when there are leftover bits;
- ENUM/SET (type STRING with the real type in the metadata): the pack length, 1–2 / 1–8;
- CHAR/BINARY (STRING): a 1-byte length prefix, 2 bytes when the column's maximum byte length
  is over 255; VARCHAR/VARBINARY: the same by the metadata's maximum length;
- BLOB/TEXT/JSON/GEOMETRY: a little-endian length prefix of ``meta`` (1–4) bytes.
"""

from __future__ import annotations

from sparkcdc.sources.mysql.binlog import tablemap as tm
from sparkcdc.sources.mysql.binlog import values as vals

_FIXED = {
    tm.T_TINY: 1,
    tm.T_YEAR: 1,
    tm.T_SHORT: 2,
    tm.T_INT24: 3,
    tm.T_LONG: 4,
    tm.T_LONGLONG: 8,
    tm.T_NULL: 0,
    tm.T_DATE: 3,
    tm.T_NEWDATE: 3,
    tm.T_TIME: 3,
    tm.T_TIMESTAMP: 4,
    tm.T_DATETIME: 8,
}
_TEMPORAL2 = {tm.T_TIME2: 3, tm.T_TIMESTAMP2: 4, tm.T_DATETIME2: 5}
_BLOBS = (tm.T_TINY_BLOB, tm.T_MEDIUM_BLOB, tm.T_LONG_BLOB, tm.T_BLOB, tm.T_GEOMETRY, tm.T_JSON)


def value_size(t: int, meta: int, data: bytes, p: int) -> int:
    """The byte length of the value of a column of binlog type ``t`` (table-map metadata
    ``meta``) that starts at ``data[p]``, length prefix included. ValueError for a type code
    no binlog writes."""
    fixed = _FIXED.get(t)
    if fixed is not None:
        return fixed
    if t in _TEMPORAL2:
        return _TEMPORAL2[t] + (meta + 1) // 2
    if t in (tm.T_FLOAT, tm.T_DOUBLE, tm.T_DECIMAL):
        return meta or (4 if t == tm.T_FLOAT else 8)
    if t == tm.T_NEWDECIMAL:
        return vals.DecimalLayout(meta >> 8, meta & 0xFF).size
    if t == tm.T_BIT:
        return (meta >> 8) + (1 if meta & 0xFF else 0)
    if t in (tm.T_VARCHAR, tm.T_VAR_STRING):
        return _prefixed(2 if meta > 255 else 1, data, p)
    if t in _BLOBS:
        return _prefixed(meta, data, p)
    if t in (tm.T_STRING, tm.T_ENUM, tm.T_SET):
        real, length = tm.string_type(t, meta)
        if real in (tm.T_ENUM, tm.T_SET):
            return length
        return _prefixed(2 if length > 255 else 1, data, p)
    raise ValueError(f"binlog type code {t} has no known value layout")


def _prefixed(width: int, data: bytes, p: int) -> int:
    """A value behind a little-endian length of ``width`` bytes: prefix plus contents."""
    if not 1 <= width <= 4 or p + width > len(data):
        raise ValueError(f"a {width}-byte length prefix does not fit the row image")
    return width + int.from_bytes(data[p : p + width], "little")
