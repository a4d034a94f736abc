"""The PostgreSQL snapshot dialect against a real server: chunk rows byte for byte the log
reader's row images for every mapped type (compared with pgoutput's own texts of the same rows),
typed chunks equal to the decoded images, keyset chunks that cover every row once over single
and composite keys (int, text in an ICU collation, uuid, timestamptz, a nullable column),
``locate`` in the server's order, exported snapshots, conditions, row counts and watermarks."""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.config.model import SourceConfig
from sparkcdc.core import types as core_types
from sparkcdc.core.chunk import KeyColumn, KeyValue
from sparkcdc.core.convert import decode_images
from sparkcdc.core.errors import ConfigError, SourceError
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.correct import CHUNK_SCHEMA
from sparkcdc.sources.port import SnapshotPin
from sparkcdc.sources.postgres.chunks import dialect as chunks_dialect
from sparkcdc.sources.postgres.chunks.dialect import PostgresChunks
from sparkcdc.sources.postgres.chunks.images import image_text, key_text
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.pgoutput import messages as m
from sparkcdc.sources.postgres.server.catalog import PostgresCatalog
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from sparkcdc.sources.postgres.wire import PgConnection, create_logical_slot, parse_lsn
from tests.cases.pg_types import ROWS, SCHEMA

pytestmark = pytest.mark.postgres

ICU = '"en-US-x-icu"'
ODD_NAMES = ['Na"me', "ünï", "select", "back\\slash"]
CONTROLS = "".join(map(chr, range(1, 32))) + '"\\/\u2028\x7f😀'


def source(postgres: ThrowawayPostgres, database: str) -> SourceConfig:
    return SourceConfig(
        host=postgres.host,
        port=postgres.port,
        user=postgres.user,
        password=postgres.password,
        tables=(".*",),
        type="postgres",
        connect_timeout=3,
        settings=PostgresSettings(database=database),
    )


@pytest.fixture
def chunks(postgres: ThrowawayPostgres, pgdb: str) -> Iterator[PostgresChunks]:
    with PostgresChunks(source(postgres, pgdb)) as dialect:
        yield dialect


def load(postgres: ThrowawayPostgres, db: str, table: str, keys: Sequence[str] = ()) -> TableSchema:
    with PostgresCatalog(source(postgres, db)) as catalog:
        return catalog.load_schema("public", table, keys)


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def same(a: Any, b: Any) -> bool:
    """Equal values, NaN equal to NaN and -0.0 apart from 0.0."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    return bool(a == b) and type(a) is type(b)


def comparable(values: pa.Array | pa.ChunkedArray) -> list[Any]:
    """Python values, dates and timestamps as their storage (any year)."""
    kind = values.type.value_type if pa.types.is_list(values.type) else values.type
    storage = {pa.types.is_date32: pa.int32(), pa.types.is_timestamp: pa.int64()}
    for test, plain in storage.items():
        if test(kind):
            to = pa.list_(plain) if pa.types.is_list(values.type) else plain
            return values.cast(to).to_pylist()
    return values.to_pylist()


def peek(postgres: ThrowawayPostgres, db: str) -> list[m.Message]:
    """The slot's pending pgoutput messages, decoded."""
    rows = postgres.query(
        "SELECT lsn::text, data FROM pg_logical_slot_peek_binary_changes("
        f"'{db}', NULL, NULL, 'proto_version', '1', 'publication_names', 'pub')",
        db,
    )
    decoder = m.Decoder()
    return [decoder(bytes(data), parse_lsn(lsn)) for lsn, data in rows]


@contextlib.contextmanager
def slot(postgres: ThrowawayPostgres, db: str, tables: str) -> Iterator[None]:
    postgres.execute(
        f"CREATE PUBLICATION pub FOR TABLE {tables}",
        f"SELECT pg_create_logical_replication_slot('{db}', 'pgoutput')",
        database=db,
    )
    try:
        yield
    finally:
        postgres.execute(f"SELECT pg_drop_replication_slot('{db}')", database=db)


