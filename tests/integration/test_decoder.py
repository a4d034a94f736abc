"""The binlog decoder against a real MariaDB: every column type, written by the server, read back
through the replication protocol, decoded and compared value by value with what the server
returns for the same rows."""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import itertools
import json
import struct
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.convert import decode_images
from sparkcdc.core.errors import SourceError
from sparkcdc.core.images import ColumnarRows, StructMaker
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog import native
from sparkcdc.sources.mysql.binlog.compressed import uncompressed
from sparkcdc.sources.mysql.binlog.protocol import ReplicationConnection
from sparkcdc.sources.mysql.binlog.rows import RowsDecoder
from sparkcdc.sources.mysql.schema.column_types import BINARY_TYPES, column
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.cases.binlog import compressed_binlog, full_row_metadata

pytestmark = pytest.mark.mariadb

_server_ids = itertools.count(7001)

Event = tuple[ev.EventHeader, ev.FormatDescription | None, bytes]


def iter_events(
    host: str,
    port: int,
    user: str,
    password: str,
    file: str,
    pos: int,
    server_id: int,
    stop: tuple[str, int] | None = None,
) -> Iterator[Event]:
    """Raw events from ``file:pos`` with checksums on, each with the format description in
    force; ends after the event that reaches ``stop`` (file, position)."""
    conn = ReplicationConnection(SourceConfig(host, port, user, password, ()))
    try:
        conn.query("SET @master_binlog_checksum='CRC32'")
        conn.query("SET @mariadb_slave_capability=4")
        fd: ev.FormatDescription | None = None
        current = file
        for data in itertools.chain.from_iterable(conn.dump(server_id, file, pos)):
            conn.set_timeout(30)
            header = ev.parse_header(data)
            if header.type == ev.FORMAT_DESCRIPTION:
                fd = ev.parse_format_description(data)
            elif header.type == ev.ROTATE:
                current = ev.parse_rotate(data, fd)[0]
            yield header, fd, data
            if stop and current == stop[0] and header.next_pos >= stop[1]:
                return
    finally:
        conn.close()


Change = tuple[str, str, str | None, Any, Any]


def read_changes(
    server: ThrowawayMariaDB,
    start: tuple[str, int],
    stop: tuple[str, int],
    schemas: dict[str, TableSchema],
    typed: bool = False,
    seen: set[int] | None = None,
) -> list[Change]:
    """Every row change between ``start`` and ``stop`` of the tables in ``schemas`` (``typed``:
    with typed row images; ``seen`` collects the event types met)."""
    decoders: dict[int, RowsDecoder] = {}
    changes: list[Change] = []
    for header, fd, data in iter_events(
        server.host, server.port, server.user, server.password, *start, next(_server_ids), stop
    ):
        if seen is not None:
            seen.add(header.type)
        if header.type in ev.COMPRESSED_EVENTS:
            assert fd is not None
            etype, data = uncompressed(header.type, data, fd)
            header = header._replace(type=etype)
        if header.type == ev.TABLE_MAP:
            assert fd is not None
            tmap = ev.parse_table_map(data, fd)
            schema = schemas.get(f"{tmap.db}.{tmap.table}")
            if schema is not None:
                decoders[tmap.table_id] = RowsDecoder(tmap, schema, typed)
        elif header.type in ev.ROWS_EVENTS:
            assert fd is not None
            start_, end_ = ev.body_range(data, fd)
            table_id = int.from_bytes(data[start_ : start_ + 6], "little")
            if table_id in decoders:
                dec = decoders[table_id]
                decoded = dec.decode(header.type, data, start_, end_)
                for op, key, before, after in as_dicts(dec.schema, decoded) if typed else decoded:
                    changes.append((dec.schema.table, op, key, before, after))
    return changes


def as_dicts(schema: TableSchema, decoded: Any) -> list[tuple[Any, ...]]:
    """Typed changes with their images as Arrow gives them back, as dicts (or None)."""
    make = StructMaker(schema)
    if isinstance(decoded, ColumnarRows):  # the compiled decoder's buffers
        before, after = decoded.structs(make.fields)
        ops = [decoded.op] * len(decoded)
        return list(zip(ops, decoded.keys, before.to_pylist(), after.to_pylist(), strict=True))
    return [
        (op, key, make([b]).to_pylist()[0], make([a]).to_pylist()[0]) for op, key, b, a in decoded
    ]


