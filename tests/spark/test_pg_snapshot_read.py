"""``spark.read.format("postgres-cdc")``: one consistent, lock-free, parallel snapshot of a
PostgreSQL table as a typed DataFrame while writers go on. Every task reads in one exported
snapshot, held by a process of its own that lets it go once every task is done with it."""

from __future__ import annotations

import time
from typing import Any

import pytest

import sparkcdc.spark
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.e2e.snapshot_workload import Transfers

pytestmark = [pytest.mark.postgres, pytest.mark.spark]


def reader(spark: Any, server: ThrowawayPostgres, db: str, table: str, **options: str) -> Any:
    sparkcdc.spark.register(spark, "postgres")
    r = (
        spark.read.format("postgres-cdc")
        .option("host", "127.0.0.1")
        .option("port", str(server.port))
        .option("user", server.user)
        .option("password", server.password)
        .option("database", db)
        .option("table", table)
    )
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


def pins(server: ThrowawayPostgres, db: str) -> list[tuple[Any, ...]]:
    """The temporary slots of exported snapshots still held."""
    return server.query("SELECT slot_name FROM pg_replication_slots WHERE temporary", db)


def test_a_batch_read_is_one_consistent_cut_while_transfers_go_on(
    spark: Any, postgres: ThrowawayPostgres, pgdb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    Transfers.create(postgres, pgdb, 4000)
    transfers = Transfers(postgres, pgdb, 4000, seed=11)
    transfers.start()
    try:
        df = reader(spark, postgres, pgdb, "public.accounts", chunk_size="300", parallelism="2")
        assert df.rdd.getNumPartitions() == 2
        rows = df.collect()
    finally:
        transfers.halt()
    assert transfers.commits > 20
    assert sorted(r["id"] for r in rows) == list(range(1, 4001))
    assert sum(r["balance"] for r in rows) == 4000 * Transfers.TOTAL_PER_ACCOUNT
    assert not postgres.query("SELECT 1 FROM pg_replication_slots WHERE NOT temporary", pgdb)
    deadline = time.monotonic() + 15
    while pins(postgres, pgdb):  # the holder lets the snapshot go once its readers are done
        assert time.monotonic() < deadline, "the exported snapshot was never let go"
        time.sleep(1)