def insert_everything(postgres: ThrowawayPostgres, db: str) -> None:
    statements = []
    for i, row in enumerate(ROWS):
        names = ", ".join(["id", *row])
        quoted = ", ".join([str(i), *map(quote, row.values())])
        statements.append(f"INSERT INTO everything ({names}) VALUES ({quoted})")
    names = ", ".join(map(ident, ODD_NAMES))
    text = quote(CONTROLS)
    statements.append(f"INSERT INTO odd (k, {names}) VALUES ({text}, {text}, 'x', NULL, '')")
    postgres.execute("BEGIN", *statements, "COMMIT", database=db)


# ---- row images: the log reader's, for every type ------------------------------------------


@pytest.fixture
def everything(postgres: ThrowawayPostgres, pgdb: str) -> Iterator[list[m.Message]]:
    columns = ", ".join(f"{ident(n)} text" for n in ODD_NAMES)
    postgres.execute(*SCHEMA, f"CREATE TABLE odd (k text PRIMARY KEY, {columns})", database=pgdb)
    with slot(postgres, pgdb, "everything, odd"):
        insert_everything(postgres, pgdb)
        yield peek(postgres, pgdb)


def test_chunk_rows_are_the_log_readers_row_images(
    postgres: ThrowawayPostgres, pgdb: str, chunks: PostgresChunks, everything: list[m.Message]
) -> None:
    relations = {r.oid: r.name for r in everything if isinstance(r, m.Relation)}
    inserts = [x for x in everything if isinstance(x, m.Insert)]
    assert len(inserts) == len(ROWS) + 1
    for name in ("everything", "odd"):
        schema = load(postgres, pgdb, name)
        keys = chunks.key_columns("public", name, schema.key)
        table = chunks.read_chunk(schema, keys, None, None)
        assert table.schema == CHUNK_SCHEMA
        keys_after = (table.column("key").to_pylist(), table.column("after").to_pylist())
        images = dict(zip(*keys_after, strict=True))
        expected = {}
        for insert in (i for i in inserts if relations[i.relation] == name):
            texts = [None if v is None else v.decode() for v in insert.new]
            key = key_text([schema.columns[0]], texts[:1])
            expected[key] = image_text(schema.columns, texts)
        assert images == expected, name
    image = images[key_text(schema.columns[:1], [CONTROLS])]  # names as json.dumps has them
    assert '"Na\\"me":' in image and '"ünï":"x","select":null,"back\\\\slash":""}' in image


def test_typed_chunks_are_the_decoded_row_images(
    postgres: ThrowawayPostgres, pgdb: str, chunks: PostgresChunks, everything: list[m.Message]
) -> None:
    schema = load(postgres, pgdb, "everything")
    try:
        core_types.check("array<int32>")
    except ValueError:  # core has no arrays yet: their columns go the JSON way only
        schema = schema.with_columns(
            tuple(c for c in schema.columns if not c.logical.startswith("array<"))
        )
    keys = chunks.key_columns("public", "everything", ["id"])
    typed = chunks.read_chunk(schema, keys, None, None, typed=True).sort_by("key")
    images = chunks.read_chunk(schema, keys, None, None).sort_by("key")
    assert typed.column("key").equals(images.column("key"))
    decoded = decode_images(images.column("after"), schema)
    for i, column in enumerate(schema.columns):
        got, want = typed.column(i + 1), decoded.field(i)
        assert got.type == want.type, column.name
        pairs = zip(comparable(got), comparable(want), strict=True)
        assert all(same(a, b) for a, b in pairs), column.name


# ---- keyset chunks -----------------------------------------------------------------------

KEYSET_TABLES = {  # table: (chunk key, CREATE TABLE columns)
    "single": (["id"], "id int PRIMARY KEY, v int"),
    "named": (["name", "n"], f"name text COLLATE {ICU}, n int, v int, PRIMARY KEY (name, n)"),
    "uu": (["u"], "u uuid PRIMARY KEY, v int"),
    "moment": (["at", "seq"], "at timestamptz, seq int, v int, PRIMARY KEY (at, seq)"),
    "loose": (["g"], "g int, v int"),  # no key: a nullable chunk key with duplicates
}
NAMES = st.text("aAbBéÉ -zZ_", max_size=4)