def master_status(server: ThrowawayMariaDB) -> tuple[str, int]:
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    return str(file), int(pos)


def load_schema(server: ThrowawayMariaDB, db: str, table: str) -> TableSchema:
    with MySQLCatalog(server.host, server.port, server.user, server.password) as catalog:
        return catalog.load_schema(db, table)


def expected_json(col: Column, value: Any) -> Any:
    """The JSON value core/schema.py promises for a value as the server returns it."""
    if value is None:
        return None
    t = col.data_type
    if t == "decimal":
        return f"{value:f}"
    if t == "bit":
        return int.from_bytes(value, "big")
    if t in BINARY_TYPES:
        return base64.b64encode(value).decode()
    if isinstance(value, str) and t in ("date", "datetime", "timestamp"):
        return None  # zero dates come back as text
    if t == "date":
        return value.isoformat()
    if t in ("datetime", "timestamp"):
        text = f"{value.year:04d}-{value:%m-%dT%H:%M:%S}.{value.microsecond:06d}"
        return text + ("Z" if t == "timestamp" else "")
    if t == "time":
        micros = value // dt.timedelta(microseconds=1)
        sign = "-" if micros < 0 else ""
        secs, us = divmod(abs(micros), 1_000_000)
        return f"{sign}{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}.{us:06d}"
    if t == "set" and isinstance(value, set):
        return ",".join(m for m in col.values if m in value)
    return value


def snapshot(server: ThrowawayMariaDB, schema: TableSchema) -> dict[int, dict[str, Any]]:
    """The table's rows as the server returns them (UTC session), as expected JSON values."""
    with contextlib.closing(server.connect(schema.db)) as conn, conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        cur.execute(f"SELECT * FROM `{schema.table}` ORDER BY id")
        names = [d[0] for d in cur.description]
        return {
            row[0]: {n: expected_json(schema.column(n), v) for n, v in zip(names, row, strict=True)}
            for row in cur.fetchall()
        }


def assert_image(schema: TableSchema, image: str | None, expected: dict[str, Any]) -> None:
    assert image is not None
    got = json.loads(image)
    assert list(got) == schema.column_names()
    for col in schema.columns:
        a, b = got[col.name], expected[col.name]
        if col.data_type == "float" and a is not None and b is not None:
            assert struct.pack("<f", a) == struct.pack("<f", b), col.name
        else:
            assert a == b, (col.name, a, b)


ALL_TYPES = """
CREATE TABLE all_types (
  id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
  bi BIGINT, biu BIGINT UNSIGNED,
  d142 DECIMAL(14,2), d6530 DECIMAL(65,30), d100 DECIMAL(10,0), d94 DECIMAL(9,4),
  f FLOAT, dbl DOUBLE,
  b1 BIT(1), b10 BIT(10), b64 BIT(64),
  y YEAR,
  c CHAR(10) CHARACTER SET utf8mb4, vc VARCHAR(300) CHARACTER SET utf8mb4,
  tx TEXT CHARACTER SET utf8mb4,
  cl CHAR(5) CHARACTER SET latin1, vcl VARCHAR(20) CHARACTER SET latin1,
  txl TEXT CHARACTER SET latin1,
  j JSON,
  e ENUM('a','b','c'), s SET('x','y','z'),
  bin BINARY(4), vb VARBINARY(10), bl BLOB,
  dd DATE, tm6 TIME(6), tm3 TIME(3), tm1 TIME(1), tm0 TIME,
  dt0 DATETIME, dt1 DATETIME(1), dt2 DATETIME(2), dt3 DATETIME(3), dt4 DATETIME(4),
  dt5 DATETIME(5), dt6 DATETIME(6),
  ts3 TIMESTAMP(3) NULL DEFAULT NULL, ts0 TIMESTAMP NULL DEFAULT NULL
) DEFAULT CHARSET=utf8mb4
"""

