"""The parallel snapshot of PostgreSQL tables through ``sparkcdc run``, as a user runs it.

``startup: initial`` while a writer churns every part of the key space (updates, deletes,
inserts inside, below and past the key range, primary-key updates): afterwards the replica
equals the source row by row, the change log holds one ``r`` row per snapshotted key and never a
change committed before that key's snapshot point, the splits ran in two Spark tasks at the same
time, and no chunk needed a watermark window (all are read in one exported snapshot).
``kill -9`` mid-snapshot, five randomized crashes in one snapshot: each restart pins a new
snapshot, reads no finished split again, and the end equals the source. ``startup: snapshot``
copies a table that transfers keep at a constant total: the copy is one consistent cut, and it
leaves no replication slot behind.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.e2e.cli import available_now, write_config
from tests.e2e.snapshot_runs import (
    ITEM_COLUMNS,
    check_changelog,
    crash_mid_snapshot,
    ran_in_parallel,
    replica,
    snapshot_then_log,
    split_metas,
)
from tests.e2e.snapshot_workload import Churn, Transfers, load_items

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.slow]

SLOT = "sparkcdc_checkpoint"  # named after the checkpoint folder


def pg_config(
    tmp: Path, postgres: ThrowawayPostgres, db: str, tables: str, startup: str, chunk: int = 1000,
    batch_rows: int = 4000,
) -> Path:  # fmt: skip
    snapshot = f"snapshot: {{chunk_size: {chunk}, parallelism: 2, batch_rows: {batch_rows}}}"
    return write_config(
        tmp, postgres, tables, user=postgres.user, password=postgres.password, startup=startup,
        kind="postgres", extra_source=f", database: {db}, {snapshot}",
    )  # fmt: skip


def lsn_place(source: dict[str, Any]) -> int:
    """A change log row's place in the WAL: a change's commit LSN, a snapshot row's point."""
    return int(source["lsn"])


def source_items(server: ThrowawayPostgres, db: str) -> list[tuple[Any, ...]]:
    return sorted(server.query("SELECT id, version, name, amount FROM items", db))


def test_initial_snapshot_under_concurrent_writes_then_the_log(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    load_items(postgres, pgdb, 30000)
    churn = Churn(postgres, pgdb, top=60000, seed=7)
    cfg = pg_config(tmp_path, postgres, pgdb, r"public\.items", "initial")
    snapshot_then_log(cfg, tmp_path, churn)

    lake = tmp_path / "lake" / "public"
    assert churn.commits > 100
    assert replica(lake / "items", ITEM_COLUMNS) == source_items(postgres, pgdb)
    check_changelog(lake / "items__changelog", lsn_place)

    metas = split_metas(tmp_path, "public.items")
    assert len(metas) >= 30
    assert len({m["high"]["lsn"] for m in metas}) == 1  # one pinned snapshot for every chunk
    assert sum(m["window_changes"] for m in metas) == 0  # so no chunk had a window to correct
    assert ran_in_parallel(metas), "no two splits ran in different Spark tasks at the same time"
    slots = postgres.query("SELECT slot_name FROM pg_replication_slots", database=pgdb)
    assert slots == [(SLOT,)]  # the pin's temporary slot is gone


def test_kill_9_mid_snapshot_resumes_in_a_new_pin(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    """Five crashes in one snapshot (SPARKCDC_SNAPSHOT_CRASH_TRIALS), each at a random moment
    after new splits finished: no restart reads a split finished before it again, the splits
    read after a crash carry a later pin's point, and the end equals the source, with a change
    log of no gap or duplicate."""
    rng = random.Random(600)
    splits, table = 60, "public.items"
    load_items(postgres, pgdb, splits * 1000)
    cfg = pg_config(tmp_path, postgres, pgdb, r"public\.items", "initial", batch_rows=2000)
    churn = Churn(postgres, pgdb, top=splits * 2000, seed=5, pause=0.01)
    after = crash_mid_snapshot(cfg, tmp_path, table, splits, churn, rng)
    metas = split_metas(tmp_path, table)
    assert len(after) >= splits
    assert len({m["high"]["lsn"] for m in metas}) > 1  # pinned anew after the crashes
    lake = tmp_path / "lake" / "public"
    assert replica(lake / "items", ITEM_COLUMNS) == source_items(postgres, pgdb)
    check_changelog(lake / "items__changelog", lsn_place)


def test_snapshot_mode_is_one_consistent_cut(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    accounts = 3000
    Transfers.create(postgres, pgdb, accounts)
    transfers = Transfers(postgres, pgdb, accounts, seed=3)
    cfg = pg_config(tmp_path, postgres, pgdb, r"public\.accounts", "snapshot", chunk=200)
    transfers.start()
    try:
        available_now(cfg)
    finally:
        transfers.halt()
    assert transfers.commits > 50
    rows = DeltaTable(str(tmp_path / "lake" / "public" / "accounts")).to_pyarrow_table()
    assert rows.num_rows == accounts
    assert sum(rows.column("balance").to_pylist()) == accounts * Transfers.TOTAL_PER_ACCOUNT
    metas = split_metas(tmp_path, "public.accounts")
    assert len(metas) > 1 and sum(m["rows"] for m in metas) == accounts
    assert len({m["high"]["lsn"] for m in metas}) == 1  # every chunk in the one pinned snapshot
    # the copy is whole and no more log is read: no slot is left to hold the server's WAL
    assert postgres.query("SELECT slot_name FROM pg_replication_slots", database=pgdb) == []