def fill_keyset(postgres: ThrowawayPostgres, db: str) -> None:
    statements = [f"CREATE TABLE {t} ({cols})" for t, (_, cols) in KEYSET_TABLES.items()]
    statements += [
        "INSERT INTO single SELECT i * 7 % 1000, i FROM generate_series(1, 150) i",
        "INSERT INTO named SELECT substr('aAbBéÉ -zZ', 1 + i % 7, i % 3) || chr(97 + i % 5), "
        "i % 4, i FROM generate_series(1, 150) i ON CONFLICT DO NOTHING",
        "INSERT INTO uu SELECT md5(i::text)::uuid, i FROM generate_series(1, 120) i",
        "INSERT INTO moment SELECT TIMESTAMPTZ '2024-01-01 00:00:00+00' + (i % 40) * "
        "INTERVAL '1 hour 0.000001 second', i % 3, i FROM generate_series(1, 150) i "
        "ON CONFLICT DO NOTHING",
        "INSERT INTO loose SELECT CASE WHEN i % 9 = 0 THEN NULL ELSE i % 50 END, i "
        "FROM generate_series(1, 150) i",
    ]
    postgres.execute(*statements, database=db)


def walk(
    d: PostgresChunks, table: str, keys: list[KeyColumn], offsets: list[int]
) -> list[KeyValue | None]:
    """Chunk bounds as the uneven splitter finds them: None, then key_after(lo, offset)..."""
    bounds: list[KeyValue | None] = [None]
    for offset in offsets:
        hi = d.key_after("public", table, keys, bounds[-1], offset)
        while hi is not None and bounds[-1] is not None and list(hi) == list(bounds[-1]):
            offset *= 2  # a run of equal (NULL) keys: skipped whole, as the splitter does
            hi = d.key_after("public", table, keys, bounds[-1], offset)
        if hi is None:
            break
        bounds.append(hi)
    return [*bounds, None]


def test_keyset_chunks_cover_every_row_once(
    postgres: ThrowawayPostgres, pgdb: str, chunks: PostgresChunks
) -> None:
    fill_keyset(postgres, pgdb)
    setup = {}
    for table, (names, _) in KEYSET_TABLES.items():
        schema = load(postgres, pgdb, table, names if table == "loose" else ())
        keys = chunks.key_columns("public", table, names)
        whole = chunks.read_chunk(schema, keys, None, None)
        setup[table] = (schema, keys, sorted(whole.column("after").to_pylist()))
    assert [k.collation for k in setup["named"][1]] == [f"pg_catalog.{ICU}", None]

    @settings(max_examples=25, deadline=None)
    @given(
        table=st.sampled_from(sorted(KEYSET_TABLES)),
        offsets=st.lists(st.integers(1, 60), max_size=8),
    )
    def cover(table: str, offsets: list[int]) -> None:
        schema, keys, rows = setup[table]
        bounds = walk(chunks, table, keys, offsets)
        seen: list[str] = []
        for i, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
            part = chunks.read_chunk(schema, keys, lo, hi)
            seen += part.column("after").to_pylist()
            assert chunks.count_between("public", table, keys, lo, hi, 10_000) == part.num_rows
            inner = [b for b in (lo, hi) if b is not None]
            values = [tuple(json.loads(k)) for k in part.column("key").to_pylist()]
            if values and inner:  # the server puts each of the chunk's keys between its bounds
                assert set(chunks.locate(keys, values, inner)) == {1 if lo is not None else 0}, i
        assert sorted(seen) == rows

    cover()