COLUMNS = (
    "id, ti, tiu, si, siu, mi, miu, i, iu, bi, biu, d142, d6530, d100, d94, f, dbl, b1, b10, b64,"
    " y, c, vc, tx, cl, vcl, txl, j, e, s, bin, vb, bl, dd, tm6, tm3, tm1, tm0,"
    " dt0, dt1, dt2, dt3, dt4, dt5, dt6, ts3, ts0"
)
D65_MAX = "9" * 35 + "." + "9" * 30
MIN_ROW = (
    "(1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,"
    f" -999999999999.99, -{D65_MAX}, -9999999999, -99999.9999, -3.25, -1.7976931348623157e308,"
    " b'0', b'0', b'0', 1901, '', '', '', '', '', '', '[]', 'a', '', x'', x'', x'',"
    " '1000-01-01', '-838:59:59.000000', '-838:59:59.000', '-838:59:59.0', '-838:59:59',"
    " '1000-01-01 00:00:00', '1000-01-01 00:00:00.0', '1000-01-01 00:00:00.00',"
    " '1000-01-01 00:00:00.000', '1000-01-01 00:00:00.0000', '1000-01-01 00:00:00.00000',"
    " '1000-01-01 00:00:00.000000', '1970-01-01 05:00:01.000', '1970-01-01 05:00:01')"
)
MAX_ROW = (
    "(2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295,"
    " 9223372036854775807, 18446744073709551615,"
    f" 999999999999.99, {D65_MAX}, 9999999999, 99999.9999, 3.4e38, 1.7976931348623157e308,"
    " b'1', b'1111111111', x'FFFFFFFFFFFFFFFF', 2155,"
    " 'ünï😀 ok', REPEAT('é😀', 150), REPEAT('日本語😀', 5000), 'àéîõü', '€ŠŽœŸ',"
    " 'Ærøskøbing', '{\"a\": [1, 2.5, \"ü😀\"], \"b\": null}', 'c', 'x,y,z',"
    " x'61620000', x'00FF00', x'000102FF00',"
    " '9999-12-31', '838:59:59.000000', '838:59:59.000', '838:59:59.0', '838:59:59',"
    " '9999-12-31 23:59:59', '9999-12-31 23:59:59.9', '9999-12-31 23:59:59.99',"
    " '9999-12-31 23:59:59.999', '9999-12-31 23:59:59.9999', '9999-12-31 23:59:59.99999',"
    " '9999-12-31 23:59:59.999999', '2038-01-19 08:14:07.999', '2038-01-19 08:14:07')"
)
NULL_ROW = "(3" + ", NULL" * 46 + ")"
MISC_ROW = (
    "(4, -1, 1, -1, 1, -1, 1, -1, 1, -1, 9223372036854775808,"
    " -0.01, -0.000000000000000000000000000001, 0, 0.0001, 3.14, 0.1,"
    " b'1', b'1000000001', x'8000000000000001', 0,"
    " 'ab  ', 'ab  ', 'tab\\there \"quoted\" \\\\ back', 'a\u0081',"
    " CONCAT('x', CHAR(129 USING latin1)),"
    " 'line\\nbreak', '\"just a string\"', 'nope', 'x,z',"
    " x'00', x'', x'0000',"
    " '0000-00-00', '-00:00:01.500000', '-00:00:01.500', '-00:00:01.5', '-00:00:01',"
    " '0000-00-00 00:00:00', '2024-02-29 13:14:15.1', '2024-02-29 13:14:15.12',"
    " '2024-02-29 13:14:15.123', '2024-02-29 13:14:15.1234', '2024-02-29 13:14:15.12345',"
    " '2024-02-29 13:14:15.123456', '2024-06-30 12:00:00.5', '0000-00-00 00:00:00')"
)
ROW5 = (
    "(5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1.5, 123456789012345678901234567890.5, 42, -1.5,"
    " 1e-10, -2.5e-300, b'0', b'0000000001', x'0000000000000000', 2024,"
    " 'z', '', '', 'Z', '', '', '{}', 'b', 'y',"
    " x'01020304', x'DEADBEEF', x'',"
    " '2024-01-02', '-123:04:05.000006', '100:00:00.001', '24:00:00.1', '00:00:00',"
    " '2000-01-01 00:00:00', '2000-01-01 00:00:00.1', '2000-01-01 00:00:00.01',"
    " '2000-01-01 00:00:00.001', '2000-01-01 00:00:00.0001', '2000-01-01 00:00:00.00001',"
    " '2000-01-01 00:00:00.000001', '2000-01-01 05:00:00.001', '2000-01-01 05:00:00')"
)


