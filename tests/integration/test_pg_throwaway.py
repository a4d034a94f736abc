"""The throwaway PostgreSQL server: logical WAL, password logins over TCP (scram-sha-256),
replication connections and logical decoding end to end, a fresh database per test, and a
server of its own that restarts in place and leaves nothing behind."""

from __future__ import annotations

import contextlib
import os

import psycopg2
import psycopg2.extras
import pytest

from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres

pytestmark = pytest.mark.postgres


def test_server_has_the_settings_cdc_needs(postgres: ThrowawayPostgres) -> None:
    settings = dict(
        postgres.query(
            "SELECT name, setting FROM pg_settings WHERE name IN ('wal_level', "
            "'max_replication_slots', 'max_wal_senders', 'listen_addresses', 'TimeZone')"
        )
    )
    assert settings == {
        "wal_level": "logical",
        "max_replication_slots": "20",
        "max_wal_senders": "20",
        "listen_addresses": "127.0.0.1",
        "TimeZone": "UTC",
    }
    assert postgres.query("SELECT inet_server_port()") == [(postgres.port,)]


def test_password_login_over_tcp(postgres: ThrowawayPostgres, pgdb: str) -> None:
    postgres.execute("DROP ROLE IF EXISTS app", "CREATE ROLE app LOGIN PASSWORD 'app-secret'")
    dsn = dict(host=postgres.host, port=postgres.port, user="app", dbname=pgdb)
    conn = psycopg2.connect(password="app-secret", **dsn)
    with contextlib.closing(conn), conn.cursor() as cur:
        cur.execute("SELECT current_user, current_database(), inet_server_addr()::text")
        assert cur.fetchone() == ("app", pgdb, "127.0.0.1/32")
    stored = postgres.query("SELECT rolpassword FROM pg_authid WHERE rolname = 'app'")
    assert stored[0][0].startswith("SCRAM-SHA-256$")
    with pytest.raises(psycopg2.OperationalError, match="password authentication failed"):
        psycopg2.connect(password="wrong", **dsn)
    with pytest.raises(psycopg2.OperationalError, match="password"):
        psycopg2.connect(**dsn)  # no password at all: TCP is never trusted


def test_superuser_dsn_reaches_the_database(postgres: ThrowawayPostgres, pgdb: str) -> None:
    conn = psycopg2.connect(postgres.dsn(pgdb))
    with contextlib.closing(conn), conn.cursor() as cur:
        cur.execute("SELECT current_user, current_database()")
        assert cur.fetchone() == (postgres.user, pgdb)


def test_replication_connection_of_a_replication_user(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute(
        "DROP ROLE IF EXISTS cdc", "CREATE ROLE cdc LOGIN REPLICATION PASSWORD 'cdc-secret'"
    )
    conn = psycopg2.connect(
        host=postgres.host,
        port=postgres.port,
        user="cdc",
        password="cdc-secret",
        dbname=pgdb,
        connection_factory=psycopg2.extras.LogicalReplicationConnection,
    )
    with contextlib.closing(conn), conn.cursor() as cur:
        cur.execute("IDENTIFY_SYSTEM")
        system_id, timeline, _lsn, dbname = cur.fetchone()
        assert (timeline, dbname) == (1, pgdb)
        assert int(system_id) > 0
    slots = postgres.query("SELECT count(*) FROM pg_stat_replication")
    assert slots == [(0,)]


def test_logical_decoding_end_to_end(postgres: ThrowawayPostgres, pgdb: str) -> None:
    postgres.execute(
        "CREATE TABLE items (id int PRIMARY KEY, name text)",
        "SELECT pg_create_logical_replication_slot('s1', 'test_decoding')",
        "INSERT INTO items VALUES (1, 'one'), (2, 'two')",
        "UPDATE items SET name = 'uno' WHERE id = 1",
        "DELETE FROM items WHERE id = 2",
        database=pgdb,
    )
    try:
        changes = postgres.query(
            "SELECT data FROM pg_logical_slot_get_changes('s1', NULL, NULL) "
            "WHERE data NOT LIKE 'BEGIN%' AND data NOT LIKE 'COMMIT%'",
            database=pgdb,
        )
        assert [data for (data,) in changes] == [
            "table public.items: INSERT: id[integer]:1 name[text]:'one'",
            "table public.items: INSERT: id[integer]:2 name[text]:'two'",
            "table public.items: UPDATE: id[integer]:1 name[text]:'uno'",
            "table public.items: DELETE: id[integer]:2",
        ]
        again = postgres.query(
            "SELECT count(*) FROM pg_logical_slot_get_changes('s1', NULL, NULL)", database=pgdb
        )
        assert again == [(0,)]  # consumed
    finally:
        postgres.execute("SELECT pg_drop_replication_slot('s1')", database=pgdb)


def test_pgdb_is_a_fresh_empty_database(postgres: ThrowawayPostgres, pgdb: str) -> None:
    assert pgdb.startswith("t_test_pgdb_is_a_fresh_empty_database_")
    assert postgres.query("SELECT current_database()", database=pgdb) == [(pgdb,)]
    tables = postgres.query(
        "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', "
        "'information_schema')",
        database=pgdb,
    )
    assert tables == [(0,)]


def test_own_server_settings_restart_and_stop() -> None:
    server = ThrowawayPostgres.start(settings={"wal_level": "replica", "max_connections": "20"})
    try:
        assert server.query("SHOW wal_level") == [("replica",)]
        assert server.query("SHOW max_connections") == [("20",)]
        server.create_database("Keep Me")
        server.execute(
            "CREATE TABLE kept (id int)", "INSERT INTO kept VALUES (7)", database="Keep Me"
        )
        port, folder = server.port, server.root_dir
        assert (folder / "data" / "PG_VERSION").is_file()
        server.restart()
        assert server.port == port
        assert server.query("SELECT id FROM kept", database="Keep Me") == [(7,)]
    finally:
        server.stop()
    assert not os.path.exists(folder)
    assert server.process.poll() is not None
    with pytest.raises(psycopg2.OperationalError):
        psycopg2.connect(server.dsn(), connect_timeout=2)