def test_key_after_and_counts_follow_the_server_order(
    postgres: ThrowawayPostgres, pgdb: str, chunks: PostgresChunks
) -> None:
    fill_keyset(postgres, pgdb)
    keys = chunks.key_columns("public", "named", ["name", "n"])
    ordered = [
        (name, n)
        for name, n in postgres.query(
            f"SELECT name, n FROM named ORDER BY name COLLATE {ICU}, n", pgdb
        )
    ]
    assert ordered != sorted(ordered)  # Python's order is not the collation's
    assert chunks.key_range("public", "named", keys) == (ordered[0], ordered[-1])
    for start in (0, 5, 40):
        for offset in (0, 1, 17):
            want = ordered[start + offset] if start + offset < len(ordered) else None
            assert chunks.key_after("public", "named", keys, ordered[start], offset) == want
    upto = ordered[30]
    assert chunks.key_after("public", "named", keys, ordered[20], 10, upto) == upto
    assert chunks.key_after("public", "named", keys, ordered[20], 11, upto) is None
    assert chunks.count_between("public", "named", keys, ordered[3], ordered[50], 1000) == 47
    assert chunks.count_between("public", "named", keys, ordered[3], None, 10) == 10

    @settings(max_examples=30, deadline=None)
    @given(lo=st.tuples(NAMES, st.integers(-1, 4)), hi=st.tuples(NAMES, st.integers(-1, 4)))
    def between(lo: KeyValue, hi: KeyValue) -> None:
        above = chunks.locate(keys, ordered, [lo])
        below = chunks.locate(keys, ordered, [hi])
        want = sum(a == 1 and b == 0 for a, b in zip(above, below, strict=True))
        assert chunks.count_between("public", "named", keys, lo, hi, 10_000) == want

    between()


def test_locate_agrees_with_the_collation(
    postgres: ThrowawayPostgres, pgdb: str, chunks: PostgresChunks
) -> None:
    postgres.execute(
        f"CREATE TABLE loc (name text COLLATE {ICU}, n int, UNIQUE (name, n))", database=pgdb
    )
    keys = chunks.key_columns("public", "loc", ["name", "n"])

    @settings(max_examples=25, deadline=None)
    @given(
        values=st.lists(
            st.tuples(st.one_of(st.none(), NAMES), st.one_of(st.none(), st.integers(0, 2))),
            max_size=12,
        ),
        bounds=st.lists(st.tuples(NAMES, st.integers(0, 2)), min_size=1, max_size=6),
    )
    def agree(values: list[KeyValue], bounds: list[KeyValue]) -> None:
        order = rank(postgres, pgdb, [*values, *bounds])
        want = [sum(1 for b in bounds if order[b] <= order[v]) for v in values]
        assert chunks.locate(keys, values, bounds) == want

    agree()
    mixed = [("b", 0), ("B", 0), ("a", 0), ("é", 0), ("e", 0)]
    assert chunks.locate(keys, mixed, [("B", 0)]) == [0, 1, 0, 1, 1]  # a < b < B < e < é


def rank(postgres: ThrowawayPostgres, db: str, values: Sequence[KeyValue]) -> dict[KeyValue, int]:
    """Each (name, n) pair's place in the server's order (ICU collation, NULL last)."""
    rows = ", ".join(
        "(" + ("NULL" if a is None else "'" + str(a).replace("'", "''") + "'") + ", "
        + ("NULL::int" if b is None else str(b)) + ")"
        for a, b in values
    )  # fmt: skip
    found = postgres.query(
        f"SELECT DISTINCT a, b, dense_rank() OVER (ORDER BY a COLLATE {ICU}, b) "
        f"FROM (VALUES {rows}) AS v(a, b)",
        db,
    )
    return {(a, b): int(r) for a, b, r in found}


# ---- every key type ------------------------------------------------------------------------