@pytest.mark.parametrize(
    "compressed,metadata",
    [(False, False), (True, False), (False, True)],
    ids=["plain", "log_bin_compress", "binlog_row_metadata_full"],
)
def test_every_type_round_trips(
    mariadb: ThrowawayMariaDB, db: str, compressed: bool, metadata: bool
) -> None:
    mariadb.execute(ALL_TYPES, database=db)
    schema = load_schema(mariadb, db, "all_types")
    start = master_status(mariadb)
    with (
        compressed_binlog(mariadb, compressed),
        full_row_metadata(mariadb, metadata),
        contextlib.closing(mariadb.connect(db)) as conn,
        conn.cursor() as cur,
    ):
        cur.execute("SET sql_mode = '', time_zone = '+05:00'")
        cur.execute(f"INSERT INTO all_types ({COLUMNS}) VALUES {MIN_ROW}, {MAX_ROW}, {NULL_ROW}")
        cur.execute(f"INSERT INTO all_types ({COLUMNS}) VALUES {MISC_ROW}, {ROW5}")
        inserted = snapshot(mariadb, schema)
        cur.execute(
            "UPDATE all_types SET ti = 5, vc = NULL, tm6 = '-01:00:00.25', biu = 7,"
            " d6530 = 1, j = '{\"k\": 1}', bin = 'x', dt6 = NULL WHERE id = 4"
        )
        cur.execute(
            "UPDATE all_types SET ti = 1, tx = 'now set', dt3 = '2001-02-03 04:05:06.7',"
            " ts0 = '2010-10-10 10:10:10', s = 'y', e = 'a' WHERE id = 3"
        )
        updated = snapshot(mariadb, schema)
        cur.execute("DELETE FROM all_types WHERE id IN (1, 2)")
    stop = master_status(mariadb)

    seen: set[int] = set()
    changes = read_changes(mariadb, start, stop, {schema.name: schema}, seen=seen)
    assert bool(seen & ev.COMPRESSED_EVENTS) == compressed
    if compressed:  # the typed decoders read the inflated events as the JSON one does
        typed = read_changes(mariadb, start, stop, {schema.name: schema}, typed=True)
        assert [c[:3] for c in typed] == [c[:3] for c in changes]
    assert [(c[1], c[2]) for c in changes] == [
        ("c", "[1]"),
        ("c", "[2]"),
        ("c", "[3]"),
        ("c", "[4]"),
        ("c", "[5]"),
        ("u", "[4]"),
        ("u", "[3]"),
        ("d", "[1]"),
        ("d", "[2]"),
    ]
    for table, op, key, before, after in changes:
        assert table == "all_types"
        row_id = json.loads(key or "null")[0]
        if op == "c":
            assert before is None
            assert_image(schema, after, inserted[row_id])
        elif op == "u":
            assert_image(schema, before, inserted[row_id])
            assert_image(schema, after, updated[row_id])
        else:
            assert after is None
            assert_image(schema, before, updated[row_id])

    # a few encodings checked on the JSON text itself
    maxes, misc = json.loads(changes[1][4] or ""), changes[3][4] or ""
    assert '"biu":18446744073709551615' in (changes[1][4] or "")
    assert maxes["d6530"] == D65_MAX and maxes["b64"] == 2**64 - 1 and maxes["y"] == 2155
    assert maxes["bin"] == base64.b64encode(b"ab\0\0").decode()
    assert maxes["tm6"] == "838:59:59.000000" and maxes["c"] == "ünï😀 ok"
    assert maxes["vcl"] == "€ŠŽœŸ" and maxes["j"] == '{"a": [1, 2.5, "ü😀"], "b": null}'
    assert maxes["ts3"] == "2038-01-19T03:14:07.999000Z"
    assert '"f":3.14,' in misc and '"dbl":0.1,' in misc and '"tm1":"-00:00:01.500000"' in misc
    assert '"dd":null' in misc and '"dt0":null' in misc and '"ts0":null' in misc
    assert '"e":""' in misc and '"s":"x,z"' in misc
    assert json.loads(misc)["cl"] == "a\x81" and json.loads(misc)["vcl"] == "x\x81"
    assert json.loads(misc)["c"] == "ab" and json.loads(misc)["vc"] == "ab  "


