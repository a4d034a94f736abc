"""``sparkcdc check`` and ``sparkcdc run`` on PostgreSQL: the check passes, a first run makes the
slot and the publication (named after the checkpoint), and a second run from the checkpoint
fills the replica and the change log (typed) with what was written in between; the slot's
confirmed position never passes a batch Spark has not committed, and a third run moves it to
the end of the last one. A running pipeline on a quiet table lets the server recycle its WAL.
A table in a schema whose name holds a dot is snapshotted and streamed like any other."""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres, throwaway_postgres
from sparkcdc.sources.postgres.wire.lsn import parse_lsn
from tests.e2e.cli import available_now, run, start, write_pg_config

pytestmark = pytest.mark.postgres


def test_check_and_run_on_postgresql(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    postgres.execute(
        "CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(10,2), note text, "
        "placed timestamptz, paid boolean)",
        database=pgdb,
    )
    cfg = write_pg_config(tmp_path, postgres, pgdb, r"public\.orders", startup="earliest")
    code, out = run(cfg, command="check")
    assert code == 0, out
    available_now(cfg)  # makes the slot and the publication; nothing to read yet
    slots = postgres.query("SELECT slot_name FROM pg_replication_slots", database=pgdb)
    assert ("sparkcdc_checkpoint",) in slots
    postgres.execute(
        "INSERT INTO orders VALUES (1, 10.50, 'first', '2024-05-01 10:00:00+00', false), "
        "(2, 20.00, 'second', '2024-05-02 11:30:00.25+00', false), (3, 1.00, NULL, NULL, NULL)",
        "UPDATE orders SET paid = true, note = 'paid' WHERE id = 1",
        "DELETE FROM orders WHERE id = 3",
        database=pgdb,
    )
    available_now(cfg)
    lake = tmp_path / "lake" / "public"
    replica = DeltaTable(str(lake / "orders")).to_pyarrow_table().sort_by("id").to_pylist()
    assert [(r["id"], r["amount"], r["note"], r["paid"]) for r in replica] == [
        (1, Decimal("10.50"), "paid", True), (2, Decimal("20.00"), "second", False),
    ]  # fmt: skip
    assert replica[1]["placed"].isoformat() == "2024-05-02T11:30:00.250000+00:00"
    log = DeltaTable(str(lake / "orders__changelog")).to_pyarrow_table().to_pylist()
    assert sorted(r["op"] for r in log) == ["c", "c", "c", "d", "u"]
    assert all(r["source"]["lsn"] > 0 and r["source"]["txid"] > 0 for r in log)
    ends = max(r["source"]["lsn"] for r in log)
    # Spark commits a batch's source offsets when it plans the next batch: the slot stays at
    # the run's start until then, never past a batch not committed
    assert confirmed(postgres, pgdb) < ends
    available_now(cfg)  # nothing new: the reader starts at the last batch's end and confirms it
    # the server takes the status update from a connection the run has closed a moment later
    deadline = time.monotonic() + 10
    while confirmed(postgres, pgdb) <= ends and time.monotonic() < deadline:
        time.sleep(0.1)
    assert confirmed(postgres, pgdb) > ends


@pytest.mark.extended
def test_a_schema_with_a_dot_in_its_name_is_snapshotted_and_streamed(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    postgres.execute(
        'CREATE SCHEMA "sales.eu"',
        'CREATE TABLE "sales.eu".orders (id bigint PRIMARY KEY, note text)',
        "INSERT INTO \"sales.eu\".orders SELECT i, 'n' || i FROM generate_series(1, 20) i",
        database=pgdb,
    )
    cfg = write_pg_config(tmp_path, postgres, pgdb, r'"sales\.eu"\.orders', startup="initial")
    code, out = run(cfg, command="check")
    assert code == 0, out
    available_now(cfg)  # the snapshot
    postgres.execute(
        "UPDATE \"sales.eu\".orders SET note = 'paid' WHERE id = 3",
        'DELETE FROM "sales.eu".orders WHERE id = 4',
        "INSERT INTO \"sales.eu\".orders VALUES (21, 'new')",
        database=pgdb,
    )
    available_now(cfg)  # the stream
    lake = tmp_path / "lake" / "sales.eu"
    rows = DeltaTable(str(lake / "orders")).to_pyarrow_table().sort_by("id").to_pylist()
    source = postgres.query('SELECT id, note FROM "sales.eu".orders ORDER BY id', database=pgdb)
    assert [(r["id"], r["note"]) for r in rows] == [tuple(r) for r in source]
    log = DeltaTable(str(lake / "orders__changelog")).to_pyarrow_table().to_pylist()
    assert sorted(r["op"] for r in log) == ["c"] + ["d"] + ["r"] * 20 + ["u"]
    assert {r["source"]["schema"] for r in log} == {"sales.eu"}


def confirmed(postgres: ThrowawayPostgres, pgdb: str) -> int:
    [(text,)] = postgres.query(
        "SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
        "WHERE slot_name = 'sparkcdc_checkpoint'",
        database=pgdb,
    )
    return parse_lsn(text)


@pytest.fixture
def own_server() -> Iterator[ThrowawayPostgres]:
    """A server of the test's own: no other test's slot holds its WAL."""
    with throwaway_postgres() as server:
        server.create_database("quietdb")
        yield server


def test_an_idle_captured_table_lets_the_wal_be_recycled(
    own_server: ThrowawayPostgres, tmp_path: Path
) -> None:
    """Nothing passes through the publication while another database writes WAL segments: the
    running pipeline's slot follows the server's WAL (its empty batches acknowledge the
    keepalives' positions), so the checkpoints recycle the segments before it."""
    postgres, pgdb = own_server, "quietdb"
    postgres.execute("CREATE TABLE quiet (id bigint PRIMARY KEY)", database=pgdb)
    postgres.execute("CREATE TABLE busy (id bigint, pad text)", database="postgres")
    cfg = write_pg_config(tmp_path, postgres, pgdb, r"public\.quiet", startup="latest")
    proc = start(cfg)
    try:
        deadline = time.monotonic() + 120
        while not restart_segment(postgres, pgdb):
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "the pipeline made no slot in 120 s"
            time.sleep(0.5)
        first = restart_segment(postgres, pgdb)
        for _ in range(4):  # four WAL segments written and switched, in another database
            postgres.execute(
                "INSERT INTO busy SELECT i, repeat('x', 200) FROM generate_series(1, 20000) i",
                "SELECT pg_switch_wal()",
                database="postgres",
            )
        while restart_segment(postgres, pgdb) <= first:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline + 60, "the slot stayed at its first segment"
            time.sleep(0.5)
        # the server lets go of a segment at a checkpoint once the slots' minimum is recomputed
        # (it follows the slot's restart position after its next catalog xmin update)
        while oldest_segment(postgres) <= first:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline + 120, "the slot's first segment was kept"
            postgres.execute("INSERT INTO busy VALUES (0, '')", "CHECKPOINT", database="postgres")
            time.sleep(1)
    finally:
        proc.terminate()
        proc.communicate(timeout=120)


def oldest_segment(postgres: ThrowawayPostgres) -> str:
    """The oldest WAL segment file the server keeps."""
    [(oldest,)] = postgres.query(
        "SELECT min(name) FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'", database="postgres"
    )
    return str(oldest)


def restart_segment(postgres: ThrowawayPostgres, pgdb: str) -> str:
    """The WAL segment file the pipeline's slot needs from (empty: no slot yet)."""
    found = postgres.query(
        "SELECT pg_walfile_name(restart_lsn) FROM pg_replication_slots "
        "WHERE slot_name = 'sparkcdc_checkpoint' AND restart_lsn IS NOT NULL",
        database=pgdb,
    )
    return str(found[0][0]) if found else ""
