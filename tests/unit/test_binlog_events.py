"""Binlog event framing and row decoding on hand-built events, laid out as servers write them."""

from __future__ import annotations

import struct
import zlib

import pytest

from sparkcdc.core.errors import SourceError
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog import tablemap as tm
from sparkcdc.sources.mysql.binlog import values
from sparkcdc.sources.mysql.binlog.compressed import uncompressed
from sparkcdc.sources.mysql.binlog.rows import RowsDecoder
from sparkcdc.sources.mysql.binlog.tablemap import TableMap
from sparkcdc.sources.mysql.schema.column_types import column
from tests.cases.binlog_events import (
    POST_HEADERS,
    SCHEMA,
    TMAP,
    event,
    fde,
    row,
    rows_event,
)

FD = ev.parse_format_description(fde())


def test_header_and_format_description() -> None:
    data = fde()
    h = ev.parse_header(data)
    assert (h.type, h.server_id, h.size, h.next_pos) == (15, 7, len(data), 1000)
    assert FD.checksum and FD.header_len == 19 and FD.binlog_version == 4
    assert FD.server_version == "10.11.6-MariaDB-log"
    assert FD.post_header_len(ev.QUERY) == 13 and FD.post_header_len(ev.TABLE_MAP) == 8
    assert FD.post_header_len(ev.GTID) == 19 and FD.post_header_len(250) == 0
    off = ev.parse_format_description(fde(algorithm=0))
    assert not off.checksum and off.post_header_lens == FD.post_header_lens
    old = ev.parse_format_description(fde("5.5.60-log", algorithm=None))
    assert not old.checksum and old.post_header_lens == POST_HEADERS
    with pytest.raises(SourceError, match="checksum algorithm"):
        ev.parse_format_description(fde(algorithm=3))


def test_rotate_with_and_without_checksum() -> None:
    body = struct.pack("<Q", 4) + b"mysql-bin.000042"
    assert ev.parse_rotate(event(ev.ROTATE, body), None) == ("mysql-bin.000042", 4)
    assert ev.parse_rotate(event(ev.ROTATE, body, checksum=False), None) == ("mysql-bin.000042", 4)
    assert ev.parse_rotate(event(ev.ROTATE, body), FD) == ("mysql-bin.000042", 4)
    assert ev.verify_checksum(event(ev.ROTATE, body))
    assert ev.body_range(event(ev.ROTATE, body), FD) == (19, 19 + len(body))


def test_gtid_and_gtid_list() -> None:
    gtid = ev.parse_gtid(event(ev.GTID, struct.pack("<QIB", 99, 3, 1) + bytes(6)), FD)
    assert (gtid.domain, gtid.server_id, gtid.seq, gtid.standalone) == (3, 7, 99, True)
    assert str(gtid) == "3-7-99"
    trx = ev.parse_gtid(event(ev.GTID, struct.pack("<QIBQ", 5, 0, 2, 77) + bytes(6)), FD)
    assert not trx.standalone and trx.flags == ev.FL_GROUP_COMMIT_ID
    body = (
        struct.pack("<I", 2 | 1 << 28)
        + struct.pack("<IIQ", 0, 1, 10)
        + struct.pack("<IIQ", 5, 2, 1 << 40)
    )
    assert [str(g) for g in ev.parse_gtid_list(event(ev.GTID_LIST, body), FD)] == [
        "0-1-10",
        f"5-2-{1 << 40}",
    ]


def test_query_skips_status_vars() -> None:
    status = b"\x00\x00\x00\x00\x00\x01\x00\x00\xa0\x55\x00\x00\x00\x00"
    body = struct.pack("<IIBHH", 12, 0, 4, 0, len(status)) + status + b"shop\0"
    body += "ALTER TABLE t ADD c INT COMMENT 'ü'".encode()
    q = ev.parse_query(event(ev.QUERY, body), FD)
    assert q == ev.Query("shop", "ALTER TABLE t ADD c INT COMMENT 'ü'")
    with pytest.raises(ValueError, match="inflate"):
        ev.parse_query(event(ev.QUERY_COMPRESSED, body), FD)