def test_partial_row_images_and_multibyte_null_bitmaps(mariadb: ThrowawayMariaDB, db: str) -> None:
    cols = ", ".join(f"c{i} INT" for i in range(20))
    mariadb.execute(f"CREATE TABLE wide (id BIGINT PRIMARY KEY, {cols}, note TEXT)", database=db)
    schema = load_schema(mariadb, db, "wide")
    start = master_status(mariadb)
    with contextlib.closing(mariadb.connect(db)) as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO wide (id, c3, c17, note) VALUES (1, 3, 17, 'n')")
        cur.execute("SET SESSION binlog_row_image = 'MINIMAL'")
        cur.execute("UPDATE wide SET c5 = 55 WHERE id = 1")
        cur.execute("DELETE FROM wide WHERE id = 1")
    stop = master_status(mariadb)
    changes = read_changes(mariadb, start, stop, {schema.name: schema})
    assert [c[1:3] for c in changes] == [("c", "[1]"), ("u", "[1]"), ("d", "[1]")]
    first = json.loads(changes[0][4] or "")
    assert first["c3"] == 3 and first["c17"] == 17 and first["c0"] is None and first["note"] == "n"
    assert json.loads(changes[1][3] or "") == {"id": 1}
    assert json.loads(changes[1][4] or "") == {"c5": 55}
    assert json.loads(changes[2][3] or "") == {"id": 1} and changes[2][4] is None


def test_schema_out_of_date_is_named(mariadb: ThrowawayMariaDB, db: str) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(5))", database=db)
    schema = load_schema(mariadb, db, "t")
    start = master_status(mariadb)
    mariadb.execute("INSERT INTO t VALUES (1, 'x')", database=db)
    stop = master_status(mariadb)
    maps = [
        ev.parse_table_map(data, fd)
        for h, fd, data in iter_events(
            mariadb.host, mariadb.port, mariadb.user, "", *start, next(_server_ids), stop
        )
        if h.type == ev.TABLE_MAP and fd is not None
    ]
    short = TableSchema(db, "t", schema.columns[:1], ("id",))
    with pytest.raises(SourceError, match=f"{db}.t"):
        RowsDecoder(maps[0], short)
    wrong = TableSchema(db, "t", (schema.columns[0], column("a", "date")), ("id",))
    with pytest.raises(SourceError, match="out of date"):
        RowsDecoder(maps[0], wrong)


def test_the_table_maps_names_and_signedness_cross_check_the_schema(
    mariadb: ThrowawayMariaDB, db: str
) -> None:
    """binlog_row_metadata=FULL writes every column's name and the integers' signedness."""
    mariadb.execute(
        "CREATE TABLE t (id INT UNSIGNED PRIMARY KEY, a VARCHAR(5), n BIGINT, d DECIMAL(5,2))",
        database=db,
    )
    schema = load_schema(mariadb, db, "t")
    start = master_status(mariadb)
    with full_row_metadata(mariadb):
        mariadb.execute("INSERT INTO t VALUES (1, 'x', -2, 1.5)", database=db)
    stop = master_status(mariadb)
    (tmap,) = [
        ev.parse_table_map(data, fd)
        for h, fd, data in iter_events(
            mariadb.host, mariadb.port, mariadb.user, "", *start, next(_server_ids), stop
        )
        if h.type == ev.TABLE_MAP and fd is not None
    ]
    assert tmap.column_names == ("id", "a", "n", "d")
    assert tmap.unsigned == ((0, True), (2, False))
    RowsDecoder(tmap, schema)  # the tracked schema agrees
    renamed = TableSchema(db, "t", (schema.columns[0], replace(schema.columns[1], name="b"),
                                    *schema.columns[2:]), ("id",))  # fmt: skip
    with pytest.raises(SourceError, match=r"names the columns of .*\['id', 'a', 'n', 'd'\]"):
        RowsDecoder(tmap, renamed)
    signed = TableSchema(db, "t", (replace(schema.columns[0], unsigned=False),
                                   *schema.columns[1:]), ("id",))  # fmt: skip
    with pytest.raises(SourceError, match="column id of .* as UNSIGNED"):
        RowsDecoder(tmap, signed)