KEY_TYPES = [  # declaration, values in the server's order
    ("smallint", ["-32768", "0", "32767"]),
    ("bigint", ["-9223372036854775808", "1", "9223372036854775807"]),
    ("numeric(10,2)", ["-5.50", "0.01", "12345678.90"]),
    ("numeric", ["-1e-30", "3.14159", "1e30", "NaN"]),
    ("double precision", ["-Infinity", "-1.5", "0.1", "1e300", "Infinity", "NaN"]),
    ("real", ["-3.4e38", "1.1", "3.4e38"]),
    ("text", ["", " ", "a", "a\\b", "it's", "ünï"]),
    ("varchar(8)", ["A", "B", "a"]),
    ("char(4)", ["a", "ab", "b"]),
    ('"char"', ["a", "b"]),
    ("uuid", ["00000000-0000-0000-0000-000000000000", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]),
    ("bytea", ["\\x", "\\x00", "\\x0001", "\\xff"]),
    ("boolean", ["false", "true"]),
    # ±infinity are keyed as 0001-01-01 and 9999-12-31 (the mapping's sentinels), so they
    # order right among dates of years 1..9999 only
    ("date", ["-infinity", "0001-01-02", "2024-02-29", "9999-12-30", "infinity"]),
    ("date", ["0044-03-15 BC", "0001-01-01", "12345-06-07"]),
    (
        "timestamp",
        ["0044-03-15 12:00:00.5 BC", "2024-02-29 12:34:56.123456", "10000-01-01 00:00:00"],
    ),
    (
        "timestamptz",
        ["1850-06-01 12:00:00+00", "2024-02-29 12:34:56.5+02", "2024-02-29 12:00:00+00"],
    ),
    ("time", ["00:00:00", "12:00:00.5", "24:00:00"]),
    ("interval", ["-1 day", "00:00:01.5", "1 year"]),
    ("mood", ["sad", "happy", "ünïcode"]),  # an enum: declaration order
    ("posint", ["1", "2"]),  # a domain
    ("inet", ["10.0.0.1", "192.168.0.1/24"]),
]


def test_every_key_type_bounds_chunks(
    postgres: ThrowawayPostgres, pgdb: str, chunks: PostgresChunks
) -> None:
    postgres.execute(
        "CREATE TYPE mood AS ENUM ('sad', 'happy', 'ünïcode')",
        "CREATE DOMAIN posint AS integer CHECK (VALUE > 0)",
        *(f"CREATE TABLE k{i} (k {decl} PRIMARY KEY)" for i, (decl, _) in enumerate(KEY_TYPES)),
        *(
            f"INSERT INTO k{i} VALUES " + ", ".join(f"({quote(v)})" for v in values)
            for i, (_, values) in enumerate(KEY_TYPES)
        ),
        database=pgdb,
    )  # fmt: skip
    for i, (decl, values) in enumerate(KEY_TYPES):
        table = f"k{i}"
        schema = load(postgres, pgdb, table)
        keys = chunks.key_columns("public", table, ["k"])
        bounds = walk(chunks, table, keys, [1] * len(values))
        assert len(bounds) == len(values) + 1, (decl, bounds)
        found = []
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            part = chunks.read_chunk(schema, keys, lo, hi)
            assert part.num_rows == 1, (decl, lo, hi)
            found.append(tuple(json.loads(part.column("key")[0].as_py())))
        assert found[1:] == bounds[1:-1], decl  # each bound is its chunk's first key
        inner = [b for b in bounds if b is not None]
        assert chunks.locate(keys, found, inner) == list(range(len(values))), decl


# ---- exported snapshots, conditions, counts ------------------------------------------------


def test_reads_in_an_exported_snapshot(postgres: ThrowawayPostgres, pgdb: str) -> None:
    postgres.execute(
        "CREATE TABLE s (id int PRIMARY KEY, v text)",
        "INSERT INTO s SELECT i, 'old' FROM generate_series(1, 100) i",
        database=pgdb,
    )
    conn = PgConnection(postgres.host, postgres.port, postgres.user, postgres.password, pgdb,
                        replication=True)  # fmt: skip
    try:
        created = create_logical_slot(conn, pgdb, snapshot="export")
        assert created.snapshot_name
        pin = SnapshotPin(created.snapshot_name, LsnOffset(created.consistent_point))
        postgres.execute(
            "INSERT INTO s SELECT i, 'new' FROM generate_series(101, 150) i",
            "UPDATE s SET v = 'changed' WHERE id <= 10",
            "DELETE FROM s WHERE id > 90 AND id <= 100",
            database=pgdb,
        )
        schema = load(postgres, pgdb, "s")
        src = source(postgres, pgdb)
        with (
            PostgresChunks(src, pin) as then,
            PostgresChunks(src) as now,
        ):
            keys = then.key_columns("public", "s", ["id"])
            for d, rows, last, changed in ((then, 100, 100, 0), (now, 140, 150, 10)):
                assert d.row_count("public", "s") == rows
                assert d.key_range("public", "s", keys) == ((1,), (last,))
                assert d.count_between("public", "s", keys, (5,), None, 1000) == rows - 4
                assert d.key_after("public", "s", keys, (85,), 10) == (
                    (95,) if d is then else (105,)
                )
                after = d.read_chunk(schema, keys, None, (20,)).column("after").to_pylist()
                assert sum('"changed"' in a for a in after) == changed
                typed = d.read_chunk(schema, keys, (90,), None, typed=True)
                assert typed.num_rows == (11 if d is then else 51)
            # the exporting walsender holds no xid to wait for: the watermark comes while it holds
            low = returns_while_held(now.low_watermark)
            assert then.watermark() <= low <= now.watermark()
    finally:
        conn.close()
        postgres.execute(f"SELECT pg_drop_replication_slot('{pgdb}')", database=pgdb)
    with (
        PostgresChunks(src, pin) as gone,
        pytest.raises(SourceError, match="snapshot"),
    ):
        gone.count_between("public", "s", keys, None, None, 10)


