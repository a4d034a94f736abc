"""A pipeline whose binlog position was purged while it was stopped, on a MariaDB of the test's
own (purging the shared server's binlogs would strand other tests).

With ``source.on_log_gone: fail`` (the default) the run stops with one sentence naming the
position, the oldest the server holds and both ways out. With ``resnapshot`` the tables are
read again: the replica equals the source row by row (the keys deleted in the gap deleted from
it too, and logged as ``d`` rows), and the stream goes on from there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB, throwaway_mariadb
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.e2e.cli import available_now, purge_binlogs_to, run, write_config

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

SOURCE = ", server_id: '7401-7410', snapshot: {chunk_size: 200}"


@pytest.fixture
def own_server() -> Iterator[ThrowawayMariaDB]:
    with throwaway_mariadb() as server:
        server.execute(
            "CREATE DATABASE shop",
            "CREATE TABLE shop.items (id BIGINT PRIMARY KEY, version INT, name VARCHAR(40))",
            "INSERT INTO shop.items SELECT seq, 0, CONCAT('item-', seq) FROM shop.seq_1_to_600",
        )
        yield server


def rows_of(server: ThrowawayMariaDB) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in server.query("SELECT id, version, name FROM shop.items"))


def replica_of(lake: Path) -> list[tuple[object, ...]]:
    table = DeltaTable(str(lake / "shop" / "items")).to_pyarrow_table()
    return sorted((r["id"], r["version"], r["name"]) for r in table.to_pylist())


def test_a_purged_binlog_stops_with_the_way_out_or_is_read_again(
    own_server: ThrowawayMariaDB, tmp_path: Path
) -> None:
    server, lake = own_server, tmp_path / "lake"
    cfg = write_config(tmp_path, server, r"shop\.items", startup="initial", extra_source=SOURCE)
    available_now(cfg)
    assert replica_of(lake) == rows_of(server)
    server.execute(  # the gap: changes the log will not hold any more
        "UPDATE shop.items SET version = 9 WHERE id <= 50",
        "DELETE FROM shop.items WHERE id BETWEEN 100 AND 149",
        "INSERT INTO shop.items SELECT seq + 1000, 1, 'new' FROM shop.seq_1_to_30",
        "FLUSH BINARY LOGS",
        "FLUSH BINARY LOGS",
    )
    newest = str(server.query("SHOW BINARY LOGS")[-1][0])
    purge_binlogs_to(server, newest)

    code, out = run(cfg, "--available-now")
    assert code == 2, out
    assert (
        "source.on_log_gone: resnapshot" in out
        and f"oldest position the server holds is {newest}:4" in out
    ), out

    cfg = write_config(tmp_path, server, r"shop\.items", startup="initial",
                       extra_source=f"{SOURCE}, on_log_gone: resnapshot")  # fmt: skip
    available_now(cfg)
    assert replica_of(lake) == rows_of(server)
    log = DeltaTable(str(lake / "shop" / "items__changelog")).to_pyarrow_table().to_pylist()
    deleted = sorted(r["before"]["id"] for r in log if r["op"] == "d")
    assert deleted == list(range(100, 150))
    assert sum(r["op"] == "r" for r in log) == 600 + 580
    assert not (tmp_path / "checkpoint" / "sparkcdc" / "resnapshot.json").exists()
    assert list(tmp_path.joinpath("checkpoint").glob("gone-*/spark/offsets"))

    server.execute(  # and the stream goes on
        "UPDATE shop.items SET name = 'after' WHERE id = 1", "DELETE FROM shop.items WHERE id = 2"
    )
    available_now(cfg)
    assert replica_of(lake) == rows_of(server)
    log = DeltaTable(str(lake / "shop" / "items__changelog")).to_pyarrow_table().to_pylist()
    assert sorted(r["op"] for r in log if r["op"] in "cud") == ["d"] * 51 + ["u"]


@pytest.mark.postgres
def test_a_dropped_slot_is_read_again_on_postgresql(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    postgres.execute(
        "CREATE TABLE items (id bigint PRIMARY KEY, version int, name text)",
        "INSERT INTO items SELECT i, 0, 'item-' || i FROM generate_series(1, 400) i",
        database=pgdb,
    )
    cfg = write_config(
        tmp_path, postgres, r"public\.items", user=postgres.user, password=postgres.password,
        startup="initial", kind="postgres",
        extra_source=f", database: {pgdb}, on_log_gone: resnapshot, snapshot: {{chunk_size: 150}}",
    )  # fmt: skip
    available_now(cfg)
    postgres.execute(  # the gap, then the slot (and the WAL it held) is lost
        "UPDATE items SET version = 9 WHERE id <= 40",
        "DELETE FROM items WHERE id BETWEEN 100 AND 119",
        "SELECT pg_drop_replication_slot('sparkcdc_checkpoint')",
        database=pgdb,
    )
    available_now(cfg)
    source = sorted(
        tuple(r) for r in postgres.query("SELECT id, version, name FROM items", database=pgdb)
    )
    table = DeltaTable(str(tmp_path / "lake" / "public" / "items")).to_pyarrow_table()
    assert sorted((r["id"], r["version"], r["name"]) for r in table.to_pylist()) == source
    log = DeltaTable(str(tmp_path / "lake" / "public" / "items__changelog")).to_pyarrow_table()
    deleted = sorted(r["before"]["id"] for r in log.to_pylist() if r["op"] == "d")
    assert deleted == list(range(100, 120))