def test_a_year_column_has_its_own_signedness_bit(mariadb: ThrowawayMariaDB, db: str) -> None:
    """MariaDB, like MySQL, gives YEAR a SIGNEDNESS bit (1 here); the column after it is read
    with its own bit, not YEAR's."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, y YEAR, s INT, u INT UNSIGNED)",
                    database=db)  # fmt: skip
    schema = load_schema(mariadb, db, "t")
    start = master_status(mariadb)
    with full_row_metadata(mariadb):
        mariadb.execute("INSERT INTO t VALUES (1, 2024, -2, 3)", database=db)
    stop = master_status(mariadb)
    ((tmap, raw),) = [
        (ev.parse_table_map(data, fd), data)
        for h, fd, data in iter_events(
            mariadb.host, mariadb.port, mariadb.user, "", *start, next(_server_ids), stop
        )
        if h.type == ev.TABLE_MAP and fd is not None
    ]
    assert b"\x01\x01\x50" in raw  # SIGNEDNESS, 1 byte: id y s u = 0 1 0 1
    assert tmap.unsigned == ((0, False), (2, False), (3, True))
    RowsDecoder(tmap, schema)  # no false "schema is out of date"


def test_long_char_wide_enum_and_set(mariadb: ThrowawayMariaDB, db: str) -> None:
    members = [f"m{i}" for i in range(300)]
    flags = [f"f{i}" for i in range(20)]
    enum = ",".join(f"'{m}'" for m in members)
    sets = ",".join(f"'{f}'" for f in flags)
    mariadb.execute(
        f"CREATE TABLE t (id INT PRIMARY KEY, c CHAR(100) CHARACTER SET utf8mb4, "
        f"b BINARY(255), e ENUM({enum}), s SET({sets}))",
        database=db,
    )
    schema = load_schema(mariadb, db, "t")
    start = master_status(mariadb)
    mariadb.execute(
        "INSERT INTO t VALUES (1, REPEAT('😀', 100), x'01', 'm299', 'f0,f9,f19'), "
        "(2, 'short', NULL, 'm0', '')",
        database=db,
    )
    changes = read_changes(mariadb, start, master_status(mariadb), {schema.name: schema})
    first, second = (json.loads(c[4] or "") for c in changes)
    assert first["c"] == "😀" * 100 and first["e"] == "m299" and first["s"] == "f0,f9,f19"
    assert base64.b64decode(first["b"]) == b"\x01" + bytes(254)
    assert second == {"id": 2, "c": "short", "b": None, "e": "m0", "s": ""}


def test_v2_rows_events_decode_like_v1(mariadb: ThrowawayMariaDB, db: str) -> None:
    """MySQL 8 writes rows events v2: the same body after a length-prefixed extra-data block."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10))", database=db)
    schema = load_schema(mariadb, db, "t")
    start = master_status(mariadb)
    mariadb.execute(
        "INSERT INTO t VALUES (1, 'a'), (2, NULL)",
        "UPDATE t SET a = 'b'",
        "DELETE FROM t",
        database=db,
    )
    stop = master_status(mariadb)
    decoder: RowsDecoder | None = None
    for header, fd, data in iter_events(
        mariadb.host, mariadb.port, mariadb.user, "", *start, next(_server_ids), stop
    ):
        if fd is None:
            continue
        if header.type == ev.TABLE_MAP:
            decoder = RowsDecoder(ev.parse_table_map(data, fd), schema)
        elif header.type in ev.ROWS_EVENTS:
            assert decoder is not None
            s, e = ev.body_range(data, fd)
            v1 = decoder.decode(header.type, data, s, e)
            extra = b"\x05\x00\x00\x01\x02"  # length 5 (itself included) + 3 opaque bytes
            v2_data = data[: s + 8] + extra + data[s + 8 :]
            v2 = decoder.decode(header.type + 7, v2_data, s, e + len(extra))
            assert v1 == v2 and v1