def test_conditions(postgres: ThrowawayPostgres, pgdb: str, chunks: PostgresChunks) -> None:
    postgres.execute(
        "CREATE TABLE c (id int PRIMARY KEY, tag text)",
        "INSERT INTO c SELECT i, CASE WHEN i % 2 = 0 THEN 'even;--' ELSE 'odd' END "
        "FROM generate_series(1, 20) i",
        database=pgdb,
    )
    schema = load(postgres, pgdb, "c")
    keys = chunks.key_columns("public", "c", ["id"])
    assert chunks.check_condition("public", "c", "tag = 'even;--' AND id > 4") is None
    assert chunks.check_condition("public", "c", "tag = $$odd$$") is None
    assert "nope" in str(chunks.check_condition("public", "c", "nope > 1"))
    assert "operator does not exist" in str(chunks.check_condition("public", "c", "id = 'x'::text"))
    for bad in ("true); DROP TABLE c; --", "id > 1 -- x", "id > 1 /* x */", "tag = 'x"):
        assert chunks.check_condition("public", "c", bad) is not None, bad
        with pytest.raises(ConfigError):
            chunks.read_chunk(schema, keys, None, None, where=bad)
    part = chunks.read_chunk(schema, keys, (3,), (15,), where="tag = 'even;--'", upto=(12,))
    assert [json.loads(k)[0] for k in part.column("key").to_pylist()] == [4, 6, 8, 10, 12]
    assert postgres.query("SELECT count(*) FROM c", pgdb) == [(20,)]


def test_row_counts_and_key_columns(
    postgres: ThrowawayPostgres, pgdb: str, chunks: PostgresChunks, monkeypatch: pytest.MonkeyPatch
) -> None:
    postgres.execute(
        "CREATE TABLE big (id int PRIMARY KEY, doc json, at point)",
        "INSERT INTO big SELECT i FROM generate_series(1, 20000) i",
        "CREATE TABLE parts (id int, PRIMARY KEY (id)) PARTITION BY RANGE (id)",
        "CREATE TABLE parts_a PARTITION OF parts FOR VALUES FROM (0) TO (100)",
        "CREATE TABLE parts_b PARTITION OF parts FOR VALUES FROM (100) TO (1000)",
        "INSERT INTO parts SELECT i FROM generate_series(0, 299) i",
        database=pgdb,
    )
    postgres.execute(
        "CREATE TABLE empty (id int PRIMARY KEY, b bytea, t timestamptz)", database=pgdb
    )
    nothing = chunks.key_columns("public", "empty", ["id"])
    assert chunks.key_range("public", "empty", nothing) is None
    assert chunks.key_after("public", "empty", nothing, None, 0) is None
    for typed in (False, True):
        assert (
            chunks.read_chunk(load(postgres, pgdb, "empty"), nothing, None, None, typed).num_rows
            == 0
        )
    assert chunks.row_count("public", "big") == 20000  # never analysed: counted
    assert chunks.row_count("public", "parts") == 300
    monkeypatch.setattr(chunks_dialect, "EXACT_COUNT_LIMIT", 1000)
    postgres.execute("ANALYZE big", "ANALYZE parts_a", "ANALYZE parts_b", database=pgdb)
    postgres.execute("INSERT INTO big SELECT i FROM generate_series(20001, 30000) i", database=pgdb)
    assert abs(chunks.row_count("public", "big") - 30000) < 1500  # reltuples, scaled by size
    assert chunks.row_count("public", "parts") == 300
    keys = chunks.key_columns("public", "parts", ["ID"])
    assert [(k.name, k.data_type, k.logical) for k in keys] == [("id", "int4", "int32")]
    for column, error in (("doc", ConfigError), ("at", ConfigError), ("nope", ConfigError)):
        with pytest.raises(error, match="chunk"):
            chunks.key_columns("public", "big", [column])
    with pytest.raises(SourceError, match="does not exist"):
        chunks.key_columns("public", "missing", ["id"])


