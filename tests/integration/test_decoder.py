"""The binlog decoder against a real MariaDB: every column type, written by the server, read back
through the replication protocol, decoded and compared value by value with what the server
returns for the same rows."""

from __future__ import annotations

import base64
import contextlib
import json
import struct
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.core.convert import decode_images
from sparkcdc.core.errors import SourceError
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog import native
from sparkcdc.sources.mysql.binlog.rows import RowsDecoder
from sparkcdc.sources.mysql.schema.column_types import column
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.cases.binlog import compressed_binlog, full_row_metadata
from tests.cases.decoder import (
    ALL_TYPES,
    COLUMNS,
    D65_MAX,
    MAX_ROW,
    MIN_ROW,
    MISC_ROW,
    NULL_ROW,
    ROW5,
    Change,
    expected_json,
    iter_events,
    load_schema,
    master_status,
    read_changes,
    server_ids,
)

pytestmark = pytest.mark.mariadb


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
            mariadb.host, mariadb.port, mariadb.user, "", *start, next(server_ids), stop
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
            mariadb.host, mariadb.port, mariadb.user, "", *start, next(server_ids), stop
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
            mariadb.host, mariadb.port, mariadb.user, "", *start, next(server_ids), stop
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
        mariadb.host, mariadb.port, mariadb.user, "", *start, next(server_ids), stop
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
