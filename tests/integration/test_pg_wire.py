"""The PostgreSQL wire client against the throwaway server: SCRAM, MD5 and clear-text logins,
text rows and errors that leave the session usable, the replication commands, pgoutput changes
streamed in batches, keepalives answered while idle, confirmed positions reported exactly, and
the server's replication errors as sparkcdc's sentences."""

from __future__ import annotations

import contextlib
import struct
import time
from collections.abc import Iterator

import pytest

from sparkcdc.core.errors import (
    ConnectionFailed,
    LogNotReady,
    MissingPrivilege,
    SourceError,
)
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from sparkcdc.sources.postgres.wire import (
    XLOG_HEADER,
    PgConnection,
    PgError,
    ReplicationStream,
    create_logical_slot,
    drop_slot,
    identify_system,
    parse_lsn,
    publication_names,
    start_logical,
    xlog_start,
)

pytestmark = pytest.mark.postgres


def connect(
    server: ThrowawayPostgres,
    database: str,
    replication: bool = False,
    *,
    user: str | None = None,
    password: str | None = None,
    settings: dict[str, str] | None = None,
) -> PgConnection:
    return PgConnection(
        server.host,
        server.port,
        user or server.user,
        server.password if password is None else password,
        database,
        replication=replication,
        settings=settings,
    )


@pytest.fixture
def shop(postgres: ThrowawayPostgres, pgdb: str) -> Iterator[str]:
    """``pgdb`` with table ``items`` published as ``pub``; slots made in it dropped after."""
    postgres.execute(
        "CREATE TABLE items (id int PRIMARY KEY, name text, price numeric)",
        "CREATE PUBLICATION pub FOR TABLE items",
        database=pgdb,
    )
    yield pgdb
    postgres.execute(
        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
        f"WHERE database = '{pgdb}' AND active_pid IS NOT NULL"
    )
    for _ in range(50):
        with contextlib.suppress(Exception):
            postgres.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                f"WHERE database = '{pgdb}'"
            )
            return
        time.sleep(0.1)


PGOUTPUT = {"proto_version": "1", "publication_names": publication_names("pub")}


def read_until_commits(stream: ReplicationStream, commits: int, timeout: float = 20) -> list[bytes]:
    """The XLogData items up to the ``commits``-th Commit message."""
    items: list[bytes] = []
    seen = 0
    deadline = time.monotonic() + timeout
    for batch in stream.batches(wait=0.2):
        for item in batch:
            items.append(item)
            seen += item[XLOG_HEADER] == ord("C")
            if seen == commits:
                return items
        assert time.monotonic() < deadline, f"{seen} of {commits} commits arrived"
    raise AssertionError("the stream ended")


def commit_end(item: bytes) -> int:
    """A pgoutput Commit's end LSN (flags Int8, commit LSN, end LSN, timestamp)."""
    assert item[XLOG_HEADER] == ord("C")
    return int(struct.unpack_from(">Q", item, XLOG_HEADER + 10)[0])


# -- logins and queries -----------------------------------------------------------------------


def test_scram_login_and_a_wrong_password(postgres: ThrowawayPostgres, pgdb: str) -> None:
    with connect(postgres, pgdb) as conn:
        assert conn.query("SELECT current_user, current_database()") == [("postgres", pgdb)]
        assert conn.parameters["integer_datetimes"] == "on"
        assert conn.server_version_num >= 100000 and conn.backend_pid > 0
    with pytest.raises(ConnectionFailed) as refused:
        connect(postgres, pgdb, password="wrong")
    where = f"PostgreSQL at {postgres.host}:{postgres.port}"
    assert str(refused.value) == (
        f"{where} refused user 'postgres' (password authentication failed for user "
        '"postgres"); check source.user and source.password.'
    )
    assert refused.value.fields["sqlstate"] == "28P01"
    with pytest.raises(ConnectionFailed, match="asks user 'postgres' for a password"):
        connect(postgres, pgdb, password="")
    with pytest.raises(ConnectionFailed, match="has no database 'nowhere'"):
        connect(postgres, "nowhere")


