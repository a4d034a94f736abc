"""The MySQL/MariaDB snapshot dialect against a real MariaDB: chunk rows byte-identical to the
binlog decoder's row images for every column type, keyset ranges over composite keys, string
keys under a case-insensitive collation, and every key type as a chunk bound."""

from __future__ import annotations

import base64
import contextlib
import datetime
import decimal
import json
import random
import struct
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pytest

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.chunk import KeyValue
from sparkcdc.core.convert import arrow_type, decode_images
from sparkcdc.core.errors import ConfigError, SourceError
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.keyset_sql import KeyRange
from sparkcdc.sources.mysql.chunks.dialect import CHUNK_SCHEMA, MySQLChunks
from sparkcdc.sources.mysql.chunks.typed import typed_chunk_schema
from sparkcdc.sources.mysql.schema.column_types import key_column
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.cases.decoder import (
    ALL_TYPES,
    COLUMNS,
    D65_MAX,
    MAX_ROW,
    MIN_ROW,
    MISC_ROW,
    NULL_ROW,
    ROW5,
    load_schema,
    master_status,
    read_changes,
)

pytestmark = pytest.mark.mariadb

ALL_CONTROLS = "".join(map(chr, range(32)))
# row 6: every control character, '/', quotes, backslashes next to \u escapes, latin1's holes,
# a blob long enough for TO_BASE64's line breaks, partly-zero dates, values that need care
ROW6: dict[str, Any] = {
    "id": 6,
    "ti": 0,
    "biu": 2**63 - 1,
    "d142": "-0.50",
    "d6530": "0." + "0" * 29 + "1",
    "d100": "-5",
    "d94": "-0.0001",
    "f": 1.00000012,
    "dbl": 1 / 3,
    "b64": 2**63,
    "y": 1901,
    "c": "a/b\\u001Fc",
    "vc": ALL_CONTROLS + '/\\"\\u00e9' + "\u2028\x7f😀",
    "tx": "line1\nline2\r\n\ttab\x0b\x1a\x1f end",
    "cl": "\x81\x8d\x8f\x90",
    "vcl": "\x9d€ ñ",
    "txl": "a\x00b\\",
    "j": '{"k": "a\\u001Fb/c", "e": "\\"q\\""}',
    "e": "b",
    "s": "",
    "bin": b"\x00\x00\x00\x00",
    "vb": b"\x00",
    "bl": bytes(range(256)) * 3,
    "dd": "2024-00-15",
    "tm6": "-00:00:00.000001",
    "tm3": "-12:00:00.5",
    "tm1": "00:00:00.1",
    "tm0": "-838:59:59",
    "dt0": "2024-05-00 01:02:03",
    "dt1": "0001-01-01 00:00:00",
    "dt6": "2024-02-29 23:59:59.999999",
    "ts3": "1970-01-01 05:00:01.001",
    "ts0": "2038-01-19 08:14:07",
}
# row 7: a blob of zeros, texts of only spaces or only escapes
ROW7: dict[str, Any] = {
    "id": 7,
    "d6530": "-0." + "0" * 29 + "1",
    "f": -3.4028234e38,
    "dbl": 5e-324,
    "c": " ",
    "vc": "\\",
    "tx": '"',
    "bl": bytes(1000),
    "bin": b"a",
    "vb": b"",
    "dd": "0000-00-00",
    "dt3": "2024-00-00 00:00:00.000",
}


def source_for(server: ThrowawayMariaDB) -> SourceConfig:
    return SourceConfig(
        host=server.host,
        port=server.port,
        user=server.user,
        password=server.password,
        tables=(".*",),
    )


@contextlib.contextmanager
def chunks_of(server: ThrowawayMariaDB) -> Iterator[MySQLChunks]:
    with MySQLChunks(source_for(server)) as dialect:
        yield dialect


