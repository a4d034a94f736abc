"""MySQL 8's PARTIAL_UPDATE_ROWS_EVENT (type 39) rewritten as the UPDATE_ROWS_EVENT v2 (31) it
stands for, so the ordinary rows decoder reads it.

With ``binlog_row_value_options=PARTIAL_JSON`` MySQL logs every row UPDATE as type 39, laid
out as an UPDATE_ROWS v2 event (libbinlogevents ``rows_event.cpp``, ``Rows_event``)::

    table id u48, flags u16, extra-data length u16 (counting itself), extra data
    column count (packed int), columns-before bitmap, columns-after bitmap
    rows: before image (null bitmap over the before-present columns, values)
          value_options (packed int: 1 = PARTIAL_JSON_UPDATES, 0 = none; nothing else is valid)
          [value_options 1: partial bitmap, one bit per JSON column of the table, present in the
           after image or not, in column order, low bit first]
          after image (null bitmap, values)

(``pack_row``/``unpack_row`` in MySQL's ``sql/rpl_record.cc``.) A non-NULL JSON column whose
partial bit is set holds a diff list (:mod:`.json_diff`) instead of its document; the others
hold full values. The rewrite drops value_options and the partial bitmap and puts, for each
partial column, the before image's document with the diffs applied (``Field_json::unpack_diff``)
back into binary JSON behind the column's length prefix. When the before image lacks that
column (``binlog_row_image`` MINIMAL or NOBLOB) the new document cannot be known.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from sparkcdc.core.errors import SourceError
from sparkcdc.sources.mysql.binlog import json_doc
from sparkcdc.sources.mysql.binlog import tablemap as tm
from sparkcdc.sources.mysql.binlog.json_binary import BinaryJsonError
from sparkcdc.sources.mysql.binlog.json_diff import DiffError, apply_diffs, read_diffs
from sparkcdc.sources.mysql.binlog.tablemap import TableMap, read_packed_int
from sparkcdc.sources.mysql.binlog.value_sizes import value_size

PARTIAL_JSON_UPDATES = 1
_DIFF_LENGTH = 4  # a diff list's length is a uint32 (Json_diff_vector::write_binary)
_WAY_OUT = "set binlog_row_image=FULL, or binlog_row_value_options=''"


@dataclass(frozen=True, slots=True)
class _Table:
    map: TableMap
    where: str
    names: Sequence[str]
    json_columns: tuple[int, ...]

    def name(self, i: int) -> str:
        return self.names[i] if i < len(self.names) else f"#{i + 1}"


def full_update_event(
    data: bytes,
    start: int,
    end: int,
    table_map: TableMap,
    where: str,
    column_names: Sequence[str] = (),
) -> bytes:
    """``data[:start]`` (the common header, unchanged) and the body of the UPDATE_ROWS v2 event
    equivalent to the PARTIAL_UPDATE_ROWS event in ``data[start:end]`` (no checksum). Columns
    are named in errors by ``column_names`` (else the table map's names, else their number)."""
    types = table_map.column_types
    names = column_names or table_map.column_names
    table = _Table(table_map, where, names, tuple(i for i, t in enumerate(types) if t == tm.T_JSON))
    try:
        p = start + 8
        p += data[p] | data[p + 1] << 8
        ncols, p = read_packed_int(data, p)
        if ncols != len(types):
            raise SourceError(
                f"a rows event of {where} has {ncols} columns but its table map has {len(types)}",
                table=where,
            )
        nbm = (ncols + 7) // 8
        before, after = _columns(data, p, ncols), _columns(data, p + nbm, ncols)
        p += 2 * nbm
        out = bytearray(data[:p])
        while p < end:
            p = _row(table, data, p, end, (before, after), out)
    except (IndexError, ValueError, struct.error) as exc:
        raise SourceError(
            f"a partial update rows event of {where} is damaged or does not match its table "
            f"map ({exc})",
            table=where,
        ) from exc
    if p != end:
        raise SourceError(
            f"a partial update rows event of {where} does not end where its rows end", table=where
        )
    return bytes(out)


def _columns(data: bytes, p: int, ncols: int) -> tuple[int, ...]:
    bits = int.from_bytes(data[p : p + (ncols + 7) // 8], "little")
    return tuple(i for i in range(ncols) if bits >> i & 1)


def _row(
    table: _Table,
    data: bytes,
    p: int,
    end: int,
    images: tuple[tuple[int, ...], tuple[int, ...]],
    out: bytearray,
) -> int:
    """Copy one row's before image to ``out``, then its after image with full JSON values;
    the position after the row."""
    q, values = _image(table, data, p, end, images[0], frozenset())
    out += data[p:q]
    meta = table.map.column_meta
    before = {  # the JSON documents, without their length prefix (None: NULL)
        c: None if s is None else data[s + meta[c] : e]
        for c, s, e in values
        if c in table.json_columns
    }
    options, q = read_packed_int(data, q)
    if options > PARTIAL_JSON_UPDATES:
        raise ValueError(f"the row's value_options are {options}, not 0 or 1")
    partial: frozenset[int] = frozenset()
    if options & PARTIAL_JSON_UPDATES:
        nbytes = (len(table.json_columns) + 7) // 8
        bits = int.from_bytes(data[q : q + nbytes], "little")
        partial = frozenset(c for k, c in enumerate(table.json_columns) if bits >> k & 1)
        q += nbytes
    stop, values = _image(table, data, q, end, images[1], partial)
    out += data[q : q + (len(images[1]) + 7) // 8]
    for c, s, e in values:
        if s is None:
            continue
        if c in partial:
            out += _full_json(table, c, before, data[s + _DIFF_LENGTH : e])
        else:
            out += data[s:e]
    return stop


def _image(
    table: _Table, data: bytes, p: int, end: int, cols: tuple[int, ...], partial: frozenset[int]
) -> tuple[int, list[tuple[int, int | None, int]]]:
    """The end of the row image at ``p`` over ``cols`` and each column's (index, value start or
    None when NULL, value end); a column in ``partial`` holds a length-prefixed diff list."""
    nulls = int.from_bytes(data[p : p + (len(cols) + 7) // 8], "little")
    p += (len(cols) + 7) // 8
    values: list[tuple[int, int | None, int]] = []
    for k, c in enumerate(cols):
        if nulls >> k & 1:
            values.append((c, None, p))
            continue
        if c in partial:
            size = _DIFF_LENGTH + int.from_bytes(data[p : p + _DIFF_LENGTH], "little")
        else:
            size = value_size(table.map.column_types[c], table.map.column_meta[c], data, p)
        if p + size > end:
            raise ValueError(f"the value of column {table.name(c)} runs past the event")
        values.append((c, p, p + size))
        p += size
    return p, values


def _full_json(table: _Table, c: int, before: dict[int, bytes | None], diffs: bytes) -> bytes:
    """The after value of partial JSON column ``c``: the before document with the diffs
    applied, behind the column's length prefix."""
    name, where = table.name(c), table.where
    if c not in before:
        raise SourceError(
            f"a partial JSON update of column {name} of {where} cannot be applied because the "
            f"binlog's before image does not hold that column; {_WAY_OUT}",
            table=where,
        )
    doc = before[c]
    if doc is None:
        raise SourceError(
            f"a partial JSON update of column {name} of {where} changes a NULL document, which "
            f"MySQL cannot apply either; {_WAY_OUT}",
            table=where,
        )
    try:
        changes = read_diffs(diffs, 0, len(diffs))
        if changes:  # an empty list: the document did not change
            doc = json_doc.encode(apply_diffs(json_doc.decode(doc), changes))
    except (DiffError, BinaryJsonError) as exc:
        raise SourceError(
            f"a partial JSON update of column {name} of {where} does not apply to the binlog's "
            f"before image ({exc}); {_WAY_OUT}",
            table=where,
        ) from exc
    width = table.map.column_meta[c]
    if len(doc) >> (8 * width):
        raise SourceError(
            f"the updated JSON document of column {name} of {where} is longer than the column "
            "holds",
            table=where,
        )
    return len(doc).to_bytes(width, "little") + doc
