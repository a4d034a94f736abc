"""TABLE_MAP_EVENT: the binlog's description of a table that the following rows events use.

Rows events carry values by column position with a compact per-column encoding; the table map
gives each column's MySQL type code and its metadata (length bytes, precision/scale, fractional
seconds …). Names, signedness and charsets are not in it (only in the optional metadata of
``binlog_row_metadata=MINIMAL/FULL``), which is why schemas are tracked separately
(:mod:`sparkcdc.sources.mysql.schema.tracker`); when written, names and signedness cross-check
the tracked schema.
"""

from __future__ import annotations

from dataclasses import dataclass

# MySQL column type codes (include/mysql_com.h enum_field_types)
T_DECIMAL = 0
T_TINY = 1
T_SHORT = 2
T_LONG = 3
T_FLOAT = 4
T_DOUBLE = 5
T_NULL = 6
T_TIMESTAMP = 7
T_LONGLONG = 8
T_INT24 = 9
T_DATE = 10
T_TIME = 11
T_DATETIME = 12
T_YEAR = 13
T_NEWDATE = 14
T_VARCHAR = 15
T_BIT = 16
T_TIMESTAMP2 = 17
T_DATETIME2 = 18
T_TIME2 = 19
T_JSON = 245
T_NEWDECIMAL = 246
T_ENUM = 247
T_SET = 248
T_TINY_BLOB = 249
T_MEDIUM_BLOB = 250
T_LONG_BLOB = 251
T_BLOB = 252
T_VAR_STRING = 253
T_STRING = 254
T_GEOMETRY = 255


@dataclass(frozen=True, slots=True)
class TableMap:
    """One decoded TABLE_MAP_EVENT.

    ``column_meta[i]`` is the metadata of column i as one integer, decoded per type the way the
    server writes it: VARCHAR/VAR_STRING → max byte length; BLOB/TEXT/JSON/GEOMETRY → number of
    length bytes; NEWDECIMAL → ``precision << 8 | scale``; FLOAT/DOUBLE → byte size;
    BIT → ``bytes << 8 | bits`` as written (byte 0 = bits % 8, byte 1 = bytes);
    STRING/ENUM/SET → ``real_type << 8 | length`` (two bytes as written, first byte high);
    TIMESTAMP2/DATETIME2/TIME2 → fractional-second precision; others → 0.
    ``nullable`` has one bool per column.
    """

    table_id: int
    db: str
    table: str
    column_types: bytes
    column_meta: tuple[int, ...]
    nullable: tuple[bool, ...]
    # from the optional metadata (binlog_row_metadata): every column's name (FULL), and per
    # integer column whether it is unsigned (MINIMAL and FULL); empty when not written
    column_names: tuple[str, ...] = ()
    unsigned: tuple[tuple[int, bool], ...] = ()  # (column index, unsigned)


INTEGERS = (T_TINY, T_SHORT, T_INT24, T_LONG, T_LONGLONG)
SIGNED_TYPES = frozenset({*INTEGERS, T_YEAR, T_DECIMAL, T_NEWDECIMAL, T_FLOAT, T_DOUBLE})
"""The types with a bit in SIGNEDNESS: MySQL's ``has_signedess_information_type``
(``field_common_properties.h``), which the table map's writer asks; YEAR is among them, its bit
0 in MySQL, 1 in MariaDB."""
_SIGNEDNESS, _COLUMN_NAME = 1, 4


def optional_metadata(
    types: bytes, data: bytes, p: int, end: int
) -> tuple[tuple[str, ...], tuple[tuple[int, bool], ...]]:
    """The column names and the integer columns' signedness from a table map's optional
    metadata at ``data[p:end]``: fields of a type byte, a length-encoded length and the
    value. SIGNEDNESS holds a bit per column of :data:`SIGNED_TYPES` (in column order, high bit
    first);
    COLUMN_NAME a length-prefixed name per column. Other fields are skipped."""
    names: tuple[str, ...] = ()
    unsigned: tuple[tuple[int, bool], ...] = ()
    while p < end:
        kind = data[p]
        length, p = read_packed_int(data, p + 1)
        value = data[p : p + length]
        p += length
        if kind == _SIGNEDNESS:
            numeric = [i for i, t in enumerate(types) if t in SIGNED_TYPES]
            bits = [bool(value[k // 8] >> (7 - k % 8) & 1) for k in range(len(numeric))]
            unsigned = tuple(
                (i, b) for i, b in zip(numeric, bits, strict=True) if types[i] in INTEGERS
            )
        elif kind == _COLUMN_NAME:
            out, q = [], 0
            while q < len(value):
                n, q = read_packed_int(value, q)
                out.append(value[q : q + n].decode("utf-8", "replace"))
                q += n
            names = tuple(out)
    return names, unsigned


def read_packed_int(data: bytes, p: int) -> tuple[int, int]:
    """A length-encoded integer at ``p``: (value, position after it)."""
    first = data[p]
    if first < 251:
        return first, p + 1
    if first == 252:
        return data[p + 1] | data[p + 2] << 8, p + 3
    if first == 253:
        return int.from_bytes(data[p + 1 : p + 4], "little"), p + 4
    return int.from_bytes(data[p + 1 : p + 9], "little"), p + 9


def string_type(t: int, meta: int) -> tuple[int, int]:
    """(real type, byte length) of a STRING, ENUM or SET column from its type and metadata:
    the real type is ENUM, SET or a CHAR/BINARY type byte; a CHAR longer than 255 bytes keeps
    the high bits of its length in that byte."""
    real, length = (meta >> 8, meta & 0xFF) if t == T_STRING else (t, meta & 0xFF)
    if real not in (T_ENUM, T_SET) and (real & 0x30) != 0x30:
        length += ((real & 0x30) ^ 0x30) << 4
    return real, length