def test_typed_images_equal_what_the_sink_reads_from_the_json_ones(
    mariadb: ThrowawayMariaDB, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every type, and keys of every kind of column: the typed decoder's images are the structs
    the sink makes of the JSON decoder's images, value by value, and its keys the same text."""
    mariadb.execute(ALL_TYPES, database=db)
    mariadb.execute(
        "CREATE TABLE keyed (d DECIMAL(10,3), dt DATETIME(6), ts TIMESTAMP(3) NULL, da DATE,"
        " vc VARCHAR(10), bi VARBINARY(4), f FLOAT, e ENUM('x','y'), n INT,"
        " PRIMARY KEY (d, dt, da, vc, bi, e))",
        database=db,
    )
    # the compiled decoder takes every type but TIME: all of them again, without TIME
    mariadb.execute(
        "CREATE TABLE no_time LIKE all_types",
        "ALTER TABLE no_time DROP COLUMN tm6, DROP COLUMN tm3, DROP COLUMN tm1, DROP COLUMN tm0",
        database=db,
    )
    names = ("all_types", "keyed", "no_time")
    schemas = {s.name: s for s in (load_schema(mariadb, db, t) for t in names)}
    start = master_status(mariadb)
    with contextlib.closing(mariadb.connect(db)) as conn, conn.cursor() as cur:
        cur.execute("SET sql_mode = '', time_zone = '+05:00'")
        cur.execute(f"INSERT INTO all_types ({COLUMNS}) VALUES {MIN_ROW}, {MAX_ROW}, {NULL_ROW}")
        cur.execute(f"INSERT INTO all_types ({COLUMNS}) VALUES {MISC_ROW}, {ROW5}")
        cur.execute("UPDATE all_types SET ti = 5, vc = NULL, dt6 = NULL WHERE id = 4")
        cur.execute("DELETE FROM all_types WHERE id IN (1, 2)")
        cur.execute(
            "INSERT INTO keyed VALUES (-1.5, '2020-02-29 23:59:59.000001', '2001-01-01 00:00:01',"
            " '1999-12-31', 'a\"\\\\ü', x'00ff', 1.25, 'y', 1),"
            " (0, '1000-01-01', NULL, '9999-12-31', '', x'', -0.5, 'x', 2)"
        )
        cur.execute("UPDATE keyed SET n = n + 1, vc = CONCAT(vc, '.')")
        kept = [c.name for c in schemas[f"{db}.no_time"].columns]
        cur.execute(f"INSERT INTO no_time SELECT {', '.join(kept)} FROM all_types")
        cur.execute("UPDATE no_time SET vc = 'x', e = NULL, bin = 'q' WHERE id > 3")
        cur.execute("DELETE FROM no_time")
    stop = master_status(mariadb)
    texts = read_changes(mariadb, start, stop, schemas)
    typed = read_changes(mariadb, start, stop, schemas, typed=True)
    assert len(typed) == len(texts) == 12 + 3 + 2 + 3
    assert_typed_like_json(texts, typed, schemas, db)
    if native.available():  # the compiled decoder's twin: the generated Python code
        monkeypatch.setenv("SPARKCDC_NATIVE_ROWS", "0")
        in_python = read_changes(mariadb, start, stop, schemas, typed=True)
        assert in_python == typed
        assert_typed_like_json(texts, in_python, schemas, db)


def assert_typed_like_json(
    texts: list[Change], typed: list[Change], schemas: dict[str, TableSchema], db: str
) -> None:
    for (table, op, key, before, after), (t_table, t_op, t_key, t_before, t_after) in zip(
        texts, typed, strict=True
    ):
        assert (t_table, t_op, t_key) == (table, op, key)
        schema = schemas[f"{db}.{table}"]
        for text, values in ((before, t_before), (after, t_after)):
            expected = decode_images(pa.array([text], pa.string()), schema)
            assert [values] == expected.to_pylist()