# ---- watermarks ----------------------------------------------------------------------------


@contextlib.contextmanager
def synchronous_standby(postgres: ThrowawayPostgres, names: str) -> Iterator[None]:
    """Commits wait for a standby named ``names`` that never comes, until the block ends."""
    postgres.execute(
        f"ALTER SYSTEM SET synchronous_standby_names = '{names}'", "SELECT pg_reload_conf()"
    )
    try:
        deadline = time.monotonic() + 10
        while postgres.query("SHOW synchronous_standby_names") != [(names,)]:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.2)  # the checkpointer tells the backends that commits now wait
        yield
    finally:
        postgres.execute("ALTER SYSTEM RESET synchronous_standby_names", "SELECT pg_reload_conf()")


def in_thread(fn: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


def returns_while_held(fn: Any) -> Any:
    """``fn()``'s value, which must come while the caller still holds what it must not wait for
    (an idle transaction, an exported snapshot): held for ever, it would never come."""
    thread, out = in_thread(fn)
    thread.join(120)
    assert not thread.is_alive(), "it waited for what the caller holds"
    return out[0]


def wait_for(postgres: ThrowawayPostgres, sql: str) -> None:
    deadline = time.monotonic() + 10
    while not postgres.query(sql)[0][0]:
        assert time.monotonic() < deadline, sql
        time.sleep(0.01)


def test_watermarks(postgres: ThrowawayPostgres, pgdb: str, chunks: PostgresChunks) -> None:
    postgres.execute("CREATE TABLE w (id int)", database=pgdb)
    first = chunks.watermark()
    postgres.execute("INSERT INTO w VALUES (0)", database=pgdb)
    low, high = chunks.low_watermark(), chunks.watermark()
    assert isinstance(low, LsnOffset) and first < low <= high
    # an idle transaction holding an xid is not waited for (its commit comes after)
    idle = postgres.connect(pgdb)
    try:
        idle.autocommit = False
        idle.cursor().execute("INSERT INTO w VALUES (1)")
        low = returns_while_held(chunks.low_watermark)
        assert low >= high
    finally:
        idle.close()
    # a statement running when the watermark is taken is waited for
    busy, _ = in_thread(
        lambda: postgres.execute("INSERT INTO w VALUES (2); SELECT pg_sleep(0.6)", database=pgdb)
    )
    wait_for(
        postgres,
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'",
    )
    started = time.monotonic()
    chunks.low_watermark()
    assert time.monotonic() - started > 0.3
    busy.join()


def test_low_watermark_waits_for_a_commit_not_yet_visible(
    postgres: ThrowawayPostgres, pgdb: str, chunks: PostgresChunks
) -> None:
    """A commit waiting for a synchronous standby is in the WAL (before the insert position)
    but invisible: the insert position alone would be a wrong low watermark."""
    postgres.execute("CREATE TABLE v (id int)", database=pgdb)
    with synchronous_standby(postgres, "nobody_here"):
        writer, _ = in_thread(lambda: postgres.execute("INSERT INTO v VALUES (1)", database=pgdb))
        wait_for(postgres, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
        naive = chunks.watermark()  # past the commit record
        assert postgres.query("SELECT count(*) FROM v", pgdb) == [(0,)]  # yet not visible
        waiting, low = in_thread(chunks.low_watermark)
        waiting.join(0.5)
        assert waiting.is_alive()
    writer.join(10)
    waiting.join(10)
    assert low[0] >= naive
    assert postgres.query("SELECT count(*) FROM v", pgdb) == [(1,)]