@contextlib.contextmanager
def hba_lines(server: ThrowawayPostgres, *lines: str) -> Iterator[None]:
    """``lines`` put first in the server's pg_hba.conf for the block."""
    hba = server.datadir / "pg_hba.conf"
    before = hba.read_text()
    hba.write_text("".join(f"{line}\n" for line in lines) + before)
    server.execute("SELECT pg_reload_conf()")
    try:
        yield
    finally:
        hba.write_text(before)
        server.execute("SELECT pg_reload_conf()")


def test_md5_and_cleartext_logins(postgres: ThrowawayPostgres, pgdb: str) -> None:
    postgres.execute(
        "DROP ROLE IF EXISTS md5_user",
        "DROP ROLE IF EXISTS clear_user",
        "SET password_encryption = 'md5'",
        "CREATE ROLE md5_user LOGIN PASSWORD 'md5-secret'",
    )
    postgres.execute("CREATE ROLE clear_user LOGIN PASSWORD 'clear-secret'")
    stored = postgres.query("SELECT rolpassword FROM pg_authid WHERE rolname = 'md5_user'")
    assert stored[0][0].startswith("md5")
    lines = ("host all md5_user 127.0.0.1/32 md5", "host all clear_user 127.0.0.1/32 password")
    with hba_lines(postgres, *lines):
        for user, password in (("md5_user", "md5-secret"), ("clear_user", "clear-secret")):
            with connect(postgres, pgdb, user=user, password=password) as conn:
                assert conn.query("SELECT current_user") == [(user,)]
            with pytest.raises(ConnectionFailed, match=f"refused user '{user}'"):
                connect(postgres, pgdb, user=user, password="wrong")


