"""Real servers' bytes, damaged: a MariaDB binlog file and pgoutput payloads recorded from the
throwaway servers once per test, then mutated in process as ``tests/unit/test_decoder_fuzz.py``
does with the files of other servers (``tests/fuzz``): each stream decodes or stops with the
project's error naming the event and its place."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.binlog import compressed_binlog, full_row_metadata
from tests.fuzz import binlog, pgoutput
from tests.fuzz.mutate import KINDS, Mutation, mutate

FUZZ = settings(
    max_examples=150, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)  # fmt: skip
MUTATIONS = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 1 << 20), st.integers(0, 1 << 20),
              st.integers(0, (1 << 32) - 1)),
    min_size=1, max_size=3,
)  # fmt: skip
TABLE = """CREATE TABLE t (id INT UNSIGNED PRIMARY KEY, i TINYINT, m MEDIUMINT, b BIGINT,
    d DECIMAL(12,3), f FLOAT, g DOUBLE, bits BIT(10), day DATE, tm TIME(3), at DATETIME(6),
    ts TIMESTAMP(2) NULL, y YEAR, c CHAR(4), v VARCHAR(300), bin BINARY(4), tx TEXT, bl BLOB,
    e ENUM('a','b'), st SET('x','y'), j JSON, l1 VARCHAR(5) CHARACTER SET latin1)"""
ROW = """({i}, -{i}, {i}, {i}000000000, {i}.125, 0.5, -2.25, b'1010', '2024-02-29',
    '-12:34:56.789', '2024-02-29 12:34:56.123456', '2024-02-29 12:34:56.12', 2024, 'ab',
    'héllo {i}', 'xy', REPEAT('t', 40), X'00ff', 'b', 'x,y', '{{"k": [{i}, null]}}', 'é')"""


@pytest.fixture
def mariadb_stream(mariadb: ThrowawayMariaDB, db: str) -> Iterator[list[bytes]]:
    """The events of one binlog file MariaDB wrote for a workload on a table of every type:
    inserts, updates, deletes, with full row metadata and with compressed events."""
    mariadb.execute("FLUSH BINARY LOGS")
    (name, *_), *_ = mariadb.query("SHOW MASTER STATUS")
    mariadb.execute(TABLE, database=db)
    mariadb.execute(*(f"INSERT INTO t VALUES {ROW.format(i=i)}" for i in range(1, 4)), database=db)
    with full_row_metadata(mariadb):
        mariadb.execute("UPDATE t SET v = 'w', d = -d WHERE id = 1", database=db)
    with compressed_binlog(mariadb):
        mariadb.execute(f"INSERT INTO t VALUES {ROW.format(i=9)}", database=db)
        mariadb.execute("UPDATE t SET tx = REPEAT('u', 300) WHERE id > 1", database=db)
        mariadb.execute("DELETE FROM t WHERE id = 2", database=db)
    mariadb.execute("FLUSH BINARY LOGS")
    yield binlog.split_file((mariadb.datadir / name).read_bytes())


@pytest.mark.mariadb
def test_mariadbs_own_binlog_decodes(mariadb_stream: list[bytes]) -> None:
    for mode in binlog.MODES:
        reader = binlog.DecodingReader(typed=mode != "json")
        reader.read(mariadb_stream)
        assert reader.items > 0


@pytest.mark.mariadb
@FUZZ
@given(mutations=MUTATIONS, mode=st.sampled_from(binlog.MODES), fix=st.booleans())
def test_damaged_mariadb_binlogs_stop_with_the_projects_error(
    mariadb_stream: list[bytes], mutations: list[Mutation], mode: str, fix: bool
) -> None:
    events = mutate(mariadb_stream, mutations, binlog.fix_size if fix else lambda d: d)
    binlog.check(events, mode)


@pytest.fixture
def pg_stream(postgres: ThrowawayPostgres, pgdb: str) -> Iterator[list[bytes]]:
    """The XLogData items of a workload on a table of many types, as the server's pgoutput
    (protocol version 1) wrote them."""
    postgres.execute(
        "CREATE TABLE t (id int PRIMARY KEY, n numeric(12,2), r real, b boolean, tx text, "
        "by bytea, dt date, ts timestamptz, iv interval, ia int[], j jsonb)",
        "ALTER TABLE t REPLICA IDENTITY FULL",
        "CREATE PUBLICATION pub FOR TABLE t",
        f"SELECT pg_create_logical_replication_slot('{pgdb}', 'pgoutput')",
        "INSERT INTO t SELECT i, i * 1.25, i / 3.0, i % 2 = 0, 'é' || i, '\\x00ff', "
        "'2024-02-29', '2024-02-29 12:34:56.5+02', '1 day 2 hours', ARRAY[i, NULL], "
        "'{\"k\": 1}' FROM generate_series(1, 3) i",
        "UPDATE t SET tx = 'u', n = -n WHERE id = 2",
        "DELETE FROM t WHERE id = 3",
        "TRUNCATE t",
        database=pgdb,
    )
    conn = postgres.connect(pgdb)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT data FROM pg_logical_slot_peek_binary_changes(%s, NULL, NULL, "
                "'proto_version', '1', 'publication_names', 'pub')",
                (pgdb,),
            )
            payloads = [bytes(data) for (data,) in cur.fetchall()]
    finally:
        conn.close()
    yield pgoutput.xlog_items(payloads)
    postgres.execute(f"SELECT pg_drop_replication_slot('{pgdb}')")


@pytest.mark.postgres
def test_postgres_own_pgoutput_decodes(pg_stream: list[bytes]) -> None:
    schemas = pgoutput.captured_schemas(pg_stream)
    assert list(schemas) == [("public", "t")]
    for typed in (False, True):
        reader = pgoutput.DecodingReader(schemas, typed)
        reader.read(pg_stream)
        assert reader.items > 0


@pytest.mark.postgres
@FUZZ
@given(mutations=MUTATIONS, typed=st.booleans())
def test_damaged_pgoutput_payloads_stop_with_the_projects_error(
    pg_stream: list[bytes], mutations: list[Mutation], typed: bool
) -> None:
    pgoutput.check(mutate(pg_stream, mutations), pgoutput.captured_schemas(pg_stream), typed)