def insert(server: ThrowawayMariaDB, db: str, table: str, row: dict[str, Any]) -> None:
    with contextlib.closing(server.connect(db)) as conn, conn.cursor() as cur:
        cur.execute("SET sql_mode = '', time_zone = '+05:00'")
        names = ", ".join(f"`{n}`" for n in row)
        marks = ", ".join(["%s"] * len(row))
        cur.execute(f"INSERT INTO `{table}` ({names}) VALUES ({marks})", tuple(row.values()))


def fields(image: str) -> list[tuple[str, str]]:
    """The (raw name, raw value) JSON texts of a compact JSON object, in order (raw_decode
    skips no whitespace, so any would fail here)."""
    dec, out, pos = json.JSONDecoder(), [], 1
    while image[pos] != "}":
        _, colon = dec.raw_decode(image, pos)
        assert image[colon] == ":"
        _, end = dec.raw_decode(image, colon + 1)
        out.append((image[pos:colon], image[colon + 1 : end]))
        pos = end + (image[end] == ",")
    assert pos == len(image) - 1
    return out


def same_value(data_type: str, a: str, b: str) -> bool:
    """Byte-identical JSON text, except FLOAT/DOUBLE: the same float32/double."""
    if a == b:
        return True
    if data_type not in ("float", "double") or "null" in (a, b):
        return False
    fmt = "<f" if data_type == "float" else "<d"
    return struct.pack(fmt, float(a)) == struct.pack(fmt, float(b))


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def by_key(table: Any) -> dict[str, str]:
    assert table.schema == CHUNK_SCHEMA
    keys, afters = table.column("key").to_pylist(), table.column("after").to_pylist()
    return dict(zip(keys, afters, strict=True))


def fill_all_types(mariadb: ThrowawayMariaDB, db: str) -> TableSchema:
    """The decoder's all-types table with rows MIN, MAX, NULL, MISC, 5, 6, 7 and 200 rows of
    random doubles and float32s (ids 8..207)."""
    mariadb.execute(ALL_TYPES, database=db)
    with contextlib.closing(mariadb.connect(db)) as conn, conn.cursor() as cur:
        cur.execute("SET sql_mode = '', time_zone = '+05:00'")
        cur.execute(f"INSERT INTO all_types ({COLUMNS}) VALUES {MIN_ROW}, {MAX_ROW}, {NULL_ROW}")
        cur.execute(f"INSERT INTO all_types ({COLUMNS}) VALUES {MISC_ROW}, {ROW5}")
    insert(mariadb, db, "all_types", ROW6)
    insert(mariadb, db, "all_types", ROW7)
    rng = random.Random(3)
    for i in range(8, 208):  # random doubles and float32s: round trips, not spellings
        bits = rng.getrandbits(64)
        dbl = struct.unpack("<d", struct.pack("<Q", bits))[0]
        f32 = struct.unpack("<f", struct.pack("<I", bits >> 32))[0]
        dbl = dbl if dbl == dbl and abs(dbl) != float("inf") else 0.5
        f32 = f32 if f32 == f32 and abs(f32) < 3.4e38 else 0.25
        insert(mariadb, db, "all_types", {"id": i, "f": f32, "dbl": dbl, "vc": chr(i) * 3})
    return load_schema(mariadb, db, "all_types")