def test_rows_come_as_text_and_errors_keep_the_session(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    with connect(postgres, pgdb) as conn:
        rows = conn.query(
            "SELECT 1, NULL::text, 'zoë'::text, 1.5::float8, '2024-02-29 12:00+02'::timestamptz,"
            " '{1,2}'::int[], '\\x00ff'::bytea, true"
        )
        assert rows == [
            ("1", None, "zoë", "1.5", "2024-02-29 10:00:00+00", "{1,2}", "\\x00ff", "t")
        ]
        assert [oid for _, oid in conn.columns] == [23, 25, 25, 701, 1184, 1007, 17, 16]
        assert conn.query("SELECT 1; SELECT g FROM generate_series(1, 3) g") == [
            ("1",),
            ("2",),
            ("3",),
        ]
        assert conn.query("CREATE TABLE t (id int)") == []
        assert conn.query("") == []
        assert conn.query("DO $$ BEGIN RAISE NOTICE 'hello'; END $$") == []
        with pytest.raises(PgError) as missing:
            conn.query("SELECT * FROM nowhere")
        assert missing.value.sqlstate == "42P01"
        assert str(missing.value) == (
            f"PostgreSQL at {postgres.host}:{postgres.port} rejected `SELECT * FROM nowhere` "
            '(relation "nowhere" does not exist); fix what the server names.'
        )
        assert conn.query("SELECT 2") == [("2",)]
        conn.query("BEGIN")
        with pytest.raises(PgError, match="division by zero"):
            conn.query("SELECT 1 / 0")
        assert conn.status == "E"
        with pytest.raises(PgError, match="current transaction is aborted"):
            conn.query("SELECT 3")
        conn.query("ROLLBACK")
        assert conn.status == "I" and conn.query("SELECT 4") == [("4",)]


# -- replication commands ---------------------------------------------------------------------


def test_identify_system(postgres: ThrowawayPostgres, pgdb: str) -> None:
    with connect(postgres, pgdb, replication=True) as repl:
        before = parse_lsn(postgres.query("SELECT pg_current_wal_lsn()::text")[0][0])
        ident = identify_system(repl)
        after = parse_lsn(postgres.query("SELECT pg_current_wal_lsn()::text")[0][0])
    (systemid,) = postgres.query("SELECT system_identifier::text FROM pg_control_system()")[0]
    assert ident.systemid == systemid and ident.timeline == 1 and ident.dbname == pgdb
    assert before <= ident.xlogpos <= after


def test_slot_with_an_exported_snapshot(postgres: ThrowawayPostgres, shop: str) -> None:
    postgres.execute("INSERT INTO items VALUES (1, 'before', 1)", database=shop)
    with connect(postgres, shop, replication=True) as repl, connect(postgres, shop) as reader:
        slot = create_logical_slot(repl, "exported")
        assert slot.slot_name == "exported" and slot.plugin == "pgoutput"
        assert slot.snapshot_name
        postgres.execute("INSERT INTO items VALUES (2, 'after', 2)", database=shop)
        reader.query("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.query(f"SET TRANSACTION SNAPSHOT '{slot.snapshot_name}'")
        assert reader.query("SELECT id FROM items ORDER BY id") == [("1",)]
        reader.query("COMMIT")
        (point,) = postgres.query(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
            "WHERE slot_name = 'exported'"
        )[0]
        assert parse_lsn(point) == slot.consistent_point
        drop_slot(repl, "exported")
    assert postgres.query("SELECT count(*) FROM pg_replication_slots") == [(0,)]


def test_old_slot_syntax_temporary_slots_and_snapshot_use(
    postgres: ThrowawayPostgres, shop: str
) -> None:
    postgres.execute("INSERT INTO items VALUES (1, 'a', 1)", database=shop)
    with connect(postgres, shop, replication=True) as repl:
        repl.parameters["server_version"] = "14.11"  # PostgreSQL 15 still reads 10-14's syntax
        old = create_logical_slot(repl, "old_style", snapshot="nothing", temporary=True)
        assert old.snapshot_name is None and old.consistent_point > 0
        repl.query("BEGIN ISOLATION LEVEL REPEATABLE READ")
        used = create_logical_slot(repl, "used", snapshot="use")
        assert used.snapshot_name is None
        assert repl.query("SELECT name FROM items") == [("a",)]
        repl.query("COMMIT")
        slots = postgres.query("SELECT slot_name, temporary FROM pg_replication_slots ORDER BY 1")
        assert slots == [("old_style", True), ("used", False)]
    for _ in range(50):  # the temporary slot goes with its session
        if postgres.query("SELECT count(*) FROM pg_replication_slots")[0][0] == 1:
            break
        time.sleep(0.1)
    assert postgres.query("SELECT slot_name FROM pg_replication_slots") == [("used",)]


# -- streaming --------------------------------------------------------------------------------


def test_pgoutput_changes_stream_in_batches(postgres: ThrowawayPostgres, shop: str) -> None:
    with connect(postgres, shop, replication=True) as repl:
        slot = create_logical_slot(repl, "changes", snapshot="nothing")
        postgres.execute(
            "BEGIN",
            "INSERT INTO items VALUES (1, 'pen', 1.5), (2, 'ink', 3)",
            "UPDATE items SET price = 2 WHERE id = 1",
            "DELETE FROM items WHERE id = 2",
            "COMMIT",
            database=shop,
        )
        stream = start_logical(repl, "changes", 0, PGOUTPUT)
        items = read_until_commits(stream, 1)
        assert all(type(item) is bytes for item in items)
        assert bytes(item[XLOG_HEADER] for item in items) == b"BRIIUDC"
        (end,) = postgres.query("SELECT pg_current_wal_lsn()::text")[0]
        assert slot.consistent_point < commit_end(items[-1]) <= parse_lsn(end)
        lsns = [xlog_start(item) for item in items if item[XLOG_HEADER] != ord("R")]
        assert lsns == sorted(lsns) and lsns[0] >= slot.consistent_point
        assert stream.server_wal_end >= xlog_start(items[-1])
        assert b"pen" in items[2] and b"ink" in items[3]
        stream.stop()
        assert repl.status == "I" and repl.query("SELECT 1") == [("1",)]
        drop_slot(repl, "changes")


def test_big_rows_cross_the_receive_buffer(postgres: ThrowawayPostgres, shop: str) -> None:
    with connect(postgres, shop, replication=True) as repl:
        create_logical_slot(repl, "big", snapshot="nothing")
        postgres.execute(
            "INSERT INTO items SELECT g, repeat('x', 1000) || g, g FROM generate_series(1, 5000) g",
            "INSERT INTO items VALUES (0, repeat('y', 3000000), 0)",
            database=shop,
        )
        stream = start_logical(repl, "big", 0, PGOUTPUT)
        items = read_until_commits(stream, 2)
        inserts = [item for item in items if item[XLOG_HEADER] == ord("I")]
        assert len(inserts) == 5001
        assert inserts[1234][XLOG_HEADER:].count(b"x") == 1000
        assert b"y" * 3000000 in inserts[-1] and len(inserts[-1]) < 3000100
        stream.stop()


def test_idle_stream_answers_keepalives(postgres: ThrowawayPostgres, shop: str) -> None:
    """With wal_sender_timeout at 1 s the server asks for a reply every half second; a stream
    idle for 4 s (yielding empty batches, calling ``idle``) stays alive, one never read dies."""
    fast = {"wal_sender_timeout": "1s"}
    with connect(postgres, shop, replication=True, settings=fast) as repl:
        assert repl.query("SHOW wal_sender_timeout") == [("1s",)]
        create_logical_slot(repl, "idle", snapshot="nothing")
        stream = start_logical(repl, "idle", 0, PGOUTPUT, status_interval=30)
        idles: list[float] = []
        empty = 0
        started = time.monotonic()
        for batch in stream.batches(wait=0.3, idle=lambda: idles.append(time.monotonic())):
            empty += not batch
            if time.monotonic() - started > 4:
                break
        assert empty >= 5 and len(idles) >= empty
        postgres.execute("INSERT INTO items VALUES (7, 'late', 7)", database=shop)
        items = read_until_commits(stream, 1)
        assert items[-2][XLOG_HEADER] == ord("I") and b"late" in items[-2]
        stream.stop()
        drop_slot(repl, "idle")
    with connect(postgres, shop, replication=True, settings=fast) as repl:
        create_logical_slot(repl, "unread", snapshot="nothing")
        stream = start_logical(repl, "unread", 0, PGOUTPUT, status_interval=30)
        time.sleep(3)
        with pytest.raises(ConnectionFailed, match="closed the connection"):
            for _ in stream.batches(wait=0.2):
                pass


def slot_confirmed(server: ThrowawayPostgres, slot: str) -> int:
    (lsn,) = server.query(
        f"SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '{slot}'"
    )[0]
    return parse_lsn(lsn)


def test_confirm_moves_the_slot_only_as_far_as_confirmed(
    postgres: ThrowawayPostgres, shop: str
) -> None:
    with connect(postgres, shop, replication=True) as repl:
        slot = create_logical_slot(repl, "confirm", snapshot="nothing")
        for i in range(3):
            postgres.execute(f"INSERT INTO items VALUES ({i}, 'n', {i})", database=shop)
        stream = start_logical(repl, "confirm", 0, PGOUTPUT, status_interval=0.2)
        ends = [commit_end(item) for item in read_until_commits(stream, 3) if item[25] == 67]
        assert slot_confirmed(postgres, "confirm") == slot.consistent_point
        stream.confirm(ends[0])
        assert stream.confirmed == ends[0]
        stream.send_status(force=True)
        deadline = time.monotonic() + 10
        while slot_confirmed(postgres, "confirm") != ends[0]:
            assert time.monotonic() < deadline
            for _ in stream.batches(wait=0.1):
                break
        stream.confirm(ends[0] - 1)  # never back
        assert stream.confirmed == ends[0]
        for _ in zip(range(10), stream.batches(wait=0.1), strict=False):  # statuses go on
            stream.send_status()
        assert stream.server_wal_end >= ends[2] > ends[0]
        assert slot_confirmed(postgres, "confirm") == ends[0]
        stream.confirm(ends[2])
        stream.send_status(force=True)
        stream.stop()
    assert slot_confirmed(postgres, "confirm") == ends[2]


# -- the server's errors ----------------------------------------------------------------------


def test_slot_errors(postgres: ThrowawayPostgres, shop: str) -> None:
    where = f"PostgreSQL at {postgres.host}:{postgres.port}"
    with connect(postgres, shop, replication=True) as repl:
        with pytest.raises(SourceError) as missing:
            start_logical(repl, "nope", 0, PGOUTPUT)
        assert str(missing.value) == (
            f'replication slot "nope" does not exist on {where}; create it (start the pipeline '
            "afresh) or fix the configured slot name."
        )
        assert missing.value.fields["sqlstate"] == "42704"
        create_logical_slot(repl, "busy", snapshot="nothing")
        with pytest.raises(SourceError, match='replication slot "busy" already exists'):
            create_logical_slot(repl, "busy", snapshot="nothing")
        stream = start_logical(repl, "busy", 0, PGOUTPUT)
        with connect(postgres, shop, replication=True) as other:
            with pytest.raises(SourceError) as held:
                start_logical(other, "busy", 0, PGOUTPUT)
            assert held.value.fields["sqlstate"] == "55006"
            assert str(held.value).startswith(
                f'replication slot "busy" on {where} is held by another process (replication '
                'slot "busy" is active for PID '
            )
            assert other.query("SELECT 1") == [("1",)]
        stream.stop()


def test_missing_publication_fails_in_the_stream(postgres: ThrowawayPostgres, shop: str) -> None:
    with connect(postgres, shop, replication=True) as repl:
        create_logical_slot(repl, "nopub", snapshot="nothing")
        postgres.execute("INSERT INTO items VALUES (1, 'a', 1)", database=shop)
        options = {"proto_version": "1", "publication_names": publication_names("ghost")}
        stream = start_logical(repl, "nopub", 0, options)
        with pytest.raises(SourceError, match="has no such publication") as ghost:
            read_until_commits(stream, 1)
        assert ghost.value.fields["sqlstate"] == "42704"
        assert repl.query("SELECT 1") == [("1",)]


def test_replication_needs_the_replication_attribute(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute(
        "DROP ROLE IF EXISTS plain_user", "CREATE ROLE plain_user LOGIN PASSWORD 'plain-pw'"
    )
    with connect(postgres, pgdb, user="plain_user", password="plain-pw") as conn:
        assert conn.query("SELECT 1") == [("1",)]
    with pytest.raises(MissingPrivilege) as refused:
        connect(postgres, pgdb, replication=True, user="plain_user", password="plain-pw")
    assert str(refused.value) == (
        "user 'plain_user' may not open a replication connection to PostgreSQL at "
        f"{postgres.host}:{postgres.port} (must be superuser or replication role to start "
        'walsender); run ALTER ROLE "plain_user" WITH REPLICATION (or connect as a role that '
        "has it)."
    )


def test_no_free_replication_slot(postgres: ThrowawayPostgres, shop: str) -> None:
    made = 0
    try:
        with connect(postgres, shop) as conn:
            with pytest.raises(SourceError):
                for made in range(1, 100):  # noqa: B007
                    conn.query(f"SELECT pg_create_physical_replication_slot('fill_{made}')")
            with connect(postgres, shop, replication=True) as repl:
                with pytest.raises(SourceError) as full:
                    create_logical_slot(repl, "one_more", snapshot="nothing")
                assert full.value.fields["sqlstate"] == "53400"
                assert "has no free replication slot (all replication slots are in use)" in str(
                    full.value
                )
    finally:
        postgres.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name LIKE 'fill\\_%'"
        )


def test_wal_level_replica() -> None:
    with (
        ThrowawayPostgres.start(settings={"wal_level": "replica"}) as server,
        connect(server, server.database, replication=True) as repl,
        pytest.raises(LogNotReady) as not_logical,
    ):
        create_logical_slot(repl, "never")
    assert str(not_logical.value) == (
        f"PostgreSQL at {server.host}:{server.port} does not write logical WAL (logical "
        "decoding requires wal_level >= logical); set wal_level = logical (ALTER SYSTEM SET "
        "wal_level = logical) and restart the server."
    )