def compressed_record(raw: bytes, width: int = 4) -> bytes:
    """MariaDB's compressed record: 0x80 | length width, the length big-endian, zlib data."""
    return bytes([0x80 | width]) + len(raw).to_bytes(width, "big") + zlib.compress(raw)


def test_compressed_query_and_rows_events_inflate_to_the_plain_ones() -> None:
    status = b"\x00\x00\x00\x00\x00"
    head = struct.pack("<IIBHH", 12, 0, 4, 0, len(status)) + status + b"shop\0"
    sql = "ALTER TABLE t ADD c INT COMMENT 'ü'".encode()
    etype, plain = uncompressed(
        ev.QUERY_COMPRESSED, event(ev.QUERY_COMPRESSED, head + compressed_record(sql, 1)), FD
    )
    assert etype == ev.QUERY and ev.parse_query(plain, FD) == ev.Query("shop", sql.decode())
    dec = RowsDecoder(TMAP, SCHEMA)
    rows = rows_event(row(7, b"seven", None), row(8, None, None), update=True)
    cut = 8 + 1 + 2  # table id, flags, column count, two bitmaps
    packed = event(ev.UPDATE_ROWS_COMPRESSED_V1, rows[:cut] + compressed_record(rows[cut:], 2))
    etype, plain = uncompressed(ev.UPDATE_ROWS_COMPRESSED_V1, packed, FD)
    assert etype == ev.UPDATE_ROWS_V1
    assert dec.decode(etype, plain, 19, len(plain) - 4) == dec.decode(etype, rows, 0, len(rows))
    assert plain[:4] + plain[5:19] == packed[:4] + packed[5:19] and plain[-4:] == packed[-4:]
    for bad in (b"\x00" + rows[cut:], b"\x81\x05" + zlib.compress(b"four"), b"\x81\x04xyz"):
        with pytest.raises(SourceError, match="cannot be inflated"):
            uncompressed(ev.UPDATE_ROWS_COMPRESSED_V1, event(0, rows[:cut] + bad), FD)


def test_packed_integers() -> None:
    assert ev.read_packed_int(b"\xfa", 0) == (250, 1)
    assert ev.read_packed_int(b"\xfc\x01\x02", 0) == (0x0201, 3)
    assert ev.read_packed_int(b"\xfd\x01\x02\x03", 0) == (0x030201, 4)
    assert ev.read_packed_int(b"\xfe" + struct.pack("<Q", 1 << 40), 0) == (1 << 40, 9)


def test_table_map_metadata() -> None:
    types = bytes(
        [
            tm.T_LONG,
            tm.T_VARCHAR,
            tm.T_NEWDECIMAL,
            tm.T_BIT,
            tm.T_STRING,
            tm.T_STRING,
            tm.T_DATETIME2,
            tm.T_BLOB,
            tm.T_DOUBLE,
            tm.T_DATE,
        ]
    )
    meta = (
        struct.pack("<H", 1020)
        + bytes([14, 2])
        + bytes([2, 1])
        + bytes([tm.T_ENUM, 1])
        + bytes([tm.T_STRING, 40])
        + bytes([6])
        + bytes([2])
        + bytes([8])
    )
    body = struct.pack("<Q", 0x123456789A)[:6] + b"\x01\x00" + b"\x04shop\0\x06orders\0"
    body += bytes([len(types)]) + types + bytes([len(meta)]) + meta + b"\xfe\x02"
    body += b"\x01\x02\x03"  # optional metadata: ignored
    t = ev.parse_table_map(event(ev.TABLE_MAP, body), FD)
    assert (t.table_id, t.db, t.table, t.column_types) == (0x123456789A, "shop", "orders", types)
    assert t.column_meta == (
        0,
        1020,
        14 << 8 | 2,
        1 << 8 | 2,
        tm.T_ENUM << 8 | 1,
        tm.T_STRING << 8 | 40,
        6,
        2,
        8,
        0,
    )
    assert t.nullable == (False, True, True, True, True, True, True, True, False, True)