def test_chunk_rows_are_the_binlog_row_images(mariadb: ThrowawayMariaDB, db: str) -> None:
    start = master_status(mariadb)
    schema = fill_all_types(mariadb, db)
    changes = read_changes(mariadb, start, master_status(mariadb), {schema.name: schema})
    logged = {key: after for _, op, key, _, after in changes if op == "c"}
    assert len(logged) == 207

    mariadb.execute("SET GLOBAL time_zone = '+03:00'")  # chunk reads must not depend on it
    try:
        with chunks_of(mariadb) as dialect:
            keys = dialect.key_columns(db, "all_types", ["id"])
            read = by_key(dialect.read_chunk(schema, keys, None, None))
            sql = dialect.chunk_query(schema, keys, KeyRange())
    finally:
        mariadb.execute("SET GLOBAL time_zone = SYSTEM")
    assert read.keys() == logged.keys()
    names = [json.dumps(c.name) for c in schema.columns]
    types = [c.data_type for c in schema.columns]
    for key, image in read.items():
        want = logged[key]
        assert want is not None
        got_fields, want_fields = fields(image), fields(want)
        assert [n for n, _ in got_fields] == [n for n, _ in want_fields] == names
        for t, (name, a), (_, b) in zip(types, got_fields, want_fields, strict=True):
            assert same_value(t, a, b), (key, name, a, b)
        if all(a == b for (_, a), (_, b) in zip(got_fields, want_fields, strict=True)):
            assert image == want

    # the JSON text does not depend on the session's time zone either
    body = sql.split(" FOR ", 1)[1]
    with contextlib.closing(mariadb.connect(db)) as conn, conn.cursor() as cur:
        cur.execute("SET time_zone = '-07:00'")
        cur.execute(body)
        assert dict(cur.fetchall()) == read
    row6 = json.loads(read["[6]"])
    assert row6["vc"] == ROW6["vc"] and row6["cl"] == ROW6["cl"] and row6["dd"] is None
    assert base64.b64decode(row6["bl"]) == ROW6["bl"] and row6["dt0"] is None
    assert json.loads(read["[7]"])["bin"] == base64.b64encode(b"a\0\0\0").decode()


def assert_typed_as_decoded(typed: pa.Table, plain: pa.Table, schema: TableSchema) -> None:
    """The typed chunk has the rows and keys of the JSON chunk ``plain``, and each column is
    what decode_images makes of its ``after`` (floats compared bit for bit)."""
    assert typed.schema == typed_chunk_schema(schema)
    assert typed.schema.names == ["key", *schema.column_names()]
    typed, plain = typed.sort_by("key"), plain.sort_by("key")
    keys = plain.column("key").to_pylist()
    assert typed.column("key").to_pylist() == keys
    decoded = decode_images(plain.column("after").combine_chunks(), schema)
    for i, column in enumerate(schema.columns):
        got, want = typed.column(i + 1).combine_chunks(), decoded.field(i)
        assert got.type == want.type == arrow_type(column), column.name
        if pa.types.is_floating(got.type):
            bits = pa.int32() if pa.types.is_float32(got.type) else pa.int64()
            got, want = got.view(bits), want.view(bits)
        differ = [
            (k, a, b)
            for k, a, b in zip(keys, got.to_pylist(), want.to_pylist(), strict=True)
            if a != b or type(a) is not type(b)
        ]
        assert not differ, (column.name, column.data_type, differ[:3])
        assert got.equals(want), column.name


