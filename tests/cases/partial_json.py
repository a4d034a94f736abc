"""PARTIAL_UPDATE_ROWS (39) and UPDATE_ROWS v2 (31) event bodies built byte by byte from MySQL's
layout (libbinlogevents ``rows_event.cpp``; ``pack_row`` in ``sql/rpl_record.cc``;
``Json_diff_vector::write_binary`` in ``sql/json_diff.cc``), for the partial JSON tests.

A row image is given as one entry per present column: the column's encoded value (with its
length prefix, as :func:`int32`, :func:`varchar`, :func:`json_value`, :func:`diffs` build them)
or None for NULL.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from sparkcdc.sources.mysql.binlog import json_doc
from tests.cases.mysql8.events import packed as packed

HEADER = bytes(range(19))  # a stand-in common header, which the rewrite must keep as it is
REPLACE, INSERT, REMOVE = 0, 1, 2

Image = Sequence[bytes | None]


def document(value: object) -> bytes:
    """A JSON value in MySQL's binary JSON."""
    return json_doc.encode(json_doc.from_python(value))


def int32(v: int) -> bytes:
    return struct.pack("<i", v)


def varchar(text: str) -> bytes:
    """A VARCHAR of at most 255 bytes: a 1-byte length, then the bytes."""
    raw = text.encode()
    return bytes([len(raw)]) + raw


def json_value(value: object) -> bytes:
    """A full JSON column value: a 4-byte length (the column's metadata), then the document."""
    doc = document(value)
    return struct.pack("<I", len(doc)) + doc


def diff(op: int, path: str, value: object = None, raw: bytes | None = None) -> bytes:
    """One diff: operation, packed path length, path, and for REPLACE/INSERT the packed
    length and binary JSON of ``value`` (or the bytes ``raw``)."""
    out = bytes([op]) + packed(len(path.encode())) + path.encode()
    if op != REMOVE:
        doc = document(value) if raw is None else raw
        out += packed(len(doc)) + doc
    return out


def diffs(*items: bytes) -> bytes:
    """A partial JSON column value: the diffs' total length as a uint32, then the diffs."""
    body = b"".join(items)
    return struct.pack("<I", len(body)) + body


def bitmap(bits: Sequence[int], nbits: int) -> bytes:
    """A bitmap of ``nbits`` bits (low bit first) with ``bits`` set."""
    value = sum(1 << b for b in bits)
    return value.to_bytes((nbits + 7) // 8, "little")


def image(values: Image) -> bytes:
    """A row image: the null bitmap over the present columns, then the non-NULL values."""
    nulls = bitmap([k for k, v in enumerate(values) if v is None], len(values))
    return nulls + b"".join(v for v in values if v is not None)


def partial_row(before: Image, after: Image, partial: Sequence[int] | None, njson: int) -> bytes:
    """A row of a PARTIAL_UPDATE_ROWS event; ``partial`` lists the partial JSON columns by their
    rank among the table's JSON columns (None: value_options 0 and no partial bitmap)."""
    options = packed(0) if partial is None else packed(1) + bitmap(partial, njson)
    return image(before) + options + image(after)


def full_row(before: Image, after: Image) -> bytes:
    """A row of an UPDATE_ROWS event."""
    return image(before) + image(after)


def event(ncols: int, before: Sequence[int], after: Sequence[int], rows: Sequence[bytes]) -> bytes:
    """The common header and body of an UPDATE_ROWS v2 / PARTIAL_UPDATE_ROWS event of table
    id 7 with some extra data (its length counts its own two bytes)."""
    extra = b"\x00\x01\x00"  # one extra-data block as the server may write it (skipped whole)
    head = (7).to_bytes(6, "little") + b"\x01\x00" + struct.pack("<H", 2 + len(extra)) + extra
    return (
        HEADER
        + head
        + packed(ncols)
        + bitmap(before, ncols)
        + bitmap(after, ncols)
        + b"".join(rows)
    )