def test_rows_decoder_on_hand_built_events() -> None:
    dec = RowsDecoder(TMAP, SCHEMA)
    minus = bytes(b ^ 0xFF for b in bytes([0x80, 0x00, 0x00, 0x00, 0x00, 0x01, 0x05]))
    data = rows_event(row(4294967295, "café €".encode("cp1252"), minus), row(2, None, None))
    assert dec.decode(ev.WRITE_ROWS_V1, data, 0, len(data)) == [
        ("c", "[4294967295]", None, '{"id":4294967295,"note":"café €","amount":"-1.05"}'),
        ("c", "[2]", None, '{"id":2,"note":null,"amount":null}'),
    ]
    plus = bytes([0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x63])
    upd = rows_event(row(2, None, None), row(3, b"x", plus), update=True)
    assert dec.decode(ev.UPDATE_ROWS_V1, upd, 0, len(upd)) == [
        ("u", "[3]", '{"id":2,"note":null,"amount":null}', '{"id":3,"note":"x","amount":"0.99"}')
    ]
    with pytest.raises(SourceError, match="not a rows event"):
        dec.decode(ev.WRITE_ROWS_COMPRESSED_V1, data, 0, len(data))
    with pytest.raises(SourceError, match="shop.orders"):
        dec.decode(ev.WRITE_ROWS_V1, data, 0, len(data) - 1)


def test_value_helpers() -> None:
    assert values.float32_text(struct.unpack("<f", struct.pack("<f", 3.14))[0]) == "3.14"
    assert values.float32_text(16777216.0) == "16777216"
    assert values.DecimalLayout(14, 2).size == 7 and values.DecimalLayout(65, 30).size == 30
    assert values.time2_text(bytes([0x7F, 0xFF, 0xFF, 0xCE]), 2) == '"-00:00:00.500000"'
    assert values.date_text(2024 << 9 | 2 << 5 | 29) == '"2024-02-29"'
    assert values.date_text(0) == "null"
    assert values.python_codec("latin1") == ("cp1252", "sparkcdc-latin1")
    assert b"\x81\x80".decode(*values.python_codec("latin1")) == "\x81€"


def test_rows_header_and_unsupported_columns() -> None:
    body = rows_event(row(1, b"a", bytes([0x80, 0, 0, 0, 0, 0, 1])))
    assert ev.parse_rows_header(event(ev.WRITE_ROWS_V1, body[:6] + b"\x01\x00" + body[8:]), FD) == (
        1,
        ev.STMT_END_F,
    )
    uuid = TableSchema("shop", "ids", (column("id", "int"), column("u", "uuid")), ("id",))
    tmap = TableMap(
        2, "shop", "ids", bytes([tm.T_LONG, tm.T_STRING]), (0, tm.T_STRING << 8 | 16), (False, True)
    )
    with pytest.raises(SourceError, match="type uuid, which sparkcdc does not decode"):
        RowsDecoder(tmap, uuid)


def test_optional_metadata_gives_names_and_integer_signedness() -> None:
    types = bytes([tm.T_LONG, tm.T_VARCHAR, tm.T_NEWDECIMAL, tm.T_TINY])
    # numeric columns: 0, 2, 3 -> bits 1 (unsigned), 0, 1, high bit first
    signedness = bytes([1, 1, 0b10100000])
    charset = bytes([2, 2, 0x2D, 0x00])  # DEFAULT_CHARSET: skipped
    names = b"".join(bytes([len(n)]) + n for n in (b"id", b"note", b"amount", "ü".encode()))
    data = b"xx" + signedness + charset + bytes([4, len(names)]) + names
    assert tm.optional_metadata(types, data, 2, len(data)) == (
        ("id", "note", "amount", "ü"),
        ((0, True), (3, True)),
    )
    assert tm.optional_metadata(types, data, len(data), len(data)) == ((), ())