def test_typed_chunks_are_the_decoded_row_images(mariadb: ThrowawayMariaDB, db: str) -> None:
    schema = fill_all_types(mariadb, db)
    mariadb.execute("SET GLOBAL time_zone = '+03:00'")  # typed reads must not depend on it
    try:
        with chunks_of(mariadb) as dialect:
            keys = dialect.key_columns(db, "all_types", ["id"])
            typed = dialect.read_chunk(schema, keys, None, None, typed=True)
            plain = dialect.read_chunk(schema, keys, None, None)
            assert_typed_as_decoded(
                dialect.read_chunk(schema, keys, (3,), (8,), typed=True),
                dialect.read_chunk(schema, keys, (3,), (8,)),
                schema,
            )
            empty = dialect.read_chunk(schema, keys, (300,), None, typed=True)
            sql = dialect.chunk_query(schema, keys, KeyRange(), typed=True)
    finally:
        mariadb.execute("SET GLOBAL time_zone = SYSTEM")
    assert typed.num_rows == plain.num_rows == 207
    assert_typed_as_decoded(typed, plain, schema)
    assert empty.num_rows == 0 and empty.schema == typed_chunk_schema(schema)
    # no JSON: the integer key's text is made from the id read, every column is read as itself
    assert "after" not in sql and "`key`" not in sql and "JSON_QUOTE" not in sql

    # spot checks against the values written, in the Delta types
    rows = {r["id"]: r for r in typed.to_pylist()}
    utc = datetime.UTC
    assert rows[2]["biu"] == decimal.Decimal(2**64 - 1) and rows[2]["b64"] == 2**64 - 1
    assert rows[2]["b10"] == 1023 and rows[2]["tiu"] == 255 and rows[2]["y"] == 2155
    assert rows[2]["c"] == "ünï😀 ok" and rows[2]["vcl"] == "€ŠŽœŸ"
    assert rows[2]["ts0"] == datetime.datetime(2038, 1, 19, 3, 14, 7, tzinfo=utc)
    assert rows[1]["d6530"] == "-" + D65_MAX and rows[1]["tm0"] == "-838:59:59.000000"
    assert rows[3] == {"key": "[3]", "id": 3, **{c.name: None for c in schema.columns[1:]}}
    assert rows[4]["dd"] is None and rows[4]["dt0"] is None and rows[4]["ts0"] is None
    assert rows[4]["y"] == 0 and rows[4]["cl"] == "a\x81" and rows[4]["e"] == ""
    assert rows[6]["vc"] == ROW6["vc"] and rows[6]["cl"] == ROW6["cl"] and rows[6]["dd"] is None
    assert rows[6]["bl"] == ROW6["bl"] and rows[6]["dt0"] is None and rows[6]["b64"] == 2**63
    assert rows[6]["ts3"] == datetime.datetime(1970, 1, 1, 0, 0, 1, 1000, tzinfo=utc)
    assert rows[6]["d142"] == decimal.Decimal("-0.50")
    assert rows[7]["bin"] == b"a\0\0\0" and rows[7]["bl"] == bytes(1000) and rows[7]["vb"] == b""
    assert rows[7]["dd"] is None and rows[7]["dt3"] is None


def test_dates_are_read_as_they_are_until_a_chunk_shows_a_zero_date(
    mariadb: ThrowawayMariaDB, db: str
) -> None:
    """DATE and DATETIME are selected as they are (the guard against zero dates costs the
    server) until a chunk of the table holds one: connectorx refuses zero and partly-zero dates
    and reads year 0, which the row images make NULL. That chunk is read again guarded, and so
    are the table's later chunks; the values are the row images' either way."""
    mariadb.execute("CREATE TABLE d (id INT PRIMARY KEY, dt DATETIME(6), dd DATE)", database=db)
    rows = [
        {"id": 1, "dt": "2024-01-02 03:04:05.5", "dd": "2024-01-02"},
        {"id": 2, "dt": "0001-01-01 00:00:00", "dd": "9999-12-31"},
        {"id": 3, "dt": "0000-03-04 05:06:07", "dd": "2024-01-03"},  # year 0
        {"id": 4, "dt": "2024-01-01 00:00:00", "dd": "2024-05-00"},  # partly zero
        {"id": 5, "dt": "2024-01-01 00:00:00", "dd": "2024-05-06"},
    ]
    for row in rows:
        insert(mariadb, db, "d", row)

    def prepared() -> int:  # connectorx prepares each query it runs
        found = mariadb.query("SHOW GLOBAL STATUS LIKE 'Com_stmt_prepare'")
        return int(found[0][1])

    with chunks_of(mariadb) as dialect:
        schema = dialect.catalog.load_schema(db, "d")
        keys = dialect.key_columns(db, "d", ["id"])
        unguarded = dialect.chunk_query(schema, keys, KeyRange(), True, zero_dates=False)
        assert "DAYOFMONTH" not in unguarded
        assert "DAYOFMONTH" in dialect.chunk_query(schema, keys, KeyRange(), True)
        counts, chunks = [], []
        for lo, hi in ((None, (3,)), ((3,), (4,)), ((4,), None)):
            before = prepared()
            chunks.append(dialect.read_chunk(schema, keys, lo, hi, typed=True))
            counts.append(prepared() - before)
        assert_typed_as_decoded(
            pa.concat_tables(chunks), dialect.read_chunk(schema, keys, None, None), schema
        )
    # valid dates: one query; year 0: read again guarded; later chunks: guarded at once
    assert counts == [1, 2, 1]
    found = {r["id"]: (r["dt"], r["dd"]) for r in pa.concat_tables(chunks).to_pylist()}
    assert found[2] == (datetime.datetime(1, 1, 1), datetime.date(9999, 12, 31))
    assert found[3] == (None, datetime.date(2024, 1, 3)) and found[4][1] is None
    assert found[1][0] == datetime.datetime(2024, 1, 2, 3, 4, 5, 500000)


