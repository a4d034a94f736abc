"""TABLE_MAP and WRITE/UPDATE/DELETE_ROWS_V2 bodies of one table (``rows_event.h``).

TABLE_MAP: table id u48, flags u16 (TM_BIT_LEN_EXACT_F) [post-header]; db (length u8, name, NUL),
table (likewise), column count (packed), type codes, metadata (packed length, bytes), NULL
bitmap, then the optional metadata as type u8, packed length, value fields, in the order
``Table_map_log_event::init_metadata_fields`` writes them: SIGNEDNESS, DEFAULT_CHARSET or
COLUMN_CHARSET, GEOMETRY_TYPE (``binlog_row_metadata=MINIMAL``), then with FULL: COLUMN_NAME,
ENUM_AND_SET_DEFAULT_CHARSET or _COLUMN_CHARSET, SET_STR_VALUE, ENUM_STR_VALUE,
SIMPLE_PRIMARY_KEY and (8.0.23+) COLUMN_VISIBILITY.

Rows v2: table id u48, flags u16, extra-data length u16 (2: none) [post-header]; column count
(packed), columns-present bitmap (and the after image's for UPDATE), then per row a NULL bitmap
over the present columns and each non-NULL value. A statement's rows are cut into events of at
most ``binlog_row_event_max_size`` (8192) bytes of row data, the last flagged STMT_END_F.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tests.cases.mysql8 import columns as c
from tests.cases.mysql8.events import STMT_END_F, TM_BIT_LEN_EXACT_F, packed
from tests.cases.mysql8.values import encoder

SIGNEDNESS, DEFAULT_CHARSET, COLUMN_CHARSET, COLUMN_NAME = 1, 2, 3, 4
SET_STR_VALUE, ENUM_STR_VALUE, GEOMETRY_TYPE, SIMPLE_PRIMARY_KEY = 5, 6, 7, 8
ENUM_AND_SET_DEFAULT_CHARSET, ENUM_AND_SET_COLUMN_CHARSET, COLUMN_VISIBILITY = 10, 11, 12
ROW_EVENT_MAX_SIZE = 8192
_GEOMETRY_TYPES = {"geometry": 0, "point": 1, "linestring": 2, "polygon": 3}


def _bits_msb_first(flags: Sequence[bool]) -> bytes:
    out = bytearray((len(flags) + 7) // 8)
    for i, on in enumerate(flags):
        if on:
            out[i // 8] |= 0x80 >> (i % 8)
    return bytes(out)


def _tlv(kind: int, value: bytes) -> bytes:
    return bytes([kind]) + packed(len(value)) + value


def charset_field(collations: Sequence[int], default_kind: int, column_kind: int) -> bytes:
    """The smaller of the two charset layouts: DEFAULT (the most used collation, then column
    index and collation pairs for the others) or COLUMN (every column's collation)."""
    if not collations:
        return b""
    counts = Counter(collations)
    most, most_count = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    n = len(collations)
    if n < 1 + (n - most_count) * 2:
        return _tlv(column_kind, b"".join(packed(x) for x in collations))
    pairs = b"".join(packed(i) + packed(x) for i, x in enumerate(collations) if x != most)
    return _tlv(default_kind, packed(most) + pairs)


def optional_metadata(table: c.Table, full: bool, visibility: bool = True) -> bytes:
    """The optional metadata fields MySQL 8 writes (``full``: binlog_row_metadata=FULL)."""
    specs = table.specs
    out = b""
    numeric = [s.unsigned for s in specs if s.code in c.NUMERIC]
    if numeric:
        out += _tlv(SIGNEDNESS, _bits_msb_first(numeric))
    out += charset_field([s.collation for s in specs if s.is_character], DEFAULT_CHARSET,
                         COLUMN_CHARSET)  # fmt: skip
    geometry = [_GEOMETRY_TYPES[s.base] for s in specs if s.code == c.T_GEOMETRY]
    if geometry:
        out += _tlv(GEOMETRY_TYPE, b"".join(packed(g) for g in geometry))
    if not full:
        return out
    names = b"".join(packed(len(n)) + n for n in (col.name.encode() for col in table.columns))
    out += _tlv(COLUMN_NAME, names)
    out += charset_field([s.collation for s in specs if s.is_enum_or_set],
                         ENUM_AND_SET_DEFAULT_CHARSET, ENUM_AND_SET_COLUMN_CHARSET)  # fmt: skip
    for base, kind in (("set", SET_STR_VALUE), ("enum", ENUM_STR_VALUE)):
        lists = [s.values for s in specs if s.base == base]
        if lists:
            out += _tlv(kind, b"".join(
                packed(len(vs)) + b"".join(packed(len(v.encode())) + v.encode() for v in vs)
                for vs in lists
            ))  # fmt: skip
    if table.primary_key:
        out += _tlv(SIMPLE_PRIMARY_KEY, b"".join(packed(i) for i in table.key_indexes))
    if visibility:
        out += _tlv(COLUMN_VISIBILITY, _bits_msb_first([True] * len(specs)))
    return out


class TableLayout:
    """The TABLE_MAP body and the rows-event makers of one table."""

    def __init__(self, table: c.Table, row_metadata: str = "FULL", visibility: bool = True):
        self.table = table
        self.ncols = len(table.columns)
        self.encoders = [encoder(s) for s in table.specs]
        self.nullable = table.nullable
        tid = struct.pack("<Q", table.table_id)[:6]
        nb = (self.ncols + 7) // 8
        db, name = table.db.encode(), table.name.encode()
        self.table_map_body = (
            tid + struct.pack("<H", TM_BIT_LEN_EXACT_F)
            + bytes([len(db)]) + db + b"\0" + bytes([len(name)]) + name + b"\0"
            + packed(self.ncols) + bytes(s.code for s in table.specs)
            + packed(sum(len(s.meta) for s in table.specs)) + b"".join(s.meta for s in table.specs)
            + sum(1 << i for i, n in enumerate(self.nullable) if n).to_bytes(nb, "little")
        )  # fmt: skip
        if row_metadata.upper() in ("MINIMAL", "FULL"):
            self.table_map_body += optional_metadata(table, row_metadata.upper() == "FULL",
                                                     visibility)  # fmt: skip
        present = b"\xff" * nb  # MySQL sets every bit of the bytes (bitmap_set_all)
        head = packed(self.ncols) + present
        self._tid = tid
        self._after = {"c": head, "d": head, "u": head + present}
        self._nb = nb

    def image(self, row: Any) -> bytes:
        """One row image: the NULL bitmap, then every non-NULL value."""
        values = self.table.row_tuple(row)
        nulls = 0
        parts = []
        for i, (value, enc) in enumerate(zip(values, self.encoders, strict=True)):
            if value is None:
                if not self.nullable[i]:
                    col = self.table.columns[i].name
                    raise ValueError(f"{self.table.db}.{self.table.name}.{col} is NOT NULL")
                nulls |= 1 << i
            else:
                parts.append(enc(value))
        return nulls.to_bytes(self._nb, "little") + b"".join(parts)

    def rows_bodies(self, kind: str, images: Sequence[bytes]) -> list[bytes]:
        """The bodies of one statement's rows events (``images``: one per row, an UPDATE's
        before and after image joined), cut at ROW_EVENT_MAX_SIZE, the last with STMT_END_F."""
        groups: list[list[bytes]] = [[]]
        size = 0
        for image in images:
            if groups[-1] and size + len(image) > ROW_EVENT_MAX_SIZE:
                groups.append([])
                size = 0
            groups[-1].append(image)
            size += len(image)
        after = self._after[kind]
        last = len(groups) - 1
        return [
            self._tid + struct.pack("<HH", STMT_END_F if i == last else 0, 2) + after
            + b"".join(group)
            for i, group in enumerate(groups)
        ]  # fmt: skip
