"""Hand-built binlog events, laid out as servers write them: a format description, a table map
of ``shop.orders`` and rows events over it."""

from __future__ import annotations

import struct
import zlib

from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog import tablemap as tm
from sparkcdc.sources.mysql.binlog.tablemap import TableMap
from sparkcdc.sources.mysql.schema.column_types import column


def event(type_: int, body: bytes, checksum: bool = True, next_pos: int = 1000) -> bytes:
    size = 19 + len(body) + (4 if checksum else 0)
    data = struct.pack("<IBIIIH", 1700000000, type_, 7, size, next_pos, 0) + body
    return data + struct.pack("<I", zlib.crc32(data)) if checksum else data


POST_HEADERS = (
    bytes(
        [
            56,
            13,
            0,
            8,
            0,
            18,
            0,
            4,
            4,
            4,
            4,
            18,
            0,
            0,
            228,
            0,
            4,
            26,
            8,
            0,
            0,
            0,
            8,
            8,
            8,
            2,
            0,
            0,
            0,
            10,
            10,
            10,
        ]
    )
    + bytes(128)
    + bytes([4, 19, 4, 0, 13])
)


def fde(version: str = "10.11.6-MariaDB-log", algorithm: int | None = 1) -> bytes:
    body = struct.pack("<H", 4) + version.encode().ljust(50, b"\0") + struct.pack("<IB", 0, 19)
    body += POST_HEADERS
    if algorithm is None:
        return event(ev.FORMAT_DESCRIPTION, body, checksum=False)
    return event(ev.FORMAT_DESCRIPTION, body + bytes([algorithm]))


SCHEMA = TableSchema(
    "shop",
    "orders",
    (
        column("id", "int", unsigned=True, nullable=False),
        column("note", "varchar", charset="latin1"),
        column("amount", "decimal", precision=14, scale=2),
    ),
    ("id",),
)
TMAP = TableMap(
    1,
    "shop",
    "orders",
    bytes([tm.T_LONG, tm.T_VARCHAR, tm.T_NEWDECIMAL]),
    (0, 20, 14 << 8 | 2),
    (False, True, True),
)


def row(id_: int, note: bytes | None, amount: bytes | None) -> bytes:
    nulls = (2 if note is None else 0) | (4 if amount is None else 0)
    out = bytes([nulls]) + struct.pack("<I", id_)
    if note is not None:
        out += bytes([len(note)]) + note
    return out + (amount or b"")


def rows_event(*rows: bytes, update: bool = False) -> bytes:
    present = b"\x07\x07" if update else b"\x07"
    return struct.pack("<Q", 1)[:6] + b"\x00\x00" + b"\x03" + present + b"".join(rows)