COMPOSITE = """
CREATE TABLE comp (
  a INT NOT NULL, b VARCHAR(10) NOT NULL, d DATETIME(6) NOT NULL, v INT,
  PRIMARY KEY (a, b, d)
)"""


def composite_rows(mariadb: ThrowawayMariaDB, db: str) -> list[tuple[int, str, str]]:
    mariadb.execute(COMPOSITE, database=db)
    rows = [
        (a, b, f"2024-01-0{d}T00:00:00.{d:06d}")
        for a in range(4)
        for b in ("p", "q", "qq", "r")
        for d in (1, 2, 3)
    ]
    values = ", ".join(f"({a}, '{b}', '{d}', {i})" for i, (a, b, d) in enumerate(rows))
    mariadb.execute(f"INSERT INTO comp VALUES {values}", database=db)
    return rows


def test_composite_key_ranges(mariadb: ThrowawayMariaDB, db: str) -> None:
    rows = composite_rows(mariadb, db)  # created in key order
    schema = load_schema(mariadb, db, "comp")
    bounds: list[KeyValue | None] = [
        None,
        (0, "p", "2024-01-01T00:00:00.000001"),
        (1, "q", "2024-01-02T00:00:00.000002"),
        (1, "qa", "2000-01-01T00:00:00.000000"),
        (2, "r", "2099-01-01T00:00:00.000000"),
        (3, "", "1999-01-01T00:00:00.000000"),
        (9, "z", "2024-01-01T00:00:00.000000"),
    ]
    with chunks_of(mariadb) as dialect:
        keys = dialect.key_columns(db, "comp", ["A", "b", "d"])
        assert [k.name for k in keys] == ["a", "b", "d"]
        assert keys[1].collation == "utf8mb4_general_ci" and keys[1].charset == "utf8mb4"
        for lo in bounds:
            for hi in bounds:
                want = [
                    compact(list(r))
                    for r in rows
                    if (lo is None or r >= lo) and (hi is None or r < hi)
                ]
                got = dialect.read_chunk(schema, keys, lo, hi)
                assert sorted(by_key(got)) == sorted(want), (lo, hi)
                typed = dialect.read_chunk(schema, keys, lo, hi, typed=True)
                assert sorted(typed.column("key").to_pylist()) == sorted(want), (lo, hi)
                assert_typed_as_decoded(typed, got, schema)
                count = dialect.count_between(db, "comp", keys, lo, hi, 5)
                assert count == min(5, len(want))
        # cut the table with key_after: chunks of 7 cover every row once, in key order
        splits, lo = [], None
        while True:
            hi = dialect.key_after(db, "comp", keys, lo, 7)
            splits.append((lo, hi))
            if hi is None:
                break
            assert hi == rows[rows.index(lo) + 7 if lo else 7]
            lo = hi
        seen = [k for s in splits for k in by_key(dialect.read_chunk(schema, keys, *s))]
        assert sorted(seen) == sorted(compact(list(r)) for r in rows)
        assert len(splits) == -(-len(rows) // 7)
        assert dialect.key_after(db, "comp", keys, rows[-1], 0) == rows[-1]
        assert dialect.key_after(db, "comp", keys, rows[-1], 1) is None
        assert dialect.key_range(db, "comp", keys) == (rows[0], rows[-1])
        assert dialect.row_count(db, "comp") == len(rows)
        located = dialect.locate(
            keys,
            [rows[0], rows[5], (9, "", "2000-01-01T00:00:00.000000")],
            [rows[0], rows[5], rows[6]],
        )
        assert located == [1, 2, 3]


def test_case_insensitive_string_keys(mariadb: ThrowawayMariaDB, db: str) -> None:
    mariadb.execute(
        "CREATE TABLE s (k VARCHAR(20) COLLATE utf8mb4_general_ci PRIMARY KEY, v INT)",
        "CREATE TABLE l (k VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_bin PRIMARY KEY)",
        "INSERT INTO s VALUES ('a', 1), ('ABC', 2), ('abd', 3), ('B', 4), ('é', 5), ('x''y', 6)",
        "INSERT INTO l VALUES ('a'), ('B'), ('é'), ('Z')",
        database=db,
    )
    schema = load_schema(mariadb, db, "s")
    with chunks_of(mariadb) as dialect:
        keys = dialect.key_columns(db, "s", ["k"])
        order = []
        lo: KeyValue | None = None
        while (lo := dialect.key_after(db, "s", keys, lo, 0 if lo is None else 1)) is not None:
            order.append(lo[0])
        assert order == ["a", "ABC", "abd", "B", "é", "x'y"]  # é = e under general_ci
        assert dialect.locate(
            keys, [("abc",), ("ABD",), ("Abc",), ("c",), ("E",)], [("abc",), ("b",), ("e",)]
        ) == [1, 1, 1, 2, 3]
        plain = dialect.read_chunk(schema, keys, ("abc",), ("b",))
        assert sorted(by_key(plain)) == ['["ABC"]', '["abd"]']
        typed = dialect.read_chunk(schema, keys, ("abc",), ("b",), typed=True)
        assert typed.sort_by("key").to_pylist() == [
            {"key": '["ABC"]', "k": "ABC", "v": 2},
            {"key": '["abd"]', "k": "abd", "v": 3},
        ]
        assert_typed_as_decoded(typed, plain, schema)
        assert dialect.count_between(db, "s", keys, ("AB",), ("é",), 100) == 3
        # latin1_bin: byte order in latin1 ('B' < 'Z' < 'a' < 'é')
        lkeys = dialect.key_columns(db, "l", ["k"])
        assert lkeys[0].charset == "latin1" and lkeys[0].collation == "latin1_bin"
        assert dialect.locate(lkeys, [("a",), ("é",), ("Z",)], [("Z",), ("a",)]) == [2, 2, 1]
        assert dialect.key_after(db, "l", lkeys, ("b",), 0) == ("é",)


KEY_TYPES: list[tuple[str, list[str], list[Any]]] = [
    ("BIGINT UNSIGNED", ["0", "1", "18446744073709551615"], [0, 1, 2**64 - 1]),
    ("TINYINT", ["-128", "0", "127"], [-128, 0, 127]),
    ("DECIMAL(12,3)", ["-10.5", "-0.001", "0", "7"], ["-10.500", "-0.001", "0.000", "7.000"]),
    ("BIT(10)", ["b'0'", "b'101'", "b'1111111111'"], [0, 5, 1023]),
    ("YEAR", ["1901", "2024", "2155"], [1901, 2024, 2155]),
    ("CHAR(3) CHARACTER SET latin1", ["'a'", "'b'", "'é'"], ["a", "b", "é"]),
    ("BINARY(3)", ["x'00'", "x'0001'", "x'FF'"], ["AAAA", "AAEA", "/wAA"]),
    ("VARBINARY(3)", ["x''", "x'00'", "x'0000'", "x'01'"], ["", "AA==", "AAA=", "AQ=="]),
    ("DATE", ["'1000-01-01'", "'2024-02-29'"], ["1000-01-01", "2024-02-29"]),
    (
        "DATETIME(2)",
        ["'2024-01-01 00:00:00.01'", "'2024-01-01 00:00:00.1'"],
        ["2024-01-01T00:00:00.010000", "2024-01-01T00:00:00.100000"],
    ),
    (
        "TIMESTAMP(6)",
        ["'1970-01-01 05:00:01'", "'2024-03-31 01:30:00.5'"],
        ["1970-01-01T00:00:01.000000Z", "2024-03-30T20:30:00.500000Z"],
    ),
    (
        "TIME(1)",
        ["'-838:59:59'", "'-00:00:00.5'", "'00:00:00'", "'100:00:00.1'"],
        ["-838:59:59.000000", "-00:00:00.500000", "00:00:00.000000", "100:00:00.100000"],
    ),
]


@pytest.mark.parametrize(
    ("sql_type", "literals", "values"), KEY_TYPES, ids=[t[0] for t in KEY_TYPES]
)
def test_every_key_type_bounds_chunks(
    mariadb: ThrowawayMariaDB, db: str, sql_type: str, literals: list[str], values: list[Any]
) -> None:
    mariadb.execute(f"CREATE TABLE k (k {sql_type} PRIMARY KEY, n INT)", database=db)
    with contextlib.closing(mariadb.connect(db)) as conn, conn.cursor() as cur:
        cur.execute("SET time_zone = '+05:00'")
        for i, lit in enumerate(literals):
            cur.execute(f"INSERT INTO k VALUES ({lit}, {i})")
    schema = load_schema(mariadb, db, "k")
    keyed = [(v,) for v in values]  # ascending, in the row-image encoding
    with chunks_of(mariadb) as dialect:
        keys = dialect.key_columns(db, "k", ["k"])
        assert dialect.key_range(db, "k", keys) == (keyed[0], keyed[-1])
        assert [dialect.key_after(db, "k", keys, None, i) for i in range(len(keyed))] == keyed
        for i, v in enumerate(keyed):
            assert dialect.key_after(db, "k", keys, v, 0) == v
            hi = keyed[i + 1] if i + 1 < len(keyed) else None
            got = by_key(dialect.read_chunk(schema, keys, v, hi))
            assert [json.loads(k) for k in got] == [[values[i]]]
            assert json.loads(got[compact([values[i]])])["n"] == i
        assert dialect.locate(keys, keyed, keyed[1:]) == list(range(len(keyed)))
        assert dialect.count_between(db, "k", keys, keyed[1], None, 100) == len(keyed) - 1
        # typed reads: the key text (made here for integer keys) and the values as decoded
        typed = dialect.read_chunk(schema, keys, None, None, typed=True)
        assert_typed_as_decoded(typed, dialect.read_chunk(schema, keys, None, None), schema)


def test_key_columns_refusals_counts_and_watermark(mariadb: ThrowawayMariaDB, db: str) -> None:
    mariadb.execute(
        "CREATE TABLE e (id INT PRIMARY KEY, f FLOAT, t TEXT, d DECIMAL(7,2) UNSIGNED)",
        database=db,
    )
    with chunks_of(mariadb) as dialect:
        with pytest.raises(ConfigError, match=f"{db}.e has no column nope") as err:
            dialect.key_columns(db, "e", ["id", "nope"])
        assert err.value.fields["key"] == "source.snapshot.chunk_key_columns"
        for name in ("f", "t"):
            with pytest.raises(ConfigError, match=f"Column {name} of {db}.e has type"):
                dialect.key_columns(db, "e", [name])
        assert dialect.key_columns(db, "e", ["d"]) == [
            key_column("d", "decimal", unsigned=True, precision=7, scale=2)
        ]
        keys = dialect.key_columns(db, "e", ["id"])
        assert dialect.key_range(db, "e", keys) is None
        assert dialect.key_after(db, "e", keys, None, 0) is None
        assert dialect.row_count(db, "e") == 0
        empty = dialect.read_chunk(load_schema(mariadb, db, "e"), keys, None, (5,))
        assert empty.num_rows == 0 and empty.schema == CHUNK_SCHEMA
        mariadb.execute("INSERT INTO e (id) SELECT seq FROM seq_1_to_50", database=db)
        assert dialect.count_between(db, "e", keys, (10,), None, 7) == 7
        assert dialect.count_between(db, "e", keys, (10,), (20,), 100) == 10
        assert dialect.count_between(db, "e", keys, None, (1,), 100) == 0
        assert dialect.row_count(db, "e") == 50
        assert dialect.locate(keys, [], [(1,)]) == [] and dialect.locate(keys, [(3,)], []) == [0]
        with MySQLCatalog(mariadb.host, mariadb.port, mariadb.user, mariadb.password) as cat:
            assert dialect.watermark() == cat.current_offset()


def test_null_chunk_key_values_sort_first(mariadb: ThrowawayMariaDB, db: str) -> None:
    """A configured chunk key may hold NULLs: they order before every value, as in ORDER BY."""
    mariadb.execute(
        "CREATE TABLE n (k INT NULL, s VARCHAR(5) NULL, v INT)",
        "INSERT INTO n VALUES (2, 'b', 5), (1, 'a', 4), (1, NULL, 3), (NULL, 'a', 2),"
        " (NULL, NULL, 1)",
        database=db,
    )
    with MySQLCatalog(mariadb.host, mariadb.port, mariadb.user, mariadb.password) as cat:
        schema = cat.load_schema(db, "n", ("k", "s"))
    ordered = [(None, None), (None, "a"), (1, None), (1, "a"), (2, "b")]
    with chunks_of(mariadb) as dialect:
        keys = dialect.key_columns(db, "n", ["k", "s"])
        walk = [dialect.key_after(db, "n", keys, None, 0)]
        while (nxt := dialect.key_after(db, "n", keys, walk[-1], 1)) is not None:
            walk.append(nxt)
        assert walk == ordered
        assert dialect.locate(keys, ordered, ordered[1:]) == [0, 1, 2, 3, 4]
        bounds: list[KeyValue | None] = [None, *ordered[1:], None]
        seen = []
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            plain = dialect.read_chunk(schema, keys, lo, hi)
            assert_typed_as_decoded(dialect.read_chunk(schema, keys, lo, hi, True), plain, schema)
            rows = by_key(plain)
            assert len(rows) == 1 and dialect.count_between(db, "n", keys, lo, hi, 9) == 1
            seen += [tuple(json.loads(k)) for k in rows]
        assert seen == ordered


def test_credentials_in_the_url_and_errors(mariadb: ThrowawayMariaDB, db: str) -> None:
    """A password with URL metacharacters reaches connectorx intact and never shows in errors."""
    password = "p@ss:w/rd#%?&+ x"
    user, _ = mariadb.create_cdc_user("chunk_reader", password)
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(5))",
        "INSERT INTO t VALUES (1, 'a'), (2, NULL)",
        database=db,
    )
    schema = load_schema(mariadb, db, "t")
    source = SourceConfig(
        host=mariadb.host, port=mariadb.port, user=user, password=password, tables=(".*",)
    )
    with MySQLChunks(source) as dialect:
        keys = dialect.key_columns(db, "t", ["id"])
        assert by_key(dialect.read_chunk(schema, keys, None, None)) == {
            "[1]": '{"id":1,"v":"a"}',
            "[2]": '{"id":2,"v":null}',
        }
        mariadb.execute("DROP TABLE t", database=db)
        with pytest.raises(SourceError, match=f"a chunk of {db}.t") as err:
            dialect.read_chunk(schema, keys, None, None)
        assert password not in str(err.value) and quote(password, safe="") not in str(err.value)
        assert err.value.__cause__ is None  # the driver's words (its URL) are not chained
        with pytest.raises(SourceError, match=f"Table {db}.t does not exist"):
            dialect.key_columns(db, "t", ["id"])
